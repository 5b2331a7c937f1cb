//! Prefetch endpoints: `POST /v1/{domain}/prefetch?<run filters>` starts a job that fetches the
//! raw files of the filtered runs into the raw cache (`service::prefetch`); `GET /v1/jobs/{id}`
//! reports its files and bytes done and total, and the files that failed.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::AppError;
use super::params;
use super::state::{ApiPath, AppState, prepare};
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
    )
)]
pub async fn prefetch(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    super::guard::require_admin(&state, &headers)?;
    let p = prepare(
        &state,
        &domain,
        params::PREFETCH,
        query.as_deref(),
        &headers,
    )?;
    let rows = p.filtered_rows()?;
    let row = state
        .service
        .prefetch
        .start(&p.snapshot, p.domain, &rows, query.unwrap_or_default())
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
    )
)]
pub async fn get_job(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<JobRow>, AppError> {
    state
        .service
        .prefetch
        .job(&id)
        .await?
        .map(Json)
        .ok_or(AppError::UnknownJob(id))
}
