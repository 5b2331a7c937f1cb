//! Persisted derived data: each run's `RunDerived` as Arrow IPC (`raw::persist`) under
//! `derived/v<format>/` in the cache location (a directory or an object_store URL), named by a
//! fingerprint of the raw file it came from. A restart, or another replica sharing the cache
//! bucket, answers from it without reading `results.json` again.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use sha2::Digest;

use super::cache::CacheLocation;
use crate::engine::RawLocation;
use crate::raw::persist::FORMAT_VERSION;

/// Where derived files are kept. Cheap to clone.
#[derive(Clone)]
pub struct DerivedStore {
    store: Arc<dyn ObjectStore>,
}

impl std::fmt::Debug for DerivedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DerivedStore({})", self.store)
    }
}

impl DerivedStore {
    pub fn new(store: Arc<dyn ObjectStore>) -> DerivedStore {
        DerivedStore { store }
    }

    /// Open the cache location (creating a directory if needed).
    pub fn open(location: &CacheLocation) -> Result<DerivedStore, String> {
        let (store, _, _) = location.open()?;
        Ok(DerivedStore { store })
    }

    fn path(fingerprint: &str) -> StorePath {
        StorePath::from(format!(
            "derived/v{FORMAT_VERSION}/{}/{fingerprint}.arrow",
            &fingerprint[..2]
        ))
    }

    /// The stored bytes, if any. A read failure is logged and treated as absent (the raw file is
    /// then parsed again).
    pub async fn get(&self, fingerprint: &str) -> Option<Bytes> {
        let got = match self.store.get(&Self::path(fingerprint)).await {
            Ok(g) => g.bytes().await,
            Err(e) => Err(e),
        };
        match got {
            Ok(b) => Some(b),
            Err(object_store::Error::NotFound { .. }) => None,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read persisted derived data");
                None
            }
        }
    }

    /// Store `bytes` (an atomic put: readers see the whole file or none).
    pub async fn put(&self, fingerprint: &str, bytes: Vec<u8>) -> Result<(), String> {
        self.store
            .put(&Self::path(fingerprint), PutPayload::from(bytes))
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Remove a stored file that could not be decoded.
    pub async fn remove(&self, fingerprint: &str) {
        let _ = self.store.delete(&Self::path(fingerprint)).await;
    }
}

/// A name for the content of a raw file: for a remote source its cache key (the hub's includes
/// the pinned commit), for a local file its canonical path, size and modification time. `None`
/// when a local file cannot be inspected.
pub fn fingerprint(loc: &RawLocation) -> Option<String> {
    let text = match loc {
        RawLocation::Remote(store, key) => format!("remote\n{}", store.key(key)),
        RawLocation::Local(path) => {
            let meta = std::fs::metadata(path).ok()?;
            let modified = meta
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?;
            let canonical = std::fs::canonicalize(path).ok()?;
            format!(
                "local\n{}\n{}\n{}",
                canonical.display(),
                meta.len(),
                modified.as_nanos()
            )
        }
    };
    Some(hex::encode(sha2::Sha256::digest(text.as_bytes())))
}
