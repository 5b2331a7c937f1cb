//! Persisted derived data: each run's `RunDerived` as Arrow IPC (`rawfile::ipc`) under
//! `derived/v<format>/` in the cache location (a directory or an object_store URL), named by a
//! fingerprint of the raw file it came from. A restart, or another replica sharing the cache
//! bucket, answers from it without reading `results.json` again. The files are listed in the
//! catalog and count toward the cache's bound (`bound::Bound`) with the raw files; files of other
//! format versions are removed at start.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use sha2::Digest;

use super::bound::Bound;
use super::catalog::Entry;
use super::location::RawLocation;

/// Where derived files are kept. Cheap to clone.
#[derive(Clone)]
pub struct DerivedStore {
    store: Arc<dyn ObjectStore>,
    /// Bytes buffered before a part is written (see `put_with`).
    part: usize,
    /// The catalog and bound the files are kept under (none: unbounded, unlisted).
    bound: Option<Arc<Bound>>,
    /// Format version of the files (the writer's): they live under `derived/v<format>/`.
    format: u32,
    /// Where the store is (a directory or URL), for `/v1/cache`.
    location: Option<String>,
}

impl std::fmt::Debug for DerivedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DerivedStore({})", self.store)
    }
}

impl DerivedStore {
    /// Over `store`; `local` when it is a directory on this machine; files listed and bounded by
    /// `bound` (over the same store); `format` is the version of what is written and read.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        local: bool,
        bound: Option<Arc<Bound>>,
        format: u32,
    ) -> DerivedStore {
        // A local directory takes parts of any size, so little is held while a file is written;
        // S3 wants parts of 5 MiB or more, so elsewhere object_store's default of 10 MiB.
        let part = if local { 1 << 20 } else { 10 << 20 };
        DerivedStore {
            store,
            part,
            bound,
            format,
            location: None,
        }
    }

    /// The same store, described as being at `location` (a directory or URL).
    pub fn with_location(mut self, location: &str) -> Self {
        self.location = Some(location.to_string());
        self
    }

    /// Where persisted derived data is: the store's location and this format's folder in it.
    pub fn location(&self) -> Option<String> {
        self.location
            .as_ref()
            .map(|l| format!("{}/derived/v{}", l.trim_end_matches('/'), self.format))
    }

    pub fn bound(&self) -> Option<&Arc<Bound>> {
        self.bound.as_ref()
    }

    fn path(&self, fingerprint: &str) -> StorePath {
        StorePath::from(format!(
            "derived/v{}/{}/{fingerprint}.arrow",
            self.format,
            &fingerprint[..2]
        ))
    }

    /// Note a use of the file at `path`, `size` bytes: the most recent in the catalog, listed
    /// now if it was not (written by another replica, or before it was listed). A catalog
    /// failure is logged; the file is still used.
    async fn used(&self, path: &StorePath, size: usize) {
        let Some(bound) = &self.bound else {
            return;
        };
        let key = path.as_ref();
        let noted = match bound.catalog().touch(key).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                let entry = Entry {
                    key: key.to_string(),
                    size: size as u64,
                    sha256: None,
                };
                bound.admit(&entry).await
            }
            Err(e) => Err(e.into()),
        };
        if let Err(e) = noted {
            tracing::warn!(key, error = %e, "cannot list persisted derived data in the catalog");
        }
    }

    /// The stored bytes, if any. A read failure is logged and treated as absent (the raw file is
    /// then parsed again).
    pub async fn get(&self, fingerprint: &str) -> Option<Bytes> {
        let path = self.path(fingerprint);
        let got = match self.store.get(&path).await {
            Ok(g) => g.bytes().await,
            Err(e) => Err(e),
        };
        match got {
            Ok(b) => {
                self.used(&path, b.len()).await;
                Some(b)
            }
            Err(object_store::Error::NotFound { .. }) => None,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read persisted derived data");
                None
            }
        }
    }

    /// Store what `write` writes, streamed through a bounded buffer of `part` bytes (so a large
    /// file is never held whole); atomic (readers see the whole file or none), and nothing is stored when
    /// `write` fails. The file is then listed as the most recently used, and older files evicted
    /// beyond the bound. Blocking: call it on the blocking pool.
    pub fn put_with(
        &self,
        fingerprint: &str,
        write: impl FnOnce(&mut dyn std::io::Write) -> Result<(), String>,
    ) -> Result<(), String> {
        use std::io::Write;
        let handle = tokio::runtime::Handle::current();
        let path = self.path(fingerprint);
        let upload = object_store::buffered::BufWriter::with_capacity(
            self.store.clone(),
            path.clone(),
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
            return written;
        }
        if let Some(bound) = &self.bound {
            handle
                .block_on(async {
                    let meta = self.store.head(&path).await?;
                    let entry = Entry {
                        key: path.to_string(),
                        size: meta.size,
                        sha256: None,
                    };
                    bound.admit(&entry).await
                })
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Remove the file stored under `fingerprint` (an eviction): its size when there was one.
    pub async fn evict(&self, fingerprint: &str) -> Result<Option<u64>, super::FetchError> {
        let path = self.path(fingerprint);
        let size = match self.store.head(&path).await {
            Ok(meta) => meta.size,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        match &self.bound {
            Some(bound) => bound.remove(path.as_ref()).await?,
            None => match self.store.delete(&path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            },
        }
        Ok(Some(size))
    }

    /// Remove a stored file that could not be decoded.
    pub async fn remove(&self, fingerprint: &str) {
        let path = self.path(fingerprint);
        match &self.bound {
            Some(bound) => {
                if let Err(e) = bound.remove(path.as_ref()).await {
                    tracing::warn!(key = %path, error = %e, "cannot remove persisted derived data");
                }
            }
            None => {
                let _ = self.store.delete(&path).await;
            }
        }
    }

    /// Remove the files of other format versions (`derived/v<n>/` for another n), which are
    /// never read: how many.
    pub async fn sweep_other_versions(&self) -> usize {
        use futures::TryStreamExt;
        let current = format!("v{}", self.format);
        let root = StorePath::from("derived");
        let Ok(listed) = self.store.list_with_delimiter(Some(&root)).await else {
            return 0;
        };
        let mut removed = 0;
        for prefix in listed.common_prefixes {
            if prefix.filename() == Some(current.as_str()) {
                continue;
            }
            let Ok(files) = self.store.list(Some(&prefix)).try_collect::<Vec<_>>().await else {
                continue;
            };
            for f in files {
                let gone = match &self.bound {
                    Some(bound) => bound.remove(f.location.as_ref()).await.is_ok(),
                    None => matches!(
                        self.store.delete(&f.location).await,
                        Ok(()) | Err(object_store::Error::NotFound { .. })
                    ),
                };
                removed += usize::from(gone);
            }
        }
        removed
    }
}

/// A name for the content of a raw file: for a remote source its cache key (the hub's includes
/// the pinned commit), for a local file its canonical path, size and modification time. `None`
/// when a local file cannot be inspected.
pub fn fingerprint(loc: &RawLocation) -> Option<String> {
    let text = match loc {
        RawLocation::Remote(store, key) => format!("remote\n{}", store.key(key)),
        RawLocation::Local { path, .. } => {
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
        let store = DerivedStore::new(Arc::new(fs), true, None, 3);
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

    /// Derived files are listed in the catalog and evicted least recently used first beyond the
    /// bound; a file nobody listed is listed when used; files of other format versions are swept.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn derived_files_are_bounded_with_the_cache() {
        use crate::store::catalog::Catalog;

        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn ObjectStore> =
            Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let catalog = Catalog::open("sqlite::memory:").await.unwrap();
        let bound = Arc::new(Bound::new(fs.clone(), catalog.clone(), 1_000_000));
        let store = DerivedStore::new(fs.clone(), true, Some(bound.clone()), 3);
        let put = |fp: &'static str, n: usize| {
            let s = store.clone();
            async move {
                tokio::task::spawn_blocking(move || {
                    s.put_with(fp, |out| {
                        out.write_all(&vec![1u8; n]).map_err(|e| e.to_string())
                    })
                })
                .await
                .unwrap()
                .unwrap()
            }
        };
        let on_disk = |fp: &str| dir.path().join(store.path(fp).as_ref()).exists();
        put("aa01", 400_000).await;
        put("bb02", 400_000).await;
        assert_eq!(catalog.totals().await.unwrap(), (2, 800_000));
        // Used, so now more recent than bb02.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        assert_eq!(store.get("aa01").await.unwrap().len(), 400_000);
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        put("cc03", 300_000).await;
        assert!(!on_disk("bb02") && on_disk("aa01") && on_disk("cc03"));
        assert_eq!(catalog.totals().await.unwrap(), (2, 700_000));
        assert_eq!(bound.evictions(), 1);
        assert!(store.get("bb02").await.is_none());

        // Written by another replica (not listed here): listed, and so bounded, once used.
        let other = store.path("dd04");
        fs.put(&other, vec![2u8; 200_000].into()).await.unwrap();
        assert_eq!(catalog.totals().await.unwrap(), (2, 700_000));
        assert!(store.get("dd04").await.is_some());
        assert_eq!(catalog.totals().await.unwrap(), (3, 900_000));
        store.remove("dd04").await;
        assert!(!on_disk("dd04"));
        assert_eq!(catalog.totals().await.unwrap(), (2, 700_000));

        // Files of other format versions are removed, and only those.
        for old in ["derived/v2/ee/ee05.arrow", "derived/v1/x.arrow"] {
            fs.put(&StorePath::from(old), vec![3u8; 10].into())
                .await
                .unwrap();
        }
        assert_eq!(store.sweep_other_versions().await, 2);
        assert!(!dir.path().join("derived/v2/ee/ee05.arrow").exists());
        assert!(!dir.path().join("derived/v1/x.arrow").exists());
        assert!(on_disk("aa01") && on_disk("cc03"));
        assert_eq!(store.sweep_other_versions().await, 0);
    }
}
