//! Where the data comes from and the raw cache in front of it.
//!
//! `--data` names a local directory (read in place), the Hugging Face dataset
//! (`hf://datasets/ORG/NAME[@REVISION]`, revision pinned to a commit at start) or an object_store
//! URL (`s3://`, `gs://`, `az://`, `http(s)://`, `file://`). Remote sources fetch only the parquet
//! summaries at start; raw files are fetched on first use through [`cache::CachedStore`], an
//! `ObjectStore` decorator that keeps them in a local directory (or a bucket) indexed by the
//! [`catalog::Catalog`]. Persisted derived data ([`derived::DerivedStore`]) lives in the same
//! place, and both count toward one bound ([`bound::Bound`]).

pub mod bound;
pub mod cache;
pub mod catalog;
pub mod confine;
pub mod derived;
pub mod hub;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};

/// Where a run's raw file is read from. Built only from paths that passed [`confine`].
#[derive(Debug, Clone)]
pub enum RawLocation {
    /// A file of a dataset on this machine: `path` is `root` joined with the stored relative
    /// path. It is checked again against `root` when opened (a symlink may have changed since).
    Local {
        root: std::path::PathBuf,
        path: std::path::PathBuf,
    },
    /// A key in a remote source, fetched through the raw cache.
    Remote(cache::CachedStore, String),
}

/// Why a raw file could not be fetched. Each kind maps to one HTTP status in the API.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FetchError {
    /// The source has no such file (404).
    #[error("{0} is not in the source")]
    NotFound(String),
    /// The source refused the credentials (hub 401/403: gated dataset or bad token).
    #[error("{detail}")]
    Denied { status: u16, detail: String },
    /// The source failed (5xx, refused connection) after bounded retries (502).
    #[error("the source failed: {0}")]
    Upstream(String),
    /// The source did not answer in time after bounded retries (504).
    #[error("the source timed out: {0}")]
    Timeout(String),
    /// The download was cut short or does not match its size or checksum (502); nothing was
    /// kept in the cache.
    #[error("download of {key} is corrupt: {detail}")]
    Corrupt { key: String, detail: String },
    /// The path leaves its root (a symlink in the cache directory pointing out of it): never
    /// read (404).
    #[error("{0}")]
    Refused(String),
    /// The cache store or catalog failed (500).
    #[error("cache: {0}")]
    Cache(String),
}

impl FetchError {
    /// Worth another attempt.
    fn retryable(&self) -> bool {
        matches!(self, FetchError::Upstream(_) | FetchError::Timeout(_))
    }
}

impl From<sqlx::Error> for FetchError {
    fn from(e: sqlx::Error) -> Self {
        FetchError::Cache(format!("catalog: {e}"))
    }
}

impl From<object_store::Error> for FetchError {
    fn from(e: object_store::Error) -> Self {
        FetchError::Cache(e.to_string())
    }
}

/// A file being downloaded from a source: its bytes, and what the source says they should be.
pub struct Download {
    pub stream: BoxStream<'static, Result<Bytes, FetchError>>,
    /// Expected length, when the source gives one.
    pub size: Option<u64>,
    /// Expected hex SHA-256, when the source gives one (hub LFS files).
    pub sha256: Option<String>,
}

/// A remote source of raw files, addressed by their path in the dataset (`llm/.../results.json`).
#[async_trait::async_trait]
pub trait Upstream: Send + Sync + fmt::Debug {
    async fn fetch(&self, path: &str) -> Result<Download, FetchError>;
    /// Cache namespace: files of different sources (or hub commits) never share a key.
    fn namespace(&self) -> String;
}

/// An object_store source rooted at `prefix` (`s3://bucket/prefix`, ...).
#[derive(Debug)]
pub struct StoreUpstream {
    pub store: Arc<dyn ObjectStore>,
    pub prefix: StorePath,
    /// The URL it was opened from (for the namespace and messages).
    pub url: String,
    /// The directory of a `file://` URL: object_store follows symlinks there, so each file is
    /// checked to resolve inside it.
    local_root: Option<std::path::PathBuf>,
}

impl StoreUpstream {
    /// Open an object_store URL; credentials and options come from the environment
    /// (`AWS_*`, `GOOGLE_*`, `AZURE_*`), as the object_store builders read them.
    pub fn open(url: &str) -> Result<StoreUpstream, String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
        let env: Vec<(String, String)> = std::env::vars().collect();
        let (store, prefix) =
            object_store::parse_url_opts(&parsed, env).map_err(|e| format!("{url}: {e}"))?;
        let local_root = match parsed.scheme() {
            "file" => Some(
                parsed
                    .to_file_path()
                    .map_err(|()| format!("{url}: not a local path"))?,
            ),
            _ => None,
        };
        Ok(StoreUpstream {
            store: Arc::from(store),
            prefix,
            url: url.trim_end_matches('/').to_string(),
            local_root,
        })
    }

    fn location(&self, path: &str) -> StorePath {
        let mut parts: Vec<String> = self
            .prefix
            .parts()
            .map(|p| p.as_ref().to_string())
            .collect();
        parts.extend(path.split('/').filter(|s| !s.is_empty()).map(String::from));
        StorePath::from_iter(parts)
    }
}

#[async_trait::async_trait]
impl Upstream for StoreUpstream {
    async fn fetch(&self, path: &str) -> Result<Download, FetchError> {
        let key = confine::relative_key(path)
            .map_err(|e| FetchError::Refused(format!("{path} is not served: {e}")))?;
        if let Some(root) = &self.local_root {
            confine::inside(root, &root.join(&key))
                .map_err(|e| FetchError::Refused(format!("{path} is not served: {e}")))?;
        }
        let got = self
            .store
            .get(&self.location(&key))
            .await
            .map_err(|e| match e {
                object_store::Error::NotFound { .. } => FetchError::NotFound(path.to_string()),
                object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. } => FetchError::Denied {
                    status: 403,
                    detail: format!("{}: {e}", self.url),
                },
                other => FetchError::Upstream(format!("{}: {other}", self.url)),
            })?;
        let size = Some(got.meta.size);
        let key = path.to_string();
        let stream = got
            .into_stream()
            .map(move |r| {
                r.map_err(|e| FetchError::Corrupt {
                    key: key.clone(),
                    detail: e.to_string(),
                })
            })
            .boxed();
        Ok(Download {
            stream,
            size,
            sha256: None,
        })
    }

    fn namespace(&self) -> String {
        use sha2::Digest;
        let h = sha2::Sha256::digest(self.url.as_bytes());
        format!("url/{}", &hex::encode(h)[..16])
    }
}

/// Options shared by the sources and the cache.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Longest wait for a response or for the next chunk of a body.
    pub timeout: Duration,
    /// Extra attempts after a 5xx, refused connection or timeout.
    pub retries: u32,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            timeout: Duration::from_secs(30),
            retries: 2,
        }
    }
}

/// Run `f` up to `1 + retries` times while it fails with a retryable error, with a short
/// doubling backoff.
pub(crate) async fn with_retries<T, F, Fut>(retries: u32, mut f: F) -> Result<T, FetchError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, FetchError>>,
{
    let mut wait = Duration::from_millis(100);
    let mut attempt = 0;
    loop {
        match f().await {
            Err(e) if e.retryable() && attempt < retries => {
                attempt += 1;
                tracing::warn!(error = %e, attempt, "retrying upstream request");
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
            other => return other,
        }
    }
}
