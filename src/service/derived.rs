//! Derived raw data of runs (output lengths, ITL samples, timelines) as a service: each run's
//! `results.json` is read once (the fast reader, falling back to the serde reader, which decides
//! every answer and error), kept in memory weighed by bytes, persisted as Arrow IPC in the
//! snapshot's derived store off the request path, and loaded from there after a restart or by
//! another replica. Concurrent callers for one run share one load. An eviction (`evict_run`)
//! removes a run's cached raw files and persisted derived data.

use std::sync::Arc;

use super::error::ServiceError;
use super::raw_files::{Opened, open_raw};
use super::snapshot::{RawFile, Snapshot};
use crate::engine::Domain;
use crate::rawfile::{self, RawError, RunDerived, ipc};
use crate::store::RawLocation;

/// Key of a run's derived data: (snapshot generation, domain, row).
type Key = (u64, Domain, usize);

/// The derived data of runs, in memory and persisted (a handle: clones share both).
#[derive(Clone, Debug)]
pub struct DerivedData {
    /// Weighed by bytes; `try_get_with` makes concurrent requests for one run read its file once.
    memory: moka::sync::Cache<Key, Arc<RunDerived>>,
    /// Persisting that outlives its request: a shutdown waits for it, so what was computed is
    /// written rather than cut off.
    background: tokio_util::task::TaskTracker,
    /// Runs persisted, persists that failed, the time spent persisting (ns), and runs' data
    /// loaded from the persisted copy and read from the raw file, since start.
    persisting: Arc<[std::sync::atomic::AtomicU64; 5]>,
}

/// What persisting derived data has done since start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PersistStats {
    pub written: u64,
    pub failed: u64,
    pub seconds: f64,
    /// Runs' derived data loaded from the persisted copy (this replica's or another's).
    pub loaded: u64,
    /// Runs' derived data read from the raw file.
    pub parsed: u64,
}

impl DerivedData {
    /// Memory for derived data unless configured otherwise.
    pub const MEMORY_BYTES: u64 = 512 * 1024 * 1024;

    pub fn new(memory_bytes: u64) -> Self {
        DerivedData {
            memory: moka::sync::Cache::builder()
                .max_capacity(memory_bytes)
                .weigher(|_: &Key, v: &Arc<RunDerived>| {
                    u32::try_from(v.weight()).unwrap_or(u32::MAX)
                })
                .build(),
            background: tokio_util::task::TaskTracker::new(),
            persisting: Default::default(),
        }
    }

    /// What persisting has done since start (written and failed, and its time).
    pub fn persist_stats(&self) -> PersistStats {
        use std::sync::atomic::Ordering::Relaxed;
        let p = &self.persisting;
        PersistStats {
            written: p[0].load(Relaxed),
            failed: p[1].load(Relaxed),
            seconds: p[2].load(Relaxed) as f64 / 1e9,
            loaded: p[3].load(Relaxed),
            parsed: p[4].load(Relaxed),
        }
    }

    /// Drop a run's derived data from memory (an eviction; read again on next use).
    pub fn forget(&self, snapshot: &Snapshot, domain: Domain, row: usize) {
        self.memory.invalidate(&(snapshot.generation, domain, row));
    }

    /// Work still running after its request (persisting): `close` and `wait` on it to stop.
    pub fn background(&self) -> &tokio_util::task::TaskTracker {
        &self.background
    }

    /// A run's derived raw data: from memory, else from the persisted copy, else read from its
    /// `results.json` (fetched into the raw cache first for a remote source) and persisted.
    pub async fn get(
        &self,
        snapshot: &Arc<Snapshot>,
        domain: Domain,
        row: usize,
    ) -> Result<Arc<RunDerived>, ServiceError> {
        let key = (snapshot.generation, domain, row);
        if let Some(hit) = self.memory.get(&key) {
            return Ok(hit);
        }
        let cache = self.memory.clone();
        let snapshot = snapshot.clone();
        let handle = tokio::runtime::Handle::current();
        let counts = self.persisting.clone();
        let (derived, fresh) = tokio::task::spawn_blocking(move || {
            let mut fresh = None;
            let got = cache.try_get_with(key, || {
                let (d, origin) = handle.block_on(load(&snapshot, domain, row))?;
                let slot = match &origin {
                    Origin::Persisted => 3,
                    Origin::Raw(_) => 4,
                };
                counts[slot].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if let Origin::Raw(Some(fp)) = origin {
                    fresh = Some((snapshot, fp));
                }
                Ok::<_, ServiceError>(Arc::new(d))
            });
            got.map(|d| (d, fresh))
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("raw reader task failed: {e}")))?
        .map_err(|e| (*e).clone())?;
        if let Some((snapshot, fingerprint)) = fresh {
            // Persist off the request path; a failure only costs a re-read after a restart.
            let d = derived.clone();
            let counts = self.persisting.clone();
            self.background.spawn_blocking(move || {
                use std::sync::atomic::Ordering::Relaxed;
                let started = std::time::Instant::now();
                if let Some(ok) = persist(&snapshot, domain, row, &fingerprint, &d) {
                    counts[if ok { 0 } else { 1 }].fetch_add(1, Relaxed);
                    counts[2].fetch_add(started.elapsed().as_nanos() as u64, Relaxed);
                }
            });
        }
        Ok(derived)
    }
}

/// Write a run's derived data to the snapshot's derived store under `fingerprint`: whether it
/// was written, or None without a store.
fn persist(
    snapshot: &Snapshot,
    domain: Domain,
    row: usize,
    fingerprint: &str,
    d: &RunDerived,
) -> Option<bool> {
    let store = snapshot.source.derived.as_ref()?;
    let written = store.put_with(fingerprint, |out| ipc::write_ipc(d, out));
    if let Err(e) = &written {
        let id = snapshot.table(domain).run_id(row);
        tracing::warn!(run_id = %id, error = %e, "cannot persist derived data");
    }
    Some(written.is_ok())
}

/// Where `load` found a run's derived data.
enum Origin {
    /// The persisted copy.
    Persisted,
    /// Its raw file, with the fingerprint to persist it under when the snapshot has a derived
    /// store.
    Raw(Option<String>),
}

/// `DerivedData::get` without the memory cache (on the blocking pool): the persisted copy, else
/// the raw file.
async fn load(
    snapshot: &Snapshot,
    domain: Domain,
    row: usize,
) -> Result<(RunDerived, Origin), ServiceError> {
    let id = snapshot.table(domain).run_id(row).to_string();
    let store = snapshot.source.derived.as_ref();
    let fingerprint = store
        .and(snapshot.raw_location(domain, row, RawFile::Results).ok())
        .as_ref()
        .and_then(crate::store::derived::fingerprint);
    if let (Some(store), Some(fp)) = (store, &fingerprint)
        && let Some(bytes) = store.get(fp).await
    {
        match ipc::from_ipc(bytes) {
            Ok(d) => return Ok((d, Origin::Persisted)),
            Err(e) => {
                tracing::warn!(run_id = %id, error = %e, "persisted derived data unusable; reading the raw file");
                store.remove(fp).await;
            }
        }
    }
    let llm = domain == Domain::Llm;
    let (opened, len) = open_raw(snapshot, domain, row, RawFile::Results).await?;
    let started = std::time::Instant::now();
    let fast = match opened {
        Opened::File(f) => rawfile::read_run_at(&f, llm),
        stream => off_runtime(stream, move |r| rawfile::read_run_fast(r, llm)).await?,
    };
    let derived = match fast {
        Ok(d) => d,
        Err(_) => {
            // Not what the fast path expects: the reader path gives the answer or the error.
            let (opened, _) = open_raw(snapshot, domain, row, RawFile::Results).await?;
            let label = format!("results.json of {id}");
            off_runtime(opened, move |r| rawfile::read_run(r, &label, llm))
                .await?
                .map_err(|e| raw_error(&id, &e))?
        }
    };
    tracing::debug!(run_id = %id, bytes = len, elapsed_ms = started.elapsed().as_millis() as u64, "read results.json");
    Ok((derived, Origin::Raw(fingerprint)))
}

/// `read` over the opened file's blocking reader, on a blocking thread of its own. `load` runs
/// inside `Handle::block_on`, where the reader of a cache bucket's stream (a bridge that itself
/// blocks on the runtime) cannot be read: tokio refuses to start a runtime within one.
async fn off_runtime<T: Send + 'static>(
    opened: Opened,
    read: impl FnOnce(Box<dyn std::io::Read + Send>) -> T + Send + 'static,
) -> Result<T, ServiceError> {
    tokio::task::spawn_blocking(move || read(opened.into_reader()))
        .await
        .map_err(|e| ServiceError::Internal(format!("raw reader task failed: {e}")))
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
    derived: &DerivedData,
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

/// A reading error of run `run_id` as the service reports it.
pub fn raw_error(run_id: &str, e: &RawError) -> ServiceError {
    match e {
        RawError::NotFound(p) => ServiceError::RawUnavailable {
            run_id: run_id.into(),
            detail: format!("{p} does not exist"),
        },
        RawError::Unreadable { detail, .. } | RawError::Content(detail) => {
            ServiceError::RawInvalid {
                run_id: run_id.into(),
                detail: detail.clone(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::store::derived::DerivedStore;

    /// The one LLM run of data/sample with a raw file.
    const RAW: &str = "llm/h100/current/run/mllm/video-chat/results/Qwen/Qwen3-VL-30B-A3B-Instruct/H100/num_gpus+2+max_num_seqs+8+num_request_repeats+1+dataset_split+train+num_requests+512+seed+48105/results.json";

    fn sample() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/sample")
    }

    /// data/sample's summaries and its LLM raw file, copied under `dir`.
    fn copy_sample(dir: &Path) {
        for f in ["runs/llm.parquet", "runs/diffusion.parquet", RAW] {
            let to = dir.join(f);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(sample().join(f), to).unwrap();
        }
    }

    /// A snapshot of `data` whose derived data is persisted under `cache`, and the raw run's row.
    async fn snapshot(data: &Path, cache: &Path) -> (Arc<Snapshot>, usize) {
        let mut s = super::super::open::load_compiled_dir(data).await.unwrap();
        std::fs::create_dir_all(cache).unwrap();
        let fs = object_store::local::LocalFileSystem::new_with_prefix(cache).unwrap();
        s.source.derived = Some(DerivedStore::new(
            Arc::new(fs),
            true,
            None,
            ipc::FORMAT_VERSION,
        ));
        let t = s.table(Domain::Llm);
        let col = t.field_index("results_path").unwrap();
        let row = (0..t.len())
            .find(|&r| !matches!(t.column(col).get(r), crate::engine::frame::Value::Null))
            .unwrap();
        (Arc::new(s), row)
    }

    fn persisted(cache: &Path) -> usize {
        walkdir::WalkDir::new(cache)
            .into_iter()
            .flatten()
            .filter(|e| {
                e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "arrow")
            })
            .count()
    }

    /// Concurrent callers share one load; what is read is persisted off the request path, and a
    /// fresh service over the same store answers from the persisted copy without reading the raw
    /// file (here overwritten with same-size garbage that keeps its modification time).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_load_then_persisted_and_reused() {
        let tmp = tempfile::tempdir().unwrap();
        let (data, cache) = (tmp.path().join("data"), tmp.path().join("cache"));
        copy_sample(&data);
        let (snap, row) = snapshot(&data, &cache).await;
        let service = DerivedData::new(DerivedData::MEMORY_BYTES);
        let got =
            futures::future::join_all((0..8).map(|_| service.get(&snap, Domain::Llm, row))).await;
        let first = got[0].as_ref().unwrap().clone();
        for g in &got {
            assert!(
                Arc::ptr_eq(g.as_ref().unwrap(), &first),
                "one load for all callers"
            );
        }
        let want =
            rawfile::read_run(std::fs::File::open(sample().join(RAW)).unwrap(), "x", true).unwrap();
        assert_eq!(*first, want);
        service.background().close();
        service.background().wait().await;
        assert_eq!(persisted(&cache), 1);

        let raw = data.join(RAW);
        let meta = std::fs::metadata(&raw).unwrap();
        std::fs::write(&raw, vec![b'x'; meta.len() as usize]).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&raw)
            .unwrap()
            .set_modified(meta.modified().unwrap())
            .unwrap();
        let restarted = DerivedData::new(DerivedData::MEMORY_BYTES);
        let (snap, row) = snapshot(&data, &cache).await;
        let again = restarted.get(&snap, Domain::Llm, row).await.unwrap();
        assert_eq!(*again, want);
    }

    /// What the fast reader cannot read goes to the serde reader, whose answer or error counts:
    /// a compact file with an odd record reads as serde reads it; a file that is not JSON is
    /// `RawInvalid` with serde's message; a missing file is `RawUnavailable`; nothing is persisted.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_serde_reader_decides_what_the_fast_one_cannot() {
        let tmp = tempfile::tempdir().unwrap();
        let (data, cache) = (tmp.path().join("data"), tmp.path().join("cache"));
        copy_sample(&data);
        let raw = data.join(RAW);
        let odd = r#"{"results": [{"success": true, "itl": [0.01, "0.02", 0], "output_len": 2.0, "output_len": 3}, 7], "timeline": {"power": {"device_instant": {"0": [[1, 2.5]]}}}}"#;
        std::fs::write(&raw, odd).unwrap();
        let (snap, row) = snapshot(&data, &cache).await;
        let service = DerivedData::new(DerivedData::MEMORY_BYTES);
        let got = service.get(&snap, Domain::Llm, row).await.unwrap();
        assert_eq!(*got, rawfile::read_run(odd.as_bytes(), "x", true).unwrap());
        assert!(got.non_object);

        std::fs::write(&raw, b"{\"results\": [").unwrap();
        let (snap, row) = snapshot(&data, &cache).await;
        match service.get(&snap, Domain::Llm, row).await {
            Err(ServiceError::RawInvalid { detail, .. }) => {
                assert!(detail.contains("EOF while parsing"), "{detail}")
            }
            other => panic!("{other:?}"),
        }

        std::fs::remove_file(&raw).unwrap();
        let (snap, row) = snapshot(&data, &cache).await;
        match service.get(&snap, Domain::Llm, row).await {
            Err(ServiceError::RawUnavailable { detail, .. }) => {
                assert!(detail.contains("does not exist"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
        service.background().close();
        service.background().wait().await;
        assert_eq!(persisted(&cache), 1, "only the readable file was persisted");
    }
}
