//! Live reload: the dataset read again from its source beside the one being served, checked, and
//! swapped in at once (`Snapshots::swap`); requests in flight finish on the snapshot they started
//! on. A source that fails to load leaves the served snapshot as it is, and the failure is kept
//! for `/v1/datasets`. One reload at a time.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures::future::BoxFuture;

use super::snapshot::Snapshot;

/// Reads the dataset again from the source the server was started on.
pub type Opener = Arc<dyn Fn() -> BoxFuture<'static, Result<Snapshot, String>> + Send + Sync>;

/// How the last reload went.
#[derive(Debug, Clone)]
pub struct ReloadOutcome {
    pub at: SystemTime,
    /// The snapshot served afterwards (the new one, or the old one after a failure).
    pub content_id: String,
    pub error: Option<String>,
}

#[derive(Default)]
pub struct Reloader {
    opener: Option<Opener>,
    running: tokio::sync::Mutex<()>,
    last: Mutex<Option<ReloadOutcome>>,
}

impl Reloader {
    pub fn new(opener: Opener) -> Self {
        Reloader {
            opener: Some(opener),
            ..Default::default()
        }
    }

    /// The last reload's outcome, if there was one.
    pub fn last(&self) -> Option<ReloadOutcome> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Read the dataset again; with `swap`, put it in service if it loads and is not empty.
    /// With `only_if_changed`, a dataset of the same content as the served one is not swapped
    /// in and nothing is recorded (`--watch`); `Ok(None)` says so.
    pub(super) async fn reload(
        &self,
        current: Arc<Snapshot>,
        only_if_changed: bool,
        swap: impl FnOnce(Snapshot) -> Arc<Snapshot>,
    ) -> Result<Option<Arc<Snapshot>>, String> {
        let Some(opener) = &self.opener else {
            return Err("this server has no source to read again".into());
        };
        let _one = self.running.lock().await;
        let outcome = match opener().await {
            Ok(s) if only_if_changed && s.content_id == current.content_id => return Ok(None),
            Ok(s) if s.llm.is_empty() && s.diffusion.is_empty() => {
                Err("the source now holds no run; the served dataset is kept".to_string())
            }
            Ok(s) => Ok(swap(s)),
            Err(e) => Err(format!("{e}; the served dataset is kept")),
        };
        let record = ReloadOutcome {
            at: SystemTime::now(),
            content_id: match &outcome {
                Ok(s) => s.content_id.clone(),
                Err(_) => current.content_id.clone(),
            },
            error: outcome.as_ref().err().cloned(),
        };
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(record);
        outcome.map(Some)
    }
}
