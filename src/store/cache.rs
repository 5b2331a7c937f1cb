//! The raw cache: an `ObjectStore` decorator that serves a remote source's files from a cache
//! store (a local directory by default, or a bucket shared by several replicas), fetching each
//! file from upstream on first use.
//!
//! - Single flight: concurrent requests for one file share one upstream GET, in one process by a
//!   shared future, across replicas that share the cache store and catalog by a fetch lease in the
//!   catalog (taken before the download, renewed while it runs, released once the file is listed;
//!   a replica that finds it held waits for the file, and takes the lease over once it expires,
//!   which is how a replica that died mid-download is replaced).
//! - Atomic, verified writes: the download goes through a multipart upload (a staging file renamed
//!   into place for a directory) that is completed only when the byte count, and the SHA-256 when
//!   the source gives one, match; otherwise it is aborted and nothing is left behind.
//! - Bounded: after each new file, least recently used files (raw or persisted derived data) are
//!   evicted until the total is at most the bound (`bound::Bound`; the file just fetched is kept).
//! - The index (key, size, checksum, last use) lives in the catalog database, so a restart knows
//!   what is cached and serves it without upstream requests.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt, Shared};
use futures::stream::{BoxStream, StreamExt};
use object_store::path::Path as StorePath;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, WriteMultipart,
};
use sha2::{Digest, Sha256};

use super::bound::Bound;
use super::catalog::Entry;
use super::fetch::{Download, FetchError, Upstream};

/// Counters of cache use since start.
#[derive(Debug, Default)]
pub struct CacheStats {
    /// Files served from the cache.
    pub hits: AtomicU64,
    /// Files that had to be fetched.
    pub misses: AtomicU64,
    /// Bytes written to the cache from upstream.
    pub bytes_fetched: AtomicU64,
    /// Downloads that failed (nothing was cached).
    pub failures: AtomicU64,
    /// Callers that joined a download another caller had started (single flight) instead of
    /// starting their own.
    pub single_flight_waits: AtomicU64,
    /// Failed downloads by `FetchError::kind`, in `FetchError::KINDS` order.
    pub failures_by_kind: [AtomicU64; FetchError::KINDS.len()],
    /// Downloads that found another replica's fetch lease on their file and waited for it.
    pub lease_waits: AtomicU64,
}

type Flight = Shared<BoxFuture<'static, Result<Entry, FetchError>>>;

struct Inner {
    upstream: Arc<dyn Upstream>,
    namespace: String,
    cache: Arc<dyn ObjectStore>,
    cache_desc: String,
    /// The cache directory, when the cache is one: cached files are checked to resolve inside it.
    local_root: Option<std::path::PathBuf>,
    bound: Arc<Bound>,
    timeout: Duration,
    /// How long a fetch lease lasts unless renewed (renewed every third of it while downloading).
    lease_ttl: Duration,
    inflight: Mutex<HashMap<String, Flight>>,
    stats: CacheStats,
}

/// A source's files through the cache. Cheap to clone.
#[derive(Clone)]
pub struct CachedStore {
    inner: Arc<Inner>,
}

impl fmt::Debug for CachedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedStore")
            .field("upstream", &self.inner.upstream)
            .field("cache", &self.inner.cache_desc)
            .field("max_bytes", &self.inner.bound.max_bytes())
            .finish()
    }
}

impl fmt::Display for CachedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CachedStore({} in {})",
            self.inner.namespace, self.inner.cache_desc
        )
    }
}

/// Where the cache keeps files.
pub enum CacheLocation {
    /// A local directory (created if missing).
    Dir(std::path::PathBuf),
    /// An object_store URL (`s3://bucket/prefix`, `file:///...`).
    Url(String),
}

impl CacheLocation {
    pub fn parse(spec: &str) -> CacheLocation {
        if spec.contains("://") {
            CacheLocation::Url(spec.to_string())
        } else {
            CacheLocation::Dir(spec.into())
        }
    }

    /// The store, a description, and whether it is a local directory.
    pub fn open(&self) -> Result<(Arc<dyn ObjectStore>, String, bool), String> {
        match self {
            CacheLocation::Dir(d) => {
                std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
                let fs = object_store::local::LocalFileSystem::new_with_prefix(d)
                    .map_err(|e| format!("{}: {e}", d.display()))?
                    .with_automatic_cleanup(true);
                Ok((Arc::new(fs), d.display().to_string(), true))
            }
            CacheLocation::Url(u) => {
                let s = super::object_source::StoreUpstream::open(u)?;
                let store: Arc<dyn ObjectStore> = if s.prefix.as_ref().is_empty() {
                    s.store
                } else {
                    Arc::new(object_store::prefix::PrefixStore::new(s.store, s.prefix))
                };
                Ok((store, u.clone(), false))
            }
        }
    }
}

/// Staging files of interrupted writes in a local cache directory (object_store names them
/// `<file>#<n>`): removed at start.
pub fn sweep_staging(dir: &std::path::Path) -> usize {
    let mut removed = 0;
    for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
        if e.file_type().is_file()
            && e.file_name().to_string_lossy().contains('#')
            && std::fs::remove_file(e.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

impl CachedStore {
    /// Over `cache`, indexed and bounded by `bound` (over the same store); `local_root` is the
    /// directory `cache` keeps its files in, when it is one; `timeout` bounds a stalled body and
    /// `lease_ttl` is the life of a fetch lease (see the module).
    pub fn new(
        upstream: Arc<dyn Upstream>,
        cache: Arc<dyn ObjectStore>,
        cache_desc: String,
        local_root: Option<std::path::PathBuf>,
        bound: Arc<Bound>,
        timeout: Duration,
        lease_ttl: Duration,
    ) -> CachedStore {
        let namespace = upstream.namespace();
        CachedStore {
            inner: Arc::new(Inner {
                upstream,
                namespace,
                cache,
                cache_desc,
                local_root,
                bound,
                timeout,
                lease_ttl,
                inflight: Mutex::new(HashMap::new()),
                stats: CacheStats::default(),
            }),
        }
    }

    pub fn stats(&self) -> &CacheStats {
        &self.inner.stats
    }

    pub fn bound(&self) -> &Arc<Bound> {
        &self.inner.bound
    }

    pub fn cache_location(&self) -> &str {
        &self.inner.cache_desc
    }

    /// The catalog key (and cache-store location) of a source path.
    /// The cache key of `path`: the source's namespace (for the hub, repo and commit) and the path.
    pub fn key(&self, path: &str) -> String {
        format!("{}/{}", self.inner.namespace, path.trim_start_matches('/'))
    }

    /// Make sure `path` is in the cache, fetching it once for all concurrent callers.
    pub async fn ensure(&self, path: &str) -> Result<Entry, FetchError> {
        let key = self.key(path);
        let joined = self
            .inner
            .inflight
            .lock()
            .expect("inflight")
            .get(&key)
            .cloned();
        if let Some(f) = joined {
            self.inner
                .stats
                .single_flight_waits
                .fetch_add(1, Ordering::Relaxed);
            return f.await;
        }
        if let Some(e) = self.inner.cached(&key).await? {
            self.inner.stats.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(e);
        }
        let mut started = false;
        let flight = {
            let mut map = self.inner.inflight.lock().expect("inflight");
            map.entry(key.clone())
                .or_insert_with(|| {
                    started = true;
                    let inner = self.inner.clone();
                    let (k, p) = (key.clone(), path.to_string());
                    // Spawned, so a caller that goes away does not cancel the download others wait for.
                    let task = tokio::spawn(async move { inner.download(&k, &p).await });
                    async move {
                        task.await.unwrap_or_else(|e| {
                            Err(FetchError::Cache(format!("download task: {e}")))
                        })
                    }
                    .boxed()
                    .shared()
                })
                .clone()
        };
        if !started {
            self.inner
                .stats
                .single_flight_waits
                .fetch_add(1, Ordering::Relaxed);
        }
        let out = flight.clone().await;
        let mut map = self.inner.inflight.lock().expect("inflight");
        if map.get(&key).is_some_and(|f| f.ptr_eq(&flight)) {
            map.remove(&key);
        }
        out
    }

    /// The cached file's bytes (a local file when the cache is a directory).
    pub async fn open(&self, path: &str) -> Result<GetResult, FetchError> {
        for _ in 0..2 {
            self.ensure(path).await?;
            match self.inner.cache.get(&StorePath::from(self.key(path))).await {
                Ok(r) => {
                    if let (Some(root), object_store::GetResultPayload::File(_, file)) =
                        (&self.inner.local_root, &r.payload)
                    {
                        super::confine::inside(root, file).map_err(|reason| {
                            FetchError::Refused(format!(
                                "the cached file of {path} is not served: {reason}"
                            ))
                        })?;
                    }
                    return Ok(r);
                }
                // Evicted or removed between the two steps: fetch again.
                Err(object_store::Error::NotFound { .. }) => {
                    self.inner.bound.catalog().remove(&self.key(path)).await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(FetchError::Cache(format!(
            "{path} was evicted while being opened; the cache bound is too small"
        )))
    }

    /// Remove `path` from the cache (the source is untouched): its size when it was cached.
    /// Every replica sharing the catalog and store sees it gone, and fetches it again when asked.
    pub async fn evict(&self, path: &str) -> Result<Option<u64>, FetchError> {
        let key = self.key(path);
        let Some(e) = self.inner.bound.catalog().lookup(&key).await? else {
            return Ok(None);
        };
        self.inner.bound.remove(&key).await?;
        Ok(Some(e.size))
    }

    /// Every file of the source under `prefix`, with its size (asked of the source: no fetch).
    pub async fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, FetchError> {
        self.inner.upstream.list(prefix).await
    }

    /// Whether `path` is cached (no fetch).
    pub async fn contains(&self, path: &str) -> Result<bool, FetchError> {
        Ok(self.inner.cached(&self.key(path)).await?.is_some())
    }

    /// Files and bytes the catalog lists.
    pub async fn totals(&self) -> Result<(u64, u64), FetchError> {
        Ok(self.inner.bound.catalog().totals().await?)
    }
}

impl Inner {
    /// The catalog entry, if the file is really in the cache store (a lost file is forgotten).
    async fn cached(&self, key: &str) -> Result<Option<Entry>, FetchError> {
        let catalog = self.bound.catalog();
        let Some(e) = catalog.lookup(key).await? else {
            return Ok(None);
        };
        match self.cache.head(&StorePath::from(key)).await {
            Ok(m) if m.size == e.size => {
                catalog.touch(key).await?;
                Ok(Some(e))
            }
            _ => {
                catalog.remove(key).await?;
                Ok(None)
            }
        }
    }

    async fn download(&self, key: &str, path: &str) -> Result<Entry, FetchError> {
        // Another flight may have finished between the caller's lookup and this one starting, or
        // another replica may hold the lease: wait for its file, or take over an expired lease.
        if let Some(e) = self.leased(key).await? {
            self.stats.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(e);
        }
        self.stats.misses.fetch_add(1, Ordering::Relaxed);
        let r = self.fetch_under_lease(key, path).await;
        if let Err(release) = self.bound.catalog().release_lease(key).await {
            tracing::warn!(key, error = %release, "cannot release the fetch lease; it expires");
        }
        if let Err(e) = &r {
            let i = FetchError::KINDS
                .iter()
                .position(|k| *k == e.kind())
                .expect("a kind of the list");
            self.stats.failures_by_kind[i].fetch_add(1, Ordering::Relaxed);
            self.stats.failures.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    /// A lease's life in the catalog's unit (ms).
    fn lease_ms(&self) -> i64 {
        i64::try_from(self.lease_ttl.as_millis()).unwrap_or(i64::MAX)
    }

    /// The file when it is cached (by this replica or another), else `None` once this replica
    /// holds the fetch lease on it; waits while another replica holds it.
    async fn leased(&self, key: &str) -> Result<Option<Entry>, FetchError> {
        let catalog = self.bound.catalog();
        let ttl = self.lease_ms();
        let poll =
            (self.lease_ttl / 10).clamp(Duration::from_millis(20), Duration::from_millis(250));
        let mut waited = false;
        loop {
            if let Some(e) = self.cached(key).await? {
                return Ok(Some(e));
            }
            if catalog.take_lease(key, ttl).await? {
                // The holder before may have listed the file and let go since the lookup.
                return match self.cached(key).await? {
                    Some(e) => {
                        catalog.release_lease(key).await?;
                        Ok(Some(e))
                    }
                    None => Ok(None),
                };
            }
            if !waited {
                waited = true;
                self.stats.lease_waits.fetch_add(1, Ordering::Relaxed);
                tracing::info!(key, "another replica is fetching this file; waiting for it");
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// Download into the cache and list the file, renewing the lease while the download runs.
    async fn fetch_under_lease(&self, key: &str, path: &str) -> Result<Entry, FetchError> {
        let ttl = self.lease_ms();
        let renew = async {
            loop {
                tokio::time::sleep(self.lease_ttl / 3).await;
                match self.bound.catalog().renew_lease(key, ttl).await {
                    Ok(true) => {}
                    Ok(false) => tracing::warn!(
                        key,
                        "the fetch lease expired during the download; another replica may fetch the file as well"
                    ),
                    Err(e) => tracing::warn!(key, error = %e, "cannot renew the fetch lease"),
                }
            }
        };
        let entry = tokio::select! {
            r = self.fetch_into_cache(key, path) => r?,
            () = renew => unreachable!("renewing never ends"),
        };
        self.stats
            .bytes_fetched
            .fetch_add(entry.size, Ordering::Relaxed);
        tracing::info!(key, bytes = entry.size, "cached raw file");
        self.bound.admit(&entry).await?;
        Ok(entry)
    }

    async fn fetch_into_cache(&self, key: &str, path: &str) -> Result<Entry, FetchError> {
        let dl = self.upstream.fetch(path).await?;
        let (size, sha) =
            write_verified(&*self.cache, &StorePath::from(key), dl, path, self.timeout).await?;
        Ok(Entry {
            key: key.to_string(),
            size,
            sha256: Some(sha),
        })
    }
}

/// Write `dl` to `location` in `store` through a multipart upload (a staging file renamed into
/// place for a directory) that is completed only when the byte count, and the SHA-256 when the
/// source gives one, match; otherwise it is aborted and nothing is left. A body that stalls for
/// `timeout` fails. Returns the size and the hex SHA-256. `path` names the file in errors.
pub(crate) async fn write_verified(
    store: &dyn ObjectStore,
    location: &StorePath,
    mut dl: Download,
    path: &str,
    timeout: Duration,
) -> Result<(u64, String), FetchError> {
    let upload = store
        .put_multipart(location)
        .await
        .map_err(FetchError::from)?;
    let mut w = WriteMultipart::new(upload);
    let mut hasher = Sha256::new();
    let mut n: u64 = 0;
    let failed = loop {
        match tokio::time::timeout(timeout, dl.stream.next()).await {
            Err(_) => break Some(FetchError::Timeout(format!("body of {path} stalled"))),
            Ok(None) => break None,
            Ok(Some(Err(e))) => break Some(e),
            Ok(Some(Ok(chunk))) => {
                hasher.update(&chunk);
                n += chunk.len() as u64;
                if let Err(e) = w.wait_for_capacity(4).await {
                    break Some(e.into());
                }
                w.put(chunk);
            }
        }
    };
    let sha = hex::encode(hasher.finalize());
    let failed = failed.or_else(|| match (dl.size, &dl.sha256) {
        (Some(want), _) if want != n => Some(FetchError::Corrupt {
            key: path.into(),
            detail: format!("got {n} bytes, the source announced {want}"),
        }),
        (_, Some(want)) if *want != sha => Some(FetchError::Corrupt {
            key: path.into(),
            detail: format!("SHA-256 {sha} does not match the source's {want}"),
        }),
        _ => None,
    });
    if let Some(e) = failed {
        if let Err(abort) = w.abort().await {
            tracing::warn!(%location, error = %abort, "could not abort the cache write");
        }
        return Err(e);
    }
    w.finish().await.map_err(FetchError::from)?;
    Ok((n, sha))
}

fn read_only() -> object_store::Error {
    object_store::Error::NotSupported {
        source: "the raw cache is a read-only view of its source".into(),
    }
}

fn to_store_error(e: FetchError, path: &StorePath) -> object_store::Error {
    match e {
        FetchError::NotFound(_) => object_store::Error::NotFound {
            path: path.to_string(),
            source: Box::new(e),
        },
        other => object_store::Error::Generic {
            store: "CachedStore",
            source: Box::new(other),
        },
    }
}

impl CachedStore {
    fn outer(&self, mut meta: ObjectMeta) -> ObjectMeta {
        let prefix = format!("{}/", self.inner.namespace);
        if let Some(rest) = meta.location.as_ref().strip_prefix(&prefix) {
            meta.location = StorePath::from(rest);
        }
        meta
    }

    fn inner_path(&self, p: Option<&StorePath>) -> StorePath {
        match p {
            Some(p) if !p.as_ref().is_empty() => StorePath::from(self.key(p.as_ref())),
            _ => StorePath::from(self.inner.namespace.as_str()),
        }
    }
}

#[async_trait::async_trait]
impl ObjectStore for CachedStore {
    async fn put_opts(
        &self,
        _location: &StorePath,
        _payload: PutPayload,
        _opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        Err(read_only())
    }

    async fn put_multipart_opts(
        &self,
        _location: &StorePath,
        _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(read_only())
    }

    /// Fetch into the cache if needed, then read from the cache (ranges, conditions, head).
    async fn get_opts(
        &self,
        location: &StorePath,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.ensure(location.as_ref())
            .await
            .map_err(|e| to_store_error(e, location))?;
        let mut r = self
            .inner
            .cache
            .get_opts(&StorePath::from(self.key(location.as_ref())), options)
            .await?;
        r.meta = self.outer(r.meta);
        Ok(r)
    }

    async fn get_ranges(
        &self,
        location: &StorePath,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<bytes::Bytes>> {
        self.ensure(location.as_ref())
            .await
            .map_err(|e| to_store_error(e, location))?;
        self.inner
            .cache
            .get_ranges(&StorePath::from(self.key(location.as_ref())), ranges)
            .await
    }

    /// Drops files from the cache (the source is untouched).
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<StorePath>>,
    ) -> BoxStream<'static, object_store::Result<StorePath>> {
        let this = self.clone();
        locations
            .then(move |loc| {
                let this = this.clone();
                async move {
                    let loc = loc?;
                    let key = this.key(loc.as_ref());
                    this.inner
                        .bound
                        .remove(&key)
                        .await
                        .map_err(|e| to_store_error(e, &loc))?;
                    Ok(loc)
                }
            })
            .boxed()
    }

    /// Lists what is cached (not the whole source).
    fn list(
        &self,
        prefix: Option<&StorePath>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let this = self.clone();
        self.inner
            .cache
            .list(Some(&self.inner_path(prefix)))
            .map(move |r| r.map(|m| this.outer(m)))
            .boxed()
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&StorePath>,
    ) -> object_store::Result<ListResult> {
        let mut r = self
            .inner
            .cache
            .list_with_delimiter(Some(&self.inner_path(prefix)))
            .await?;
        r.objects = r.objects.into_iter().map(|m| self.outer(m)).collect();
        let ns = format!("{}/", self.inner.namespace);
        r.common_prefixes = r
            .common_prefixes
            .into_iter()
            .map(|p| {
                p.as_ref()
                    .strip_prefix(&ns)
                    .map_or(p.clone(), StorePath::from)
            })
            .collect();
        Ok(r)
    }

    async fn copy_opts(
        &self,
        _from: &StorePath,
        _to: &StorePath,
        _options: CopyOptions,
    ) -> object_store::Result<()> {
        Err(read_only())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::catalog::Catalog;

    /// A source of one file whose body comes in four pieces, `pause` apart; counts its fetches.
    #[derive(Debug)]
    struct Paced {
        body: Vec<u8>,
        pause: Duration,
        fetches: AtomicU64,
    }

    #[async_trait::async_trait]
    impl Upstream for Paced {
        async fn fetch(&self, _path: &str) -> Result<Download, FetchError> {
            self.fetches.fetch_add(1, Ordering::SeqCst);
            let pause = self.pause;
            let pieces: Vec<bytes::Bytes> = self
                .body
                .chunks(self.body.len().div_ceil(4))
                .map(bytes::Bytes::copy_from_slice)
                .collect();
            let stream = futures::stream::iter(pieces).then(move |p| async move {
                tokio::time::sleep(pause).await;
                Ok(p)
            });
            Ok(Download {
                stream: stream.boxed(),
                size: Some(self.body.len() as u64),
                sha256: None,
            })
        }

        fn namespace(&self) -> String {
            "paced".into()
        }

        async fn list(&self, _prefix: &str) -> Result<Vec<(String, u64)>, FetchError> {
            Ok(vec![("file".into(), self.body.len() as u64)])
        }
    }

    /// A replica: its own catalog handle (its own replica id) on the shared database, over the
    /// shared cache directory and source.
    async fn replica(
        dir: &std::path::Path,
        db: &str,
        source: &Arc<Paced>,
        ttl: Duration,
    ) -> CachedStore {
        let catalog = Catalog::open(db).await.unwrap();
        let (store, desc, _) = CacheLocation::Dir(dir.to_path_buf()).open().unwrap();
        let bound = Arc::new(Bound::new(store.clone(), catalog, 1 << 30));
        CachedStore::new(
            source.clone(),
            store,
            desc,
            Some(dir.to_path_buf()),
            bound,
            Duration::from_secs(5),
            ttl,
        )
    }

    /// Two replicas asked for one file at once fetch it once: the second waits on the first's
    /// lease and then serves the listed file. A lease left by a dead replica is taken over once
    /// it expires, and the file is then fetched whole.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_fetch_a_file_once_and_take_over_a_dead_lease() {
        let tmp = tempfile::tempdir().unwrap();
        let db = format!(
            "sqlite://{}?mode=rwc",
            tmp.path().join("catalog.db").display()
        );
        let source = Arc::new(Paced {
            body: (0..100_000u32).map(|i| (i % 251) as u8).collect(),
            pause: Duration::from_millis(100),
            fetches: AtomicU64::new(0),
        });
        let cache = tmp.path().join("cache");
        let ttl = Duration::from_millis(600);
        let a = replica(&cache, &db, &source, ttl).await;
        let b = replica(&cache, &db, &source, ttl).await;
        let (ea, eb) = tokio::join!(a.ensure("x/results.json"), async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            b.ensure("x/results.json").await
        });
        assert_eq!(ea.unwrap(), eb.unwrap());
        assert_eq!(source.fetches.load(Ordering::SeqCst), 1);
        assert_eq!(a.stats().misses.load(Ordering::SeqCst), 1);
        assert_eq!(b.stats().misses.load(Ordering::SeqCst), 0);
        assert_eq!(b.stats().lease_waits.load(Ordering::SeqCst), 1);
        assert_eq!(b.stats().hits.load(Ordering::SeqCst), 1);

        // A replica that took the lease on another file and died: never renewed, never released.
        let dead = Catalog::open(&db).await.unwrap();
        assert!(dead.take_lease("paced/y/results.json", 300).await.unwrap());
        let got = b.open("y/results.json").await.unwrap();
        assert_eq!(got.bytes().await.unwrap().as_ref(), &source.body[..]);
        assert_eq!(source.fetches.load(Ordering::SeqCst), 2);
        assert_eq!(b.stats().lease_waits.load(Ordering::SeqCst), 2);
        // Its lease is gone with the download done, so the next file is not waited for.
        assert!(
            a.inner
                .bound
                .catalog()
                .take_lease("paced/y/results.json", 1000)
                .await
                .unwrap()
        );
    }

    /// A lease is this replica's until it expires or is released; renewing keeps it.
    #[tokio::test]
    async fn leases_are_exclusive_until_they_expire() {
        let tmp = tempfile::tempdir().unwrap();
        let db = format!("sqlite://{}?mode=rwc", tmp.path().join("c.db").display());
        let (one, two) = (
            Catalog::open(&db).await.unwrap(),
            Catalog::open(&db).await.unwrap(),
        );
        assert_ne!(one.replica(), two.replica());
        assert!(one.take_lease("k", 200).await.unwrap());
        assert!(one.take_lease("k", 200).await.unwrap(), "its own lease");
        assert!(!two.take_lease("k", 200).await.unwrap());
        assert!(!two.renew_lease("k", 200).await.unwrap());
        two.release_lease("k").await.unwrap();
        assert!(
            !two.take_lease("k", 200).await.unwrap(),
            "not released by another"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(!one.renew_lease("x", 200).await.unwrap());
        assert!(two.take_lease("k", 200).await.unwrap(), "expired");
        assert!(!one.renew_lease("k", 200).await.unwrap(), "lost");
        two.release_lease("k").await.unwrap();
        assert!(one.take_lease("k", 200).await.unwrap());
    }
}
