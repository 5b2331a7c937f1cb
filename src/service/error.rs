//! The one error type of the service layer.

use std::time::Duration;

use crate::engine::Domain;
use crate::engine::sql::SqlError;
use crate::store::FetchError;

/// What the service can refuse or fail with; the HTTP layer maps each kind to one status.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ServiceError {
    #[error("no {domain} run has the id '{run_id}'")]
    UnknownRun { domain: Domain, run_id: String },
    #[error("no measurement run has the id '{run_id}'")]
    UnknownMeasuredRun { run_id: String },
    /// The run has no raw file to read (none stored, refused, or missing).
    #[error("{detail}")]
    RawUnavailable { run_id: String, detail: String },
    /// The raw file is there but not usable (not JSON, or lacks what is needed).
    #[error("{detail}")]
    RawInvalid { run_id: String, detail: String },
    /// Fetching the raw file from a remote source failed.
    #[error("{error}")]
    Fetch { run_id: String, error: FetchError },
    /// A parameter the question does not take.
    #[error("unknown parameter '{parameter}'")]
    UnknownParameter {
        parameter: String,
        allowed: Vec<String>,
    },
    /// A parameter's value the question cannot read.
    #[error("{detail}")]
    InvalidParameter {
        parameter: String,
        detail: String,
        allowed: Option<Vec<String>>,
    },
    /// A field name, in a parameter, that the runs do not have.
    #[error("unknown field '{field}' in '{parameter}'")]
    UnknownField {
        parameter: String,
        field: String,
        allowed: Vec<String>,
    },
    /// The engine's refusal of a query (a field it does not have, or not numeric).
    #[error(transparent)]
    Engine(std::sync::Arc<crate::engine::EngineError>),
    /// An SQL query not answered: the gate was full, or the query failed.
    #[error(transparent)]
    Sql(std::sync::Arc<SqlFailure>),
    /// A request body whose values cannot be used (`field` names the member at fault, when
    /// there is one).
    #[error("{detail}")]
    InvalidBody {
        field: Option<String>,
        detail: String,
    },
    /// A leaderboard data file the served snapshot does not have (`kind`: task or model), and
    /// the files of its kind it has.
    #[error("no leaderboard {kind} file '{name}'")]
    UnknownLeaderboardFile {
        kind: &'static str,
        name: String,
        allowed: Vec<String>,
    },
    /// A dataset revision that cannot be answered from: none such, its files not the published
    /// schema, or its source failed.
    #[error("{detail}")]
    Revision {
        revision: String,
        problem: RevisionProblem,
        detail: String,
    },
    /// No place for a costly question: all are taken (try again shortly).
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    Internal(String),
}

/// Why a revision cannot be answered from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevisionProblem {
    /// The source has no such revision.
    Unknown,
    /// Its files are not the published schema.
    Malformed,
    /// The source failed while loading it (unreachable, refused, timed out).
    Unavailable,
}

impl From<crate::engine::EngineError> for ServiceError {
    fn from(e: crate::engine::EngineError) -> Self {
        ServiceError::Engine(std::sync::Arc::new(e))
    }
}

/// Why a query was not answered: the gate was full, or the query failed.
#[derive(Debug, thiserror::Error)]
pub enum SqlFailure {
    #[error(
        "{running} queries are running and {waiting} waiting, the most this server takes; try again shortly"
    )]
    Busy {
        running: usize,
        waiting: usize,
        retry_after: Duration,
    },
    #[error(transparent)]
    Query(#[from] SqlError),
}
