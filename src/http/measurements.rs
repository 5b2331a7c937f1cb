//! `/v1/measurements/*`: other tools' imported measurements (LLM Energy Measure, IPW) and the
//! dataset's LLM runs in one schema, answered at the service's door
//! (`service::ask::measurements`).

use axum::extract::{OriginalUri, Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::http::header;
use axum::response::Response;

use super::answer::respond;
use super::error::AppError;
use super::negotiate::negotiate;
use super::state::AppState;
use crate::peer::schema::LIST_TABLES;
use crate::service::ask::measurements::{Measured, MeasurementsRequest, fields_document};

/// A measurements question asked over HTTP: its parameters read, the representation negotiated
/// (for a question that has more than one), and the door's answer sent.
async fn answer(
    state: &AppState,
    what: Measured<'_>,
    uri: &axum::http::Uri,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Result<Response, AppError> {
    let mut req = MeasurementsRequest::parse(what, query, uri.path().to_string())?;
    // A comparison is JSON only, whatever is accepted.
    if what != Measured::Compare {
        let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
        req.format = negotiate(req.format_param()?, accept)?;
    }
    Ok(respond(&state.door.measurements(&req).await?))
}

/// List measurement runs: imported runs and the dataset's LLM runs in one schema.
///
/// Every string column filters by exact values (comma-separated or repeated: OR), e.g.
/// `source_kind`, `model`, `hardware`, `task`, `energy_scope`, `window`, `attribution`,
/// `batch_semantics`; every numeric column by exact values or an inclusive `_min`/`_max` range.
/// Rows come in import order (the dataset's runs first) unless `sort` says otherwise.
#[utoipa::path(
    get,
    path = "/v1/measurements/runs",
    tag = "measurements",
    responses(
        (status = 200, description = "Matching runs (JSON envelope with `runs`; other formats carry the rows)",
            headers(("X-Total-Count" = usize, description = "Matching rows before paging")),
            content(
                (serde_json::Value = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::QueryProblems,
    )
)]
pub async fn list_runs(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let what = Measured::Runs;
    answer(&state, what, &uri, query.as_deref(), &headers).await
}

/// One measurement run by id (`{source_id}~{local_id}`), every column or those named by `fields`.
#[utoipa::path(
    get,
    path = "/v1/measurements/runs/{run_id}",
    tag = "measurements",
    params(
        ("run_id" = String, Path, description = "Run id, e.g. lem_v1-1a2b3c4d~0042_c1 or mlenergy_v3~gpqa~Qwen--Qwen3-14B~B200~g1~b8"),
    ),
    responses(
        (status = 200, description = "The run (a JSON object; other formats hold one row)",
            content(
                (serde_json::Value = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    )
)]
pub async fn get_run(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    answer(
        &state,
        Measured::Run(&run_id),
        &uri,
        query.as_deref(),
        &headers,
    )
    .await
}

/// List one of the measurement tables: `sources` (what was imported, from where, with the files
/// that could not be read), `requests`, `turns`, `tool_calls`, `timeseries`, `latency_samples`,
/// `evaluations`, `run_metrics` (values as the sources reported them) or `reported_stats`.
///
/// Filters, sort, paging and projection as for `/v1/measurements/runs` (e.g. `run_id=...`).
#[utoipa::path(
    get,
    path = "/v1/measurements/{table}",
    tag = "measurements",
    params(
        ("table" = String, Path, description = "sources, requests, turns, tool_calls, timeseries, latency_samples, evaluations, run_metrics or reported_stats"),
    ),
    responses(
        (status = 200, description = "Matching rows (JSON envelope with the rows under the table's name)",
            headers(("X-Total-Count" = usize, description = "Matching rows before paging")),
            content(
                (serde_json::Value = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    )
)]
pub async fn list_table(
    State(state): State<AppState>,
    Path(table): Path<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let Some(&table) = LIST_TABLES.iter().find(|t| **t == table) else {
        return Err(AppError::NoRoute(format!(
            "/v1/measurements/{table}: no such table; the tables are runs, {}",
            LIST_TABLES.join(", ")
        )));
    };
    answer(
        &state,
        Measured::Table(table),
        &uri,
        query.as_deref(),
        &headers,
    )
    .await
}

/// The columns of every measurement table: type, unit, meaning, and for derived columns the
/// formula they are computed by.
#[utoipa::path(
    get,
    path = "/v1/measurements/fields",
    tag = "measurements",
    responses((status = 200, description = "`{\"tables\": {table: [{name, type, unit, description, derived, formula}]}}`", body = serde_json::Value))
)]
pub async fn fields() -> Response {
    axum::response::IntoResponse::into_response((
        [(header::CONTENT_TYPE, "application/json")],
        fields_document().to_string(),
    ))
}

/// Repeat statistics per group: n, mean, sample std, SEM, the exact t(0.975, n−1) 95% interval,
/// CV, min and max of `metric` (default energy_per_output_token_j) over the runs of each group of
/// `by` (comma-separated run columns; default `source_id,experiment_id`, the repeats of one
/// experiment). `trim=p` drops max(1, ⌊p·n⌋) values from each end of groups of 4 or more (IPW's
/// rule). LEM's own CycleStatistics are returned beside ours as `reported` (for
/// gpu_cpu_ram_energy_j and output_tps_per_process). Filters as for `/v1/measurements/runs`; groups
/// that mix energy scopes, windows or batch semantics carry `warnings`, and `strict=true` refuses them.
#[utoipa::path(
    get,
    path = "/v1/measurements/repeat-stats",
    tag = "measurements",
    responses(
        (status = 200, description = "`{metric, by, groups: [{key, n, mean, std, sem, t, ci95_lo, ci95_hi, cv, min, max, trimmed, missing, reported, warnings}], warnings}`; other formats carry one row per group",
            content(
                (serde_json::Value = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::QueryProblems,
    )
)]
pub async fn repeat_stats(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    answer(
        &state,
        Measured::RepeatStats,
        &uri,
        query.as_deref(),
        &headers,
    )
    .await
}

/// Compare two groups of runs: `a.<filter>=...` and `b.<filter>=...` select them (filters as for
/// `/v1/measurements/runs`, prefixed; a group without a filter is every run). Answers both groups' statistics of `metric`, the difference
/// a − b with Welch's 95% interval (Welch–Satterthwaite degrees of freedom, exact t), the
/// two-sided p-value, Cohen's d and Hedges' g, and `warnings` when the groups mix energy scopes,
/// windows, attributions or batch semantics (`strict=true` refuses such a comparison with 400).
#[utoipa::path(
    get,
    path = "/v1/measurements/compare",
    tag = "measurements",
    responses((status = 200, description = "`{metric, a: {runs, n, mean, ...}, b: {...}, difference, ratio, se, df, t_statistic, p_value, ci95_lo, ci95_hi, cohens_d, hedges_g, warnings}`", body = serde_json::Value),
        super::problems::ParameterProblems,
    )
)]
pub async fn compare(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    answer(&state, Measured::Compare, &uri, query.as_deref(), &headers).await
}
