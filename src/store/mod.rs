//! Where the data comes from and the raw cache in front of it.
//!
//! `--data` names a local directory (read in place), the Hugging Face dataset
//! (`hf://datasets/ORG/NAME[@REVISION]`, revision pinned to a commit at start) or an object_store
//! URL (`s3://`, `gs://`, `az://`, `http(s)://`, `file://`). Remote sources fetch only the parquet
//! summaries at start; raw files are fetched on first use through [`cache::CachedStore`], an
//! `ObjectStore` decorator that keeps them in a local directory (or a bucket) indexed by the
//! [`catalog::Catalog`]. Persisted derived data ([`derived::DerivedStore`]) lives in the same
//! place, and both count toward one bound ([`bound::Bound`]).
//!
//! Layer: the lowest above `pycompat`; imports nothing else of the crate. This file only declares
//! and re-exports.

pub mod bound;
pub mod cache;
pub mod catalog;
pub use mlenergy_rawfile::confine;
pub mod derived;
pub mod fetch;
pub mod hub;
pub mod location;
pub mod object_source;

pub use self::fetch::{Download, FetchError, FetchOptions, Upstream};
pub use self::location::RawLocation;
pub use self::object_source::StoreUpstream;
