//! The Hugging Face dataset as a source: `hf://datasets/ORG/NAME[@REVISION]`.
//!
//! The revision is resolved to a commit once at start (`/api/datasets/{repo}/revision/{rev}`),
//! and the parquet summaries are downloaded into the standard hub cache (`HF_HOME`, laid out as
//! huggingface_hub does, so the Python toolkit finds them too; hf-hub names its paths and reads
//! the token file). Everything after that uses the pinned commit, so summaries and raw files
//! always come from one snapshot. Files are streamed from
//! `{endpoint}/datasets/{repo}/resolve/{commit}/{path}` with redirects followed by hand: the first
//! answer carries the file's size and SHA-256 (`X-Linked-Size`, `X-Linked-Etag`) that the download
//! is verified against, and the token is sent only to the hub's own host, never to the storage
//! host a redirect points to. Paths are checked to stay inside the repository
//! (`confine::relative_key`) and percent-encoded a segment at a time.

use std::path::PathBuf;

use futures::StreamExt;
use hf_hub::{Cache, Repo, RepoType};
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_LENGTH, HeaderMap, LOCATION};

use super::confine::relative_key;
use super::fetch::{Download, FetchError, FetchOptions, Upstream, with_retries};

/// Redirects followed for one request (the hub answers one or two: a renamed repository, then
/// the storage host).
const MAX_REDIRECTS: usize = 5;

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
    /// The commit's date (`YYYY-MM-DD`), when the hub gives one (`lastModified`).
    pub date: Option<String>,
    endpoint: url::Url,
    /// The hub cache (`HF_HOME/hub`) and this repository in it.
    cache: Cache,
    repo: Repo,
    /// Sends the token; follows no redirect.
    client: reqwest::Client,
    /// For hosts other than the hub's: no token; follows no redirect.
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

fn header(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim_matches('"').to_string())
}

impl Hub {
    /// The dataset at `commit`, known already (its date too): nothing is asked of the hub until
    /// a file is read.
    pub fn pinned(
        repo_id: &str,
        commit: &str,
        date: Option<String>,
        cfg: &HubConfig,
    ) -> Result<Hub, FetchError> {
        let mut hub = Hub::unresolved(repo_id, Some(commit), cfg)?;
        hub.commit = commit.to_ascii_lowercase();
        hub.date = date;
        Ok(hub)
    }

    /// The dataset at `revision` (default `main`), its commit not yet resolved.
    fn unresolved(
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
        let endpoint_text = cfg.endpoint.trim_end_matches('/');
        let endpoint = url::Url::parse(endpoint_text)
            .map_err(|e| FetchError::Upstream(format!("hub endpoint {endpoint_text}: {e}")))?;
        if endpoint.cannot_be_a_base() {
            return Err(FetchError::Upstream(format!(
                "hub endpoint {endpoint_text} is not an http(s) URL"
            )));
        }
        let mut headers = HeaderMap::new();
        if let Some(t) = &token {
            let mut v: reqwest::header::HeaderValue = format!("Bearer {t}")
                .parse()
                .map_err(|_| FetchError::Upstream("HF_TOKEN is not a valid header value".into()))?;
            v.set_sensitive(true);
            headers.insert(AUTHORIZATION, v);
        }
        let agent = concat!("mlenergy-server/", env!("CARGO_PKG_VERSION"));
        let build = |headers: HeaderMap| {
            reqwest::Client::builder()
                .user_agent(agent)
                .default_headers(headers)
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(cfg.fetch.timeout)
                .build()
                .map_err(|e| FetchError::Upstream(format!("http client: {e}")))
        };
        let revision = revision.unwrap_or("main").to_string();
        Ok(Hub {
            repo_id: repo_id.to_string(),
            commit: String::new(),
            date: None,
            endpoint,
            repo: Repo::with_revision(repo_id.to_string(), RepoType::Dataset, revision.clone()),
            revision,
            cache,
            client: build(headers)?,
            plain: build(HeaderMap::new())?,
            fetch: cfg.fetch.clone(),
        })
    }

    /// Resolve `revision` (default `main`) to a commit.
    pub async fn open(
        repo_id: &str,
        revision: Option<&str>,
        cfg: &HubConfig,
    ) -> Result<Hub, FetchError> {
        let mut hub = Hub::unresolved(repo_id, revision, cfg)?;
        let what = format!("{repo_id}@{}", hub.revision);
        let url = hub.url(&["api", "datasets"], &["revision", &hub.revision.clone()]);
        let info: RevisionInfo = with_retries(cfg.fetch.retries, || async {
            let resp = hub.get(url.clone(), &what).await?;
            if !resp.status().is_success() {
                return Err(hub.status_error(resp.status(), &what));
            }
            let body = match tokio::time::timeout(cfg.fetch.timeout, resp.bytes()).await {
                Ok(r) => r.map_err(|e| request_error(&e, &what))?,
                Err(_) => return Err(FetchError::Timeout(format!("resolving {what}"))),
            };
            serde_json::from_slice::<RevisionInfo>(&body)
                .map_err(|e| FetchError::Upstream(format!("{what}: the hub's answer: {e}")))
        })
        .await?;
        if info.sha.len() < 7 || !info.sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(FetchError::Upstream(format!(
                "the hub resolved {what} to '{}', which is not a commit",
                info.sha
            )));
        }
        hub.commit = info.sha;
        // An ISO 8601 time; only a well-formed date part is kept (it is the dataset's word).
        hub.date = info
            .last_modified
            .as_deref()
            .and_then(|t| t.get(..10))
            .filter(|d| is_iso_date(d))
            .map(str::to_string);
        Ok(hub)
    }

    pub fn repo_id(&self) -> &str {
        &self.repo_id
    }

    /// `{endpoint}/{before…}/{repo id}/{after…}`, each segment percent-encoded.
    fn url(&self, before: &[&str], after: &[&str]) -> url::Url {
        let mut url = self.endpoint.clone();
        {
            let mut segs = url
                .path_segments_mut()
                .expect("checked at open: a base URL");
            segs.pop_if_empty();
            segs.extend(before);
            segs.extend(self.repo_id.split('/'));
            segs.extend(after);
        }
        url
    }

    fn status_error(&self, status: StatusCode, what: &str) -> FetchError {
        status_error(
            &self.repo_id,
            self.endpoint.as_str().trim_end_matches('/'),
            status,
            what,
        )
    }

    /// GET `url`, following redirects by hand: the token goes only to the hub's own origin
    /// (scheme, host and port of the endpoint), never to another host a redirect points to.
    async fn get(&self, url: url::Url, what: &str) -> Result<reqwest::Response, FetchError> {
        let timeout = self.fetch.timeout;
        let mut url = url;
        for _ in 0..=MAX_REDIRECTS {
            let client = if url.origin() == self.endpoint.origin() {
                &self.client
            } else {
                &self.plain
            };
            let resp = match tokio::time::timeout(timeout, client.get(url.clone()).send()).await {
                Ok(r) => r.map_err(|e| request_error(&e, what))?,
                Err(_) => return Err(FetchError::Timeout(format!("no answer for {what}"))),
            };
            if !resp.status().is_redirection() {
                return Ok(resp);
            }
            let loc = header(resp.headers(), LOCATION.as_str()).ok_or_else(|| {
                FetchError::Upstream(format!("redirect without Location for {what}"))
            })?;
            url = resp
                .url()
                .join(&loc)
                .map_err(|e| FetchError::Upstream(format!("bad redirect for {what}: {e}")))?;
        }
        Err(FetchError::Upstream(format!(
            "more than {MAX_REDIRECTS} redirects for {what}"
        )))
    }

    /// Download `path` at the pinned commit into the hub cache (a hit if it is there already)
    /// and return its local path. Used for the parquet summaries. The file is written as
    /// huggingface_hub's cache keeps it where links are not available
    /// (`snapshots/{commit}/{path}`, with `refs/{revision}` naming the commit), verified and
    /// atomically, so a failed download leaves nothing.
    pub async fn summary(&self, path: &str) -> Result<PathBuf, FetchError> {
        let key = relative_key(path).map_err(|e| FetchError::Refused(format!("{path}: {e}")))?;
        let repo_dir = self.cache.path().join(self.repo.folder_name());
        let snapshot = PathBuf::from("snapshots").join(&self.commit);
        let local = repo_dir.join(&snapshot).join(&key);
        if !local.is_file() {
            std::fs::create_dir_all(&repo_dir)
                .map_err(|e| FetchError::Cache(format!("{}: {e}", repo_dir.display())))?;
            let store = object_store::local::LocalFileSystem::new_with_prefix(&repo_dir)
                .map_err(|e| FetchError::Cache(format!("{}: {e}", repo_dir.display())))?
                .with_automatic_cleanup(true);
            let location = object_store::path::Path::from_iter(
                ["snapshots", self.commit.as_str()]
                    .into_iter()
                    .chain(key.split('/')),
            );
            with_retries(self.fetch.retries, || async {
                let dl = self.get_once(&key).await?;
                super::cache::write_verified(&store, &location, dl, &key, self.fetch.timeout).await
            })
            .await?;
        }
        let refs = repo_dir.join("refs");
        let written = std::fs::create_dir_all(&refs)
            .and_then(|()| std::fs::write(refs.join(sanitize_ref(&self.revision)), &self.commit));
        if let Err(e) = written {
            tracing::warn!(error = %e, "cannot record the revision in the hub cache");
        }
        Ok(local)
    }

    /// [`Hub::summary`] of a file the dataset may not have: `None` when the pinned commit has
    /// no such file. That answer is kept as huggingface_hub keeps it
    /// (`.no_exist/{commit}/{path}`, an empty file), so a restart on the same commit asks again
    /// for nothing.
    pub async fn optional_summary(&self, path: &str) -> Result<Option<PathBuf>, FetchError> {
        let key = relative_key(path).map_err(|e| FetchError::Refused(format!("{path}: {e}")))?;
        let marker = self
            .cache
            .path()
            .join(self.repo.folder_name())
            .join(".no_exist")
            .join(&self.commit)
            .join(&key);
        if marker.is_file() {
            return Ok(None);
        }
        match self.summary(path).await {
            Ok(local) => Ok(Some(local)),
            Err(FetchError::NotFound(_)) => {
                let kept = marker
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| std::fs::write(&marker, b""));
                if let Err(e) = kept {
                    tracing::debug!(error = %e, path = %marker.display(), "cannot record a missing hub file");
                }
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// One attempt: the resolve request, and the redirect target if there is one.
    async fn get_once(&self, path: &str) -> Result<Download, FetchError> {
        let key = relative_key(path).map_err(|e| FetchError::Refused(format!("{path}: {e}")))?;
        let mut after = vec!["resolve", self.commit.as_str()];
        after.extend(key.split('/'));
        let url = self.url(&["datasets"], &after);
        let first = self.get_following_first(url, path).await?;
        let (linked_sha, linked_size, resp) = first;
        if !resp.status().is_success() {
            return Err(self.status_error(resp.status(), path));
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

    /// The resolve request's own headers (`X-Linked-Etag`, `X-Linked-Size` are on the hub's
    /// first answer, not on the storage host's), then the final answer after redirects.
    async fn get_following_first(
        &self,
        url: url::Url,
        what: &str,
    ) -> Result<(Option<String>, Option<u64>, reqwest::Response), FetchError> {
        let timeout = self.fetch.timeout;
        let first = match tokio::time::timeout(timeout, self.client.get(url).send()).await {
            Ok(r) => r.map_err(|e| request_error(&e, what))?,
            Err(_) => return Err(FetchError::Timeout(format!("no answer for {what}"))),
        };
        let linked_sha = header(first.headers(), "x-linked-etag");
        let linked_size = header(first.headers(), "x-linked-size").and_then(|s| s.parse().ok());
        if !first.status().is_redirection() {
            return Ok((linked_sha, linked_size, first));
        }
        let loc = header(first.headers(), LOCATION.as_str())
            .ok_or_else(|| FetchError::Upstream(format!("redirect without Location for {what}")))?;
        let target = first
            .url()
            .join(&loc)
            .map_err(|e| FetchError::Upstream(format!("bad redirect for {what}: {e}")))?;
        Ok((linked_sha, linked_size, self.get(target, what).await?))
    }
}

/// The part of the revision API's answer that is read.
#[derive(serde::Deserialize)]
struct RevisionInfo {
    sha: String,
    #[serde(rename = "lastModified", default)]
    last_modified: Option<String>,
}

/// `YYYY-MM-DD` with digits where they belong.
pub fn is_iso_date(d: &str) -> bool {
    let b = d.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
        && matches!(d[5..7].parse::<u8>(), Ok(1..=12))
        && matches!(d[8..10].parse::<u8>(), Ok(1..=31))
}

/// A revision as a file name under `refs/` (huggingface_hub keeps `refs/pr/1` as a nested file;
/// anything that would climb out of `refs/` is flattened).
fn sanitize_ref(revision: &str) -> PathBuf {
    match relative_key(revision) {
        Ok(k) => PathBuf::from(k),
        Err(_) => PathBuf::from(revision.replace(['/', '\\', '.'], "_")),
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

    /// The hub's tree listing at the pinned commit, recursive, every page (`Link: rel="next"`).
    async fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, FetchError> {
        #[derive(serde::Deserialize)]
        struct TreeEntry {
            #[serde(rename = "type")]
            kind: String,
            path: String,
            #[serde(default)]
            size: u64,
        }
        let what = format!("the file list of {}@{}", self.repo_id, self.commit);
        let mut after = vec!["tree", self.commit.as_str()];
        after.extend(prefix.split('/').filter(|s| !s.is_empty()));
        let mut url = self.url(&["api", "datasets"], &after);
        url.query_pairs_mut().append_pair("recursive", "true");
        let mut out = Vec::new();
        for _ in 0..10_000 {
            let resp = with_retries(self.fetch.retries, || async {
                let resp = self.get(url.clone(), &what).await?;
                if !resp.status().is_success() {
                    return Err(self.status_error(resp.status(), &what));
                }
                Ok(resp)
            })
            .await?;
            let next = resp
                .headers()
                .get_all(reqwest::header::LINK)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .find(|l| l.contains("rel=\"next\""))
                .and_then(|l| l.split(';').next())
                .map(|u| {
                    u.trim()
                        .trim_start_matches('<')
                        .trim_end_matches('>')
                        .to_string()
                });
            let body = match tokio::time::timeout(self.fetch.timeout, resp.bytes()).await {
                Ok(r) => r.map_err(|e| request_error(&e, &what))?,
                Err(_) => return Err(FetchError::Timeout(what.clone())),
            };
            let page: Vec<TreeEntry> = serde_json::from_slice(&body)
                .map_err(|e| FetchError::Upstream(format!("{what}: the hub's answer: {e}")))?;
            out.extend(
                page.into_iter()
                    .filter(|e| e.kind == "file" && relative_key(&e.path).is_ok())
                    .map(|e| (e.path, e.size)),
            );
            if out.len() >= super::fetch::MAX_LISTED {
                break;
            }
            // The next page only on the hub's own origin (it carries the token).
            match next.and_then(|n| url.join(&n).ok()) {
                Some(n) if n.origin() == self.endpoint.origin() => url = n,
                _ => break,
            }
        }
        Ok(out)
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
