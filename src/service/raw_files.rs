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

/// Open the raw file named `file` (`results.json`, or `prometheus.json` of an LLM run) of the run
/// `run_id`: a name the domain's runs do not have, or a run it does not have, is refused.
pub async fn open_named(
    snapshot: &Snapshot,
    domain: Domain,
    run_id: &str,
    file: &str,
) -> Result<(Opened, Option<u64>), ServiceError> {
    let which = match (file, domain) {
        ("results.json", _) => RawFile::Results,
        ("prometheus.json", Domain::Llm) => RawFile::Prometheus,
        _ => {
            let allowed: Vec<String> = match domain {
                Domain::Llm => vec!["results.json".into(), "prometheus.json".into()],
                Domain::Diffusion => vec!["results.json".into()],
            };
            return Err(ServiceError::InvalidParameter {
                parameter: "file".into(),
                detail: format!("no raw file '{file}' for {domain} runs"),
                allowed: Some(allowed),
            });
        }
    };
    let row = snapshot
        .table(domain)
        .row_of(run_id)
        .ok_or_else(|| ServiceError::UnknownRun {
            domain,
            run_id: run_id.to_string(),
        })?;
    open_raw(snapshot, domain, row, which).await
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
