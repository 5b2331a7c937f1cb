//! The leaderboard's data files, built once per loaded snapshot and served from memory
//! (docs/leaderboard.md): the files themselves ([`files`]), the LLM model files' output-length
//! histograms ([`histograms`]), and the site that holds them compressed.
//!
//! Every file but the LLM model files is made when the snapshot's site is first asked for. An LLM
//! model file needs its runs' output lengths: precomputed in the compiled directory (data/sample
//! has them), else read from the runs' raw results, group by group, by a task started after the
//! server starts ([`Leaderboard::warm`]) or by the first request for that file, whichever comes
//! first (one read either way). A group whose runs have no usable raw file is served without the
//! histogram keys and says why (`Site::status`, a `Warning` on the file).

pub mod files;
pub mod histograms;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use sha2::{Digest, Sha256};

use self::files::Group;
use self::histograms::{Histograms, group_histograms, read_histograms};
use super::coding::{Coding, Effort, Precompressed};
use super::derived::DerivedData;
use super::error::ServiceError;
use super::snapshot::Snapshot;
use crate::engine::Domain;

/// One file of the site: its bytes in every coding, its entity tag, and a note when it lacks
/// something the leaderboard's build would have put in it.
#[derive(Debug)]
pub struct SiteFile {
    pub data: Precompressed,
    /// A strong entity tag of the identity body (quoted), from its SHA-256.
    pub etag: String,
    pub warning: Option<String>,
}

impl SiteFile {
    fn new(text: String, warning: Option<String>) -> Arc<SiteFile> {
        let digest = Sha256::digest(text.as_bytes());
        Arc::new(SiteFile {
            etag: format!("\"lb-{}\"", hex::encode(&digest[..16])),
            data: Precompressed::new(Bytes::from(text), Effort::Most),
            warning,
        })
    }
}

/// An LLM model file whose histograms come from raw files: made once, by whoever asks first.
struct Pending {
    group: Group,
    file: tokio::sync::OnceCell<Arc<SiteFile>>,
}

/// How far the LLM model files' histograms are.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct HistogramStatus {
    /// LLM model files in all.
    pub files: usize,
    /// Files whose histograms are in them (precomputed or read).
    pub ready: usize,
    /// Files still to read from raw files.
    pub pending: usize,
    /// Files served without histograms, each with why: `<file>: <reason>`.
    pub without: Vec<String>,
}

/// The leaderboard of one snapshot.
pub struct Site {
    pub generation: u64,
    /// `index.json`'s `last_updated`.
    pub last_updated: String,
    files: HashMap<String, Arc<SiteFile>>,
    pending: HashMap<String, Pending>,
    /// Pending files made so far, and those made without histograms (file: reason).
    made: AtomicUsize,
    without: Mutex<Vec<String>>,
    /// LLM model files made at build from precomputed histograms.
    precomputed_llm: usize,
    /// Whether the start-up task has compressed every file in every coding.
    compressed: std::sync::atomic::AtomicBool,
}

impl Site {
    /// Build the site of `snapshot`: every file that needs no raw read.
    fn build(snapshot: &Snapshot, last_updated: String) -> Site {
        let started = std::time::Instant::now();
        let (tasks, models) = files::groups(snapshot);
        let precomputed = precomputed_histograms(snapshot);
        let mut out = HashMap::new();
        out.insert(
            "index.json".to_string(),
            SiteFile::new(files::index(snapshot, &last_updated), None),
        );
        for g in &tasks {
            out.insert(g.path(), SiteFile::new(files::task(snapshot, g), None));
        }
        let mut pending = HashMap::new();
        let mut precomputed_llm = 0;
        for g in models {
            let t = snapshot.table(g.domain);
            let covered = precomputed
                .as_ref()
                .is_some_and(|h| g.rows.iter().all(|&r| h.contains_key(t.run_id(r))));
            if g.domain == Domain::Diffusion || covered {
                precomputed_llm += usize::from(g.domain == Domain::Llm);
                let text = files::model(snapshot, &g, precomputed.as_ref());
                out.insert(g.path(), SiteFile::new(text, None));
            } else {
                pending.insert(
                    g.path(),
                    Pending {
                        group: g,
                        file: tokio::sync::OnceCell::new(),
                    },
                );
            }
        }
        tracing::info!(
            files = out.len(),
            from_raw = pending.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "leaderboard files built"
        );
        Site {
            generation: snapshot.generation,
            last_updated,
            files: out,
            pending,
            made: AtomicUsize::new(0),
            without: Mutex::new(Vec::new()),
            precomputed_llm,
            compressed: Default::default(),
        }
    }

    /// The file at `path` (`index.json`, `tasks/…`, `models/…`), made now from raw files if it
    /// needs them and nobody made it yet; `None` for a file the leaderboard does not have.
    pub async fn file(
        &self,
        snapshot: &Arc<Snapshot>,
        derived: &DerivedData,
        path: &str,
    ) -> Result<Option<Arc<SiteFile>>, ServiceError> {
        if let Some(f) = self.files.get(path) {
            return Ok(Some(f.clone()));
        }
        let Some(p) = self.pending.get(path) else {
            return Ok(None);
        };
        let file = p
            .file
            .get_or_try_init(|| async {
                let (histograms, why_not) = raw_histograms(snapshot, derived, &p.group).await?;
                let text = files::model(snapshot, &p.group, histograms.as_ref());
                self.made.fetch_add(1, Ordering::Relaxed);
                let warning = why_not.map(|why| {
                    let note = format!("no output-length histograms: {why}");
                    self.without
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("{path}: {why}"));
                    note
                });
                Ok::<_, ServiceError>(SiteFile::new(text, warning))
            })
            .await?;
        Ok(Some(file.clone()))
    }

    /// Every file's path, sorted.
    pub fn paths(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .files
            .keys()
            .chain(self.pending.keys())
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// How far the LLM model files' histograms are.
    /// Whether every file is compressed in every coding (by the start-up task).
    pub fn compressed(&self) -> bool {
        self.compressed.load(Ordering::SeqCst)
    }

    pub fn status(&self) -> HistogramStatus {
        let without = self
            .without
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let made = self.made.load(Ordering::Relaxed);
        HistogramStatus {
            files: self.precomputed_llm + self.pending.len(),
            ready: self.precomputed_llm + made - without.len(),
            pending: self.pending.len() - made,
            without,
        }
    }
}

/// The precomputed histograms of a local compiled directory, if it has them.
fn precomputed_histograms(snapshot: &Snapshot) -> Option<Histograms> {
    if snapshot.source.remote.is_some() || !snapshot.source.location.starts_with("local:") {
        return None;
    }
    let root = snapshot.source.root.as_ref()?;
    match read_histograms(root) {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!(error = %e, "precomputed histograms unusable; reading raw files instead");
            None
        }
    }
}

/// A group's histograms from its runs' raw files, or why there are none (a run without a usable
/// raw file). A fetch that failed is an error: the file is made on a later request.
async fn raw_histograms(
    snapshot: &Arc<Snapshot>,
    derived: &DerivedData,
    group: &Group,
) -> Result<(Option<Histograms>, Option<String>), ServiceError> {
    let t = snapshot.table(Domain::Llm);
    let mut runs = Vec::with_capacity(group.rows.len());
    for &row in &group.rows {
        let id = t.run_id(row).to_string();
        let lengths = match derived.get(snapshot, Domain::Llm, row).await {
            Ok(raw) => {
                crate::rawfile::output_lengths(&raw, false).map_err(|e| format!("run '{id}': {e}"))
            }
            Err(
                e @ (ServiceError::RawUnavailable { .. }
                | ServiceError::RawInvalid { .. }
                | ServiceError::Fetch {
                    error: crate::store::FetchError::NotFound(_),
                    ..
                }),
            ) => Err(format!("run '{id}': {e}")),
            Err(e) => return Err(e),
        };
        match lengths {
            Ok(l) => runs.push((id, l)),
            Err(why) => return Ok((None, Some(why))),
        }
    }
    Ok((Some(group_histograms(&runs)), None))
}

/// The leaderboard of the snapshot being served, rebuilt when the snapshot changes.
pub struct Leaderboard {
    /// `last_updated` as configured; the snapshot's date otherwise.
    last_updated: Option<String>,
    /// Whether [`Leaderboard::warm`] reads the raw files of the pending files (else each file
    /// reads its runs' when first asked for).
    read_in_background: bool,
    current: Mutex<Option<Arc<Site>>>,
}

impl Leaderboard {
    pub fn new(last_updated: Option<String>, read_in_background: bool) -> Self {
        Leaderboard {
            last_updated,
            read_in_background,
            current: Mutex::new(None),
        }
    }

    /// The configured `last_updated`, if any.
    pub fn configured_date(&self) -> Option<&str> {
        self.last_updated.as_deref()
    }

    /// The site of `snapshot`, built now if it is the first time it is asked for.
    pub fn site(&self, snapshot: &Snapshot) -> Arc<Site> {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(site) = current.as_ref()
            && site.generation == snapshot.generation
        {
            return site.clone();
        }
        let date = self.last_updated.clone().unwrap_or_else(|| snapshot.date());
        let site = Arc::new(Site::build(snapshot, date));
        *current = Some(site.clone());
        site
    }

    /// Make every file of `snapshot`'s site: the LLM model files from raw files (one group at a
    /// time; unless configured to wait for requests), then every file in every coding. For a task
    /// started after the server starts.
    /// `stop` ends it between two files (a compression under way is finished first).
    pub async fn warm(
        &self,
        snapshot: Arc<Snapshot>,
        derived: &DerivedData,
        stop: tokio_util::sync::CancellationToken,
    ) {
        let site = self.site(&snapshot);
        let started = std::time::Instant::now();
        let pending = site.pending.keys().filter(|_| self.read_in_background);
        for path in pending {
            if stop.is_cancelled() {
                return;
            }
            if let Err(e) = site.file(&snapshot, derived, path).await {
                tracing::warn!(file = %path, error = %e, "leaderboard file not made; a request for it tries again");
            }
        }
        let all: Vec<Arc<SiteFile>> = site
            .files
            .values()
            .cloned()
            .chain(site.pending.values().filter_map(|p| p.file.get().cloned()))
            .collect();
        let stopped = stop.clone();
        let _ = tokio::task::spawn_blocking(move || {
            for f in &all {
                for c in Coding::COMPRESSED {
                    if stopped.is_cancelled() {
                        return;
                    }
                    f.data.get(c);
                }
            }
        })
        .await;
        if stop.is_cancelled() {
            return;
        }
        site.compressed.store(true, Ordering::SeqCst);
        let status = site.status();
        tracing::info!(
            ready = status.ready,
            without_histograms = status.without.len(),
            pending = status.pending,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "leaderboard files made and compressed"
        );
    }
}
