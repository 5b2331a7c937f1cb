//! Fitted models of the toolkit (docs/toolkit.md §12): the logistic curve of a batch sweep and
//! the log-normal mixture of inter-token latencies. Pure numerics, no HTTP and no I/O.

pub(crate) mod fit_memo;
pub mod itl_mixture;
pub mod logistic;
pub mod plan;
pub mod predict;
pub mod sweep;

pub use itl_mixture::ItlMixtureModel;
pub use logistic::{FitQuality, LogisticModel};
pub use sweep::SweepQuery;
