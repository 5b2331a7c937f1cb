//! Opening a run's raw file where it is: a file of a local dataset (checked again against its
//! root once open), or the raw cache's copy of a remote source's file, fetched on first use.

use super::error::ServiceError;
use super::snapshot::{RawFile, Snapshot};
use crate::engine::Domain;
use crate::store::RawLocation;
use crate::store::confine;

/// A raw file opened for reading: a local file (the dataset directory, or the raw cache's
/// directory), or a stream from a cache bucket.
pub enum Opened {
    File(std::fs::File),
    Stream(futures::stream::BoxStream<'static, object_store::Result<bytes::Bytes>>),
}

impl Opened {
    /// A blocking reader (call on the blocking pool).
    pub fn into_reader(self) -> Box<dyn std::io::Read + Send> {
        use futures::TryStreamExt;
        match self {
            Opened::File(f) => Box::new(f),
            Opened::Stream(s) => Box::new(tokio_util::io::SyncIoBridge::new(
                tokio_util::io::StreamReader::new(s.map_err(std::io::Error::other)),
            )),
        }
    }

    /// The bytes as a stream of chunks (a file is read 256 KiB at a time).
    pub fn into_stream(self) -> futures::stream::BoxStream<'static, std::io::Result<bytes::Bytes>> {
        use futures::{StreamExt, TryStreamExt};
        match self {
            Opened::File(f) => tokio_util::io::ReaderStream::with_capacity(
                tokio::fs::File::from_std(f),
                256 * 1024,
            )
            .boxed(),
            Opened::Stream(s) => s.map_err(std::io::Error::other).boxed(),
        }
    }
}

/// Open a run's raw file, fetching it into the raw cache first for a remote source. Returns the
/// file and its length.
pub async fn open_raw(
    snapshot: &Snapshot,
    domain: Domain,
    row: usize,
    file: RawFile,
) -> Result<(Opened, Option<u64>), ServiceError> {
    let id = snapshot.table(domain).run_id(row).to_string();
    let loc =
        snapshot
            .raw_location(domain, row, file)
            .map_err(|e| ServiceError::RawUnavailable {
                run_id: id.clone(),
                detail: e.0,
            })?;
    match loc {
        RawLocation::Local { root, path } => {
            let f = std::fs::File::open(&path).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => ServiceError::RawUnavailable {
                    run_id: id.clone(),
                    detail: format!("{} does not exist", path.display()),
                },
                _ => ServiceError::Internal(format!("{}: {e}", path.display())),
            })?;
            // Checked again once open: a symlink swapped in since the path was resolved.
            if let Err(reason) = confine::inside(&root, &path) {
                return Err(ServiceError::RawUnavailable {
                    run_id: id,
                    detail: format!("its {} is not served: {reason}", file.field()),
                });
            }
            let len = f.metadata().map(|m| m.len()).ok();
            Ok((Opened::File(f), len))
        }
        RawLocation::Remote(store, key) => {
            let got = store
                .open(&key)
                .await
                .map_err(|error| ServiceError::Fetch {
                    run_id: id.clone(),
                    error,
                })?;
            let len = Some(got.meta.size);
            match got.payload {
                object_store::GetResultPayload::File(f, _) => Ok((Opened::File(f), len)),
                object_store::GetResultPayload::Stream(s) => Ok((Opened::Stream(s), len)),
            }
        }
    }
}

/// One file an eviction removed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct EvictedFile {
    /// `results.json`, `prometheus.json`, or `derived` (the persisted ITLs, output lengths and
    /// timelines read from results.json).
    pub file: String,
    pub bytes: u64,
}

/// What `DELETE /v1/{domain}/runs/{run_id}/cache` removed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct Evicted {
    pub run_id: String,
    /// The files removed from the cache store (none when nothing of the run was cached; a local
    /// dataset's raw files are read in place and never removed).
    pub removed: Vec<EvictedFile>,
    /// Their bytes together.
    pub bytes: u64,
}

/// Remove a run's files from the cache store: its raw files fetched from a remote source and its
/// persisted derived data; its derived data in memory is dropped too. Replicas sharing the store
/// and catalog see them gone and fetch or read them again on next use.
pub async fn evict_run(
    derived: &super::derived::DerivedData,
    snapshot: &Snapshot,
    domain: Domain,
    row: usize,
) -> Result<Evicted, ServiceError> {
    let run_id = snapshot.table(domain).run_id(row).to_string();
    let failed = |error| ServiceError::Fetch {
        run_id: run_id.clone(),
        error,
    };
    let files: &[RawFile] = match domain {
        Domain::Llm => &[RawFile::Results, RawFile::Prometheus],
        Domain::Diffusion => &[RawFile::Results],
    };
    let mut removed = Vec::new();
    for &file in files {
        if let Ok(RawLocation::Remote(store, key)) = snapshot.raw_location(domain, row, file)
            && let Some(bytes) = store.evict(&key).await.map_err(failed)?
        {
            removed.push(EvictedFile {
                file: file.file_name().to_string(),
                bytes,
            });
        }
    }
    let persisted = snapshot.source.derived.as_ref().zip(
        snapshot
            .raw_location(domain, row, RawFile::Results)
            .ok()
            .as_ref()
            .and_then(crate::store::derived::fingerprint),
    );
    if let Some((store, fingerprint)) = persisted
        && let Some(bytes) = store.evict(&fingerprint).await.map_err(failed)?
    {
        removed.push(EvictedFile {
            file: "derived".into(),
            bytes,
        });
    }
    derived.forget(snapshot, domain, row);
    let bytes = removed.iter().map(|f| f.bytes).sum();
    Ok(Evicted {
        run_id,
        removed,
        bytes,
    })
}
