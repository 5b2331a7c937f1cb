//! Fetching a file from a remote source: the `Upstream` trait the hub and object-store sources
//! implement, the download they hand back, what can go wrong, and bounded retries.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;

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
    /// Every `kind`, in a fixed order.
    pub const KINDS: [&'static str; 7] = [
        "not_found",
        "denied",
        "upstream",
        "timeout",
        "corrupt",
        "refused",
        "cache",
    ];

    /// The error's kind, as metrics label it.
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::NotFound(_) => "not_found",
            FetchError::Denied { .. } => "denied",
            FetchError::Upstream(_) => "upstream",
            FetchError::Timeout(_) => "timeout",
            FetchError::Corrupt { .. } => "corrupt",
            FetchError::Refused(_) => "refused",
            FetchError::Cache(_) => "cache",
        }
    }

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
    /// Every file under `prefix` (relative to the source's root; empty: all), with its size, as
    /// relative paths (the hub mirror's listings).
    async fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, FetchError>;
}

/// Files a listing holds at most.
pub const MAX_LISTED: usize = 1_000_000;

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
