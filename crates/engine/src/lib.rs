//! The query engine: loads the run summaries through DataFusion and answers typed questions
//! (filtered, sorted, projected run lists; groups with aggregates; field catalog; dataset info).
//! It knows nothing of HTTP, of raw files or of where the data came from: the service layer
//! opens sources into a [`Dataset`], and `http` turns requests into these calls.
//!
//! Crate `mlenergy-engine`: depends only on `mlenergy-pycompat` of the workspace (Cargo enforces
//! it); no HTTP (utoipa only for the `openapi` feature's schemas). DataFusion only with the
//! `datafusion` feature (on by default): loading and SQL; the rest is arrow and parquet.
//! This file only declares and re-exports.

pub mod arrow_conv;
#[cfg(feature = "datafusion")]
pub mod dataset;
pub mod domain;
pub mod error;
pub mod fields;
pub mod frame;
pub mod frontier;
pub mod group;
#[cfg(feature = "datafusion")]
pub mod load;
pub mod models;
pub mod parquet_runs;
pub mod query;
pub mod rating;
pub mod runid;
#[cfg(feature = "datafusion")]
pub mod sql;
#[cfg(feature = "datafusion")]
pub mod sql_bounds;
#[cfg(feature = "datafusion")]
pub mod sql_functions;
#[cfg(feature = "datafusion")]
pub mod sql_prepared;
#[cfg(feature = "datafusion")]
mod sql_scan;
pub mod stats;
pub mod table;

#[cfg(feature = "datafusion")]
pub use self::dataset::Dataset;
pub use self::domain::Domain;
pub use self::error::EngineError;
pub use self::frontier::{BestQuery, Chosen, FrontierQuery};
pub use self::group::{AggFunc, AggSpec, GroupQuery, GroupResult};
pub use self::query::{Filter, RunQuery, Selection, SortKey, Stability};
pub use self::table::RunTable;
