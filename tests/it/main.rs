//! The integration suites, linked into one test binary: each suite links the whole stack
//! (DataFusion, sqlx, object_store), so one binary instead of nine saves minutes of linking and
//! gigabytes of disk. Run one suite with `cargo test --test it api::`.

mod common;

mod api;
mod binary;
mod catalog;
mod charts;
mod confine;
mod connections;
mod door;
mod errors;
mod explore;
mod fleet;
mod formats;
mod frontier;
mod guard;
mod hints;
mod hostile_sql;
mod hub;
mod layers;
mod leaderboard;
mod load;
#[cfg(feature = "mcp")]
mod machinery;
#[cfg(feature = "mcp")]
mod mcp;
mod measurements;
mod metrics;
mod models;
mod openapi;
mod predict;
mod properties;
mod rating;
mod reference;
mod reload;
mod sample;
mod sql;
mod transport;
mod ui;
