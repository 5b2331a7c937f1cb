//! The service layer: what a request is answered from, with no HTTP in it. Its door ([`ask`]) is
//! where every front end asks its questions: each declared once, read by one grammar, answered
//! into one `Answer` written by one encoder ([`encode`]) and kept in the answer cache. Its catalog
//! ([`catalog`]) says what it holds. It owns the snapshot being served ([`snapshot`], opened by [`open`]), each run's derived raw data with
//! its memory cache, single flight and persisting ([`derived`], over [`raw_files`]), the prefetch
//! jobs ([`prefetch`]), fitted models ([`fits`]), and the leaderboard's files ([`leaderboard`])
//! with their compressed forms ([`coding`]).
//!
//! Layer: below the front ends (`http`, `mcp`, `pg`, `flight`) and `server`/`config`, above
//! `engine`, `rawtree`, `rawfile` and `store`, which it uses; it imports nothing above it. This
//! file only declares and re-exports.

pub mod ask;
pub mod catalog;
pub mod coding;
pub mod croissant;
pub mod derived;
pub mod encode;
pub mod error;
pub mod fits;
pub mod handle;
pub mod leaderboard;
pub mod machinery;
pub mod measurements;
pub mod mirror;
pub mod open;
pub mod prefetch;
pub mod raw_files;
pub mod reload;
pub mod revisions;
pub mod snapshot;
pub mod sql;
pub mod sql_tables;
pub mod static_site;

pub use self::error::{RevisionProblem, ServiceError};
pub use self::handle::{Service, ServiceOptions};
pub use self::snapshot::{NoRawFile, RawFile, RefusedPath, Snapshot, Snapshots, Source};
