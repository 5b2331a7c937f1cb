//! Raw-derived LLM data: output lengths (§11.1) and inter-token latencies (§11.2), per run and
//! over filtered runs, read from each run's `results.json` once and kept parsed in memory.

use std::sync::Arc;

use axum::extract::{OriginalUri, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::encode;
use super::error::AppError;
use super::negotiate::Format;
use super::params::Endpoint;
use super::respond::{Encoded, Prepared, cached, lookup, pieces, prepare, respond, streamed};
use super::state::{ApiPath, AppState};
use crate::engine::frame::{ColumnData, Frame, FrameColumn};
use crate::engine::{Dataset, Domain, RawFile, RawLocation, RunTable};
use crate::rawfile::ipc;
use crate::rawfile::{self, RawError, RunDerived};

/// The run columns that precede raw-derived values (the toolkit's frames, plus run_id).
const KEY_COLUMNS: [&str; 5] = ["run_id", "task", "model_id", "num_gpus", "max_num_seqs"];

/// A raw file opened for reading: a local file (the dataset directory, or the raw cache's
/// directory), or a stream from a cache bucket.
pub(super) enum Opened {
    File(std::fs::File),
    Stream(futures::stream::BoxStream<'static, object_store::Result<bytes::Bytes>>),
}

impl Opened {
    /// A blocking reader (call on the blocking pool).
    fn into_reader(self) -> Box<dyn std::io::Read + Send> {
        use futures::TryStreamExt;
        match self {
            Opened::File(f) => Box::new(f),
            Opened::Stream(s) => Box::new(tokio_util::io::SyncIoBridge::new(
                tokio_util::io::StreamReader::new(s.map_err(std::io::Error::other)),
            )),
        }
    }

    /// A response body streaming the bytes.
    fn into_body(self) -> axum::body::Body {
        match self {
            Opened::File(f) => {
                axum::body::Body::from_stream(tokio_util::io::ReaderStream::with_capacity(
                    tokio::fs::File::from_std(f),
                    256 * 1024,
                ))
            }
            Opened::Stream(s) => axum::body::Body::from_stream(s),
        }
    }
}

/// Open a run's raw file, fetching it into the raw cache first for a remote source. Returns the
/// file and its length.
pub(super) async fn open_raw(
    snapshot: &Dataset,
    domain: Domain,
    row: usize,
    file: RawFile,
) -> Result<(Opened, Option<u64>), AppError> {
    let id = snapshot.table(domain).run_id(row).to_string();
    let loc = snapshot
        .raw_location(domain, row, file)
        .map_err(|e| AppError::RawUnavailable {
            run_id: id.clone(),
            detail: e.0,
        })?;
    match loc {
        RawLocation::Local { root, path } => {
            let f = std::fs::File::open(&path).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => AppError::RawUnavailable {
                    run_id: id.clone(),
                    detail: format!("{} does not exist", path.display()),
                },
                _ => AppError::Internal(format!("{}: {e}", path.display())),
            })?;
            // Checked again once open: a symlink swapped in since the path was resolved.
            if let Err(reason) = crate::store::confine::inside(&root, &path) {
                return Err(AppError::RawUnavailable {
                    run_id: id,
                    detail: format!("its {} is not served: {reason}", file.field()),
                });
            }
            let len = f.metadata().map(|m| m.len()).ok();
            Ok((Opened::File(f), len))
        }
        RawLocation::Remote(store, key) => {
            let got = store
                .open(&key)
                .await
                .map_err(|e| AppError::fetch(&id, e))?;
            let len = Some(got.meta.size);
            match got.payload {
                object_store::GetResultPayload::File(f, _) => Ok((Opened::File(f), len)),
                object_store::GetResultPayload::Stream(s) => Ok((Opened::Stream(s), len)),
            }
        }
    }
}

/// A run's derived raw data: from memory, else from the persisted copy, else read from its
/// `results.json` (fetched into the raw cache first for a remote source) and persisted. Concurrent
/// callers for one run share one load.
pub(super) async fn run_derived(
    state: &AppState,
    snapshot: &Arc<Dataset>,
    domain: Domain,
    row: usize,
) -> Result<Arc<RunDerived>, AppError> {
    let key = (snapshot.generation, domain, row);
    if let Some(hit) = state.derived.get(&key) {
        return Ok(hit);
    }
    let cache = state.derived.clone();
    let snapshot = snapshot.clone();
    let handle = tokio::runtime::Handle::current();
    let (derived, fresh) = tokio::task::spawn_blocking(move || {
        let mut fresh = None;
        let got = cache.try_get_with(key, || {
            let (d, persist_as) = handle.block_on(load_derived(&snapshot, domain, row))?;
            fresh = persist_as.map(|fp| (snapshot, fp));
            Ok::<_, AppError>(Arc::new(d))
        });
        got.map(|d| (d, fresh))
    })
    .await
    .map_err(|e| AppError::Internal(format!("raw reader task failed: {e}")))?
    .map_err(|e| (*e).clone())?;
    if let Some((snapshot, fingerprint)) = fresh {
        // Persist off the request path; a failure only costs a re-read after a restart.
        let d = derived.clone();
        state
            .background
            .spawn_blocking(move || persist_derived(&snapshot, domain, row, &fingerprint, &d));
    }
    Ok(derived)
}

/// Write a run's derived data to the snapshot's derived store under `fingerprint`.
fn persist_derived(
    snapshot: &Dataset,
    domain: Domain,
    row: usize,
    fingerprint: &str,
    d: &RunDerived,
) {
    let Some(store) = snapshot.source.derived.as_ref() else {
        return;
    };
    let written = store.put_with(fingerprint, |out| ipc::write_ipc(d, out));
    if let Err(e) = written {
        let id = snapshot.table(domain).run_id(row);
        tracing::warn!(run_id = %id, error = %e, "cannot persist derived data");
    }
}

/// `run_derived` without the memory cache (on the blocking pool): the persisted copy, else the
/// raw file. With the data comes the fingerprint to persist it under, when it was read from the raw
/// file and the snapshot has a derived store.
async fn load_derived(
    snapshot: &Dataset,
    domain: Domain,
    row: usize,
) -> Result<(RunDerived, Option<String>), AppError> {
    let id = snapshot.table(domain).run_id(row).to_string();
    let store = snapshot.source.derived.as_ref();
    let fingerprint = store
        .and(snapshot.raw_location(domain, row, RawFile::Results).ok())
        .as_ref()
        .and_then(crate::store::derived::fingerprint);
    if let (Some(store), Some(fp)) = (store, &fingerprint)
        && let Some(bytes) = store.get(fp).await
    {
        match ipc::from_ipc(bytes) {
            Ok(d) => return Ok((d, None)),
            Err(e) => {
                tracing::warn!(run_id = %id, error = %e, "persisted derived data unusable; reading the raw file");
                store.remove(fp).await;
            }
        }
    }
    let llm = domain == Domain::Llm;
    let (opened, len) = open_raw(snapshot, domain, row, RawFile::Results).await?;
    let started = std::time::Instant::now();
    let fast = match opened {
        Opened::File(f) => rawfile::read_run_at(&f, llm),
        other => rawfile::read_run_fast(other.into_reader(), llm),
    };
    let derived = match fast {
        Ok(d) => d,
        Err(_) => {
            // Not what the fast path expects: the reader path gives the answer or the error.
            let (opened, _) = open_raw(snapshot, domain, row, RawFile::Results).await?;
            let label = format!("results.json of {id}");
            rawfile::read_run(opened.into_reader(), &label, llm).map_err(|e| raw_error(&id, &e))?
        }
    };
    tracing::debug!(run_id = %id, bytes = len, elapsed_ms = started.elapsed().as_millis() as u64, "read results.json");
    Ok((derived, fingerprint))
}

pub(super) fn raw_error(run_id: &str, e: &RawError) -> AppError {
    match e {
        RawError::NotFound(p) => AppError::RawUnavailable {
            run_id: run_id.into(),
            detail: format!("{p} does not exist"),
        },
        RawError::Unreadable { detail, .. } | RawError::Content(detail) => AppError::RawInvalid {
            run_id: run_id.into(),
            detail: detail.clone(),
        },
    }
}

/// Rows of the key columns repeated per value, plus the value column.
fn long_frame(t: &RunTable, per_run: &[(usize, usize)], value: FrameColumn) -> Frame {
    let rows: Vec<Option<usize>> = per_run
        .iter()
        .flat_map(|&(row, n)| std::iter::repeat_n(Some(row), n))
        .collect();
    let mut columns: Vec<FrameColumn> = KEY_COLUMNS
        .iter()
        .map(|name| {
            let i = t.field_index(name).expect("llm key field");
            FrameColumn {
                name: name.to_string(),
                data: t.column(i).take(&rows),
            }
        })
        .collect();
    columns.push(value);
    Frame { columns }
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

/// Bins of the ITL summary histogram.
const ITL_BINS: usize = 50;

/// One row per run: count, mean and numpy percentiles of the ITL samples (seconds), and a
/// 50-bin histogram (`np.histogram`) as JSON text `{"edges": [...], "counts": [...]}`.
async fn itl_summary(
    state: AppState,
    uri: axum::http::Uri,
    p: Prepared,
    rows: Vec<usize>,
) -> Result<Response, AppError> {
    use crate::pycompat::numpy::{np_histogram, np_mean, np_percentiles};
    if let Some(hit) = lookup(&state, &p.snapshot, &uri, p.format) {
        return Ok(hit);
    }
    let snapshot = p.snapshot.clone();
    let t = &snapshot.llm;
    let mut stats: Vec<[Option<f64>; 6]> = Vec::new();
    let mut counts = Vec::new();
    let mut hists = Vec::new();
    for &row in &rows {
        let raw = run_derived(&state, &snapshot, Domain::Llm, row).await?;
        let joined = rawfile::itl_samples(&raw)
            .map_err(|e| raw_error(t.run_id(row), &e))?
            .joined();
        let v: &[f64] = &joined;
        let pct = np_percentiles(v, &[50.0, 90.0, 95.0, 99.0]).unwrap_or_default();
        stats.push([
            np_mean(v),
            pct.first().copied(),
            pct.get(1).copied(),
            pct.get(2).copied(),
            pct.get(3).copied(),
            v.iter().copied().reduce(f64::max),
        ]);
        counts.push(Some(v.len() as i64));
        let (edges, c) = np_histogram(v, ITL_BINS);
        hists.push(Some(Arc::from(
            serde_json::json!({"edges": edges, "counts": c})
                .to_string()
                .as_str(),
        )));
    }
    let format = p.format;
    let encoded = cached(&state, &snapshot, &uri, format, || {
        let mut frame = long_frame(
            t,
            &rows.iter().map(|&r| (r, 1)).collect::<Vec<_>>(),
            FrameColumn {
                name: "count".into(),
                data: ColumnData::Int(counts),
            },
        );
        for (k, name) in ["mean_s", "p50_s", "p90_s", "p95_s", "p99_s", "max_s"]
            .iter()
            .enumerate()
        {
            frame.columns.push(FrameColumn {
                name: name.to_string(),
                data: ColumnData::Float(stats.iter().map(|s| s[k]).collect()),
            });
        }
        frame.columns.push(FrameColumn {
            name: "histogram".into(),
            data: ColumnData::Str(hists),
        });
        let body = encode::encode_frame(
            &frame,
            format,
            &|n| n.ends_with("_s") || t.is_nullable(n),
            encode::json_array,
        )?;
        Ok(Encoded {
            content_type: format.content_type(),
            body: body.into(),
            total: Some(frame.num_rows()),
            next: None,
        })
    })?;
    Ok(respond(&encoded))
}

async fn answer(
    state: AppState,
    uri: axum::http::Uri,
    p: Prepared,
    rows: Vec<usize>,
    kind: Kind,
) -> Result<Response, AppError> {
    use super::long::{Segment, Values, arrow_pieces, bytes_per_row, encode_long, write_long};
    let include_unsuccessful = match kind {
        Kind::OutputLengths => p.params.flag("include_unsuccessful")?,
        Kind::Itl => false,
    };
    if let Some(hit) = lookup(&state, &p.snapshot, &uri, p.format) {
        return Ok(hit);
    }
    let snapshot = p.snapshot.clone();
    let t = &snapshot.llm;
    let mut derived = Vec::with_capacity(rows.len());
    let mut lengths: Vec<datafusion::arrow::buffer::ScalarBuffer<i64>> = Vec::new();
    for &row in &rows {
        let raw = run_derived(&state, &snapshot, Domain::Llm, row).await?;
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
        return Ok(pieces(format.content_type(), Some(total), parts));
    }
    if total * bytes_per_row(&keys, format) >= state.limits.stream_bytes {
        // Encoded while it is sent, and not cached (the derived data it comes from is).
        let snapshot = snapshot.clone();
        return Ok(streamed(format.content_type(), Some(total), move |out| {
            write_long(&snapshot.llm, &keys, &segments, value, format, out)
                .map_err(|e| e.to_string())
        }));
    }
    let encoded = cached(&state, &snapshot, &uri, format, || {
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
            content_type: format.content_type(),
            body: body.into(),
            total: Some(total),
            next: None,
        })
    })?;
    Ok(respond(&encoded))
}

const OUTPUT_LENGTH_FLAGS: &[&str] = &["include_unsuccessful"];
const ITL_FLAGS: &[&str] = &["summary"];

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
    raw_answer(state, uri, query, &headers, Some(&run), Kind::OutputLengths).await
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
    raw_answer(state, uri, query, &headers, None, Kind::OutputLengths).await
}

/// Smoothed inter-token latencies of one LLM run, in seconds (positive and finite samples).
#[utoipa::path(
    get,
    path = "/v1/llm/runs/{run_id}/itl",
    tag = "raw",
    params(
        ("run_id" = String, Path, description = "Run id"),
        ("summary" = Option<bool>, Query, description = "One row of count, mean_s, p50_s, p90_s, p95_s, p99_s, max_s and a 50-bin histogram instead of the samples"),
        ("format" = Option<String>, Query, description = "json (default), csv, ndjson, arrow or parquet"),
    ),
    responses(
        (status = 200, description = "One row per sample: run_id, task, model_id, num_gpus, max_num_seqs, itl_s (or the summary row)"),
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
    raw_answer(state, uri, query, &headers, Some(&run), Kind::Itl).await
}

/// Smoothed inter-token latencies of the filtered LLM runs, long form.
#[utoipa::path(
    get,
    path = "/v1/llm/itl",
    tag = "raw",
    params(
        super::openapi::RunFilterParams,
        ("summary" = Option<bool>, Query, description = "One summary row per run instead of the samples"),
    ),
    responses(
        (status = 200, description = "One row per sample: run_id, task, model_id, num_gpus, max_num_seqs, itl_s (or one summary row per run)"),
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
    let flags = match kind {
        Kind::OutputLengths => OUTPUT_LENGTH_FLAGS,
        Kind::Itl => ITL_FLAGS,
    };
    let endpoint = match run {
        Some(_) => Endpoint::RawOne(flags),
        None => Endpoint::RawMany(flags),
    };
    let p = prepare(&state, "llm", endpoint, query.as_deref(), headers)?;
    let rows = target_rows(&p, run)?;
    if matches!(kind, Kind::Itl) && p.params.flag("summary")? {
        return itl_summary(state, uri, p, rows).await;
    }
    answer(state, uri, p, rows, kind).await
}

/// The raw file of a run, streamed as stored: `results.json` (both domains) or `prometheus.json`
/// (LLM).
#[utoipa::path(
    get,
    path = "/v1/{domain}/runs/{run_id}/raw/{file}",
    tag = "raw",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
        ("run_id" = String, Path, description = "Run id"),
        ("file" = String, Path, description = "results.json, or prometheus.json (llm)"),
    ),
    responses(
        (status = 200, description = "The file, streamed", content_type = "application/json"),
        (status = 404, description = "Unknown domain, run or file name, or the dataset has no such file", body = super::error::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn raw_file(
    State(state): State<AppState>,
    ApiPath((domain, run, file)): ApiPath<(String, String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let p = prepare(
        &state,
        &domain,
        Endpoint::RawOne(&[]),
        query.as_deref(),
        &headers,
    )?;
    let domain = p.domain;
    let which = match (file.as_str(), domain) {
        ("results.json", _) => RawFile::Results,
        ("prometheus.json", Domain::Llm) => RawFile::Prometheus,
        _ => {
            let allowed: Vec<String> = match domain {
                Domain::Llm => vec!["results.json".into(), "prometheus.json".into()],
                Domain::Diffusion => vec!["results.json".into()],
            };
            return Err(AppError::InvalidParameter {
                parameter: "file".into(),
                detail: format!("no raw file '{file}' for {domain} runs"),
                allowed: Some(allowed),
            });
        }
    };
    let table = p.snapshot.table(domain);
    let row = table.row_of(&run).ok_or_else(|| AppError::UnknownRun {
        domain: domain.as_str().into(),
        run_id: run.clone(),
    })?;
    let (opened, len) = open_raw(&p.snapshot, domain, row, which).await?;
    let mut resp = Response::new(opened.into_body());
    let h = resp.headers_mut();
    h.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    if let Some(len) = len {
        h.insert(
            axum::http::header::CONTENT_LENGTH,
            axum::http::HeaderValue::from(len),
        );
    }
    Ok(resp)
}
