//! An object-store URL as a source (`s3://`, `gs://`, `az://`, `http(s)://`, `file://`).

use std::sync::Arc;

use futures::StreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};

use super::confine;
use super::fetch::{Download, FetchError, Upstream};

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

    async fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, FetchError> {
        let base = self.location(prefix);
        let skip = self.prefix.parts().count();
        let mut out = Vec::new();
        let mut listing = self.store.list(Some(&base));
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(|e| FetchError::Upstream(format!("{}: {e}", self.url)))?;
            let rel = meta
                .location
                .parts()
                .skip(skip)
                .map(|p| p.as_ref().to_string())
                .collect::<Vec<_>>()
                .join("/");
            // Only paths the source would serve (the same check as a fetch).
            if confine::relative_key(&rel).is_ok() {
                out.push((rel, meta.size));
            }
            if out.len() >= crate::store::fetch::MAX_LISTED {
                break;
            }
        }
        Ok(out)
    }

    fn namespace(&self) -> String {
        use sha2::Digest;
        let h = sha2::Sha256::digest(self.url.as_bytes());
        format!("url/{}", &hex::encode(h)[..16])
    }
}
