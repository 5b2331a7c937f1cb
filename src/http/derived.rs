//! Raw-derived LLM data endpoints: output lengths (docs/toolkit.md §11.1) and inter-token
//! latencies (§11.2), of one run or of the filtered runs, from the service's derived data
//! (`service::derived`); `summary=true` statistics are answered at the service's door
//! (`service::ask::raw`).

use axum::extract::{OriginalUri, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::answer::{Encoded, cached, lookup, pieces, respond, streamed, with_warnings};
use super::error::AppError;
use super::negotiate::Format;
use super::state::{ApiPath, AppState, Prepared, ask, prepare};
use crate::engine::Domain;
use crate::rawfile::{self, RawError};
use crate::service::ask::{self, raw::KEY_COLUMNS};

/// A reading error of run `run_id` as the HTTP layer reports it.
fn raw_error(run_id: &str, e: &RawError) -> AppError {
    crate::service::derived::raw_error(run_id, e).into()
}

/// Which rows a raw endpoint covers: one run by id, or the filtered runs in default order.
fn target_rows(p: &Prepared, run: Option<&str>) -> Result<Vec<usize>, AppError> {
    let t = &p.snapshot.llm;
    match run {
        Some(id) => Ok(vec![t.row_of(id).ok_or_else(|| AppError::UnknownRun {
            domain: "llm".into(),
            run_id: id.into(),
        })?]),
        None => p.filtered_rows(),
    }
}

#[derive(Clone, Copy)]
enum Kind {
    OutputLengths,
    Itl,
}

async fn answer(
    state: AppState,
    uri: axum::http::Uri,
    p: Prepared,
    rows: Vec<usize>,
    kind: Kind,
) -> Result<Response, AppError> {
    use crate::service::encode::per_sample::{
        Segment, Values, arrow_pieces, encode_long, estimated_bytes, write_long,
    };
    let include_unsuccessful = match kind {
        Kind::OutputLengths => p.params.flag("include_unsuccessful")?,
        Kind::Itl => false,
    };
    if let Some(hit) = lookup(&state.cache, &p.snapshot, &uri, p.format) {
        return Ok(hit);
    }
    let snapshot = p.snapshot.clone();
    let warnings = p.params.filter_warnings(Domain::Llm, &snapshot.llm);
    let t = &snapshot.llm;
    let mut derived = Vec::with_capacity(rows.len());
    let mut lengths: Vec<datafusion::arrow::buffer::ScalarBuffer<i64>> = Vec::new();
    for &row in &rows {
        let raw = state.service.derived(&snapshot, Domain::Llm, row).await?;
        let checked = match kind {
            Kind::OutputLengths => {
                rawfile::output_lengths(&raw, include_unsuccessful).map(|v| lengths.push(v.into()))
            }
            Kind::Itl => rawfile::itl_samples(&raw).map(|_| ()),
        };
        checked.map_err(|e| raw_error(t.run_id(row), &e))?;
        derived.push(raw);
    }
    let format = p.format;
    // One segment per run, or per chunk of a run's ITL samples.
    let segments: Vec<Segment> = rows
        .iter()
        .enumerate()
        .flat_map(|(i, &row)| {
            let values: Vec<Values> = match kind {
                Kind::OutputLengths => vec![Values::Int(lengths[i].clone())],
                Kind::Itl => derived[i].itl.as_ref().map_or_else(
                    |_| Vec::new(),
                    |s| s.chunks().iter().cloned().map(Values::Float).collect(),
                ),
            };
            values
                .into_iter()
                .map(move |values| Segment { row, values })
        })
        .collect();
    let keys: Vec<usize> = KEY_COLUMNS
        .iter()
        .map(|n| t.field_index(n).expect("llm key field"))
        .collect();
    let value = match kind {
        Kind::OutputLengths => "output_len",
        Kind::Itl => "itl_s",
    };
    let total: usize = segments.iter().map(|s| s.values.len()).sum();
    if format == Format::Arrow {
        // The values' own buffers, framed: nothing is copied or cached (the derived data is).
        let started = std::time::Instant::now();
        let parts = arrow_pieces(t, &keys, &segments, value)?;
        tracing::debug!(
            rows = total,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "arrow pieces"
        );
        return Ok(with_warnings(
            pieces(format.content_type(), Some(total), parts),
            &warnings,
        ));
    }
    if estimated_bytes(t, &keys, &segments, value, format) >= state.limits.stream_bytes {
        // Encoded while it is sent, and not cached (the derived data it comes from is).
        let snapshot = snapshot.clone();
        let resp = streamed(format.content_type(), Some(total), move |out| {
            write_long(&snapshot.llm, &keys, &segments, value, format, out)
                .map_err(|e| e.to_string())
        });
        return Ok(with_warnings(resp, &warnings));
    }
    let encoded = cached(&state.cache, &snapshot, &uri, format, || {
        let started = std::time::Instant::now();
        let body = encode_long(t, &keys, &segments, value, format)?;
        tracing::debug!(
            rows = total,
            bytes = body.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            format = format.name(),
            "encoded"
        );
        Ok(Encoded {
            total: Some(total),
            warnings: warnings.clone(),
            ..Encoded::new(format.content_type(), body)
        })
    })?;
    Ok(respond(&encoded))
}

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
    raw_answer(state, uri, query, &headers, Some(&run), Kind::OutputLengths).await
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
    raw_answer(state, uri, query, &headers, None, Kind::OutputLengths).await
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
    raw_answer(state, uri, query, &headers, Some(&run), Kind::Itl).await
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
    raw_answer(state, uri, query, &headers, None, Kind::Itl).await
}

/// The four output-length/ITL handlers: one run (`run`) or the filtered runs, checked against the
/// parameters of `kind`; `summary=true` turns ITL samples into per-run statistics.
async fn raw_answer(
    state: AppState,
    uri: axum::http::Uri,
    query: Option<String>,
    headers: &HeaderMap,
    run: Option<&str>,
    kind: Kind,
) -> Result<Response, AppError> {
    let endpoint = match (kind, run) {
        (Kind::OutputLengths, Some(_)) => ask::OUTPUT_LENGTHS_ONE,
        (Kind::OutputLengths, None) => ask::OUTPUT_LENGTHS_MANY,
        (Kind::Itl, Some(_)) => ask::ITL_ONE,
        (Kind::Itl, None) => ask::ITL_MANY,
    };
    let p = prepare(&state, "llm", endpoint, query.as_deref(), headers)?;
    if matches!(kind, Kind::Itl) && p.params.flag("summary")? {
        // Per-run statistics: answered whole at the service's door, which selects the runs.
        let run = run.map(str::to_string);
        return ask(
            &state,
            endpoint,
            "llm",
            run,
            uri.path(),
            query.as_deref(),
            headers,
        )
        .await;
    }
    let rows = target_rows(&p, run)?;
    let door = state.door.clone();
    let _place = door.costly_place()?;
    answer(state, uri, p, rows, kind).await
}
