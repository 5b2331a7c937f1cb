//! Timeline endpoints (docs/toolkit.md §11.3): `GET /v1/{domain}/runs/{run_id}/timeline` and
//! `GET /v1/{domain}/timelines`, answered at the service's door (`service::ask::raw`).

use axum::response::Response;

use super::error::AppError;
use super::state::Asked;
use crate::service::ask::{TIMELINE_MANY, TIMELINE_ONE};

/// One run's timeline of a power or temperature metric, summed over GPUs (`per_gpu=true`: one
/// column per GPU plus the total). LLM runs cover the steady state, with relative_time_s from its
/// start; diffusion runs cover the whole series from the lowest GPU's first sample.
#[utoipa::path(
    get,
    path = "/v1/{domain}/runs/{run_id}/timeline",
    tag = "raw",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
        ("run_id" = String, Path, description = "Run id"),
    ),
    responses(
        (status = 200, description = "run_id, timestamp, relative_time_s, value, metric, task, model_id, num_gpus, max_num_seqs|batch_size",
            content(
                (Vec<super::openapi::TimelineRow> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::RawProblems,
    ),
    extensions(("x-query" = json!("timeline_one"))),
)]
pub async fn run_timeline_handler(asked: Asked) -> Result<Response, AppError> {
    asked.ask(TIMELINE_ONE).await
}

/// Timelines of the filtered runs, long form, stably sorted by (task, model_id, relative_time_s)
/// as the toolkit's collection `timelines()`.
#[utoipa::path(
    get,
    path = "/v1/{domain}/timelines",
    tag = "raw",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
    ),
    responses(
        (status = 200, description = "run_id, timestamp, relative_time_s, value, metric, task, model_id, num_gpus, max_num_seqs|batch_size",
            content(
                (Vec<super::openapi::TimelineRow> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::RawProblems,
    ),
    extensions(("x-query" = json!("timeline_many"))),
)]
pub async fn timelines(asked: Asked) -> Result<Response, AppError> {
    asked.ask(TIMELINE_MANY).await
}
