//! Where answers come from: column statistics of the filtered runs, what changed between two
//! revisions, and the dataset's Croissant metadata.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::error::AppError;
use super::state::{ApiPath, AppState, Asked, Revision, parse_domain};
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
pub async fn statistics(asked: Asked) -> Result<Response, AppError> {
    asked.ask(Question::Statistics).await
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
pub async fn changes(asked: Asked) -> Result<Response, AppError> {
    asked.ask(Question::Changes).await
}

/// The dataset's Croissant 1.1 metadata (JSON-LD), as the Hugging Face Hub, Kaggle and OpenML
/// serve it: name, description, license, citation, the revision as `version`
/// (`3.0.0+<commit>`), the parquet summaries as `distribution` (served at
/// `/v1/{domain}/summary.parquet`, with their SHA-256) and a record set per domain
/// (`llm_runs`, `diffusion_runs`) whose fields are the summaries' columns with the field
/// catalog's type, unit and description. `GET /` with `Accept: application/ld+json` answers it
/// too.
#[utoipa::path(
    get,
    path = "/croissant",
    tag = "catalog",
    params(Revision),
    responses(
        (status = 200, description = "Croissant JSON-LD", content((serde_json::Value = "application/ld+json"))),
        super::problems::NotFoundProblem,
    ),
)]
pub async fn croissant(
    State(state): State<AppState>,
    headers: HeaderMap,
    revision: Revision,
) -> Result<Response, AppError> {
    croissant_of(&state, &headers, &revision).await
}

/// The Croissant answer of `revision`, its files at the request's origin.
pub async fn croissant_of(
    state: &AppState,
    headers: &HeaderMap,
    revision: &Revision,
) -> Result<Response, AppError> {
    let base = super::state::origin(headers);
    let doc = state
        .door
        .croissant(revision.revision.as_deref(), &base)
        .await?;
    let mut resp = axum::Json(doc).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/ld+json"),
    );
    Ok(resp)
}

/// A domain's run summary as the source stores it (`runs/{domain}.parquet`; for a source built
/// from raw files, the run table as Parquet): the file Croissant's `distribution` names, with
/// its SHA-256 as the entity tag.
#[utoipa::path(
    get,
    path = "/v1/{domain}/summary.parquet",
    tag = "catalog",
    params(("domain" = crate::engine::Domain, Path, description = "llm or diffusion"), Revision),
    responses(
        (status = 200, description = "The parquet file", content((Vec<u8> = "application/vnd.apache.parquet"))),
        super::problems::NotFoundProblem,
    ),
)]
pub async fn summary_file(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    revision: Revision,
) -> Result<Response, AppError> {
    let domain = parse_domain(&domain)?;
    let file = state
        .door
        .summary_file(domain, revision.revision.as_deref())
        .await?;
    let mut resp = file.bytes.into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/vnd.apache.parquet"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("\"{}\"", file.sha256)) {
        h.insert(header::ETAG, v);
    }
    Ok(resp)
}
