//! mlenergy-server: an HTTP query service over the ML.ENERGY benchmark-v3 dataset.
//!
//! Layers, each importing only the ones below it (`tests/it/layers.rs` checks it):
//!
//! - `config` (with the binary's `main`): the command line and environment.
//! - `http`: axum; extract the request, call the service, encode the answer. Beside it `pg`
//!   (the PostgreSQL wire protocol) and `flight` (Arrow Flight SQL), over the service's SQL.
//! - `service`: the snapshot being served, derived raw data (cache, single flight, persisting),
//!   prefetch jobs; opening a `--data` source.
//! - `engine`: run tables, filters, sorting, groups, the field catalog. Beside it `rawtree`: a raw
//!   benchmark tree to run rows to a compiled directory (`build`, `--data raw:`, `sample`).
//!   Beside them `peer`: other tools' measurements (LLM Energy Measure, IPW) read into one
//!   normalised schema (`import`, `--import`).
//! - `rawfile`: reading one results.json into what the raw endpoints serve.
//! - `store`: sources (local, hub, object store), the raw cache, the catalog, path confinement.
//! - `pycompat`: numpy- and Python-exact numerics, formatting and value rules.
//! - `chart` (a leaf beside them): SVG charts drawn from plain series, for `http`.

pub mod chart;
pub mod config;
pub mod engine;
pub mod flight;
pub mod http;
pub mod peer;
pub mod pg;
pub mod pycompat;
pub mod rawfile;
pub mod rawtree;
pub mod service;
pub mod store;
