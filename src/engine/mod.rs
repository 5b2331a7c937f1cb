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

/// The two run tables of one loaded dataset, plus the DataFusion context they are registered in.
pub struct Dataset {
    pub llm: RunTable,
    pub diffusion: RunTable,
    /// Tables `llm_runs` and `diffusion_runs` (normalised, in default order). No query reads
    /// them yet: they are registered for the SQL endpoint (issue 17), which will use this context.
    pub ctx: SessionContext,
}

impl Dataset {
    pub fn table(&self, domain: Domain) -> &RunTable {
        match domain {
            Domain::Llm => &self.llm,
            Domain::Diffusion => &self.diffusion,
        }
    }
}
