//! Opening what `--data` names as a snapshot: a compiled directory, a raw benchmark tree (rows
//! built at start), the Hugging Face dataset or an object-store URL (pinned, the two parquet
//! summaries fetched, raw files resolved through the raw cache); with the catalog and the store
//! that derived data is persisted in.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::snapshot::{Snapshot, Source};
use crate::engine::load::{from_tables, load_compiled, local_parquet, summary_context};
use crate::engine::{Domain, EngineError};
use crate::rawtree::histograms::{self, Histograms};
use crate::store::bound::Bound;
use crate::store::cache::{CacheLocation, CachedStore, sweep_staging};
use crate::store::catalog::Catalog;
use crate::store::derived::DerivedStore;
use crate::store::hub::{Hub, HubConfig, parse_hf_url};
use crate::store::{FetchError, StoreUpstream, Upstream};

/// A `--data` value that names a remote source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remote {
    /// `hf://datasets/ORG/NAME[@REVISION]`.
    Hub {
        repo: String,
        revision: Option<String>,
    },
    /// An object_store URL (`s3://`, `gs://`, `az://`, `http(s)://`, `file://`).
    Url(String),
}

impl Remote {
    /// `None` for a local path.
    pub fn parse(spec: &str) -> Result<Option<Remote>, String> {
        if spec.starts_with("hf://") {
            return parse_hf_url(spec)
                .map(|(repo, revision)| Some(Remote::Hub { repo, revision }))
                .ok_or_else(|| {
                    format!(
                        "{spec}: expected hf://datasets/ORG/NAME or hf://datasets/ORG/NAME@REVISION"
                    )
                });
        }
        match spec.split_once("://") {
            Some((scheme, _)) => match scheme {
                "s3" | "s3a" | "gs" | "az" | "azure" | "abfs" | "abfss" | "adl" | "http"
                | "https" | "file" => Ok(Some(Remote::Url(spec.to_string()))),
                other => Err(format!(
                    "{spec}: unsupported scheme '{other}' (allowed: hf, s3, gs, az, http, https, file, or a local path)"
                )),
            },
            None => Ok(None),
        }
    }
}

/// Cache and hub settings for remote sources.
#[derive(Debug, Clone)]
pub struct SourceOptions {
    pub hub: HubConfig,
    /// Cache directory or object_store URL.
    pub cache: String,
    /// Catalog database URL; default an SQLite file in the cache directory.
    pub catalog: Option<String>,
    pub max_bytes: u64,
    /// Life of a fetch lease (single flight across replicas; see `store::cache`).
    pub lease_ttl: std::time::Duration,
}

/// `$XDG_CACHE_HOME/mlenergy-server`, else `~/.cache/mlenergy-server`, else `.mlenergy-cache`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(x).join("mlenergy-server");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(h).join(".cache").join("mlenergy-server");
    }
    PathBuf::from(".mlenergy-cache")
}

impl SourceOptions {
    /// The catalog URL to use.
    pub fn catalog_url(&self) -> String {
        if let Some(c) = &self.catalog {
            return c.clone();
        }
        let dir = match CacheLocation::parse(&self.cache) {
            CacheLocation::Dir(d) => d,
            CacheLocation::Url(_) => default_cache_dir(),
        };
        format!("sqlite://{}", dir.join("catalog.db").display())
    }

    /// Open (and migrate) the catalog; creates the directory of a default SQLite file.
    pub async fn open_catalog(&self) -> Result<Catalog, String> {
        let url = self.catalog_url();
        if let Some(path) = url.strip_prefix("sqlite://")
            && let Some(parent) =
                std::path::Path::new(path.split('?').next().unwrap_or(path)).parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        Catalog::open(&url)
            .await
            .map_err(|e| format!("catalog {}: {e}", crate::store::catalog::redact(&url)))
    }
}

/// The derived store over the cache store, under `bound`; files of other format versions are
/// removed in the background.
fn derived_store(
    store: Arc<dyn object_store::ObjectStore>,
    description: &str,
    local: bool,
    bound: Arc<Bound>,
) -> DerivedStore {
    let derived = DerivedStore::new(
        store,
        local,
        Some(bound),
        crate::rawfile::ipc::FORMAT_VERSION,
    )
    .with_location(description);
    let sweep = derived.clone();
    tokio::spawn(async move {
        let n = sweep.sweep_other_versions().await;
        if n > 0 {
            tracing::info!(files = n, "removed derived data of other format versions");
        }
    });
    derived
}

/// Why a remote source did not load.
#[derive(Debug)]
pub enum LoadError {
    /// The hub has no such revision.
    NoRevision(String),
    /// Its summaries are missing or not the published schema.
    Malformed(String),
    /// Anything else: the source unreachable, refused, timed out; the cache unusable.
    Failed(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::NoRevision(m) | LoadError::Malformed(m) | LoadError::Failed(m) => {
                f.write_str(m)
            }
        }
    }
}

impl From<String> for LoadError {
    fn from(m: String) -> Self {
        LoadError::Failed(m)
    }
}

/// A summary file's fetch failure: missing from the commit is a malformed revision.
fn summary_error(e: FetchError) -> LoadError {
    match e {
        FetchError::NotFound(what) => {
            LoadError::Malformed(format!("{what}: the revision has no such file"))
        }
        e => LoadError::Failed(e.to_string()),
    }
}

/// Whether `s` is a whole commit hash (40 hex digits).
fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `repo` at `revision` on the hub: a commit the catalog has seen is pinned without asking the
/// hub anything; any other revision is resolved (and its commit recorded).
async fn open_hub(
    repo: &str,
    revision: Option<&str>,
    opts: &SourceOptions,
    catalog: &Catalog,
) -> Result<Hub, LoadError> {
    if let Some(commit) = revision.filter(|r| is_commit(r))
        && let Ok(Some(date)) = catalog.hub_commit(repo, commit).await
    {
        return Hub::pinned(repo, commit, date, &opts.hub)
            .map_err(|e| LoadError::Failed(e.to_string()));
    }
    let hub = Hub::open(repo, revision, &opts.hub)
        .await
        .map_err(|e| match e {
            FetchError::NotFound(_) => LoadError::NoRevision(format!(
                "the hub has no revision '{}' of {repo}",
                revision.unwrap_or("main")
            )),
            e => LoadError::Failed(e.to_string()),
        })?;
    if let Err(e) = catalog
        .record_hub_commit(repo, &hub.commit, hub.date.as_deref())
        .await
    {
        tracing::warn!(error = %e, "cannot record the hub commit in the catalog");
    }
    Ok(hub)
}

/// Pin `remote`, fetch its summaries and return the snapshot (raw files through the cache).
pub async fn load_remote(
    remote: &Remote,
    opts: &SourceOptions,
    catalog: Catalog,
) -> Result<Snapshot, LoadError> {
    let location = CacheLocation::parse(&opts.cache);
    let (cache_store, cache_desc, local) = location.open()?;
    let bound = Arc::new(Bound::new(cache_store.clone(), catalog, opts.max_bytes));
    let derived = derived_store(cache_store.clone(), &cache_desc, local, bound.clone());
    let local_root = match &location {
        CacheLocation::Dir(d) if local => Some(d.clone()),
        _ => None,
    };
    let cached = |upstream: Arc<dyn Upstream>| {
        CachedStore::new(
            upstream,
            cache_store.clone(),
            cache_desc.clone(),
            local_root.clone(),
            bound.clone(),
            opts.hub.fetch.timeout,
            opts.lease_ttl,
        )
    };
    match remote {
        Remote::Hub { repo, revision } => {
            let hub = open_hub(repo, revision.as_deref(), opts, bound.catalog()).await?;
            tracing::info!(repo, revision = %hub.revision, commit = %hub.commit, "pinned the hub dataset");
            let llm = hub
                .summary("runs/llm.parquet")
                .await
                .map_err(summary_error)?;
            let diffusion = hub
                .summary("runs/diffusion.parquet")
                .await
                .map_err(summary_error)?;
            let histograms = match hub.optional_summary(histograms::PATH).await {
                Ok(Some(path)) => std::fs::read(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))
                    .and_then(|b| histograms::read_histograms(b.into(), histograms::PATH))
                    .map(Some),
                Ok(None) => Ok(None),
                Err(e) => Err(e.to_string()),
            };
            let histograms = usable_histograms(histograms);
            let commit = hub.commit.clone();
            let date = hub.date.clone();
            let location = format!("hf://datasets/{}@{}", hub.repo_id(), hub.revision);
            let source = Source {
                location,
                revision: Some(commit),
                name: Some(hub.revision.clone()),
                root: None,
                skipped: Vec::new(),
                remote: Some(cached(Arc::new(hub))),
                derived: Some(derived),
                date,
                histograms,
            };
            let path = |p: &PathBuf| {
                p.to_str()
                    .map(str::to_string)
                    .ok_or_else(|| LoadError::Failed("non-UTF-8 hub cache path".into()))
            };
            let dataset = load_compiled(summary_context(), &path(&llm)?, &path(&diffusion)?)
                .await
                .map_err(|e| LoadError::Malformed(e.to_string()))?;
            Ok(Snapshot::new(dataset, source))
        }
        Remote::Url(url) => {
            let cached = cached(Arc::new(StoreUpstream::open(url)?));
            // DataFusion reads the summaries through the cache itself.
            let ctx = summary_context();
            let base = url::Url::parse("mlenergy-source://data").expect("static URL");
            ctx.register_object_store(&base, Arc::new(cached.clone()));
            for file in ["runs/llm.parquet", "runs/diffusion.parquet"] {
                cached
                    .ensure(file)
                    .await
                    .map_err(|e| format!("{url}/{file}: {e}"))?;
            }
            let histograms = usable_histograms(remote_histograms(&cached).await);
            let source = Source {
                location: url.clone(),
                revision: None,
                name: None,
                root: None,
                skipped: Vec::new(),
                remote: Some(cached),
                derived: Some(derived),
                date: None,
                histograms,
            };
            let dataset = load_compiled(
                ctx,
                "mlenergy-source://data/runs/llm.parquet",
                "mlenergy-source://data/runs/diffusion.parquet",
            )
            .await
            .map_err(|e| e.to_string())?;
            Ok(Snapshot::new(dataset, source))
        }
    }
}

/// Load what `spec` names, with the catalog: a remote source pins and fetches its summaries; a
/// local one opens the catalog only for prefetch jobs (in memory if the default file cannot be
/// created).
pub async fn open_dataset(spec: &str, opts: &SourceOptions) -> Result<(Snapshot, Catalog), String> {
    let catalog = match Remote::parse(spec)? {
        Some(_) => {
            // Partial downloads of an earlier process; none of this one's has started yet.
            if let CacheLocation::Dir(d) = CacheLocation::parse(&opts.cache) {
                let n = sweep_staging(&d);
                if n > 0 {
                    tracing::warn!(files = n, "removed partial downloads left in the cache");
                }
            }
            opts.open_catalog().await?
        }
        None => match opts.open_catalog().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "catalog unavailable; prefetch jobs and the index of derived data are kept in memory");
                Catalog::open("sqlite::memory:")
                    .await
                    .map_err(|e| format!("in-memory catalog: {e}"))?
            }
        },
    };
    let dataset = reopen_dataset(spec, opts, &catalog).await?;
    Ok((dataset, catalog))
}

/// The dataset `spec` names, read again with the catalog already open (a reload).
pub async fn reopen_dataset(
    spec: &str,
    opts: &SourceOptions,
    catalog: &Catalog,
) -> Result<Snapshot, String> {
    match Remote::parse(spec)? {
        Some(remote) => load_remote(&remote, opts, catalog.clone())
            .await
            .map_err(|e| format!("{spec}: {e}")),
        None => {
            let location = DataLocation::detect(spec);
            let mut dataset = load(&location).await.map_err(|e| format!("{spec}: {e}"))?;
            // Derived data of local raw files is persisted in the cache location too.
            match CacheLocation::parse(&opts.cache).open() {
                Ok((store, description, local)) => {
                    let bound = Bound::new(store.clone(), catalog.clone(), opts.max_bytes);
                    dataset.source.derived =
                        Some(derived_store(store, &description, local, Arc::new(bound)));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cache location unavailable; derived data is kept in memory only")
                }
            }
            Ok(dataset)
        }
    }
}

/// Load a compiled data directory from the local file system.
pub async fn load_compiled_dir(root: &Path) -> Result<Snapshot, EngineError> {
    let llm = local_parquet(root, Domain::Llm)?;
    let diffusion = local_parquet(root, Domain::Diffusion)?;
    let root = std::path::absolute(root)?;
    let date = compiled_date(&root);
    let histograms = usable_histograms(histograms::read_histograms_file(&root));
    let source = Source {
        location: format!("local:{}", root.display()),
        revision: None,
        name: None,
        root: Some(root),
        skipped: Vec::new(),
        remote: None,
        derived: None,
        date,
        histograms,
    };
    let dataset = load_compiled(summary_context(), &llm, &diffusion).await?;
    Ok(Snapshot::new(dataset, source))
}

/// A compiled directory's date: the `snapshot_date` key of `runs/llm.parquet`'s metadata (a
/// `YYYY-MM-DD` the sample tool writes), else the day the file was last modified (UTC).
fn compiled_date(root: &Path) -> Option<String> {
    use parquet::file::reader::FileReader;
    let path = root.join("runs").join("llm.parquet");
    let file = std::fs::File::open(&path).ok()?;
    let modified = file.metadata().and_then(|m| m.modified()).ok();
    let stated = parquet::file::reader::SerializedFileReader::new(file)
        .ok()
        .and_then(|r| {
            r.metadata()
                .file_metadata()
                .key_value_metadata()?
                .iter()
                .find(|kv| kv.key == "snapshot_date")?
                .value
                .clone()
        })
        .filter(|d| crate::store::hub::is_iso_date(d));
    stated.or_else(|| modified.map(crate::service::snapshot::utc_date))
}

/// What a `--data` value names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataLocation {
    /// A compiled data directory (`runs/llm.parquet`, ...).
    Compiled(PathBuf),
    /// A raw benchmark root (`llm/`, `diffusion/` trees of results.json files).
    Raw(PathBuf),
}

impl DataLocation {
    /// `raw:DIR` is a raw root; a directory with `runs/llm.parquet` is compiled; one with `llm/`
    /// or `diffusion/` but no `runs/` (or a `.../run` directory) is raw; anything else is taken
    /// as compiled, so the error names the missing parquet file.
    pub fn detect(spec: &str) -> DataLocation {
        if let Some(raw) = spec.strip_prefix("raw:") {
            return DataLocation::Raw(PathBuf::from(raw));
        }
        let p = PathBuf::from(spec);
        let compiled = p.join("runs").join("llm.parquet").is_file();
        let raw_like = p.join("llm").is_dir()
            || p.join("diffusion").is_dir()
            || p.file_name().is_some_and(|n| n == "run");
        if !compiled && raw_like {
            DataLocation::Raw(p)
        } else {
            DataLocation::Compiled(p)
        }
    }
}

/// Load whatever `location` names.
pub async fn load(location: &DataLocation) -> Result<Snapshot, EngineError> {
    match location {
        DataLocation::Compiled(p) => load_compiled_dir(p).await,
        DataLocation::Raw(p) => load_raw_root(p).await,
    }
}

/// Derive the run tables from a raw benchmark root (configs auto-detected under it), in
/// parallel, and serve them like a compiled directory.
pub async fn load_raw_root(root: &Path) -> Result<Snapshot, EngineError> {
    if !root.is_dir() {
        return Err(EngineError::Load(format!(
            "{} is not a directory",
            root.display()
        )));
    }
    let root = std::path::absolute(root)?;
    let opts = crate::rawtree::BuildOptions {
        roots: vec![root.clone()],
        ..Default::default()
    };
    let built = tokio::task::spawn_blocking(move || crate::rawtree::build(&opts, None))
        .await
        .map_err(|e| EngineError::Load(format!("raw build failed: {e}")))??;
    let dataset = from_tables(summary_context(), built.llm, built.diffusion)?;
    // Stored paths are relative to each run's benchmark root, which is the root itself unless
    // discovery had to infer one above it.
    let bench_root = built
        .runs
        .first()
        .map_or(root.clone(), |r| r.bench_root.clone());
    Ok(Snapshot::new(
        dataset,
        Source {
            location: format!("raw:{}", root.display()),
            revision: None,
            name: None,
            root: Some(bench_root),
            skipped: built
                .skipped
                .into_iter()
                .map(|s| (s.path, s.reason))
                .collect(),
            remote: None,
            derived: None,
            date: None,
            histograms: None,
        },
    ))
}

/// The histograms a source carries, if they can be used; a file that cannot is reported and
/// left aside (the leaderboard then reads the runs' raw files, on request).
fn usable_histograms(read: Result<Option<Histograms>, String>) -> Option<Arc<Histograms>> {
    match read {
        Ok(h) => h.map(Arc::new),
        Err(e) => {
            tracing::warn!(error = %e, "the source's output-length histograms are unusable; the leaderboard reads raw files for them instead");
            None
        }
    }
}

/// The histograms file of an object-store source, through its cache (absent: `None`).
async fn remote_histograms(cached: &CachedStore) -> Result<Option<Histograms>, String> {
    use object_store::ObjectStoreExt;
    match cached.ensure(histograms::PATH).await {
        Ok(_) => {}
        Err(FetchError::NotFound(_)) => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", histograms::PATH)),
    }
    let location = object_store::path::Path::from(histograms::PATH);
    let bytes = cached
        .get(&location)
        .await
        .map_err(|e| format!("{}: {e}", histograms::PATH))?
        .bytes()
        .await
        .map_err(|e| format!("{}: {e}", histograms::PATH))?;
    histograms::read_histograms(bytes, histograms::PATH).map(Some)
}

/// The snapshot of `revision` beside the served `spec`: a local snapshot directory of that
/// name (`named`), else that revision of the served hub dataset.
pub async fn open_revision(
    spec: &str,
    revision: &str,
    named: &[(String, String)],
    opts: &SourceOptions,
    catalog: &Catalog,
) -> Result<Snapshot, crate::service::ServiceError> {
    use crate::service::{RevisionProblem, ServiceError};
    let refusal = |problem, detail: String| ServiceError::Revision {
        revision: revision.to_string(),
        problem,
        detail,
    };
    if let Some((_, dir)) = named.iter().find(|(name, _)| name == revision) {
        let mut snapshot = reopen_dataset(dir, opts, catalog).await.map_err(|e| {
            refusal(
                RevisionProblem::Malformed,
                format!("revision '{revision}': {e}"),
            )
        })?;
        snapshot.source.name = Some(revision.to_string());
        return Ok(snapshot);
    }
    let repo = match Remote::parse(spec) {
        Ok(Some(Remote::Hub { repo, .. })) => repo,
        _ => {
            let names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
            return Err(refusal(
                RevisionProblem::Unknown,
                format!(
                    "this server has no revision '{revision}': its source is {spec}, whose other revisions are the local snapshots {}",
                    if names.is_empty() {
                        "given with --snapshot NAME=DIR (none)".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            ));
        }
    };
    let remote = Remote::Hub {
        repo: repo.clone(),
        revision: Some(revision.to_string()),
    };
    load_remote(&remote, opts, catalog.clone())
        .await
        .map_err(|e| match e {
            LoadError::NoRevision(m) => refusal(RevisionProblem::Unknown, m),
            LoadError::Malformed(m) => refusal(
                RevisionProblem::Malformed,
                format!("revision '{revision}' of {repo} is not the published schema: {m}"),
            ),
            LoadError::Failed(m) => refusal(
                RevisionProblem::Unavailable,
                format!("revision '{revision}' of {repo} could not be loaded: {m}"),
            ),
        })
}
