//! The bound on the cache store: every file the catalog lists there (raw files of remote sources
//! and persisted derived data alike) counts toward `--cache-max-bytes`, and least recently used
//! files are removed beyond it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};

use super::catalog::{Catalog, Entry};
use super::fetch::FetchError;

/// The cache store, its index and its bound. Shared by the raw cache and the derived store of a
/// snapshot.
pub struct Bound {
    store: Arc<dyn ObjectStore>,
    catalog: Catalog,
    max_bytes: u64,
    evicting: tokio::sync::Mutex<()>,
    evictions: AtomicU64,
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound")
            .field("store", &self.store.to_string())
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

impl Bound {
    pub fn new(store: Arc<dyn ObjectStore>, catalog: Catalog, max_bytes: u64) -> Bound {
        Bound {
            store,
            catalog,
            max_bytes,
            evicting: tokio::sync::Mutex::new(()),
            evictions: AtomicU64::new(0),
        }
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Files removed to stay within the bound since start.
    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// Record `e`, just written to the store, as its most recently used file, then remove least
    /// recently used others until the total is within the bound (`e` itself is kept).
    pub async fn admit(&self, e: &Entry) -> Result<(), FetchError> {
        self.catalog.insert(e).await?;
        self.evict(&e.key).await
    }

    /// Remove a file and its row.
    pub async fn remove(&self, key: &str) -> Result<(), FetchError> {
        match self.store.delete(&StorePath::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(self.catalog.remove(key).await?)
    }

    async fn evict(&self, keep: &str) -> Result<(), FetchError> {
        let _one_at_a_time = self.evicting.lock().await;
        let (_, mut total) = self.catalog.totals().await?;
        while total > self.max_bytes {
            let victims = self.catalog.least_recent(keep, 32).await?;
            if victims.is_empty() {
                break;
            }
            for v in victims {
                if total <= self.max_bytes {
                    break;
                }
                self.remove(&v.key).await?;
                total = total.saturating_sub(v.size);
                self.evictions.fetch_add(1, Ordering::Relaxed);
                tracing::info!(key = %v.key, bytes = v.size, "evicted from the cache");
            }
        }
        Ok(())
    }
}
