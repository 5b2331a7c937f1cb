//! Catalog and health endpoints: fields, datasets and the cache (as `service::catalog` says
//! them), reload, liveness and readiness.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::AppError;
use super::state::{ApiPath, AppState, parse_domain};
use crate::service::catalog::{CacheInfo, DatasetList, FieldList, snapshot_id};

/// Every field with type, unit and description.
#[utoipa::path(
    get,
    path = "/v1/{domain}/fields",
    tag = "catalog",
    params(("domain" = crate::engine::Domain, Path, description = "llm or diffusion"), super::state::Revision),
    responses(
        (status = 200, description = "Fields in output order", body = FieldList),
        super::problems::NotFoundProblem,
    )
)]
pub async fn fields(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    revision: super::state::Revision,
) -> Result<Json<FieldList>, AppError> {
    let domain = parse_domain(&domain)?;
    let snapshot = revision.snapshot(&state).await?;
    Ok(Json(FieldList::of(&snapshot, domain)))
}

/// What is loaded.
#[utoipa::path(get, path = "/v1/datasets", tag = "catalog", responses((status = 200, body = DatasetList)))]
pub async fn datasets(State(state): State<AppState>) -> Json<DatasetList> {
    Json(
        DatasetList::of(&state.service.snapshot(), state.service.last_reload())
            .with_revisions(state.service.revisions()),
    )
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

/// The cache's size and counters.
#[utoipa::path(get, path = "/v1/cache", tag = "catalog", responses((status = 200, body = CacheInfo)))]
pub async fn cache(State(state): State<AppState>) -> Result<Json<CacheInfo>, AppError> {
    Ok(Json(CacheInfo::of(&state.service).await?))
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
