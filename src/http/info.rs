//! Catalog and health endpoints: fields, datasets, liveness and readiness.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::AppError;
use super::state::{ApiPath, AppState, parse_domain};
use crate::engine::Domain;
use crate::engine::fields::FieldType;
use crate::service::Snapshot;
use crate::service::ask::{Question, allowed_parameters, filtered_field};
use crate::service::reload::ReloadOutcome;

/// One field of a run table.
#[derive(Debug, Serialize, ToSchema)]
pub struct FieldInfo {
    pub name: &'static str,
    #[serde(rename = "type")]
    pub type_: FieldType,
    pub unit: Option<&'static str>,
    pub nullable: bool,
    pub description: &'static str,
    /// Query parameters that filter on this field.
    pub filters: Vec<String>,
}

/// The fields of a domain, in output order.
#[derive(Debug, Serialize, ToSchema)]
pub struct FieldList {
    pub domain: Domain,
    pub fields: Vec<FieldInfo>,
}

/// Every field with type, unit and description.
#[utoipa::path(
    get,
    path = "/v1/{domain}/fields",
    tag = "catalog",
    params(("domain" = Domain, Path, description = "llm or diffusion")),
    responses(
        (status = 200, description = "Fields in output order", body = FieldList),
        super::problems::NotFoundProblem,
    )
)]
pub async fn fields(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
) -> Result<Json<FieldList>, AppError> {
    let domain = parse_domain(&domain)?;
    let snapshot = state.service.snapshot();
    let table = snapshot.table(domain);
    let params = allowed_parameters(domain, Question::List);
    Ok(Json(FieldList {
        domain,
        fields: table
            .fields
            .iter()
            .map(|f| FieldInfo {
                name: f.name,
                type_: f.ty,
                unit: f.unit,
                nullable: f.nullable,
                description: f.description,
                filters: params
                    .iter()
                    .filter(|p| filtered_field(domain, p) == Some(f.name))
                    .cloned()
                    .collect(),
            })
            .collect(),
    }))
}

/// One loaded table.
#[derive(Debug, Serialize, ToSchema)]
pub struct DatasetInfo {
    pub domain: Domain,
    /// Where the snapshot was read from, e.g. `local:/srv/mlenergy/data/sample`.
    pub source: String,
    /// Pinned revision of a remote source; null for a local directory.
    pub revision: Option<String>,
    pub rows: usize,
    pub stable_rows: usize,
    pub unstable_rows: usize,
    /// RFC 3339 time the snapshot was loaded.
    pub loaded_at: String,
}

/// A raw results file that produced no row, and why.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// A raw path of a run that is not served because it would leave the dataset root.
#[derive(Debug, Serialize, ToSchema)]
pub struct RefusedRawPath {
    pub domain: Domain,
    pub run_id: String,
    /// `results_path` or `prometheus_path`.
    pub field: &'static str,
    /// The path as the dataset gives it.
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DatasetList {
    pub datasets: Vec<DatasetInfo>,
    /// Raw results files passed over when the rows were derived from a raw tree (empty for a
    /// compiled directory).
    pub skipped: Vec<SkippedFile>,
    /// Raw paths of loaded runs that leave the dataset root (absolute, `..` above the root, or a
    /// symlink out of it): the runs are served, their raw endpoints answer 404 `raw_unavailable`.
    pub refused_paths: Vec<RefusedRawPath>,
    /// The id of the snapshot served (also the `X-Snapshot-Id` header of every answer).
    pub snapshot: String,
    /// How the last reload went (`POST /v1/admin/reload`, SIGHUP), if there was one.
    pub last_reload: Option<LastReload>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LastReload {
    pub at: String,
    /// The snapshot served after it: the new one, or the old one when it failed.
    pub snapshot: String,
    /// Why it failed; null when the new snapshot is served.
    pub error: Option<String>,
}

/// The short id of a snapshot: the first 16 hex digits of its content digest.
pub fn snapshot_id(content_id: &str) -> &str {
    content_id
        .char_indices()
        .nth(16)
        .map_or(content_id, |(end, _)| &content_id[..end])
}

/// What is loaded.
#[utoipa::path(get, path = "/v1/datasets", tag = "catalog", responses((status = 200, body = DatasetList)))]
pub async fn datasets(State(state): State<AppState>) -> Json<DatasetList> {
    Json(DatasetList::of(
        &state.service.snapshot(),
        state.service.last_reload(),
    ))
}

impl DatasetList {
    /// What `snapshot` holds, and the last reload.
    fn of(snapshot: &Snapshot, last_reload: Option<ReloadOutcome>) -> DatasetList {
        let loaded_at = humantime::format_rfc3339_millis(snapshot.loaded_at).to_string();
        DatasetList {
            datasets: Domain::ALL
                .iter()
                .map(|&d| {
                    let t = snapshot.table(d);
                    let (stable_rows, unstable_rows) = t.stability_counts();
                    DatasetInfo {
                        domain: d,
                        source: snapshot.source.location.clone(),
                        revision: snapshot.source.revision.clone(),
                        rows: t.len(),
                        stable_rows,
                        unstable_rows,
                        loaded_at: loaded_at.clone(),
                    }
                })
                .collect(),
            skipped: snapshot
                .source
                .skipped
                .iter()
                .map(|(path, reason)| SkippedFile {
                    path: path.clone(),
                    reason: reason.clone(),
                })
                .collect(),
            refused_paths: snapshot
                .refused
                .iter()
                .map(|r| RefusedRawPath {
                    domain: r.domain,
                    run_id: r.run_id.clone(),
                    field: r.field,
                    path: r.path.clone(),
                    reason: r.reason.clone(),
                })
                .collect(),
            snapshot: snapshot_id(&snapshot.content_id).to_string(),
            last_reload: last_reload.map(|r| LastReload {
                at: humantime::format_rfc3339_millis(r.at).to_string(),
                snapshot: snapshot_id(&r.content_id).to_string(),
                error: r.error,
            }),
        }
    }
}

/// The answer to a reload: the snapshot now served.
#[derive(Debug, Serialize, ToSchema)]
pub struct Reloaded {
    pub snapshot: String,
    pub llm_runs: usize,
    pub diffusion_runs: usize,
    pub loaded_at: String,
}

/// Read the dataset again from the source the server was started on and serve it, without
/// dropping a request: requests in flight finish on the snapshot they started on. A source that
/// fails to load, or now holds no run, leaves the served snapshot as it is (422 `reload_failed`;
/// `/v1/datasets` says why). Needs the admin token when one is set. SIGHUP does the same.
#[utoipa::path(post, path = "/v1/admin/reload", tag = "catalog", responses((status = 200, body = Reloaded)))]
pub async fn reload(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
) -> Result<Json<Reloaded>, AppError> {
    super::guard::require_admin(&state, &headers)?;
    let s = state
        .service
        .reload()
        .await
        .map_err(AppError::ReloadFailed)?;
    Ok(Json(Reloaded {
        snapshot: snapshot_id(&s.content_id).to_string(),
        llm_runs: s.llm.len(),
        diffusion_runs: s.diffusion.len(),
        loaded_at: humantime::format_rfc3339_millis(s.loaded_at).to_string(),
    }))
}

/// The cache: the raw files of a remote source and the persisted derived data of every source,
/// what it holds and how it has been used since start.
#[derive(Debug, Serialize, ToSchema)]
pub struct CacheInfo {
    /// Whether raw files are cached: false for a local dataset (raw files are read in place).
    pub enabled: bool,
    /// Raw cache directory or object_store URL (null when raw files are read in place).
    pub location: Option<String>,
    /// Where this dataset's raw files are read from, in words: in place from a local directory,
    /// or fetched from the source into the raw cache.
    pub raw_files: String,
    /// Where derived data (ITLs, output lengths, timelines) is persisted, for every source; null
    /// when it is kept in memory only.
    pub derived_location: Option<String>,
    /// Catalog database (credentials hidden).
    pub catalog: String,
    /// This process's id among the replicas sharing the catalog (random per process; the holder
    /// of a fetch lease).
    pub replica: String,
    /// The bound on `bytes` (none when derived data is not persisted).
    pub max_bytes: Option<u64>,
    /// Files and bytes the catalog lists, raw files and persisted derived data (all sources
    /// sharing it).
    pub files: u64,
    pub bytes: u64,
    /// Since start: files served from the cache, files fetched (one upstream download each),
    /// bytes fetched, files evicted (raw or derived), failed downloads.
    pub hits: u64,
    pub misses: u64,
    pub bytes_fetched: u64,
    pub evictions: u64,
    pub failures: u64,
    /// Since start: downloads that waited for another replica fetching the same file.
    pub lease_waits: u64,
}

/// Where a snapshot's raw files are read from, in words.
fn raw_files(snapshot: &Snapshot) -> String {
    match (&snapshot.source.remote, &snapshot.source.root) {
        (Some(r), _) => format!(
            "fetched from {} on first use into the raw cache at {}",
            snapshot.source.location,
            r.cache_location()
        ),
        (None, Some(root)) => format!(
            "read in place from {} (a local dataset needs no raw cache)",
            root.display()
        ),
        (None, None) => "none: this dataset has no raw files".to_string(),
    }
}

/// The cache's size and counters.
#[utoipa::path(get, path = "/v1/cache", tag = "catalog", responses((status = 200, body = CacheInfo)))]
pub async fn cache(State(state): State<AppState>) -> Result<Json<CacheInfo>, AppError> {
    use std::sync::atomic::Ordering::Relaxed;
    let snapshot = state.service.snapshot();
    let (files, bytes) = state.service.cache_totals().await?;
    let (catalog, replica) = state.service.catalog_names();
    let remote = snapshot.source.remote.as_ref();
    let bound = remote
        .map(|r| r.bound())
        .or_else(|| snapshot.source.derived.as_ref().and_then(|d| d.bound()));
    let stat = |f: fn(&crate::store::cache::CacheStats) -> &std::sync::atomic::AtomicU64| {
        remote.map_or(0, |r| f(r.stats()).load(Relaxed))
    };
    Ok(Json(CacheInfo {
        enabled: remote.is_some(),
        location: remote.map(|r| r.cache_location().to_string()),
        raw_files: raw_files(&snapshot),
        derived_location: snapshot.source.derived.as_ref().and_then(|d| d.location()),
        catalog: catalog.to_string(),
        replica: replica.to_string(),
        max_bytes: bound.map(|b| b.max_bytes()),
        files,
        bytes,
        hits: stat(|s| &s.hits),
        misses: stat(|s| &s.misses),
        bytes_fetched: stat(|s| &s.bytes_fetched),
        evictions: bound.map_or(0, |b| b.evictions()),
        failures: stat(|s| &s.failures),
        lease_waits: stat(|s| &s.lease_waits),
    }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    pub status: &'static str,
    pub llm_runs: usize,
    pub diffusion_runs: usize,
    pub leaderboard: LeaderboardReadiness,
}

/// The leaderboard's data files of the served snapshot.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaderboardReadiness {
    /// Files in all (index, tasks, models).
    pub files: usize,
    /// `index.json`'s `last_updated`.
    pub last_updated: String,
    /// The LLM model files' output-length histograms: ready, still to read from raw files (a
    /// request for such a file reads them at once), or left out, with why.
    pub histograms: crate::service::leaderboard::HistogramStatus,
    /// Whether every file made is held compressed at the most effort in every coding (by a
    /// thread that runs only when a core is idle, a file at a time, once the server runs; until
    /// then a file is sent compressed at a quick level).
    pub compressed: bool,
}

/// Readiness: the snapshot being served. The listener binds only after a dataset has loaded, so a
/// process that answers is ready; the leaderboard part says how far its files are.
/// From the moment a shutdown starts it answers 503 with status `draining` (the server still
/// answers requests for `--drain-delay`, then finishes those in flight), so a load balancer stops
/// sending before the listener closes.
#[utoipa::path(get, path = "/readyz", tag = "health", responses(
    (status = 200, body = Readiness),
    (status = 503, description = "Shutting down: status draining", body = Readiness),
))]
pub async fn readyz(State(state): State<AppState>) -> (axum::http::StatusCode, Json<Readiness>) {
    let snapshot = state.service.snapshot();
    let site = state.service.leaderboard_site(&snapshot);
    let draining = state.draining.load(std::sync::atomic::Ordering::SeqCst);
    let code = if draining {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    } else {
        axum::http::StatusCode::OK
    };
    let answer = Json(Readiness {
        status: if draining { "draining" } else { "ready" },
        llm_runs: snapshot.llm.len(),
        diffusion_runs: snapshot.diffusion.len(),
        leaderboard: LeaderboardReadiness {
            files: site.paths().len(),
            last_updated: site.last_updated.clone(),
            histograms: site.status(),
            compressed: site.compressed(),
        },
    });
    (code, answer)
}
