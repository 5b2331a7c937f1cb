//! Prefetch endpoints: `POST /v1/{domain}/prefetch?<run filters>` starts a job that fetches the
//! raw files of the filtered runs into the raw cache (`service::prefetch`); `GET /v1/jobs/{id}`
//! reports its files and bytes done and total, and the files that failed;
//! `DELETE /v1/{domain}/runs/{run_id}/cache` evicts a run's files from the cache.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::AppError;
use super::state::{ApiPath, AppState, prepare};
use crate::service::ask;
use crate::service::derived::Evicted;
use crate::store::catalog::JobRow;

/// Fetch the raw files of the filtered runs into the cache, in the background.
#[utoipa::path(
    post,
    path = "/v1/{domain}/prefetch",
    tag = "raw",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
    ),
    responses(
        (status = 202, description = "The job, also at the Location header", body = JobRow),
        super::problems::AdminProblems,
    ),
    extensions(("x-query" = json!("prefetch"))),
)]
pub async fn prefetch(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    super::guard::require_admin(&state, &headers)?;
    let p = prepare(&state, &domain, ask::PREFETCH, query.as_deref(), &headers).await?;
    let rows = p.filtered_rows()?;
    let row = state
        .service
        .prefetch(&p.snapshot, p.domain, &rows, query.unwrap_or_default())
        .await?;
    let mut resp = (StatusCode::ACCEPTED, Json(&row)).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("/v1/jobs/{}", row.id)) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    Ok(resp)
}

/// A prefetch job's progress.
#[utoipa::path(
    get,
    path = "/v1/jobs/{job_id}",
    tag = "raw",
    params(("job_id" = String, Path, description = "Job id from POST /v1/{domain}/prefetch")),
    responses(
        (status = 200, description = "The job", body = JobRow),
        super::problems::NotFoundProblem,
    )
)]
pub async fn get_job(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<JobRow>, AppError> {
    state
        .service
        .job(&id)
        .await?
        .map(Json)
        .ok_or(AppError::UnknownJob(id))
}

/// Evict a run's files from the cache: its raw files fetched from a remote source and its
/// persisted derived data (ITLs, output lengths, timelines). Replicas sharing the cache and
/// catalog see them gone; the next request fetches or reads them again. An admin action.
#[utoipa::path(
    delete,
    path = "/v1/{domain}/runs/{run_id}/cache",
    tag = "raw",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
        ("run_id" = String, Path, description = "Run id"),
    ),
    responses(
        (status = 200, description = "What was removed (nothing when nothing was cached)", body = Evicted),
        super::problems::AdminProblems,
    ),
    extensions(("x-query" = json!("evict"))),
)]
pub async fn evict(
    State(state): State<AppState>,
    ApiPath((domain, run)): ApiPath<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Json<Evicted>, AppError> {
    super::guard::require_admin(&state, &headers)?;
    let p = prepare(&state, &domain, ask::EVICT, query.as_deref(), &headers).await?;
    let row = p
        .snapshot
        .table(p.domain)
        .row_of(&run)
        .ok_or_else(|| AppError::UnknownRun {
            domain: p.domain.as_str().into(),
            run_id: run.clone(),
        })?;
    let evicted = state.service.evict(&p.snapshot, p.domain, row).await?;
    tracing::info!(run_id = %evicted.run_id, bytes = evicted.bytes, files = evicted.removed.len(), "evicted a run from the cache");
    Ok(Json(evicted))
}
