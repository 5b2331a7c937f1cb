//! Dataset revisions side by side: the snapshot a request names with `revision` (a hub commit,
//! branch or tag, or the name of a local snapshot directory), loaded on first use beside the
//! served one and held in a bounded set, least recently used out (`--max-snapshots`). A load
//! that fails is not held: the next request for that revision loads it again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use super::error::{RevisionProblem, ServiceError};
use super::snapshot::Snapshot;

/// Loads the snapshot of a revision that is not the served one.
pub type Loader =
    Arc<dyn Fn(String) -> BoxFuture<'static, Result<Snapshot, ServiceError>> + Send + Sync>;

/// The revisions held besides the served snapshot, and how to load another.
pub struct Revisions {
    held: moka::future::Cache<String, Arc<Snapshot>>,
    loader: Option<Loader>,
    /// The last revision loaded and how long it took (the first request of a revision reports
    /// it in `/v1/datasets`).
    last_load: std::sync::Mutex<Option<(String, Duration)>>,
}

impl Default for Revisions {
    fn default() -> Self {
        Revisions::new(None, Self::MAX_SNAPSHOTS)
    }
}

impl Revisions {
    /// `--max-snapshots` unless configured otherwise: the served snapshot and three others.
    pub const MAX_SNAPSHOTS: usize = 4;

    /// At most `max_snapshots` snapshots at once, the served one among them; `loader` loads the
    /// others (none: only the served revision is answered).
    pub fn new(loader: Option<Loader>, max_snapshots: usize) -> Revisions {
        Revisions {
            held: moka::future::Cache::builder()
                .max_capacity(max_snapshots.saturating_sub(1) as u64)
                .eviction_policy(moka::policy::EvictionPolicy::lru())
                .build(),
            loader,
            last_load: Default::default(),
        }
    }

    /// The snapshot `revision` names: `served` when it is the served one (its name, commit or
    /// snapshot id), a held one, or one loaded now (requests for the same revision wait for one
    /// load). Two names of one content share the snapshot held first.
    /// With it, how long the load took when this call loaded it.
    pub async fn at(
        &self,
        served: Arc<Snapshot>,
        revision: &str,
    ) -> Result<(Arc<Snapshot>, Option<Duration>), ServiceError> {
        if served.answers_to(revision) {
            return Ok((served, None));
        }
        if let Some(held) = self.held.get(revision).await {
            return Ok((held, None));
        }
        if let Some((_, held)) = self.held.iter().find(|(_, s)| s.answers_to(revision)) {
            return Ok((held, None));
        }
        let Some(loader) = &self.loader else {
            return Err(unknown(revision, &served));
        };
        // Set by the load when this call is the one that runs it.
        let took_nanos = std::sync::atomic::AtomicU64::new(0);
        let load = async {
            let started = Instant::now();
            let loaded = loader(revision.to_string()).await?;
            let took = started.elapsed();
            took_nanos.store(
                u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1),
                std::sync::atomic::Ordering::Relaxed,
            );
            tracing::info!(revision, seconds = took.as_secs_f64(), content = %loaded.content_id, "loaded a dataset revision");
            *self.last_load.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((revision.to_string(), took));
            if loaded.content_id == served.content_id {
                return Ok(served.clone());
            }
            let same = self
                .held
                .iter()
                .find(|(_, s)| s.content_id == loaded.content_id);
            Ok(match same {
                Some((_, held)) => held,
                None => Arc::new(loaded),
            })
        };
        let snapshot = self
            .held
            .try_get_with(revision.to_string(), load)
            .await
            .map_err(|e: Arc<ServiceError>| (*e).clone())?;
        let took = match took_nanos.into_inner() {
            0 => None,
            n => Some(Duration::from_nanos(n)),
        };
        Ok((snapshot, took))
    }

    /// The snapshots held besides the served one, by the revision they were asked as.
    pub fn held(&self) -> Vec<(String, Arc<Snapshot>)> {
        let mut held: Vec<_> = self
            .held
            .iter()
            .map(|(name, s)| (name.to_string(), s))
            .collect();
        held.sort_by(|a, b| a.0.cmp(&b.0));
        held
    }

    /// The last revision loaded, and how long its load took.
    pub fn last_load(&self) -> Option<(String, Duration)> {
        self.last_load
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The refusal of a revision this server cannot load (no loader: a local source without named
/// snapshot directories).
fn unknown(revision: &str, served: &Snapshot) -> ServiceError {
    ServiceError::Revision {
        revision: revision.to_string(),
        problem: RevisionProblem::Unknown,
        detail: format!(
            "this server has no revision '{revision}'; it serves {}",
            served.names().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Mutex;

    use super::*;

    /// Revisions whose loads give the sample's tables under the content id of the revision's
    /// name ("bad…" fails as a malformed revision), holding at most `max` snapshots, with the
    /// revisions each load was asked for; and the served snapshot ("served").
    async fn revisions(max: usize) -> (Revisions, Arc<Snapshot>, Arc<Mutex<Vec<String>>>) {
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample");
        let open = move |name: String| {
            let sample = sample.clone();
            async move {
                if name.starts_with("bad") {
                    return Err(ServiceError::Revision {
                        revision: name.clone(),
                        problem: RevisionProblem::Malformed,
                        detail: format!("{name}: llm.parquet has no column 'task'"),
                    });
                }
                let mut s = super::super::open::load_compiled_dir(&sample)
                    .await
                    .map_err(|e| ServiceError::Internal(e.to_string()))?;
                s.content_id = format!("{name:0<64}");
                s.source.name = Some(name);
                Ok(s)
            }
        };
        let served = Arc::new(open("served".into()).await.unwrap());
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = asked.clone();
        let loader: Loader = Arc::new(move |name: String| {
            log.lock().unwrap().push(name.clone());
            Box::pin(open(name))
        });
        (Revisions::new(Some(loader), max), served, asked)
    }

    /// A revision is loaded once however many ask at once, the load's time reported to the one
    /// call that ran it; the served revision and a held one's other names load nothing.
    #[tokio::test]
    async fn a_revision_is_loaded_once_and_its_names_share_it() {
        let (r, served, asked) = revisions(4).await;
        let calls = futures::future::join_all((0..8).map(|_| r.at(served.clone(), "a"))).await;
        let calls: Vec<_> = calls.into_iter().map(Result::unwrap).collect();
        assert_eq!(*asked.lock().unwrap(), ["a"]);
        assert_eq!(calls.iter().filter(|(_, took)| took.is_some()).count(), 1);
        assert!(calls.iter().all(|(s, _)| Arc::ptr_eq(s, &calls[0].0)));
        assert_eq!(calls[0].0.source.name.as_deref(), Some("a"));
        // The served snapshot by its name or id, and the held one by its id: no load.
        let (s, took) = r.at(served.clone(), "served").await.unwrap();
        assert!(Arc::ptr_eq(&s, &served) && took.is_none());
        let id = crate::service::catalog::snapshot_id(&calls[0].0.content_id).to_string();
        assert!(Arc::ptr_eq(
            &r.at(served.clone(), &id).await.unwrap().0,
            &calls[0].0
        ));
        assert_eq!(asked.lock().unwrap().len(), 1);
        assert_eq!(r.last_load().map(|(name, _)| name), Some("a".to_string()));
    }

    /// A failed load is refused as the loader says and not held: asking again loads again.
    #[tokio::test]
    async fn a_failed_load_is_not_held() {
        let (r, served, asked) = revisions(4).await;
        for _ in 0..2 {
            match r.at(served.clone(), "bad1").await {
                Err(ServiceError::Revision {
                    problem, detail, ..
                }) => {
                    assert_eq!(problem, RevisionProblem::Malformed);
                    assert!(detail.contains("llm.parquet"), "{detail}");
                }
                other => panic!("{:?}", other.map(|(s, _)| s.content_id.clone())),
            }
        }
        assert_eq!(*asked.lock().unwrap(), ["bad1", "bad1"]);
        assert!(r.held().is_empty());
    }

    /// With room for two snapshots (the served one and one other), three revisions asked in turn
    /// are all answered, each with its own content; the least recently used is loaded again.
    #[tokio::test]
    async fn more_revisions_than_room_are_all_answered() {
        let (r, served, asked) = revisions(2).await;
        for _ in 0..2 {
            for name in ["a", "b", "c"] {
                let (s, _) = r.at(served.clone(), name).await.unwrap();
                assert_eq!(s.content_id, format!("{name:0<64}"));
                r.held.run_pending_tasks().await;
                assert!(r.held().len() <= 1);
            }
        }
        assert_eq!(asked.lock().unwrap().len(), 6);
    }
}
