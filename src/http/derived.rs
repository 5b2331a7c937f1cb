//! Raw-derived LLM data endpoints: output lengths (docs/toolkit.md §11.1) and inter-token
//! latencies (§11.2), of one run or of the filtered runs, answered at the service's door
//! (`service::ask::samples`; `summary=true` statistics: `service::ask::raw`).

use axum::extract::{OriginalUri, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::error::AppError;
use super::state::{ApiPath, AppState, ask};
use crate::service::ask;

/// Output lengths of one LLM run's requests (successful ones unless include_unsuccessful).
#[utoipa::path(
    get,
    path = "/v1/llm/runs/{run_id}/output-lengths",
    tag = "raw",
    params(
        ("run_id" = String, Path, description = "Run id"),
    ),
    responses(
        (status = 200, description = "One row per request: run_id, task, model_id, num_gpus, max_num_seqs, output_len",
            content(
                (Vec<super::openapi::OutputLengthRow> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::RawProblems,
    ),
    extensions(("x-query" = json!("output_lengths_one"))),
)]
pub async fn run_output_lengths(
    State(state): State<AppState>,
    ApiPath(run): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let q = query.as_deref();
    ask(
        &state,
        ask::OUTPUT_LENGTHS_ONE,
        "llm",
        Some(run),
        uri.path(),
        q,
        &headers,
    )
    .await
}

/// Output lengths of the filtered LLM runs, long form, runs in default order and requests in file
/// order. Any run without usable raw results fails the request, naming it.
#[utoipa::path(
    get,
    path = "/v1/llm/output-lengths",
    tag = "raw",
    params(
    ),
    responses(
        (status = 200, description = "One row per request: run_id, task, model_id, num_gpus, max_num_seqs, output_len",
            content(
                (Vec<super::openapi::OutputLengthRow> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::RawProblems,
    ),
    extensions(("x-query" = json!("output_lengths_many"))),
)]
pub async fn output_lengths(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let q = query.as_deref();
    ask(
        &state,
        ask::OUTPUT_LENGTHS_MANY,
        "llm",
        None,
        uri.path(),
        q,
        &headers,
    )
    .await
}

/// Smoothed inter-token latencies of one LLM run, in seconds (positive and finite samples).
#[utoipa::path(
    get,
    path = "/v1/llm/runs/{run_id}/itl",
    tag = "raw",
    params(
        ("run_id" = String, Path, description = "Run id"),
    ),
    responses(
        (status = 200, description = "One row per sample: run_id, task, model_id, num_gpus, max_num_seqs, itl_s (or the summary row)",
            content(
                (Vec<super::openapi::ItlAnswerRow> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::RawProblems,
    ),
    extensions(("x-query" = json!("itl_one"))),
)]
pub async fn run_itl(
    State(state): State<AppState>,
    ApiPath(run): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let q = query.as_deref();
    ask(
        &state,
        ask::ITL_ONE,
        "llm",
        Some(run),
        uri.path(),
        q,
        &headers,
    )
    .await
}

/// Smoothed inter-token latencies of the filtered LLM runs, long form.
#[utoipa::path(
    get,
    path = "/v1/llm/itl",
    tag = "raw",
    params(
    ),
    responses(
        (status = 200, description = "One row per sample: run_id, task, model_id, num_gpus, max_num_seqs, itl_s (or one summary row per run)",
            content(
                (Vec<super::openapi::ItlAnswerRow> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::RawProblems,
    ),
    extensions(("x-query" = json!("itl_many"))),
)]
pub async fn itl(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let q = query.as_deref();
    ask(&state, ask::ITL_MANY, "llm", None, uri.path(), q, &headers).await
}
