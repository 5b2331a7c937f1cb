//! The served dataset as a Hugging Face Hub repository (`--hub-mirror`): which repository and
//! commit it is, which revisions name it, and its files, opened where the raw endpoints open them
//! (a local root read in place, a remote source's file through the raw cache, fetched once for
//! every replica), never outside the source's root.
//!
//! A local, compiled or raw source has no hub commit: it is named by one made from the snapshot's
//! content (40 hex digits), so a client's hub cache keeps one snapshot directory per content and
//! two replicas serving the same files give the same commit.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use super::raw_files::Opened;
use super::snapshot::Snapshot;
use crate::store::confine;
use crate::store::hub::parse_hf_url;
use crate::store::{FetchError, RawLocation};

/// Why a mirror request is refused; each is the hub's answer of the same kind.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MirrorError {
    #[error("repository '{asked}' is not served here (this mirror serves '{served}')")]
    UnknownRepo { asked: String, served: String },
    #[error("revision '{asked}' is not served here (this mirror serves {served})")]
    UnknownRevision { asked: String, served: String },
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Fetch(FetchError),
    #[error("{0}")]
    Internal(String),
}

/// The repository a snapshot is served as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorRepo {
    /// `org/name`.
    pub id: String,
    /// The commit every accepted revision resolves to.
    pub commit: String,
    /// Names that resolve to it besides the commit: `main`, and the revision an `hf://` source
    /// was asked at.
    pub names: Vec<String>,
}

impl MirrorRepo {
    /// The repository of `snapshot`: an `hf://` source's own, else `configured`.
    pub fn of(snapshot: &Snapshot, configured: &str) -> MirrorRepo {
        let source = &snapshot.source;
        let mut names = vec!["main".to_string()];
        // The name a local snapshot is served as (`--snapshot NAME=DIR`).
        if source.remote.is_none()
            && let Some(name) = &source.name
        {
            names.push(name.clone());
        }
        if let Some((repo, asked)) = parse_hf_url(&source.location)
            && let Some(commit) = source.revision.as_deref().filter(|c| is_commit(c))
        {
            if let Some(asked) = asked
                && !names.contains(&asked)
            {
                names.push(asked);
            }
            return MirrorRepo {
                id: repo,
                commit: commit.to_ascii_lowercase(),
                names,
            };
        }
        let digest = Sha256::digest(format!("mlenergy-server mirror {}", snapshot.content_id));
        MirrorRepo {
            id: configured.to_string(),
            commit: hex::encode(digest)[..40].to_string(),
            names,
        }
    }

    /// Check that `repo` at `revision` is this repository.
    pub fn check(&self, repo: &str, revision: &str) -> Result<(), MirrorError> {
        if repo != self.id {
            return Err(MirrorError::UnknownRepo {
                asked: repo.to_string(),
                served: self.id.clone(),
            });
        }
        let ok =
            revision.eq_ignore_ascii_case(&self.commit) || self.names.iter().any(|n| n == revision);
        if !ok {
            return Err(MirrorError::UnknownRevision {
                asked: revision.to_string(),
                served: format!("{} and commit {}", self.names.join(", "), self.commit),
            });
        }
        Ok(())
    }
}

fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A file of the repository, opened: its bytes, length and entity tag (its SHA-256, as the hub
/// tags LFS files).
pub struct MirrorFile {
    pub opened: Opened,
    pub len: u64,
    pub sha256: String,
}

/// Entity tags of local files, by path, length and modification time: computed once.
#[derive(Clone)]
pub struct Tags {
    cache: moka::sync::Cache<(PathBuf, u64, SystemTime), Arc<str>>,
}

impl Default for Tags {
    fn default() -> Self {
        Tags {
            cache: moka::sync::Cache::new(100_000),
        }
    }
}

impl Tags {
    fn of_file(&self, path: &Path, len: u64, modified: SystemTime) -> std::io::Result<String> {
        let key = (path.to_path_buf(), len, modified);
        if let Some(t) = self.cache.get(&key) {
            return Ok(t.to_string());
        }
        let mut f = std::fs::File::open(path)?;
        let mut h = Sha256::new();
        std::io::copy(&mut f, &mut h)?;
        let tag: Arc<str> = Arc::from(hex::encode(h.finalize()));
        self.cache.insert(key, tag.clone());
        Ok(tag.to_string())
    }
}

/// Open `path` (relative to the repository's root) of `snapshot`'s source.
pub async fn open_file(
    snapshot: &Snapshot,
    tags: &Tags,
    path: &str,
) -> Result<MirrorFile, MirrorError> {
    let not_found = {
        let path = path.to_string();
        move || MirrorError::NotFound(format!("no file '{path}' in this repository"))
    };
    let Some(location) = snapshot.locate(path).map_err(|_| not_found())? else {
        return Err(not_found());
    };
    match location {
        RawLocation::Local { root, path: file } => {
            let tags = tags.clone();
            let not_found = not_found.clone();
            tokio::task::spawn_blocking(move || {
                let f = std::fs::File::open(&file).map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::IsADirectory => not_found(),
                    _ => MirrorError::Internal(format!("{}: {e}", file.display())),
                })?;
                // Checked again once open: a symlink swapped in since the path was resolved.
                confine::inside(&root, &file).map_err(|_| not_found())?;
                let meta = f
                    .metadata()
                    .map_err(|e| MirrorError::Internal(format!("{}: {e}", file.display())))?;
                if !meta.is_file() {
                    return Err(not_found());
                }
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                let sha256 = tags
                    .of_file(&file, meta.len(), modified)
                    .map_err(|e| MirrorError::Internal(format!("{}: {e}", file.display())))?;
                Ok(MirrorFile {
                    opened: Opened::File(f),
                    len: meta.len(),
                    sha256,
                })
            })
            .await
            .map_err(|e| MirrorError::Internal(format!("open task: {e}")))?
        }
        RawLocation::Remote(store, key) => {
            let fetch = |e: FetchError| match e {
                FetchError::NotFound(_) | FetchError::Refused(_) => not_found(),
                other => MirrorError::Fetch(other),
            };
            let entry = store.ensure(&key).await.map_err(fetch)?;
            let got = store.open(&key).await.map_err(fetch)?;
            let sha256 = match entry.sha256 {
                Some(s) => s,
                None => hex::encode(Sha256::digest(format!(
                    "{}\0{}",
                    store.key(&key),
                    entry.size
                ))),
            };
            let len = got.meta.size;
            let opened = match got.payload {
                object_store::GetResultPayload::File(f, _) => Opened::File(f),
                object_store::GetResultPayload::Stream(s) => Opened::Stream(s),
            };
            Ok(MirrorFile {
                opened,
                len,
                sha256,
            })
        }
    }
}

/// One file of a listing: its path and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub path: String,
    pub size: u64,
}

use crate::store::fetch::MAX_LISTED;

/// Every file of the repository under `prefix` (empty: all): a local root walked (symlinks are
/// followed only where they stay inside it), a remote source listed by its upstream.
pub async fn list_files(snapshot: &Snapshot, prefix: &str) -> Result<Vec<Listed>, MirrorError> {
    let prefix = prefix.trim_matches('/').to_string();
    if !prefix.is_empty() {
        confine::relative_key(&prefix).map_err(|_| {
            MirrorError::NotFound(format!("no folder '{prefix}' in this repository"))
        })?;
    }
    if let Some(remote) = &snapshot.source.remote {
        let mut files = remote.list(&prefix).await.map_err(MirrorError::Fetch)?;
        files.sort();
        return Ok(files
            .into_iter()
            .map(|(path, size)| Listed { path, size })
            .collect());
    }
    let Some(root) = snapshot.source.root.clone() else {
        return Ok(Vec::new());
    };
    tokio::task::spawn_blocking(move || walk(&root, &prefix))
        .await
        .map_err(|e| MirrorError::Internal(format!("listing task: {e}")))?
}

fn walk(root: &Path, prefix: &str) -> Result<Vec<Listed>, MirrorError> {
    let base = if prefix.is_empty() {
        root.to_path_buf()
    } else {
        confine::resolve_local(root, prefix).map_err(|_| {
            MirrorError::NotFound(format!("no folder '{prefix}' in this repository"))
        })?
    };
    if !base.exists() {
        return Err(MirrorError::NotFound(format!(
            "no folder '{prefix}' in this repository"
        )));
    }
    let canonical_root = root
        .canonicalize()
        .map_err(|e| MirrorError::Internal(format!("{}: {e}", root.display())))?;
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(&base)
        .follow_links(true)
        .sort_by_file_name()
    {
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_file() {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        // Hidden files and folders (.git, .cache) are not part of the dataset.
        if rel.split('/').any(|part| part.starts_with('.')) {
            continue;
        }
        if confine::inside_resolved(&canonical_root, entry.path()).is_err() {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        out.push(Listed {
            path: rel,
            size: meta.len(),
        });
        if out.len() >= MAX_LISTED {
            break;
        }
    }
    Ok(out)
}
