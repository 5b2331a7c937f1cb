//! Opening a remote `--data` source: pin it, fetch the two parquet summaries, and hand back a
//! snapshot whose raw files resolve through the raw cache.

use std::path::PathBuf;
use std::sync::Arc;

use super::bound::Bound;
use super::cache::{CacheLocation, CachedStore, sweep_staging};
use super::catalog::Catalog;
use super::derived::DerivedStore;
use super::hub::{Hub, HubConfig, parse_hf_url};
use super::{FetchError, StoreUpstream, Upstream};
use crate::engine::load::{load_compiled, summary_context};
use crate::engine::{Dataset, DatasetSource};

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
            .map_err(|e| format!("catalog {}: {e}", super::catalog::redact(&url)))
    }
}

/// The derived store over the cache store, under `bound`; files of other format versions are
/// removed in the background.
fn derived_store(
    store: Arc<dyn object_store::ObjectStore>,
    local: bool,
    bound: Arc<Bound>,
) -> DerivedStore {
    let derived = DerivedStore::new(
        store,
        local,
        Some(bound),
        crate::rawfile::ipc::FORMAT_VERSION,
    );
    let sweep = derived.clone();
    tokio::spawn(async move {
        let n = sweep.sweep_other_versions().await;
        if n > 0 {
            tracing::info!(files = n, "removed derived data of other format versions");
        }
    });
    derived
}

fn fetch_message(e: FetchError) -> String {
    e.to_string()
}

/// Pin `remote`, fetch its summaries and return the snapshot (raw files through the cache).
pub async fn load_remote(
    remote: &Remote,
    opts: &SourceOptions,
    catalog: Catalog,
) -> Result<Dataset, String> {
    let location = CacheLocation::parse(&opts.cache);
    let (cache_store, cache_desc, local) = location.open()?;
    if local && let CacheLocation::Dir(d) = &location {
        let n = sweep_staging(d);
        if n > 0 {
            tracing::warn!(files = n, "removed partial downloads left in the cache");
        }
    }
    let bound = Arc::new(Bound::new(cache_store.clone(), catalog, opts.max_bytes));
    let derived = derived_store(cache_store.clone(), local, bound.clone());
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
        )
    };
    match remote {
        Remote::Hub { repo, revision } => {
            let hub = Hub::open(repo, revision.as_deref(), &opts.hub)
                .await
                .map_err(fetch_message)?;
            tracing::info!(repo, revision = %hub.revision, commit = %hub.commit, "pinned the hub dataset");
            let llm = hub
                .summary("runs/llm.parquet")
                .await
                .map_err(fetch_message)?;
            let diffusion = hub
                .summary("runs/diffusion.parquet")
                .await
                .map_err(fetch_message)?;
            let commit = hub.commit.clone();
            let location = format!("hf://datasets/{}@{}", hub.repo_id(), hub.revision);
            let source = DatasetSource {
                location,
                revision: Some(commit),
                root: None,
                skipped: Vec::new(),
                remote: Some(cached(Arc::new(hub))),
                derived: Some(derived),
            };
            let path = |p: &PathBuf| {
                p.to_str()
                    .map(str::to_string)
                    .ok_or("non-UTF-8 hub cache path")
            };
            load_compiled(summary_context(), &path(&llm)?, &path(&diffusion)?, source)
                .await
                .map_err(|e| e.to_string())
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
            let source = DatasetSource {
                location: url.clone(),
                revision: None,
                root: None,
                skipped: Vec::new(),
                remote: Some(cached),
                derived: Some(derived),
            };
            load_compiled(
                ctx,
                "mlenergy-source://data/runs/llm.parquet",
                "mlenergy-source://data/runs/diffusion.parquet",
                source,
            )
            .await
            .map_err(|e| e.to_string())
        }
    }
}

/// Load what `spec` names, with the catalog: a remote source pins and fetches its summaries; a
/// local one opens the catalog only for prefetch jobs (in memory if the default file cannot be
/// created).
pub async fn open_dataset(spec: &str, opts: &SourceOptions) -> Result<(Dataset, Catalog), String> {
    match Remote::parse(spec)? {
        Some(remote) => {
            let catalog = opts.open_catalog().await?;
            let dataset = load_remote(&remote, opts, catalog.clone())
                .await
                .map_err(|e| format!("{spec}: {e}"))?;
            Ok((dataset, catalog))
        }
        None => {
            let location = crate::engine::load::DataLocation::detect(spec);
            let mut dataset = crate::engine::load::load(&location)
                .await
                .map_err(|e| format!("{spec}: {e}"))?;
            let catalog = match opts.open_catalog().await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "catalog unavailable; prefetch jobs and the index of derived data are kept in memory");
                    Catalog::open("sqlite::memory:")
                        .await
                        .map_err(|e| format!("in-memory catalog: {e}"))?
                }
            };
            // Derived data of local raw files is persisted in the cache location too.
            match CacheLocation::parse(&opts.cache).open() {
                Ok((store, _, local)) => {
                    let bound = Bound::new(store.clone(), catalog.clone(), opts.max_bytes);
                    dataset.source.derived = Some(derived_store(store, local, Arc::new(bound)));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cache location unavailable; derived data is kept in memory only")
                }
            }
            Ok((dataset, catalog))
        }
    }
}
