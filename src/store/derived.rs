//! Persisted derived data: each run's `RunDerived` as Arrow IPC (`raw::persist`) under
//! `derived/v<format>/` in the cache location (a directory or an object_store URL), named by a
//! fingerprint of the raw file it came from. A restart, or another replica sharing the cache
//! bucket, answers from it without reading `results.json` again.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use sha2::Digest;

use super::cache::CacheLocation;
use crate::engine::RawLocation;
use crate::raw::persist::FORMAT_VERSION;

/// Where derived files are kept. Cheap to clone.
#[derive(Clone)]
pub struct DerivedStore {
    store: Arc<dyn ObjectStore>,
    /// Bytes buffered before a part is written (see `put_with`).
    part: usize,
}

impl std::fmt::Debug for DerivedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DerivedStore({})", self.store)
    }
}

impl DerivedStore {
    /// Over `store`; `local` when it is a directory on this machine.
    pub fn new(store: Arc<dyn ObjectStore>, local: bool) -> DerivedStore {
        // A local directory takes parts of any size, so little is held while a file is written;
        // S3 wants parts of 5 MiB or more, so elsewhere object_store's default of 10 MiB.
        let part = if local { 1 << 20 } else { 10 << 20 };
        DerivedStore { store, part }
    }

    /// Open the cache location (creating a directory if needed).
    pub fn open(location: &CacheLocation) -> Result<DerivedStore, String> {
        let (store, _, local) = location.open()?;
        Ok(DerivedStore::new(store, local))
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

    /// Store what `write` writes, streamed through a bounded buffer of `part` bytes (so a large
    /// file is never held whole); atomic (readers see the whole file or none), and nothing is stored when
    /// `write` fails. Blocking: call it on the blocking pool.
    pub fn put_with(
        &self,
        fingerprint: &str,
        write: impl FnOnce(&mut dyn std::io::Write) -> Result<(), String>,
    ) -> Result<(), String> {
        use std::io::Write;
        let handle = tokio::runtime::Handle::current();
        let upload = object_store::buffered::BufWriter::with_capacity(
            self.store.clone(),
            Self::path(fingerprint),
            self.part,
        )
        // Two parts in flight at most (object_store's default is 8): what is held while a file
        // is written stays about two parts.
        .with_max_concurrency(2);
        let mut bridge = tokio_util::io::SyncIoBridge::new_with_handle(upload, handle.clone());
        let written = {
            let mut buffered = std::io::BufWriter::with_capacity(64 << 10, &mut bridge);
            write(&mut buffered).and_then(|()| buffered.flush().map_err(|e| e.to_string()))
        }
        .and_then(|()| bridge.shutdown().map_err(|e| e.to_string()));
        if written.is_err() {
            let mut upload = bridge.into_inner();
            let _ = handle.block_on(upload.abort());
        }
        written
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What `put_with` writes is read back whole; a write that fails leaves nothing, not even a
    /// partial or temporary file.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streamed_puts_are_whole_or_absent() {
        let dir = tempfile::tempdir().unwrap();
        let fs = object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap();
        let store = DerivedStore::new(Arc::new(fs), true);
        let big: Vec<u8> = (0..12_000_000u32).map(|i| (i % 253) as u8).collect();
        let (s, data) = (store.clone(), big.clone());
        tokio::task::spawn_blocking(move || {
            s.put_with("ab12", |out| {
                for piece in data.chunks(1 << 20) {
                    out.write_all(piece).map_err(|e| e.to_string())?;
                }
                Ok(())
            })
        })
        .await
        .unwrap()
        .unwrap();
        assert!(store.get("ab12").await.unwrap() == big);

        let s = store.clone();
        let failed = tokio::task::spawn_blocking(move || {
            s.put_with("cd34", |out| {
                out.write_all(&[7u8; 11 << 20]).map_err(|e| e.to_string())?;
                Err("disk on fire".to_string())
            })
        })
        .await
        .unwrap();
        assert_eq!(failed, Err("disk on fire".to_string()));
        assert!(store.get("cd34").await.is_none());
        let files: Vec<_> = walkdir::WalkDir::new(dir.path())
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| e.path().to_path_buf())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
    }
}
