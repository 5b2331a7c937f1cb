//! The leaderboard's data files (docs/leaderboard.md): `GET /leaderboard/data/index.json`,
//! `/leaderboard/data/tasks/{file}` and `/leaderboard/data/models/{file}`, and the same under
//! `/data/` for a proxy that strips the prefix. Made from the served snapshot as the leaderboard's
//! build makes them, held in memory per snapshot, sent in the coding the client prefers from
//! bytes compressed once.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use super::answer::with_warnings;
use super::error::AppError;
use super::state::{ApiPath, AppState, Revision};
use super::transport::{Chosen, joined};
use crate::service::coding::Coding;
use crate::service::leaderboard::SiteFile;

/// A file's bytes in `coding` as a 200: its type, coding, and its entity tag (`etag`, quoted,
/// of the identity bytes) with the coding's suffix, and `-q` when the bytes are a quick form sent
/// until the final ones are made (other bytes, so another strong tag; a revalidation of it gets
/// the final bytes once they are made). The leaderboard's files and the frontend's.
pub fn file_response(
    body: Bytes,
    coding: Coding,
    done: bool,
    content_type: Option<HeaderValue>,
    etag: &str,
) -> Response {
    let mut resp = (StatusCode::OK, body).into_response();
    let h = resp.headers_mut();
    if let Some(v) = content_type {
        h.insert(header::CONTENT_TYPE, v);
    }
    if coding != Coding::Identity {
        h.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(coding.token()),
        );
    }
    let tag = etag.trim_end_matches('"');
    let interim = if done { "" } else { "-q" };
    if let Some(v) = joined(&[tag, coding.etag_suffix(), interim, "\""]) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    resp
}

/// The answer for a site file in the coding `coding`.
pub fn site_file_response(file: &SiteFile, coding: Coding, content_type: &'static str) -> Response {
    let content_type = Some(HeaderValue::from_static(content_type));
    let (body, done) = file.data.get(coding);
    let resp = file_response(body, coding, done, content_type, &file.etag);
    match &file.warning {
        Some(w) => with_warnings(resp, std::slice::from_ref(w)),
        None => resp,
    }
}

/// The file at `path` of the leaderboard of the snapshot `revision` names, from the door.
async fn serve(
    state: &AppState,
    coding: Coding,
    path: &str,
    revision: Revision,
) -> Result<Response, AppError> {
    let file = state
        .door
        .leaderboard_file(path, revision.revision.as_deref())
        .await?;
    Ok(site_file_response(&file, coding, "application/json"))
}

/// The leaderboard's index: tasks, their architecture groups, and each model's metadata.
#[utoipa::path(
    get,
    path = "/leaderboard/data/index.json",
    tag = "leaderboard",
    params(Revision),
    responses((status = 200, description = "index.json, as the leaderboard publishes it", content_type = "application/json"))
)]
pub async fn index(
    State(state): State<AppState>,
    Chosen(coding): Chosen,
    revision: Revision,
) -> Result<Response, AppError> {
    serve(&state, coding, "index.json", revision).await
}

/// A task's configurations: one per run (stable LLM runs; every diffusion run), in the
/// leaderboard's order.
#[utoipa::path(
    get,
    path = "/leaderboard/data/tasks/{file}",
    tag = "leaderboard",
    params(("file" = String, Path, description = "`<task>.json`, e.g. gpqa.json"), Revision),
    responses((status = 200, description = "tasks/<task>.json, as the leaderboard publishes it", content_type = "application/json"),
        super::problems::NotFoundProblem,
    )
)]
pub async fn task(
    State(state): State<AppState>,
    ApiPath(file): ApiPath<String>,
    Chosen(coding): Chosen,
    revision: Revision,
) -> Result<Response, AppError> {
    serve(&state, coding, &format!("tasks/{file}"), revision).await
}

/// A (model, task) pair's configurations, with the LLM runs' output-length histograms.
#[utoipa::path(
    get,
    path = "/leaderboard/data/models/{file}",
    tag = "leaderboard",
    params(("file" = String, Path, description = "`<org>__<name>__<task>.json`, e.g. Qwen__Qwen3-8B__gpqa.json"), Revision),
    responses((status = 200, description = "models/<org>__<name>__<task>.json, as the leaderboard publishes it", content_type = "application/json"),
        super::problems::LeaderboardModelProblems,
    )
)]
pub async fn model(
    State(state): State<AppState>,
    ApiPath(file): ApiPath<String>,
    Chosen(coding): Chosen,
    revision: Revision,
) -> Result<Response, AppError> {
    serve(&state, coding, &format!("models/{file}"), revision).await
}

/// `index.json` under `/data/` (a proxy that strips `/leaderboard`).
#[utoipa::path(
    get,
    path = "/data/index.json",
    tag = "leaderboard",
    params(Revision),
    responses((status = 200, description = "index.json", content_type = "application/json"))
)]
pub async fn bare_index(
    State(state): State<AppState>,
    Chosen(coding): Chosen,
    revision: Revision,
) -> Result<Response, AppError> {
    serve(&state, coding, "index.json", revision).await
}

/// A task file under `/data/`.
#[utoipa::path(
    get,
    path = "/data/tasks/{file}",
    tag = "leaderboard",
    params(("file" = String, Path, description = "`<task>.json`"), Revision),
    responses((status = 200, description = "tasks/<task>.json", content_type = "application/json"),
        super::problems::NotFoundProblem,
    )
)]
pub async fn bare_task(
    State(state): State<AppState>,
    ApiPath(file): ApiPath<String>,
    Chosen(coding): Chosen,
    revision: Revision,
) -> Result<Response, AppError> {
    serve(&state, coding, &format!("tasks/{file}"), revision).await
}

/// A model file under `/data/`.
#[utoipa::path(
    get,
    path = "/data/models/{file}",
    tag = "leaderboard",
    params(("file" = String, Path, description = "`<org>__<name>__<task>.json`"), Revision),
    responses((status = 200, description = "models/<org>__<name>__<task>.json", content_type = "application/json"),
        super::problems::LeaderboardModelProblems,
    )
)]
pub async fn bare_model(
    State(state): State<AppState>,
    ApiPath(file): ApiPath<String>,
    Chosen(coding): Chosen,
    revision: Revision,
) -> Result<Response, AppError> {
    serve(&state, coding, &format!("models/{file}"), revision).await
}
