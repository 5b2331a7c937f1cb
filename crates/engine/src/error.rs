//! The one error type of the engine.

use super::domain::Domain;

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
    #[cfg(feature = "datafusion")]
    #[error(transparent)]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error(transparent)]
    Arrow(#[from] arrow::error::ArrowError),
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
