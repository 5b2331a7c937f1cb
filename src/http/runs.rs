//! Run endpoints: `GET /v1/{domain}/runs` (filter, sort, page, project) and
//! `GET /v1/{domain}/runs/{run_id}` (one run, every field).

use axum::response::Response;

use super::error::AppError;
use super::state::Asked;
use crate::service::ask::Question;

/// List runs.
///
/// Filters follow the reference toolkit: repeated or comma-separated values of one filter are
/// OR, different filters AND; numeric filters take exact values or an inclusive `_min`/`_max`
/// range (not both). LLM lists hold stable runs unless `stability` says otherwise. The default
/// order is (task, model_id, gpu_model, num_gpus, max_num_seqs|batch_size), then `run_id`;
/// `sort` keys come first and the default order breaks their ties.
#[utoipa::path(
    get,
    path = "/v1/{domain}/runs",
    tag = "runs",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
    ),
    responses(
        (status = 200, description = "Matching runs. JSON has an envelope; CSV, NDJSON, Arrow and Parquet carry the rows only, with `X-Total-Count` and a `Link: rel=\"next\"` header when a page follows.",
            headers(("X-Total-Count" = usize, description = "Matching runs before paging")),
            content(
                (super::openapi::RunList = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("list"))),
)]
pub async fn list_runs(asked: Asked) -> Result<Response, AppError> {
    asked.ask(Question::List).await
}

/// One run by id, every field (or those named by `fields`), stable or not.
#[utoipa::path(
    get,
    path = "/v1/{domain}/runs/{run_id}",
    tag = "runs",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
        ("run_id" = String, Path, description = "Run id, e.g. gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1"),
    ),
    responses(
        (status = 200, description = "The run (JSON object; other formats hold one row)",
            content(
                (super::openapi::Run = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("one"))),
)]
pub async fn get_run(asked: Asked) -> Result<Response, AppError> {
    asked.ask(Question::One).await
}
