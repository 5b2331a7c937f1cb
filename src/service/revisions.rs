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
    pub async fn at(
        &self,
        served: Arc<Snapshot>,
        revision: &str,
    ) -> Result<Arc<Snapshot>, ServiceError> {
        if served.answers_to(revision) {
            return Ok(served);
        }
        if let Some(held) = self.held.get(revision).await {
            return Ok(held);
        }
        if let Some((_, held)) = self.held.iter().find(|(_, s)| s.answers_to(revision)) {
            return Ok(held);
        }
        let Some(loader) = &self.loader else {
            return Err(unknown(revision, &served));
        };
        let load = async {
            let started = Instant::now();
            let loaded = loader(revision.to_string()).await?;
            let took = started.elapsed();
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
        self.held
            .try_get_with(revision.to_string(), load)
            .await
            .map_err(|e: Arc<ServiceError>| (*e).clone())
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
