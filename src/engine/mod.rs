//! The query engine: loads the run summaries through DataFusion and answers typed questions
//! (filtered, sorted, projected run lists; groups with aggregates; field catalog; dataset info).
//! It knows nothing of HTTP: the `http` module turns requests into these calls.

pub mod arrow_conv;
pub mod fields;
pub mod frame;
pub mod group;
pub mod load;
pub mod numeric;
pub mod query;
pub mod runid;
pub mod sample;
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

/// Where a run's raw file is read from.
#[derive(Debug, Clone)]
pub enum RawLocation {
    /// A file on this machine (a local dataset, or an absolute stored path).
    Local(PathBuf),
    /// A path in a remote source, fetched through the raw cache.
    Remote(crate::store::cache::CachedStore, String),
}

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
}

/// A fresh snapshot generation number.
pub fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A raw file of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawFile {
    Results,
    Prometheus,
}

impl Dataset {
    pub fn table(&self, domain: Domain) -> &RunTable {
        match domain {
            Domain::Llm => &self.llm,
            Domain::Diffusion => &self.diffusion,
        }
    }

    /// Where a run's raw file is, resolved like the toolkit's `from_directory` (pathlib): a
    /// relative stored path is joined onto the dataset root (or looked up in the remote source),
    /// an absolute one replaces it. `None` when the path is null or empty, the domain has no such
    /// file, or a relative path has nothing to resolve against.
    pub fn raw_location(&self, domain: Domain, row: usize, file: RawFile) -> Option<RawLocation> {
        let t = self.table(domain);
        let col = t.field_index(match file {
            RawFile::Results => "results_path",
            RawFile::Prometheus => "prometheus_path",
        })?;
        let frame::Value::Str(stored) = t.column(col).get(row) else {
            return None;
        };
        if stored.is_empty() {
            return None;
        }
        let p = std::path::Path::new(stored);
        if p.is_absolute() {
            return Some(RawLocation::Local(p.to_path_buf()));
        }
        if let Some(remote) = &self.source.remote {
            let key = stored.replace('\\', "/");
            return Some(RawLocation::Remote(remote.clone(), key));
        }
        self.source
            .root
            .as_ref()
            .map(|r| RawLocation::Local(r.join(p)))
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
