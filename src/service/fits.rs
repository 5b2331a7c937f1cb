//! Fitted models over the dataset (logistic sweep fits, ITL mixtures per run), cached: in memory
//! (moka, weighed by bytes) and persisted with the derived data as an Arrow IPC stream, under a
//! fingerprint of the snapshot's content and the normalised request. A repeated request is
//! answered without fitting again, after a restart or on another replica too.

use std::future::Future;
use std::sync::Arc;

use sha2::Digest;

use super::error::ServiceError;
use super::snapshot::Snapshot;
use crate::engine::arrow_conv::{frame_from_batch, frame_to_batch};
use crate::engine::frame::Frame;

/// Bumped when a fit's algorithm or its answer's columns change: older persisted fits are then
/// not found.
const FITS_VERSION: u32 = 1;

/// Fit results by fingerprint.
pub struct Fits {
    memory: moka::sync::Cache<String, Arc<Frame>>,
    background: tokio_util::task::TaskTracker,
}

/// What a kept fit holds besides its cells: the cache's entry and the shared frame (a fixed
/// amount), and per column its name, its vector and the enum around it.
const ENTRY_BYTES: usize = 256;
const COLUMN_BYTES: usize = 96;

/// Approximate bytes a kept fit holds: the entry, its key, each column's name and overhead, its
/// cells at 16 bytes each and its text. (Cells alone counted a one-row fit at a small part of
/// what the process grew by to hold it.)
fn weight(key: &str, frame: &Frame) -> u32 {
    use crate::engine::frame::ColumnData;
    let columns: usize = frame
        .columns
        .iter()
        .map(|c| {
            let cells: usize = match &c.data {
                ColumnData::Str(v) | ColumnData::Json(v) => v
                    .iter()
                    .map(|s| 16 + s.as_ref().map_or(0, |s| s.len()))
                    .sum(),
                other => other.len() * 16,
            };
            COLUMN_BYTES + c.name.len() + cells
        })
        .sum();
    u32::try_from(ENTRY_BYTES + key.len() + columns).unwrap_or(u32::MAX)
}

impl Fits {
    /// A cache of at most `memory_bytes`; persisting runs on `background` (a stop waits for it).
    pub fn new(memory_bytes: u64, background: tokio_util::task::TaskTracker) -> Fits {
        Fits {
            memory: moka::sync::Cache::builder()
                .max_capacity(memory_bytes)
                .weigher(|k: &String, f: &Arc<Frame>| weight(k, f))
                .build(),
            background,
        }
    }

    /// The fingerprint of `request` (a normalised description of the fit) over `snapshot`.
    pub fn fingerprint(snapshot: &Snapshot, request: &str) -> String {
        let text = format!("fits/v{FITS_VERSION}\n{}\n{request}", snapshot.content_id);
        hex::encode(sha2::Sha256::digest(text.as_bytes()))
    }

    /// The fit described by `request`: from memory, else from the persisted copy, else computed
    /// by `fit` and persisted off the request path.
    pub async fn get_or_fit<F>(
        &self,
        snapshot: &Arc<Snapshot>,
        request: &str,
        fit: F,
    ) -> Result<Arc<Frame>, ServiceError>
    where
        F: Future<Output = Result<Frame, ServiceError>>,
    {
        let fp = Self::fingerprint(snapshot, request);
        if let Some(hit) = self.memory.get(&fp) {
            return Ok(hit);
        }
        let store = snapshot.source.derived.clone();
        if let Some(store) = &store
            && let Some(bytes) = store.get(&fp).await
        {
            match read_frame(bytes) {
                Ok(frame) => {
                    let frame = Arc::new(frame);
                    self.memory.insert(fp, frame.clone());
                    return Ok(frame);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "persisted fit unusable; fitting again");
                    store.remove(&fp).await;
                }
            }
        }
        let frame = Arc::new(fit.await?);
        self.memory.insert(fp.clone(), frame.clone());
        if let Some(store) = store {
            let persisted = frame.clone();
            self.background.spawn_blocking(move || {
                let written = store.put_with(&fp, |out| write_frame(&persisted, out));
                if let Err(e) = written {
                    tracing::warn!(error = %e, "cannot persist a fit");
                }
            });
        }
        Ok(frame)
    }
}

fn write_frame(frame: &Frame, out: &mut dyn std::io::Write) -> Result<(), String> {
    let batch = frame_to_batch(frame, &|_| true).map_err(|e| e.to_string())?;
    let mut w = arrow::ipc::writer::StreamWriter::try_new(out, &batch.schema())
        .map_err(|e| e.to_string())?;
    w.write(&batch).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())
}

fn read_frame(bytes: bytes::Bytes) -> Result<Frame, String> {
    let mut reader = arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None)
        .map_err(|e| e.to_string())?;
    let batch = reader
        .next()
        .ok_or("no record batch")?
        .map_err(|e| e.to_string())?;
    if reader.next().is_some() {
        return Err("more than one record batch".into());
    }
    frame_from_batch(&batch).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::frame::{ColumnData, FrameColumn};

    #[test]
    fn frames_round_trip_through_their_persisted_form() {
        let frame = Frame {
            columns: vec![
                FrameColumn {
                    name: "model_id".into(),
                    data: ColumnData::Str(vec![Some(Arc::from("a/b")), None]),
                },
                FrameColumn {
                    name: "n".into(),
                    data: ColumnData::Int(vec![Some(3), None]),
                },
                FrameColumn {
                    name: "L".into(),
                    data: ColumnData::Float(vec![Some(1.5), Some(f64::NAN)]),
                },
                FrameColumn {
                    name: "degenerate".into(),
                    data: ColumnData::Bool(vec![Some(false), Some(true)]),
                },
                FrameColumn {
                    name: "batch_sizes".into(),
                    data: ColumnData::Json(vec![Some(Arc::from("[8,16]")), None]),
                },
            ],
        };
        let mut bytes = Vec::new();
        write_frame(&frame, &mut bytes).unwrap();
        let back = read_frame(bytes.into()).unwrap();
        assert_eq!(back.columns.len(), 5);
        assert_eq!(back.columns[4].data, frame.columns[4].data);
        assert_eq!(back.columns[0].data, frame.columns[0].data);
        assert!(
            matches!(&back.columns[2].data, ColumnData::Float(v) if v[0] == Some(1.5) && v[1].unwrap().is_nan())
        );
        assert!(read_frame(bytes::Bytes::from_static(b"junk")).is_err());
    }

    /// A fit persisted by one service is answered by a fresh one (a restart, another replica)
    /// without fitting again; a different snapshot content or request is a different fit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_persisted_fit_is_used_after_a_restart() {
        use crate::store::derived::DerivedStore;
        let sample = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/sample");
        let cache = tempfile::tempdir().unwrap();
        let snapshot = || async {
            let mut s = crate::service::open::load_compiled_dir(&sample)
                .await
                .unwrap();
            let fs = object_store::local::LocalFileSystem::new_with_prefix(cache.path()).unwrap();
            s.source.derived = Some(DerivedStore::new(Arc::new(fs), true, None, 3));
            Arc::new(s)
        };
        let frame = Frame {
            columns: vec![FrameColumn {
                name: "L".into(),
                data: ColumnData::Float(vec![Some(433.9)]),
            }],
        };
        let first = Fits::new(1 << 20, tokio_util::task::TaskTracker::new());
        let s1 = snapshot().await;
        let f = frame.clone();
        let got = first.get_or_fit(&s1, "req", async { Ok(f) }).await.unwrap();
        assert_eq!(*got, frame);
        first.background.close();
        first.background.wait().await;

        let fresh = Fits::new(1 << 20, tokio_util::task::TaskTracker::new());
        let s2 = snapshot().await;
        assert_eq!(s1.content_id, s2.content_id, "the same data, the same id");
        let must_not_fit = async { Err(ServiceError::Internal("fitted again".into())) };
        let got = fresh.get_or_fit(&s2, "req", must_not_fit).await.unwrap();
        assert_eq!(*got, frame);
        let other = fresh
            .get_or_fit(&s2, "another request", async {
                Err(ServiceError::Internal("fit".into()))
            })
            .await;
        assert!(other.is_err());
    }

    #[test]
    fn a_fit_is_weighed_with_its_key_names_and_entry() {
        let frame = Frame {
            columns: (0..16)
                .map(|i| FrameColumn {
                    name: format!("column_{i}"),
                    data: ColumnData::Float(vec![Some(1.0)]),
                })
                .collect(),
        };
        let key = "0".repeat(64);
        // 256 + 64 + 16 columns of (96 + 8 or 9 name bytes + 16): a one-row ITL mixture's size.
        assert_eq!(
            weight(&key, &frame),
            256 + 64 + 16 * (96 + 16) + 10 * 8 + 6 * 9
        );
    }
}
