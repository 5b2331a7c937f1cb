//! mlenergy-server: an HTTP query service over the ML.ENERGY benchmark-v3 dataset.
//!
//! The workspace's lower layers are crates of their own, so Cargo keeps them below: `engine`
//! (crates/engine), `peer` (crates/peer), `rawfile` (crates/rawfile, with path confinement) and
//! `pycompat` (crates/pycompat), re-exported here under those names. This crate's own modules
//! import only the ones below them (`tests/it/layers.rs` checks it):
//!
//! - `config` (with the binary's `main`): the command line and environment.
//! - `server`: the front ends on one listener: HTTP's router with MCP mounted on it.
//! - `mcp`: the Model Context Protocol for AI assistants, over HTTP's transport, asking the
//!   service's door.
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
//! - `chart` (a leaf beside them): SVG charts drawn from plain series, for the service's door.

pub mod chart;
pub mod config;
#[cfg(feature = "flight")]
pub mod flight;
pub mod http;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "pg")]
pub mod pg;
pub mod rawtree;
pub mod server;
pub mod service;
pub mod store;

pub use mlenergy_engine as engine;
pub use mlenergy_peer as peer;
pub use mlenergy_pycompat as pycompat;
pub use mlenergy_rawfile as rawfile;
