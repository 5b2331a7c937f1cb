//! Raw-derived LLM data: output lengths (§11.1) and inter-token latencies (§11.2), per run and
//! over filtered runs, read from each run's `results.json` once and kept parsed in memory.

use std::sync::Arc;

use axum::extract::{OriginalUri, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::encode;
use super::error::AppError;
use super::params::Endpoint;
use super::respond::{Encoded, Prepared, cached, prepare, respond};
use super::state::{ApiPath, AppState};
use crate::engine::frame::{ColumnData, Frame, FrameColumn, Value};
use crate::engine::{Dataset, Domain, RawFile, RunTable};
use crate::raw::bulk::{self, RawError, RunRaw};

/// The run columns that precede raw-derived values (the toolkit's frames, plus run_id).
const KEY_COLUMNS: [&str; 5] = ["run_id", "task", "model_id", "num_gpus", "max_num_seqs"];

fn run_id(t: &RunTable, row: usize) -> String {
    match t.column(0).get(row) {
        Value::Str(s) => s.to_string(),
        _ => String::new(),
    }
}

/// The parsed raw data of one LLM run (from the cache, or read once for all concurrent callers).
async fn run_raw(state: &AppState, snapshot: &Arc<Dataset>, row: usize) -> Result<Arc<RunRaw>, AppError> {
    let id = run_id(&snapshot.llm, row);
    let path = snapshot.raw_path(Domain::Llm, row, RawFile::Results).ok_or_else(|| AppError::RawUnavailable {
        run_id: id.clone(),
        detail: "this dataset has no results.json for it (results_path is null)".into(),
    })?;
    let cache = state.raw.clone();
    let key = (snapshot.generation, row);
    let loaded = tokio::task::spawn_blocking(move || {
        cache.try_get_with(key, || bulk::read_llm_results(&path).map(|r| Arc::new(bulk::run_raw(r))))
    })
    .await
    .map_err(|e| AppError::Internal(format!("raw reader task failed: {e}")))?;
    loaded.map_err(|e| raw_error(&id, &e))
}

fn raw_error(run_id: &str, e: &RawError) -> AppError {
    match e {
        RawError::NotFound(p) => AppError::RawUnavailable { run_id: run_id.into(), detail: format!("{p} does not exist") },
        RawError::Unreadable { detail, .. } => AppError::RawInvalid { run_id: run_id.into(), detail: detail.clone() },
        RawError::Content(m) => AppError::RawInvalid { run_id: run_id.into(), detail: m.clone() },
    }
}

/// Rows of the key columns repeated per value, plus the value column.
fn long_frame(t: &RunTable, per_run: &[(usize, usize)], value: FrameColumn) -> Frame {
    let rows: Vec<Option<usize>> = per_run.iter().flat_map(|&(row, n)| std::iter::repeat_n(Some(row), n)).collect();
    let mut columns: Vec<FrameColumn> = KEY_COLUMNS
        .iter()
        .map(|name| {
            let i = t.field_index(name).expect("llm key field");
            FrameColumn { name: name.to_string(), data: t.column(i).take(&rows) }
        })
        .collect();
    columns.push(value);
    Frame { columns }
}

/// Which rows a raw endpoint covers: one run by id, or the filtered runs in default order.
fn target_rows(p: &Prepared, run: Option<&str>) -> Result<Vec<usize>, AppError> {
    let t = &p.snapshot.llm;
    match run {
        Some(id) => Ok(vec![t.row_of(id).ok_or_else(|| AppError::UnknownRun { domain: "llm".into(), run_id: id.into() })?]),
        None => {
            let q = p.params.run_filters(Domain::Llm)?;
            Ok(t.filter_rows(&q.filters, q.stability)?)
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    OutputLengths,
    Itl,
}

async fn answer(state: AppState, uri: axum::http::Uri, p: Prepared, rows: Vec<usize>, kind: Kind) -> Result<Response, AppError> {
    let include_unsuccessful = match kind {
        Kind::OutputLengths => p.params.flag("include_unsuccessful")?,
        Kind::Itl => false,
    };
    let snapshot = p.snapshot.clone();
    let t = &snapshot.llm;
    let mut per_run = Vec::with_capacity(rows.len());
    let mut ints = Vec::new();
    let mut floats = Vec::new();
    for &row in &rows {
        let raw = run_raw(&state, &snapshot, row).await?;
        let n = match kind {
            Kind::OutputLengths => {
                let v = bulk::output_lengths(&raw, include_unsuccessful).map_err(|e| raw_error(&run_id(t, row), &e))?;
                ints.extend(v.iter().map(|x| Some(*x)));
                v.len()
            }
            Kind::Itl => {
                let v = bulk::itl_samples(&raw).map_err(|e| raw_error(&run_id(t, row), &e))?;
                floats.extend(v.iter().map(|x| Some(*x)));
                v.len()
            }
        };
        per_run.push((row, n));
    }
    let value = match kind {
        Kind::OutputLengths => FrameColumn { name: "output_len".into(), data: ColumnData::Int(ints) },
        Kind::Itl => FrameColumn { name: "itl_s".into(), data: ColumnData::Float(floats) },
    };
    let format = p.format;
    let encoded = cached(&state, &snapshot, &uri, format, || {
        let frame = long_frame(t, &per_run, value);
        let body = encode::encode_frame(&frame, format, &|n| n != "output_len" && n != "itl_s" && t.is_nullable(n), |out, f| {
            encode::json_array(out, f)
        })?;
        Ok(Encoded { content_type: format.content_type(), body: body.into(), total: Some(frame.num_rows()), next: None })
    })?;
    Ok(respond(&encoded))
}

const OUTPUT_LENGTH_FLAGS: &[&str] = &["include_unsuccessful"];

/// Output lengths of one LLM run's requests (successful ones unless include_unsuccessful).
#[utoipa::path(
    get,
    path = "/v1/llm/runs/{run_id}/output-lengths",
    tag = "raw",
    params(
        ("run_id" = String, Path, description = "Run id"),
        ("include_unsuccessful" = Option<bool>, Query, description = "Also failed requests that carry an output_len (0 in v3)"),
        ("format" = Option<String>, Query, description = "json (default), csv, ndjson, arrow or parquet"),
    ),
    responses(
        (status = 200, description = "One row per request: run_id, task, model_id, num_gpus, max_num_seqs, output_len"),
        (status = 404, description = "Unknown run, or no raw results for it", body = super::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "The raw results lack what is needed (named in detail)", body = super::error::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn run_output_lengths(
    State(state): State<AppState>,
    ApiPath(run): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let p = prepare(&state, "llm", Endpoint::RawOne(OUTPUT_LENGTH_FLAGS), query.as_deref(), &headers)?;
    let rows = target_rows(&p, Some(&run))?;
    answer(state, uri, p, rows, Kind::OutputLengths).await
}

/// Output lengths of the filtered LLM runs, long form, runs in default order and requests in file
/// order. Any run without usable raw results fails the request, naming it.
#[utoipa::path(
    get,
    path = "/v1/llm/output-lengths",
    tag = "raw",
    params(
        super::openapi::RunFilterParams,
        ("include_unsuccessful" = Option<bool>, Query, description = "Also failed requests that carry an output_len"),
    ),
    responses(
        (status = 200, description = "One row per request: run_id, task, model_id, num_gpus, max_num_seqs, output_len"),
        (status = 400, description = "Bad parameter", body = super::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "A matched run has no raw results", body = super::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "A matched run's raw results lack what is needed", body = super::error::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn output_lengths(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let p = prepare(&state, "llm", Endpoint::RawMany(OUTPUT_LENGTH_FLAGS), query.as_deref(), &headers)?;
    let rows = target_rows(&p, None)?;
    answer(state, uri, p, rows, Kind::OutputLengths).await
}

/// Smoothed inter-token latencies of one LLM run, in seconds (positive and finite samples).
#[utoipa::path(
    get,
    path = "/v1/llm/runs/{run_id}/itl",
    tag = "raw",
    params(
        ("run_id" = String, Path, description = "Run id"),
        ("format" = Option<String>, Query, description = "json (default), csv, ndjson, arrow or parquet"),
    ),
    responses(
        (status = 200, description = "One row per sample: run_id, task, model_id, num_gpus, max_num_seqs, itl_s"),
        (status = 404, description = "Unknown run, or no raw results for it", body = super::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "No valid ITL samples, or unusable raw results", body = super::error::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn run_itl(
    State(state): State<AppState>,
    ApiPath(run): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let p = prepare(&state, "llm", Endpoint::RawOne(&[]), query.as_deref(), &headers)?;
    let rows = target_rows(&p, Some(&run))?;
    answer(state, uri, p, rows, Kind::Itl).await
}

/// Smoothed inter-token latencies of the filtered LLM runs, long form.
#[utoipa::path(
    get,
    path = "/v1/llm/itl",
    tag = "raw",
    params(super::openapi::RunFilterParams),
    responses(
        (status = 200, description = "One row per sample: run_id, task, model_id, num_gpus, max_num_seqs, itl_s"),
        (status = 400, description = "Bad parameter", body = super::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "A matched run has no raw results", body = super::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "A matched run has no valid ITL samples", body = super::error::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn itl(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let p = prepare(&state, "llm", Endpoint::RawMany(&[]), query.as_deref(), &headers)?;
    let rows = target_rows(&p, None)?;
    answer(state, uri, p, rows, Kind::Itl).await
}
