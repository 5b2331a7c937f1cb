//! Live reload: the dataset read again from its source beside the one being served, checked, and
//! swapped in at once (`Snapshots::swap`); requests in flight finish on the snapshot they started
//! on. A source that fails to load leaves the served snapshot as it is, and the failure is kept
//! for `/v1/datasets`. One reload at a time. `--watch` serves a change once two reads in a row
//! find it, so a source rewritten in place is not served half written.

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
    /// One reload at a time; holds the content id a watch read last that differed from the
    /// served one (a change not yet seen twice).
    running: tokio::sync::Mutex<Option<String>>,
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
    /// With `only_if_changed` (`--watch`), a changed content is swapped in only once two reads in
    /// a row find it: a source being rewritten in place (a copy under way, a file truncated and
    /// written again) reads differently each time until it is whole. A dataset of the served
    /// content, or a change seen once, is not swapped in and nothing is recorded; `Ok(None)`
    /// says so.
    pub(super) async fn reload(
        &self,
        current: Arc<Snapshot>,
        only_if_changed: bool,
        swap: impl FnOnce(Snapshot) -> Arc<Snapshot>,
    ) -> Result<Option<Arc<Snapshot>>, String> {
        let Some(opener) = &self.opener else {
            return Err("this server has no source to read again".into());
        };
        let mut seen = self.running.lock().await;
        let read = opener().await;
        // The change the read before this one found, if any (forgotten by anything but a watch).
        let before = seen.take();
        if only_if_changed && let Ok(s) = &read {
            if s.content_id == current.content_id {
                return Ok(None);
            }
            if before.as_ref() != Some(&s.content_id) {
                *seen = Some(s.content_id.clone());
                return Ok(None);
            }
        }
        let outcome = match read {
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

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::path::Path;

    use super::*;

    /// A reloader whose reads give the sample's tables under the content ids of `script`, in
    /// turn ("error": a read that fails), and the snapshot first served ("old").
    async fn scripted(script: &[&'static str]) -> (Reloader, Arc<Snapshot>) {
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample");
        let script = Arc::new(Mutex::new(script.iter().copied().collect::<VecDeque<_>>()));
        let open = {
            let sample = sample.clone();
            move |id: &'static str| {
                let sample = sample.clone();
                async move {
                    if id == "error" {
                        return Err("a torn file".to_string());
                    }
                    let mut s = super::super::open::load_compiled_dir(&sample)
                        .await
                        .map_err(|e| e.to_string())?;
                    s.content_id = id.to_string();
                    Ok(s)
                }
            }
        };
        let served = Arc::new(open("old").await.unwrap());
        let reloader = Reloader::new(Arc::new(move || {
            let id = script
                .lock()
                .unwrap()
                .pop_front()
                .expect("a read past the script");
            Box::pin(open(id))
        }));
        (reloader, served)
    }

    /// What one watch tick did: the content id it put in service, if any.
    async fn tick(r: &Reloader, served: &mut Arc<Snapshot>) -> Result<Option<String>, String> {
        let swapped = r.reload(served.clone(), true, Arc::new).await?;
        if let Some(s) = &swapped {
            *served = s.clone();
        }
        Ok(swapped.map(|s| s.content_id.clone()))
    }

    /// `--watch` serves a change once two reads in a row agree on it: reads of a source being
    /// rewritten (each different, or failing) are not served, and a read of the served content
    /// forgets a change seen once.
    #[tokio::test]
    async fn a_watch_serves_a_change_once_two_reads_in_a_row_find_it() {
        let (r, mut served) = scripted(&[
            "old", "torn-1", "torn-2", "new", "new", // a copy under way, then whole
            "newer", "new", "newer", "newer", // a change seen once, then the served content
            "next", "error", "next", "next", // a read that fails between two alike
        ])
        .await;
        let mut ticks = Vec::new();
        for _ in 0..13 {
            ticks.push(tick(&r, &mut served).await);
        }
        let none = || Ok(None);
        let put = |id: &str| Ok(Some(id.to_string()));
        assert_eq!(ticks[..5], [none(), none(), none(), none(), put("new")]);
        assert_eq!(ticks[5..9], [none(), none(), none(), put("newer")]);
        assert!(
            ticks[10]
                .as_ref()
                .unwrap_err()
                .contains("a torn file; the served dataset is kept")
        );
        assert_eq!(
            [&ticks[9], &ticks[11], &ticks[12]],
            [&none(), &none(), &put("next")]
        );
        assert_eq!(served.content_id, "next");
        let last = r.last().unwrap();
        assert_eq!((last.content_id.as_str(), last.error), ("next", None));
    }

    /// A reload asked for (`POST /v1/admin/reload`, SIGHUP) takes the first read.
    #[tokio::test]
    async fn an_asked_reload_serves_the_first_read() {
        let (r, served) = scripted(&["new"]).await;
        let s = r.reload(served, false, Arc::new).await.unwrap().unwrap();
        assert_eq!(s.content_id, "new");
    }
}
