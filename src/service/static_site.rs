//! A built frontend (`--leaderboard-ui DIR`): every file under a directory read once into memory,
//! each with its content type, a strong entity tag from its bytes, and its compressed forms made
//! once (text only; images and fonts are compressed already). The directory is input like a
//! dataset: only regular files under it are served, a symbolic link only when it resolves inside
//! it, and the whole site is held to a size limit.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use super::coding::{Coding, Effort, Precompressed};

/// The most a site may hold (its files are kept in memory, with their compressed forms).
pub const MAX_SITE_BYTES: u64 = 256 << 20;
/// The most files a site may have.
pub const MAX_SITE_FILES: usize = 20_000;

/// How long a client may keep a file without asking again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// A build's content-hashed asset (`assets/index-B3x9kQ2a.js`): its name changes with its
    /// bytes, so it never changes.
    Immutable,
    /// The page itself (`index.html`, also sent for client routes): revalidated every time, so a
    /// new build is seen at once (the revalidation is a 304 while it is unchanged).
    Revalidate,
    /// Anything else: the service's max-age.
    MaxAge,
}

/// One file of the site.
#[derive(Debug)]
pub struct StaticFile {
    pub data: Precompressed,
    pub content_type: String,
    /// Whether compressed forms are sent (text); others are sent as they are.
    pub compressible: bool,
    /// A strong entity tag of the bytes, quoted.
    pub etag: String,
    pub freshness: Freshness,
}

impl StaticFile {
    /// The bytes in `coding` if it is one this file is sent in, else as they are; and whether
    /// they are final (not a quick form sent until the most effort's is made).
    pub fn body(&self, coding: Coding) -> (Bytes, Coding, bool) {
        if self.compressible && coding != Coding::Identity {
            let (bytes, done) = self.data.get(coding);
            (bytes, coding, done)
        } else {
            (self.data.body().clone(), Coding::Identity, true)
        }
    }
}

/// Why a site cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("{0} has no index.html (the page served for /leaderboard/ and its client routes)")]
    NoIndex(PathBuf),
    #[error("{dir} holds more than {limit} (the site is held in memory)")]
    TooLarge { dir: PathBuf, limit: String },
}

/// A built frontend, held in memory.
#[derive(Debug)]
pub struct StaticSite {
    files: HashMap<String, Arc<StaticFile>>,
    index: Arc<StaticFile>,
    root: PathBuf,
}

impl StaticSite {
    /// Read every regular file under `dir`.
    pub fn load(dir: &Path) -> Result<StaticSite, SiteError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SiteError::Io { path, source }
        };
        let root = dir.canonicalize().map_err(io(dir))?;
        if !root.is_dir() {
            return Err(SiteError::NotADirectory(dir.to_path_buf()));
        }
        let mut files = HashMap::new();
        let mut total = 0u64;
        for entry in walkdir::WalkDir::new(&root)
            .follow_links(false)
            .sort_by_file_name()
        {
            let entry = entry.map_err(|e| {
                let path = e.path().unwrap_or(&root).to_path_buf();
                SiteError::Io {
                    path,
                    source: e.into(),
                }
            })?;
            let Some(rel) = relative_name(&root, entry.path()) else {
                continue;
            };
            let path = entry.path();
            let regular = if entry.path_is_symlink() {
                // A link is followed only to a regular file inside the site.
                match path.canonicalize() {
                    Ok(target) if target.starts_with(&root) && target.is_file() => true,
                    _ => {
                        tracing::warn!(path = %path.display(), "not serving a link that leaves the site or names no file");
                        false
                    }
                }
            } else {
                entry.file_type().is_file()
            };
            if !regular {
                continue;
            }
            if files.len() >= MAX_SITE_FILES {
                return Err(SiteError::TooLarge {
                    dir: dir.to_path_buf(),
                    limit: format!("{MAX_SITE_FILES} files"),
                });
            }
            let bytes = std::fs::read(path).map_err(io(path))?;
            total += bytes.len() as u64;
            if total > MAX_SITE_BYTES {
                return Err(SiteError::TooLarge {
                    dir: dir.to_path_buf(),
                    limit: format!("{} MiB", MAX_SITE_BYTES >> 20),
                });
            }
            let file = static_file(&rel, bytes);
            files.insert(rel, Arc::new(file));
        }
        let index = files
            .get("index.html")
            .cloned()
            .ok_or_else(|| SiteError::NoIndex(dir.to_path_buf()))?;
        Ok(StaticSite { files, index, root })
    }

    /// The file at `path` (relative, `/`-separated, as in a URL after the site's prefix).
    pub fn file(&self, path: &str) -> Option<&Arc<StaticFile>> {
        self.files.get(path)
    }

    /// The page sent for the site's root and its client routes.
    pub fn index(&self) -> &Arc<StaticFile> {
        &self.index
    }

    /// The directory the site was read from.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How many files the site has.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Queue every text file's compressed forms at the most effort, a file at a time on the
    /// thread that yields to requests (until then a file is sent at a quick level).
    pub fn refine_all(&self) {
        for f in self.files.values().filter(|f| f.compressible) {
            let f = f.clone();
            super::coding::refine_later(Box::new(move || f.data.refine()));
        }
    }
}

/// `path` under `root` as a URL path (`assets/app.js`), or None for the root itself or a name
/// that is not UTF-8.
fn relative_name(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    let parts = parts?;
    (!parts.is_empty()).then(|| parts.join("/"))
}

fn static_file(rel: &str, bytes: Vec<u8>) -> StaticFile {
    let mime = mime_guess::from_path(rel).first_or_octet_stream();
    let text = mime.type_() == mime::TEXT
        || matches!(
            mime.essence_str(),
            "application/javascript"
                | "application/json"
                | "application/manifest+json"
                | "application/xml"
                | "application/wasm"
                | "image/svg+xml"
                | "application/vnd.ms-fontobject"
                | "font/ttf"
                | "font/otf"
        )
        || rel.ends_with(".map");
    let content_type = if mime.type_() == mime::TEXT && mime.get_param(mime::CHARSET).is_none() {
        format!("{}; charset=utf-8", mime.essence_str())
    } else {
        mime.to_string()
    };
    let digest = Sha256::digest(&bytes);
    let freshness = if rel == "index.html" {
        Freshness::Revalidate
    } else if rel.starts_with("assets/") && content_hashed(rel) {
        Freshness::Immutable
    } else {
        Freshness::MaxAge
    };
    StaticFile {
        compressible: text && bytes.len() >= 256,
        data: Precompressed::new(Bytes::from(bytes), Effort::Most),
        content_type,
        etag: format!("\"ui-{}\"", hex::encode(&digest[..16])),
        freshness,
    }
}

/// Whether a file name carries a build's content hash: a last `-` or `.` separated part of its
/// stem of 8 or more letters, digits, `_` or `-`, with at least one digit and one letter (Vite's
/// `index-B3x9kQ2a.js`, webpack's `main.3f9a8c1e.js`).
fn content_hashed(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let mut parts: Vec<&str> = name.split('.').collect();
    if parts.len() < 2 {
        return false;
    }
    parts.pop(); // the extension
    let last = parts[parts.len() - 1];
    (parts.len() >= 2 && looks_like_hash(last))
        || last
            .rsplit_once('-')
            .is_some_and(|(_, h)| looks_like_hash(h))
}

fn looks_like_hash(h: &str) -> bool {
    h.len() >= 8
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && h.bytes().any(|b| b.is_ascii_digit())
        && h.bytes().any(|b| b.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_hashed_names() {
        assert!(content_hashed("assets/index-B3x9kQ2a.js"));
        assert!(content_hashed("assets/vendor-react-Dk2_x9aQ.css"));
        assert!(content_hashed("assets/main.3f9a8c1e.js"));
        assert!(!content_hashed("assets/logo.svg"));
        assert!(!content_hashed("assets/chunk-vendor.js"));
        assert!(!content_hashed("assets/photo-20240101.png"));
        assert!(!content_hashed("assets/index-abcdefgh.js"));
    }
}
