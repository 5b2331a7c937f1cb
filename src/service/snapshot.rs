//! One loaded snapshot: the run tables (`engine::Dataset`), where they came from, and where each
//! run's raw files are; and the handle that serves the current snapshot and swaps in a new one.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use crate::engine::frame::Value;
use crate::engine::{Dataset, Domain};
use crate::store::RawLocation;
use crate::store::cache::CachedStore;
use crate::store::confine::{self, Escape};
use crate::store::derived::DerivedStore;

/// Where a snapshot came from (`GET /v1/datasets`).
#[derive(Debug, Clone)]
pub struct Source {
    /// Human-readable location, e.g. `local:/srv/data/sample`.
    pub location: String,
    /// Pinned revision (commit) for remote sources; `None` for a local directory.
    pub revision: Option<String>,
    /// The revision this snapshot is served as: the hub revision asked for (`main`, a tag, a
    /// commit), or a local snapshot directory's name; `None` for a local source served unnamed.
    pub name: Option<String>,
    /// Dataset root on the local file system, if any (raw paths resolve against it).
    pub root: Option<PathBuf>,
    /// Raw results files passed over while deriving rows from a raw tree, with the reason.
    pub skipped: Vec<(String, String)>,
    /// For a remote source: its raw files, through the raw cache.
    pub remote: Option<CachedStore>,
    /// Where derived per-run data (ITLs, output lengths, timelines) is persisted, if anywhere.
    pub derived: Option<DerivedStore>,
    /// The data's date (`YYYY-MM-DD`) as the source tells it: a compiled directory's
    /// `snapshot_date` metadata or its summaries' modification date, the hub revision's commit
    /// date. `None`: the date it was loaded.
    pub date: Option<String>,
    /// The LLM runs' output-length histograms the source carries
    /// (`histograms/llm_output_lengths.parquet`), read at load: the leaderboard's model files
    /// are made from them without reading raw files.
    pub histograms: Option<Arc<crate::rawtree::histograms::Histograms>>,
}

impl Source {
    /// Whether the source names an exact commit (`hf://datasets/ORG/NAME@<commit>`): its answers
    /// can never change for the same server.
    pub fn pinned(&self) -> bool {
        self.revision.as_deref().is_some_and(|commit| {
            commit.len() == 40
                && self
                    .location
                    .rsplit_once('@')
                    .is_some_and(|(_, asked)| asked.eq_ignore_ascii_case(commit))
        })
    }
}

/// What a snapshot is, as answers name it: the revision it is served as, its commit, and its
/// content's digest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Identity {
    /// The revision asked for (a hub branch, tag or commit, or a local snapshot's name); null for
    /// a local source served unnamed.
    pub revision: Option<String>,
    /// The hub commit; null for a local source.
    pub commit: Option<String>,
    /// SHA-256 of both run tables' content (every column name and cell), hex.
    pub content: String,
}

/// A raw file of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RawFile {
    Results,
    Prometheus,
}

impl RawFile {
    /// The run field that stores its path.
    pub fn field(self) -> &'static str {
        match self {
            RawFile::Results => "results_path",
            RawFile::Prometheus => "prometheus_path",
        }
    }

    pub fn file_name(self) -> &'static str {
        match self {
            RawFile::Results => "results.json",
            RawFile::Prometheus => "prometheus.json",
        }
    }
}

/// A raw path that a run's row gives but that is not read: it would leave the dataset root
/// (absolute, `..` above the root, or a symlink out of it). The row is served without that file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedPath {
    pub domain: Domain,
    pub run_id: String,
    /// `results_path` or `prometheus_path`.
    pub field: &'static str,
    /// The path as the data gives it.
    pub path: String,
    pub reason: String,
}

/// Why a run has no raw file to read: the detail of a 404 `raw_unavailable`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoRawFile(pub String);

/// The short id of a snapshot: the first 16 hex digits of its content digest.
pub fn snapshot_id(content_id: &str) -> &str {
    content_id
        .char_indices()
        .nth(16)
        .map_or(content_id, |(end, _)| &content_id[..end])
}

/// A fresh snapshot generation number.
fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A digest of both tables: every column's name and every cell, typed.
fn content_id(dataset: &Dataset) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for domain in Domain::ALL {
        let t = dataset.table(domain);
        h.update(domain.as_str().as_bytes());
        h.update((t.len() as u64).to_le_bytes());
        for (i, f) in t.fields.iter().enumerate() {
            h.update(f.name.as_bytes());
            h.update([0]);
            let col = t.column(i);
            for r in 0..t.len() {
                match col.get(r) {
                    Value::Null => h.update([0]),
                    Value::Str(s) => {
                        h.update([1]);
                        h.update((s.len() as u64).to_le_bytes());
                        h.update(s.as_bytes());
                    }
                    Value::Int(v) => {
                        h.update([2]);
                        h.update(v.to_le_bytes());
                    }
                    Value::Float(v) => {
                        h.update([3]);
                        h.update(v.to_bits().to_le_bytes());
                    }
                    Value::Bool(b) => h.update([4, u8::from(b)]),
                }
            }
        }
    }
    hex::encode(h.finalize())
}

/// One loaded snapshot: the run tables (reached through `Deref`), their source, and the raw
/// paths refused at load.
pub struct Snapshot {
    /// Unique per loaded snapshot (process-wide counter): keys caches of derived answers.
    pub generation: u64,
    /// A digest of the run tables' content (hex SHA-256): the same for the same data in every
    /// process, so results persisted across restarts and replicas are keyed by it.
    pub content_id: String,
    pub dataset: Dataset,
    pub source: Source,
    pub loaded_at: SystemTime,
    /// Raw paths of rows that leave the dataset root, in table order; never read.
    pub refused: Vec<RefusedPath>,
    refused_at: HashMap<(Domain, usize, RawFile), usize>,
    /// Each domain's predictor, fitted on first use (LLM, diffusion).
    predictors: [std::sync::OnceLock<Arc<crate::engine::models::predict::Predictor>>; 2],
}

impl std::ops::Deref for Snapshot {
    type Target = Dataset;
    fn deref(&self) -> &Dataset {
        &self.dataset
    }
}

impl Snapshot {
    /// The revision, commit and content digest answers name.
    pub fn identity(&self) -> Identity {
        Identity {
            revision: self.source.name.clone(),
            commit: self.commit().map(str::to_string),
            content: self.content_id.clone(),
        }
    }

    /// The hub commit the snapshot was read at (`None`: a local source or an object-store URL).
    pub fn commit(&self) -> Option<&str> {
        self.source.revision.as_deref()
    }

    /// The revision a permalink to an answer names: the commit, else the snapshot's id (the
    /// first 16 hex digits of its content digest), which this server resolves while it holds it.
    pub fn pin(&self) -> &str {
        self.commit()
            .unwrap_or_else(|| snapshot_id(&self.content_id))
    }

    /// Whether `revision` names this snapshot: its name, its commit (or a prefix of at least 7
    /// hex digits), or its snapshot id.
    pub fn answers_to(&self, revision: &str) -> bool {
        let hex_prefix = |full: &str| {
            revision.len() >= 7
                && revision.len() <= full.len()
                && revision.bytes().all(|b| b.is_ascii_hexdigit())
                && full[..revision.len()].eq_ignore_ascii_case(revision)
        };
        self.source.name.as_deref() == Some(revision)
            || self.commit().is_some_and(hex_prefix)
            || revision.eq_ignore_ascii_case(snapshot_id(&self.content_id))
    }

    /// The names this snapshot answers to, for a refusal to list.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.source.name.iter().cloned().collect();
        names.extend(self.commit().map(str::to_string));
        names.push(snapshot_id(&self.content_id).to_string());
        names
    }

    /// The snapshot's date (`YYYY-MM-DD`): the source's, else the day it was loaded (UTC).
    pub fn date(&self) -> String {
        self.source
            .date
            .clone()
            .unwrap_or_else(|| utc_date(self.loaded_at))
    }

    /// The predictor of `domain` fitted on this snapshot's runs, once: the server fits both off the
    /// request path when it starts and after a reload (`Service::start_background`, `reload`), a
    /// request that comes first fits it. Not persisted: a fit over the embedded dataset is quick.
    pub fn predictor(&self, domain: Domain) -> Arc<crate::engine::models::predict::Predictor> {
        use crate::engine::models::predict::{Predictor, Spec};
        let slot = &self.predictors[usize::from(domain == Domain::Diffusion)];
        slot.get_or_init(|| Arc::new(Predictor::fit(Spec::of(domain), self.table(domain))))
            .clone()
    }

    /// A snapshot of `dataset` from `source`, with every stored raw path checked against the
    /// source's root ([`confine`]): a row whose path leaves it is kept and listed in `refused`,
    /// and its file is never read.
    pub fn new(dataset: Dataset, source: Source) -> Self {
        let content_id = content_id(&dataset);
        let mut snapshot = Snapshot {
            generation: next_generation(),
            content_id,
            dataset,
            source,
            loaded_at: SystemTime::now(),
            refused: Vec::new(),
            refused_at: HashMap::new(),
            predictors: Default::default(),
        };
        for domain in Domain::ALL {
            for file in [RawFile::Results, RawFile::Prometheus] {
                for row in 0..snapshot.table(domain).len() {
                    let Some(stored) = snapshot.stored_path(domain, row, file) else {
                        continue;
                    };
                    if let Err(reason) = snapshot.confine(stored) {
                        let refused = RefusedPath {
                            domain,
                            run_id: snapshot.table(domain).run_id(row).to_string(),
                            field: file.field(),
                            path: stored.to_string(),
                            reason: reason.to_string(),
                        };
                        tracing::warn!(run_id = %refused.run_id, field = refused.field, path = %refused.path, reason = %refused.reason, "raw path refused");
                        snapshot
                            .refused_at
                            .insert((domain, row, file), snapshot.refused.len());
                        snapshot.refused.push(refused);
                    }
                }
            }
        }
        snapshot
    }

    /// The raw path a row stores for `file`, when it is a non-empty string.
    fn stored_path(&self, domain: Domain, row: usize, file: RawFile) -> Option<&str> {
        let t = self.table(domain);
        let col = t.field_index(file.field())?;
        match t.column(col).get(row) {
            Value::Str(s) if !s.is_empty() => Some(s),
            _ => None,
        }
    }

    /// Where the stored relative path `stored` is read from, if it stays inside the source's
    /// root: a key of the remote source, or a file under the local root (symlinks resolved).
    fn confine(&self, stored: &str) -> Result<Option<RawLocation>, Escape> {
        let key = confine::relative_key(stored)?;
        if let Some(remote) = &self.source.remote {
            return Ok(Some(RawLocation::Remote(remote.clone(), key)));
        }
        match &self.source.root {
            Some(root) => Ok(Some(RawLocation::Local {
                path: confine::resolve_local(root, &key)?,
                root: root.clone(),
            })),
            None => Ok(None),
        }
    }

    /// Where `path` (relative to the dataset root) is read from, when it stays inside the root:
    /// what the hub mirror serves. `None`: the source has no root (an in-memory dataset).
    pub fn locate(&self, path: &str) -> Result<Option<RawLocation>, Escape> {
        self.confine(path)
    }

    /// Where a run's raw file is: its stored path, relative to the dataset root (a local
    /// directory, or the remote source's root through the raw cache). Unlike the toolkit's
    /// `from_directory`, an absolute stored path or one that leaves the root is not followed.
    pub fn raw_location(
        &self,
        domain: Domain,
        row: usize,
        file: RawFile,
    ) -> Result<RawLocation, NoRawFile> {
        if let Some(&i) = self.refused_at.get(&(domain, row, file)) {
            let r = &self.refused[i];
            return Err(NoRawFile(format!(
                "its {} '{}' is not served: {}",
                r.field, r.path, r.reason
            )));
        }
        let name = file.file_name();
        let Some(stored) = self.stored_path(domain, row, file) else {
            return Err(NoRawFile(format!(
                "this dataset has no {name} for it ({} is null)",
                file.field()
            )));
        };
        match self.confine(stored) {
            Ok(Some(loc)) => Ok(loc),
            Ok(None) => Err(NoRawFile(format!(
                "this dataset has no root to resolve its {} '{stored}' against",
                file.field()
            ))),
            Err(reason) => Err(NoRawFile(format!(
                "its {} '{stored}' is not served: {reason}",
                file.field()
            ))),
        }
    }
}

/// The UTC date of `t`, `YYYY-MM-DD`.
pub fn utc_date(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()[..10].to_string()
}

/// The snapshot being served. Reloading builds a new `Snapshot` and swaps the `Arc`, so
/// requests in flight finish on the snapshot they started with.
pub struct Snapshots {
    current: std::sync::RwLock<Arc<Snapshot>>,
}

impl Snapshots {
    pub fn new(snapshot: Snapshot) -> Self {
        Snapshots {
            current: std::sync::RwLock::new(Arc::new(snapshot)),
        }
    }

    /// The snapshot to answer one request from.
    pub fn current(&self) -> Arc<Snapshot> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replace the served snapshot; returns the new one.
    pub fn swap(&self, snapshot: Snapshot) -> Arc<Snapshot> {
        let new = Arc::new(snapshot);
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = new.clone();
        new
    }
}
