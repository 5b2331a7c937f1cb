//! The Hugging Face dataset as a source: `hf://datasets/ORG/NAME[@REVISION]`.
//!
//! hf-hub resolves the revision to a commit once at start, and downloads the parquet summaries
//! into the standard hub cache (`HF_HOME`), where the Python toolkit finds them too. Everything
//! after that uses the pinned commit, so summaries and raw files always come from one snapshot.
//! Raw files are streamed from `{endpoint}/datasets/{repo}/resolve/{commit}/{path}` with the
//! redirect followed by hand: the first answer carries the file's size and SHA-256
//! (`X-Linked-Size`, `X-Linked-Etag`) that the cache verifies the download against, and the token
//! is never sent to the storage host it redirects to.

use std::path::PathBuf;

use futures::StreamExt;
use hf_hub::api::tokio::{Api, ApiBuilder, ApiError};
use hf_hub::{Cache, Repo, RepoType};
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_LENGTH, HeaderMap, LOCATION};

use super::{Download, FetchError, FetchOptions, Upstream, with_retries};

/// Hub settings (`HF_ENDPOINT`, `HF_TOKEN`, `HF_HOME`).
#[derive(Debug, Clone)]
pub struct HubConfig {
    pub endpoint: String,
    /// `HF_TOKEN`; when unset, the token file of the hub cache (`$HF_HOME/token`) is used.
    pub token: Option<String>,
    /// `HF_HOME`; default `~/.cache/huggingface`.
    pub home: Option<PathBuf>,
    pub fetch: FetchOptions,
}

impl Default for HubConfig {
    fn default() -> Self {
        HubConfig {
            endpoint: "https://huggingface.co".into(),
            token: None,
            home: None,
            fetch: FetchOptions::default(),
        }
    }
}

/// `hf://datasets/ORG/NAME[@REVISION]` → (repo id, revision).
pub fn parse_hf_url(spec: &str) -> Option<(String, Option<String>)> {
    let rest = spec.strip_prefix("hf://")?;
    let rest = rest.strip_prefix("datasets/").unwrap_or(rest);
    let (repo, rev) = match rest.split_once('@') {
        Some((r, v)) => (r, Some(v.trim_end_matches('/').to_string())),
        None => (rest.trim_end_matches('/'), None),
    };
    let mut parts = repo.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(o), Some(n), None) if !o.is_empty() && !n.is_empty() => {
            Some((repo.to_string(), rev.filter(|r| !r.is_empty())))
        }
        _ => None,
    }
}

/// One dataset at one pinned commit.
#[derive(Debug, Clone)]
pub struct Hub {
    repo_id: String,
    /// The revision asked for (`main` when not given).
    pub revision: String,
    /// The commit it resolved to.
    pub commit: String,
    endpoint: String,
    api: Api,
    /// Sends the token; does not follow redirects.
    client: reqwest::Client,
    /// For the redirect target: no token.
    plain: reqwest::Client,
    fetch: FetchOptions,
}

fn status_error(repo_id: &str, endpoint: &str, status: StatusCode, what: &str) -> FetchError {
    match status.as_u16() {
        401 | 403 => FetchError::Denied {
            status: status.as_u16(),
            detail: format!(
                "The hub refused access to {repo_id} ({status}). This is a gated dataset: request \
                 access at {endpoint}/datasets/{repo_id} and set HF_TOKEN to a token of an \
                 account that has it (tokens are created at https://huggingface.co/settings/tokens)."
            ),
        },
        404 => FetchError::NotFound(what.to_string()),
        _ => FetchError::Upstream(format!("the hub answered {status} for {what}")),
    }
}

fn request_error(e: &reqwest::Error, what: &str) -> FetchError {
    if e.is_timeout() {
        FetchError::Timeout(format!("{what}: {e}"))
    } else {
        FetchError::Upstream(format!("{what}: {e}"))
    }
}

/// An hf-hub error, with the hub's status when it had one.
fn api_error(repo_id: &str, endpoint: &str, e: ApiError, what: &str) -> FetchError {
    match &e {
        ApiError::RequestError(r) => match r.status() {
            Some(s) => status_error(repo_id, endpoint, s, what),
            None => request_error(r, what),
        },
        ApiError::TooManyRetries(inner) => match inner.as_ref() {
            ApiError::RequestError(r) => match r.status() {
                Some(s) => status_error(repo_id, endpoint, s, what),
                None => request_error(r, what),
            },
            _ => FetchError::Upstream(format!("{what}: {e}")),
        },
        ApiError::IoError(io) => FetchError::Cache(format!("{what}: {io}")),
        _ => FetchError::Upstream(format!("{what}: {e}")),
    }
}

fn header(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim_matches('"').to_string())
}

impl Hub {
    /// Resolve `revision` (default `main`) to a commit.
    pub async fn open(
        repo_id: &str,
        revision: Option<&str>,
        cfg: &HubConfig,
    ) -> Result<Hub, FetchError> {
        let cache = match &cfg.home {
            Some(h) => Cache::new(h.join("hub")),
            None => Cache::from_env(),
        };
        let token = cfg
            .token
            .clone()
            .filter(|t| !t.is_empty())
            .or_else(|| cache.token());
        let endpoint = cfg.endpoint.trim_end_matches('/').to_string();
        let api = ApiBuilder::from_cache(cache)
            .with_endpoint(endpoint.clone())
            .with_token(token.clone())
            .with_progress(false)
            .build()
            .map_err(|e| FetchError::Upstream(format!("hub client: {e}")))?;
        let mut headers = HeaderMap::new();
        if let Some(t) = &token {
            let v = format!("Bearer {t}")
                .parse()
                .map_err(|_| FetchError::Upstream("HF_TOKEN is not a valid header value".into()))?;
            headers.insert(AUTHORIZATION, v);
        }
        let agent = concat!("mlenergy-server/", env!("CARGO_PKG_VERSION"));
        let client = reqwest::Client::builder()
            .user_agent(agent)
            .default_headers(headers)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(cfg.fetch.timeout)
            .build()
            .map_err(|e| FetchError::Upstream(format!("http client: {e}")))?;
        let plain = reqwest::Client::builder()
            .user_agent(agent)
            .connect_timeout(cfg.fetch.timeout)
            .build()
            .map_err(|e| FetchError::Upstream(format!("http client: {e}")))?;
        let revision = revision.unwrap_or("main").to_string();
        let what = format!("{repo_id}@{revision}");
        let info = with_retries(cfg.fetch.retries, || async {
            let repo = api.repo(Repo::with_revision(
                repo_id.to_string(),
                RepoType::Dataset,
                revision.clone(),
            ));
            match tokio::time::timeout(cfg.fetch.timeout, repo.info()).await {
                Ok(r) => r.map_err(|e| api_error(repo_id, &endpoint, e, &what)),
                Err(_) => Err(FetchError::Timeout(format!("resolving {what}"))),
            }
        })
        .await?;
        Ok(Hub {
            repo_id: repo_id.to_string(),
            revision,
            commit: info.sha,
            endpoint,
            api,
            client,
            plain,
            fetch: cfg.fetch.clone(),
        })
    }

    pub fn repo_id(&self) -> &str {
        &self.repo_id
    }

    /// Download `path` at the pinned commit into the hub cache (a hit if it is there already)
    /// and return its local path. Used for the parquet summaries.
    pub async fn summary(&self, path: &str) -> Result<PathBuf, FetchError> {
        let repo = self.api.repo(Repo::with_revision(
            self.repo_id.clone(),
            RepoType::Dataset,
            self.commit.clone(),
        ));
        with_retries(self.fetch.retries, || async {
            match tokio::time::timeout(self.fetch.timeout * 4, repo.get(path)).await {
                Ok(r) => r.map_err(|e| api_error(&self.repo_id, &self.endpoint, e, path)),
                Err(_) => Err(FetchError::Timeout(format!("downloading {path}"))),
            }
        })
        .await
    }

    fn resolve_url(&self, path: &str) -> String {
        format!(
            "{}/datasets/{}/resolve/{}/{}",
            self.endpoint, self.repo_id, self.commit, path
        )
    }

    /// One attempt: the resolve request, and the redirect target if there is one.
    async fn get_once(&self, path: &str) -> Result<Download, FetchError> {
        let url = self.resolve_url(path);
        let timeout = self.fetch.timeout;
        let send = |req: reqwest::RequestBuilder| async move {
            match tokio::time::timeout(timeout, req.send()).await {
                Ok(r) => r.map_err(|e| request_error(&e, path)),
                Err(_) => Err(FetchError::Timeout(format!("no answer for {path}"))),
            }
        };
        let first = send(self.client.get(&url)).await?;
        let linked_sha = header(first.headers(), "x-linked-etag");
        let linked_size = header(first.headers(), "x-linked-size").and_then(|s| s.parse().ok());
        let resp = if first.status().is_redirection() {
            let loc = header(first.headers(), LOCATION.as_str()).ok_or_else(|| {
                FetchError::Upstream(format!("redirect without Location for {path}"))
            })?;
            let target = first
                .url()
                .join(&loc)
                .map_err(|e| FetchError::Upstream(format!("bad redirect for {path}: {e}")))?;
            // Same host (a renamed repo): keep the token. Another host (storage): drop it.
            if target.host_str() == first.url().host_str() {
                send(self.client.get(target)).await?
            } else {
                send(self.plain.get(target)).await?
            }
        } else {
            first
        };
        if !resp.status().is_success() {
            return Err(status_error(
                &self.repo_id,
                &self.endpoint,
                resp.status(),
                path,
            ));
        }
        let size = linked_size.or_else(|| {
            header(resp.headers(), CONTENT_LENGTH.as_str()).and_then(|s| s.parse().ok())
        });
        // LFS files carry their SHA-256 as the linked ETag; git blobs carry a SHA-1 (40 hex),
        // which is not a content hash of the same kind and is not checked.
        let sha256 = linked_sha
            .or_else(|| header(resp.headers(), "etag"))
            .filter(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()));
        let key = path.to_string();
        let stream = resp
            .bytes_stream()
            .map(move |r| {
                r.map_err(|e| {
                    if e.is_timeout() {
                        FetchError::Timeout(format!("body of {key}: {e}"))
                    } else {
                        FetchError::Corrupt {
                            key: key.clone(),
                            detail: e.to_string(),
                        }
                    }
                })
            })
            .boxed();
        Ok(Download {
            stream,
            size,
            sha256: sha256.map(|s| s.to_ascii_lowercase()),
        })
    }
}

#[async_trait::async_trait]
impl Upstream for Hub {
    async fn fetch(&self, path: &str) -> Result<Download, FetchError> {
        with_retries(self.fetch.retries, || self.get_once(path)).await
    }

    fn namespace(&self) -> String {
        format!("hf/{}/{}", self.repo_id, self.commit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hf_urls() {
        assert_eq!(
            parse_hf_url("hf://datasets/ml-energy/benchmark-v3"),
            Some(("ml-energy/benchmark-v3".into(), None))
        );
        assert_eq!(
            parse_hf_url("hf://datasets/ml-energy/benchmark-v3@v3.1"),
            Some(("ml-energy/benchmark-v3".into(), Some("v3.1".into())))
        );
        assert_eq!(
            parse_hf_url("hf://ml-energy/benchmark-v3@abc/"),
            Some(("ml-energy/benchmark-v3".into(), Some("abc".into())))
        );
        assert_eq!(parse_hf_url("hf://datasets/only-one"), None);
        assert_eq!(parse_hf_url("s3://x/y"), None);
    }
}
