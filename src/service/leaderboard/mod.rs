//! The leaderboard's data files, built once per loaded snapshot and served from memory
//! (docs/leaderboard.md): the files themselves ([`files`]), the LLM model files' output-length
//! histograms ([`histograms`]), and the site that holds them compressed.
//!
//! Every file but the LLM model files is made when the snapshot's site is first asked for. An LLM
//! model file needs its runs' output lengths: precomputed in the compiled directory (data/sample
//! has them, and `build` writes them; read at load from a remote source too), else read from the
//! runs' raw results by the first request for that file (raw files are fetched lazily), or, when
//! configured, by a task started after the server starts ([`Leaderboard::warm`]), whichever comes
//! first (one read either way). A group whose runs have no usable raw file is served without the
//! histogram keys and says why (`Site::status`, a `Warning` on the file).
//!
//! A file is sent compressed at a quick level from its first request; once the server runs, each
//! is compressed at the most effort, a file at a time, by the thread that yields to requests
//! (`coding::refine_later`), and sent so from then on.

pub mod files;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use sha2::{Digest, Sha256};

use self::files::Group;
use super::coding::{Effort, Precompressed, refine_later};
use super::derived::DerivedData;
use super::error::ServiceError;
use super::snapshot::Snapshot;
use crate::engine::Domain;
use crate::rawtree::histograms::{Histograms, group_histograms};

/// One file of the site: its bytes in every coding, its entity tag, and a note when it lacks
/// something the leaderboard's build would have put in it.
#[derive(Debug)]
pub struct SiteFile {
    pub data: Precompressed,
    /// A strong entity tag of the identity body (quoted), from its SHA-256.
    pub etag: String,
    pub warning: Option<String>,
    /// Whether it is queued to be compressed at the most effort.
    queued: AtomicBool,
}

impl SiteFile {
    fn new(text: String, warning: Option<String>) -> Arc<SiteFile> {
        let digest = Sha256::digest(text.as_bytes());
        Arc::new(SiteFile {
            etag: format!("\"lb-{}\"", hex::encode(&digest[..16])),
            data: Precompressed::new(Bytes::from(text), Effort::Most),
            warning,
            queued: AtomicBool::new(false),
        })
    }
}

/// An LLM model file whose histograms come from raw files: made once, by whoever asks first.
struct Pending {
    group: Group,
    file: tokio::sync::OnceCell<Arc<SiteFile>>,
}

/// How far the LLM model files' histograms are.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct HistogramStatus {
    /// LLM model files in all.
    pub files: usize,
    /// Files whose histograms are in them (precomputed or read).
    pub ready: usize,
    /// Files still to read from raw files.
    pub pending: usize,
    /// Files served without histograms, each with why: `<file>: <reason>`.
    pub without: Vec<String>,
}

/// The leaderboard of one snapshot.
pub struct Site {
    pub generation: u64,
    /// `index.json`'s `last_updated`.
    pub last_updated: String,
    files: HashMap<String, Arc<SiteFile>>,
    pending: HashMap<String, Pending>,
    /// Pending files made so far, and those made without histograms (file: reason).
    made: AtomicUsize,
    without: Mutex<Vec<String>>,
    /// LLM model files made at build from precomputed histograms.
    precomputed_llm: usize,
    /// Whether files are compressed at the most effort once made (the server's, shared by every
    /// site of its leaderboard; off in-process, where nothing runs in the background).
    refine: Arc<AtomicBool>,
    /// Whether the files made at build are queued for that, and how many files are done.
    queued: AtomicBool,
    refined: AtomicUsize,
}

impl Site {
    /// Build the site of `snapshot`: every file that needs no raw read.
    fn build(snapshot: &Snapshot, last_updated: String, refine: Arc<AtomicBool>) -> Site {
        let started = std::time::Instant::now();
        let (tasks, models) = files::groups(snapshot);
        let precomputed = snapshot.source.histograms.as_deref();
        let mut out = HashMap::new();
        out.insert(
            "index.json".to_string(),
            SiteFile::new(files::index(snapshot, &last_updated), None),
        );
        for g in &tasks {
            out.insert(g.path(), SiteFile::new(files::task(snapshot, g), None));
        }
        let mut pending = HashMap::new();
        let mut precomputed_llm = 0;
        for g in models {
            let t = snapshot.table(g.domain);
            let covered =
                precomputed.is_some_and(|h| g.rows.iter().all(|&r| h.contains_key(t.run_id(r))));
            if g.domain == Domain::Diffusion || covered {
                precomputed_llm += usize::from(g.domain == Domain::Llm);
                let text = files::model(snapshot, &g, precomputed);
                out.insert(g.path(), SiteFile::new(text, None));
            } else {
                pending.insert(
                    g.path(),
                    Pending {
                        group: g,
                        file: tokio::sync::OnceCell::new(),
                    },
                );
            }
        }
        tracing::info!(
            files = out.len(),
            from_raw = pending.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "leaderboard files built"
        );
        Site {
            generation: snapshot.generation,
            last_updated,
            files: out,
            pending,
            made: AtomicUsize::new(0),
            without: Mutex::new(Vec::new()),
            precomputed_llm,
            refine,
            queued: AtomicBool::new(false),
            refined: AtomicUsize::new(0),
        }
    }

    /// Queue `file` to be compressed at the most effort, unless the site is gone by then (a
    /// newer snapshot replaced it).
    fn refine_file(self: &Arc<Self>, file: Arc<SiteFile>) {
        if file.queued.swap(true, Ordering::SeqCst) {
            return;
        }
        let site = Arc::downgrade(self);
        refine_later(Box::new(move || {
            if let Some(site) = site.upgrade() {
                file.data.refine();
                site.refined.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }

    /// Queue every file made so far (once), if the server refines its files; files made later
    /// are queued as they are made.
    fn refine_all(self: &Arc<Self>) {
        if !self.refine.load(Ordering::SeqCst) {
            return;
        }
        self.queued.store(true, Ordering::SeqCst);
        let made: Vec<Arc<SiteFile>> = self
            .files
            .values()
            .cloned()
            .chain(self.pending.values().filter_map(|p| p.file.get().cloned()))
            .collect();
        for f in made {
            self.refine_file(f);
        }
    }

    /// The file at `path` (`index.json`, `tasks/…`, `models/…`), made now from raw files if it
    /// needs them and nobody made it yet; `None` for a file the leaderboard does not have.
    pub async fn file(
        self: &Arc<Self>,
        snapshot: &Arc<Snapshot>,
        derived: &DerivedData,
        path: &str,
    ) -> Result<Option<Arc<SiteFile>>, ServiceError> {
        if let Some(f) = self.files.get(path) {
            return Ok(Some(f.clone()));
        }
        let Some(p) = self.pending.get(path) else {
            return Ok(None);
        };
        let file = p
            .file
            .get_or_try_init(|| async {
                let (histograms, why_not) = raw_histograms(snapshot, derived, &p.group).await?;
                let text = files::model(snapshot, &p.group, histograms.as_ref());
                self.made.fetch_add(1, Ordering::Relaxed);
                let warning = why_not.map(|why| {
                    let note = format!("no output-length histograms: {why}");
                    self.without
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("{path}: {why}"));
                    note
                });
                Ok::<_, ServiceError>(SiteFile::new(text, warning))
            })
            .await?;
        // Made after the site's files were queued: queued now (else with them; once either way).
        if self.queued.load(Ordering::SeqCst) {
            self.refine_file(file.clone());
        }
        Ok(Some(file.clone()))
    }

    /// Every file's path, sorted.
    pub fn paths(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .files
            .keys()
            .chain(self.pending.keys())
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Whether every file made is compressed at the most effort in every coding (until then a
    /// file is sent at a quick level).
    pub fn compressed(&self) -> bool {
        self.refined.load(Ordering::SeqCst) == self.files.len() + self.made.load(Ordering::SeqCst)
    }

    /// How far the LLM model files' histograms are.
    pub fn status(&self) -> HistogramStatus {
        let without = self
            .without
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let made = self.made.load(Ordering::Relaxed);
        HistogramStatus {
            files: self.precomputed_llm + self.pending.len(),
            ready: self.precomputed_llm + made - without.len(),
            pending: self.pending.len() - made,
            without,
        }
    }
}

/// A group's histograms from its runs' raw files, or why there are none (a run without a usable
/// raw file). A fetch that failed is an error: the file is made on a later request.
async fn raw_histograms(
    snapshot: &Arc<Snapshot>,
    derived: &DerivedData,
    group: &Group,
) -> Result<(Option<Histograms>, Option<String>), ServiceError> {
    let t = snapshot.table(Domain::Llm);
    let mut runs = Vec::with_capacity(group.rows.len());
    for &row in &group.rows {
        let id = t.run_id(row).to_string();
        let lengths = match derived.get(snapshot, Domain::Llm, row).await {
            Ok(raw) => {
                crate::rawfile::output_lengths(&raw, false).map_err(|e| format!("run '{id}': {e}"))
            }
            Err(
                e @ (ServiceError::RawUnavailable { .. }
                | ServiceError::RawInvalid { .. }
                | ServiceError::Fetch {
                    error: crate::store::FetchError::NotFound(_),
                    ..
                }),
            ) => Err(format!("run '{id}': {e}")),
            Err(e) => return Err(e),
        };
        match lengths {
            Ok(l) => runs.push((id, l)),
            Err(why) => return Ok((None, Some(why))),
        }
    }
    Ok((Some(group_histograms(&runs)), None))
}

/// The leaderboards of the snapshots asked for: the served one's, and those of other revisions
/// (`revision`), the most recently used kept.
pub struct Leaderboard {
    /// `last_updated` as configured; the snapshot's date otherwise.
    last_updated: Option<String>,
    /// Whether [`Leaderboard::warm`] reads the raw files of the pending files (else each file
    /// reads its runs' when first asked for).
    read_in_background: bool,
    /// Whether sites compress their files at the most effort (set by [`Leaderboard::warm`]).
    refine: Arc<AtomicBool>,
    /// Sites by snapshot, the most recently used first; at most [`Leaderboard::SITES`].
    sites: Mutex<std::collections::VecDeque<Arc<Site>>>,
}

impl Leaderboard {
    /// Sites held at once: as many as snapshots a server holds by default, and room for one
    /// reloaded beside them.
    const SITES: usize = super::revisions::Revisions::MAX_SNAPSHOTS + 1;

    pub fn new(last_updated: Option<String>, read_in_background: bool) -> Self {
        Leaderboard {
            last_updated,
            read_in_background,
            refine: Arc::new(AtomicBool::new(false)),
            sites: Mutex::new(Default::default()),
        }
    }

    /// The configured `last_updated`, if any.
    pub fn configured_date(&self) -> Option<&str> {
        self.last_updated.as_deref()
    }

    /// The site of `snapshot`, built now if it is the first time it is asked for (and its files
    /// queued to be compressed at the most effort, once the server runs). Built outside the lock,
    /// so a request is never held behind a build on the thread that yields to requests; when two
    /// build at once, the first to finish is kept.
    pub fn site(&self, snapshot: &Snapshot) -> Arc<Site> {
        let held = |sites: &mut std::collections::VecDeque<Arc<Site>>| {
            let at = sites
                .iter()
                .position(|s| s.generation == snapshot.generation)?;
            let site = sites.remove(at)?;
            sites.push_front(site.clone());
            Some(site)
        };
        if let Some(site) = held(&mut self.sites.lock().unwrap_or_else(|e| e.into_inner())) {
            return site;
        }
        let date = self.last_updated.clone().unwrap_or_else(|| snapshot.date());
        let built = Arc::new(Site::build(snapshot, date, self.refine.clone()));
        let mut sites = self.sites.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kept) = held(&mut sites) {
            return kept;
        }
        sites.push_front(built.clone());
        sites.truncate(Self::SITES);
        drop(sites);
        built.refine_all();
        built
    }

    /// For the server, once it runs: from now on every site's files are compressed at the most
    /// effort off the request path (a reloaded snapshot's when its site is made), and the served
    /// snapshot's site is made by the thread that yields to requests (a request that needs it
    /// first makes it at once).
    pub fn prepare(service: &Arc<super::Service>) {
        service.leaderboard.refine.store(true, Ordering::SeqCst);
        let service = Arc::downgrade(service);
        refine_later(Box::new(move || {
            if let Some(service) = service.upgrade() {
                // Queued here too, in case a request made the site before the flag was set.
                service.leaderboard.site(&service.snapshot()).refine_all();
            }
        }));
    }

    /// If configured (`--leaderboard-histograms background`), make the LLM model files whose
    /// histograms need raw files now, one group at a time, rather than on their first request.
    /// For a task started after the server starts; `stop` ends it between two files.
    pub async fn warm(
        &self,
        snapshot: Arc<Snapshot>,
        derived: &DerivedData,
        stop: tokio_util::sync::CancellationToken,
    ) {
        if !self.read_in_background {
            return;
        }
        let site = self.site(&snapshot);
        let started = std::time::Instant::now();
        for path in site.pending.keys() {
            if stop.is_cancelled() {
                return;
            }
            if let Err(e) = site.file(&snapshot, derived, path).await {
                tracing::warn!(file = %path, error = %e, "leaderboard file not made; a request for it tries again");
            }
        }
        let status = site.status();
        tracing::info!(
            ready = status.ready,
            without_histograms = status.without.len(),
            pending = status.pending,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "leaderboard files made from raw files"
        );
    }
}
