//! The one error type of reading a results.json.

/// Why a run's raw data cannot be produced.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RawError {
    /// The file is not there.
    #[error("raw file not found: {0}")]
    NotFound(String),
    /// The file is there but is not JSON or cannot be read.
    #[error("cannot read {path}: {detail}")]
    Unreadable { path: String, detail: String },
    /// The content lacks something the computation requires (the toolkit's ValueError).
    #[error("{0}")]
    Content(String),
}
