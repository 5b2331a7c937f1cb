//! `GET /v1/{domain}/groups`: group the filtered runs and aggregate.

use axum::response::Response;

use super::error::AppError;
use super::state::Asked;
use crate::service::ask::Question;

/// Group runs and aggregate.
///
/// `by` names the grouping fields (none: one group of every run). Groups come in the order of
/// their first run in the default order. Every group has `count`; `agg` adds
/// `func(field)` or `func` (that function over every numeric field) for count, min, max, mean,
/// median, sum, argmin and argmax, in columns named `{func}_{field}`. argmin/argmax hold the whole
/// winning run (first one on ties). Aggregates skip nulls and are null over no values; mean and
/// sum use numpy's pairwise summation, so they equal numpy's to the last bit.
#[utoipa::path(
    get,
    path = "/v1/{domain}/groups",
    tag = "runs",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
    ),
    responses(
        (status = 200, description = "One row per group. CSV flattens argmin/argmax runs into `argmin_<field>.<run field>` columns.",
            content(
                (super::openapi::GroupList = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("group"))),
)]
pub async fn groups(asked: Asked) -> Result<Response, AppError> {
    asked.ask(Question::Group).await
}
