//! mlenergy-server: an HTTP query service over the ML.ENERGY benchmark-v3 dataset.
//!
//! `engine` loads and queries the run summaries (no HTTP); `http` serves it; `raw` holds the
//! rules for raw benchmark results; `store` the remote sources and the raw cache; `config` holds
//! the command line.

pub mod config;
pub mod engine;
pub mod http;
pub mod pycompat;
pub mod rawfile;
pub mod rawtree;
pub mod service;
pub mod store;
