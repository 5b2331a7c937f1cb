//! The one error type of the service layer.

use crate::engine::Domain;
use crate::store::FetchError;

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
