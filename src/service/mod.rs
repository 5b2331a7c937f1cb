//! The service layer: what a request is answered from, with no HTTP in it. It owns the snapshot
//! being served ([`snapshot`], opened by [`open`]), each run's derived raw data with its memory
//! cache, single flight and persisting ([`derived`], over [`raw_files`]), and the prefetch jobs
//! ([`prefetch`]).
//!
//! Layer: below `http` (and `main`/`config`), above `engine`, `build`, `rawfile` and `store`,
//! which it uses; it imports nothing above it.

pub mod derived;
pub mod open;
pub mod prefetch;
pub mod raw_files;
pub mod snapshot;

use std::sync::Arc;

use crate::engine::Domain;
use crate::store::FetchError;
use crate::store::catalog::Catalog;

pub use self::snapshot::{NoRawFile, RawFile, RefusedPath, Snapshot, Snapshots, Source};

/// What the service can refuse or fail with; the HTTP layer maps each kind to one status.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ServiceError {
    #[error("no {domain} run has the id '{run_id}'")]
    UnknownRun { domain: Domain, run_id: String },
    /// The run has no raw file to read (none stored, refused, or missing).
    #[error("{detail}")]
    RawUnavailable { run_id: String, detail: String },
    /// The raw file is there but not usable (not JSON, or lacks what is needed).
    #[error("{detail}")]
    RawInvalid { run_id: String, detail: String },
    /// Fetching the raw file from a remote source failed.
    #[error("{error}")]
    Fetch { run_id: String, error: FetchError },
    #[error("{0}")]
    Internal(String),
}

/// Everything requests are answered from. Cheap to share (`Arc`).
pub struct Service {
    snapshots: Snapshots,
    /// Derived raw data of runs (ITLs, output lengths, timelines).
    pub derived: derived::DerivedData,
    /// Prefetch jobs.
    pub prefetch: prefetch::Prefetch,
    /// The catalog database (raw cache index, prefetch jobs).
    pub catalog: Catalog,
}

impl Service {
    pub fn new(snapshot: Snapshot, catalog: Catalog) -> Self {
        Service {
            snapshots: Snapshots::new(snapshot),
            derived: derived::DerivedData::new(derived::DerivedData::MEMORY_BYTES),
            prefetch: prefetch::Prefetch::new(catalog.clone()),
            catalog,
        }
    }

    /// The snapshot to answer one request from.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshots.current()
    }

    /// Replace the served snapshot; requests in flight finish on the one they started with.
    pub fn swap(&self, snapshot: Snapshot) {
        self.snapshots.swap(snapshot)
    }
}
