//! The query engine: loads the run summaries through DataFusion and answers typed questions
//! (filtered, sorted, projected run lists; groups with aggregates; field catalog; dataset info).
//! It knows nothing of HTTP: the `http` module turns requests into these calls.

pub mod arrow_conv;
pub mod fields;
pub mod frame;
pub mod group;
pub mod load;
pub mod query;
pub mod runid;
pub mod table;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use self::group::{AggFunc, AggSpec, GroupQuery, GroupResult};
pub use self::query::{Filter, RunQuery, Selection, SortKey, Stability};
pub use self::table::RunTable;

/// The two run tables of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Domain {
    Llm,
    Diffusion,
}

impl Domain {
    pub const ALL: [Domain; 2] = [Domain::Llm, Domain::Diffusion];

    pub fn as_str(self) -> &'static str {
        match self {
            Domain::Llm => "llm",
            Domain::Diffusion => "diffusion",
        }
    }

    pub fn parse(s: &str) -> Option<Domain> {
        match s {
            "llm" => Some(Domain::Llm),
            "diffusion" => Some(Domain::Diffusion),
            _ => None,
        }
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything the engine can refuse. Parameter-level errors name the offending input and what
/// would have been accepted, so the HTTP layer can say so verbatim.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("unknown field '{name}' for {domain}")]
    UnknownField {
        domain: Domain,
        name: String,
        allowed: Vec<String>,
    },
    #[error("field '{name}' is not numeric")]
    NotNumeric { name: String, allowed: Vec<String> },
    #[error("{0}")]
    InvalidQuery(String),
    #[error("unknown run id '{0}'")]
    UnknownRun(String),
    #[error("cannot load dataset: {0}")]
    Load(String),
    #[error(transparent)]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error(transparent)]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Where a dataset came from (`GET /v1/datasets`).
#[derive(Debug, Clone)]
pub struct DatasetSource {
    /// Human-readable location, e.g. `local:/srv/data/sample`.
    pub location: String,
    /// Pinned revision (commit) for remote sources; `None` for a local directory.
    pub revision: Option<String>,
    /// Dataset root on the local file system, if any (raw paths resolve against it).
    pub root: Option<PathBuf>,
    /// Raw results files passed over while deriving rows from a raw tree, with the reason.
    pub skipped: Vec<(String, String)>,
    /// For a remote source: its raw files, through the raw cache.
    pub remote: Option<crate::store::cache::CachedStore>,
    /// Where derived per-run data (ITLs, output lengths, timelines) is persisted, if anywhere.
    pub derived: Option<crate::store::derived::DerivedStore>,
}

pub use crate::store::RawLocation;

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

/// One loaded snapshot: both run tables plus the DataFusion context they are registered in.
pub struct Dataset {
    /// Unique per loaded snapshot (process-wide counter): keys caches of derived answers.
    pub generation: u64,
    pub llm: RunTable,
    pub diffusion: RunTable,
    pub source: DatasetSource,
    pub loaded_at: SystemTime,
    /// Tables `llm_runs` and `diffusion_runs` (normalised, in default order) for SQL access.
    pub ctx: SessionContext,
    /// Raw paths of rows that leave the dataset root, in table order; never read.
    pub refused: Vec<RefusedPath>,
    refused_at: std::collections::HashMap<(Domain, usize, RawFile), usize>,
}

/// A fresh snapshot generation number.
pub fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
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

impl Dataset {
    pub fn table(&self, domain: Domain) -> &RunTable {
        match domain {
            Domain::Llm => &self.llm,
            Domain::Diffusion => &self.diffusion,
        }
    }

    /// A snapshot of two loaded tables from `source`, with every stored raw path checked
    /// against the source's root ([`crate::store::confine`]): a row whose path leaves it is kept
    /// and listed in `refused`, and its file is never read.
    pub fn new(
        llm: RunTable,
        diffusion: RunTable,
        source: DatasetSource,
        ctx: SessionContext,
    ) -> Self {
        let mut dataset = Dataset {
            generation: next_generation(),
            llm,
            diffusion,
            source,
            loaded_at: SystemTime::now(),
            ctx,
            refused: Vec::new(),
            refused_at: std::collections::HashMap::new(),
        };
        for domain in Domain::ALL {
            for file in [RawFile::Results, RawFile::Prometheus] {
                for row in 0..dataset.table(domain).len() {
                    let Some(stored) = dataset.stored_path(domain, row, file) else {
                        continue;
                    };
                    if let Err(reason) = dataset.confine(stored) {
                        let refused = RefusedPath {
                            domain,
                            run_id: dataset.table(domain).run_id(row).to_string(),
                            field: file.field(),
                            path: stored.to_string(),
                            reason: reason.to_string(),
                        };
                        tracing::warn!(run_id = %refused.run_id, field = refused.field, path = %refused.path, reason = %refused.reason, "raw path refused");
                        dataset
                            .refused_at
                            .insert((domain, row, file), dataset.refused.len());
                        dataset.refused.push(refused);
                    }
                }
            }
        }
        dataset
    }

    /// The raw path a row stores for `file`, when it is a non-empty string.
    fn stored_path(&self, domain: Domain, row: usize, file: RawFile) -> Option<&str> {
        let t = self.table(domain);
        let col = t.field_index(file.field())?;
        match t.column(col).get(row) {
            frame::Value::Str(s) if !s.is_empty() => Some(s),
            _ => None,
        }
    }

    /// Where the stored relative path `stored` is read from, if it stays inside the source's
    /// root: a key of the remote source, or a file under the local root (symlinks resolved).
    fn confine(&self, stored: &str) -> Result<Option<RawLocation>, crate::store::confine::Escape> {
        use crate::store::confine;
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

/// Handle shared by all requests. Reloading builds a new `Dataset` and swaps the `Arc`, so
/// requests in flight finish on the snapshot they started with.
pub struct Engine {
    current: std::sync::RwLock<Arc<Dataset>>,
}

impl Engine {
    pub fn new(dataset: Dataset) -> Self {
        Engine {
            current: std::sync::RwLock::new(Arc::new(dataset)),
        }
    }

    /// The snapshot to answer one request from.
    pub fn snapshot(&self) -> Arc<Dataset> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replace the served snapshot.
    pub fn swap(&self, dataset: Dataset) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(dataset);
    }
}
