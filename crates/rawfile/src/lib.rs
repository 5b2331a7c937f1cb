//! Reading one run's raw `results.json` into what the raw endpoints serve (`RunDerived`: output
//! lengths with success flags, smoothed ITL samples, timeline series), with the toolkit's rules
//! over it (docs/toolkit.md §11), and its persisted form (Arrow IPC).
//!
//! Crate `mlenergy-rawfile`: depends only on `mlenergy-pycompat` of the workspace (Cargo enforces
//! it). Nothing here knows HTTP, run tables or where a file comes from: callers hand in a reader
//! or a file, and confine a path taken from data to its root with [`confine`].

pub mod common_shapes;
pub mod confine;
pub mod derived;
pub mod error;
pub mod ipc;
pub mod itl;
pub mod path;
pub mod python_values;
pub mod reader;
pub mod timeline;
pub mod window;

pub use derived::{ItlSamples, ResultsList, RunDerived, itl_samples, output_lengths};
pub use error::RawError;
pub use reader::{read_run, read_run_at, read_run_fast};
