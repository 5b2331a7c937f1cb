//! Where answers come from: column statistics of the filtered runs, what changed between two
//! revisions, and the dataset's Croissant metadata.

use axum::extract::{OriginalUri, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::error::AppError;
use super::state::{ApiPath, AppState, ask};
use crate::service::ask::Question;

/// Column statistics of the filtered runs, as the Hugging Face dataset viewer's `/statistics`
/// names them.
///
/// `num_examples` counts the runs the filters select; `statistics` has one entry per column
/// (`fields` chooses them): `column_name`, `column_type` (`float`, `int`, `string_label`,
/// `bool`) and `column_statistics`. Numbers: `nan_count`, `nan_proportion`, `min`, `max`,
/// `mean`, `median`, `std` (sample, as pandas' `describe()`) and `histogram` (`hist`,
/// `bin_edges`: numpy's ten equal bins); strings and booleans: `nan_count`, `nan_proportion`,
/// `n_unique` and `frequencies`. Full precision. The tabular formats have one row per column.
#[utoipa::path(
    get,
    path = "/v1/{domain}/statistics",
    tag = "runs",
    params(("domain" = crate::engine::Domain, Path, description = "llm or diffusion")),
    responses(
        (status = 200, description = "The statistics",
            content(
                (serde_json::Value = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("statistics"))),
)]
pub async fn statistics(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let q = query.as_deref();
    ask(&state, Question::Statistics, &domain, None, uri.path(), q, &headers).await
}

/// What changed between two revisions of the dataset, among the runs the filters select.
///
/// Runs are matched by `run_id`: those `to` has and `from` has not are `added`, the reverse
/// `removed`, and a run whose fields differ is `changed`, each field with its `old` and `new`
/// value and `relative_change` ((new - old) / |old|, numbers only). `summary` counts them per
/// task and GPU model and lists the largest moves; `ranks` gives per task each model's rank by
/// its least energy before and after (`moved`: up is positive). The tabular formats have one row
/// per change (`run_id`, `change`, `task`, `gpu_model`, `field`, `old`, `new`,
/// `relative_change`).
#[utoipa::path(
    get,
    path = "/v1/{domain}/changes",
    tag = "runs",
    params(("domain" = crate::engine::Domain, Path, description = "llm or diffusion")),
    responses(
        (status = 200, description = "The changes",
            content(
                (serde_json::Value = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("changes"))),
)]
pub async fn changes(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let q = query.as_deref();
    ask(&state, Question::Changes, &domain, None, uri.path(), q, &headers).await
}
