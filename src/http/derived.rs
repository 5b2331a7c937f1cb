//! Raw-derived LLM data endpoints: output lengths (docs/toolkit.md §11.1) and inter-token
//! latencies (§11.2), of one run or of the filtered runs, answered at the service's door
//! (`service::ask::samples`; `summary=true` statistics: `service::ask::raw`).

use axum::response::Response;

use super::error::AppError;
use super::state::Asked;
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
pub async fn run_output_lengths(asked: Asked) -> Result<Response, AppError> {
    asked.ask(ask::OUTPUT_LENGTHS_ONE).await
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
pub async fn output_lengths(asked: Asked) -> Result<Response, AppError> {
    asked.ask(ask::OUTPUT_LENGTHS_MANY).await
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
pub async fn run_itl(asked: Asked) -> Result<Response, AppError> {
    asked.ask(ask::ITL_ONE).await
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
pub async fn itl(asked: Asked) -> Result<Response, AppError> {
    asked.ask(ask::ITL_MANY).await
}
