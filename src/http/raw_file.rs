//! `GET /v1/{domain}/runs/{run_id}/raw/{file}`: a run's raw file, streamed as stored.

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::error::AppError;
use super::state::{ApiPath, AppState, prepare};
use crate::service::ask;
use crate::service::raw_files::open_named;

/// The raw file of a run, streamed as stored: `results.json` (both domains) or `prometheus.json`
/// (LLM).
#[utoipa::path(
    get,
    path = "/v1/{domain}/runs/{run_id}/raw/{file}",
    tag = "raw",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
        ("run_id" = String, Path, description = "Run id"),
        ("file" = String, Path, description = "results.json, or prometheus.json (llm)"),
    ),
    responses(
        (status = 200, description = "The file, streamed", content_type = "application/json"),
        super::problems::RawFileProblems,
    ),
    extensions(("x-query" = json!("raw_file"))),
)]
pub async fn raw_file(
    State(state): State<AppState>,
    ApiPath((domain, run, file)): ApiPath<(String, String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let _place = state.door.costly_place()?;
    let p = prepare(&state, &domain, ask::RAW_FILE, query.as_deref(), &headers).await?;
    let (opened, len) = open_named(&p.snapshot, p.domain, &run, &file).await?;
    let mut resp = Response::new(axum::body::Body::from_stream(opened.into_stream()));
    let h = resp.headers_mut();
    h.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    if let Some(len) = len {
        h.insert(
            axum::http::header::CONTENT_LENGTH,
            axum::http::HeaderValue::from(len),
        );
    }
    Ok(resp)
}
