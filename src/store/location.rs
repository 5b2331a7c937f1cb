//! Where a run's raw file is read from.

use std::path::PathBuf;

use super::cache::CachedStore;

/// Where a run's raw file is read from. Built only from paths that passed [`super::confine`].
#[derive(Debug, Clone)]
pub enum RawLocation {
    /// A file of a dataset on this machine: `path` is `root` joined with the stored relative
    /// path. It is checked again against `root` when opened (a symlink may have changed since).
    Local { root: PathBuf, path: PathBuf },
    /// A key in a remote source, fetched through the raw cache.
    Remote(CachedStore, String),
}
