//! Timeline endpoints (docs/toolkit.md §11.3): `GET /v1/{domain}/runs/{run_id}/timeline` and
//! `GET /v1/{domain}/timelines`.

use std::sync::Arc;

use axum::extract::{OriginalUri, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::answer::{Encoded, cached, lookup, respond};
use super::error::AppError;
use super::state::{ApiPath, AppState, Prepared, prepare};
use crate::engine::frame::{ColumnData, Frame, FrameColumn};
use crate::engine::{Dataset, Domain};
use crate::rawfile::timeline::{DeviceTimeline, Metric, downsample, run_timeline};
use crate::service::Snapshot;
use crate::service::ask::{self as ask, Params};
use crate::service::encode;

/// `every=1s` / `500ms` / `2m`: the downsampling bucket in seconds, if asked for.
fn every(p: &Prepared) -> Result<Option<f64>, AppError> {
    every_of(&p.params)
}

/// `every` of a parsed query.
pub(super) fn every_of(params: &Params) -> Result<Option<f64>, AppError> {
    let Some(v) = params.single_value("every")? else {
        return Ok(None);
    };
    match humantime::parse_duration(v) {
        Ok(d) if d.as_secs_f64() > 0.0 => Ok(Some(d.as_secs_f64())),
        _ => Err(AppError::InvalidParameter {
            parameter: "every".into(),
            detail: format!("'{v}' is not a positive duration such as 500ms, 1s or 2m"),
            allowed: None,
        }),
    }
}

fn metric(p: &Prepared) -> Result<Metric, AppError> {
    metric_of(&p.params)
}

/// `metric` of a parsed query (default power.device_instant).
pub(super) fn metric_of(params: &Params) -> Result<Metric, AppError> {
    match params.single_value("metric")? {
        None => Ok(Metric::DeviceInstant),
        Some(m) => Metric::parse(m).ok_or_else(|| AppError::InvalidParameter {
            parameter: "metric".into(),
            detail: format!("unknown metric '{m}'"),
            allowed: Some(Metric::NAMES.iter().map(|n| n.to_string()).collect()),
        }),
    }
}

fn float_col(name: &str, v: &[f64]) -> FrameColumn {
    FrameColumn {
        name: name.into(),
        data: ColumnData::Float(v.iter().map(|x| Some(*x)).collect()),
    }
}

/// The toolkit's key columns of a run, repeated `n` times.
fn key_columns(snapshot: &Dataset, domain: Domain, rows: &[Option<usize>]) -> Vec<FrameColumn> {
    let t = snapshot.table(domain);
    let last = if domain == Domain::Llm {
        "max_num_seqs"
    } else {
        "batch_size"
    };
    ["task", "model_id", "num_gpus", last]
        .iter()
        .map(|n| FrameColumn {
            name: n.to_string(),
            data: t.column(t.field_index(n).expect("key field")).take(rows),
        })
        .collect()
}

/// The timelines of `rows`, downsampled if asked; the per-GPU series are kept only `per_gpu` (the
/// long form has only their total).
async fn collect(
    state: &AppState,
    p: &Prepared,
    domain: Domain,
    rows: &[usize],
    m: Metric,
    per_gpu: bool,
) -> Result<Vec<(usize, DeviceTimeline)>, AppError> {
    let bucket = every(p)?;
    let mut out = Vec::with_capacity(rows.len());
    for &row in rows {
        out.push((
            row,
            device_timeline(state, &p.snapshot, domain, row, m, per_gpu, bucket).await?,
        ));
    }
    Ok(out)
}

/// A run's timeline of metric `m` (per GPU too if `per_gpu`), downsampled to `bucket` seconds.
pub(super) async fn device_timeline(
    state: &AppState,
    snapshot: &Arc<Snapshot>,
    domain: Domain,
    row: usize,
    m: Metric,
    per_gpu: bool,
    bucket: Option<f64>,
) -> Result<DeviceTimeline, AppError> {
    let d = state.service.derived(snapshot, domain, row).await?;
    let mut t =
        run_timeline(&d.timeline, m, domain == Domain::Llm).map_err(|e| AppError::RawInvalid {
            run_id: snapshot.table(domain).run_id(row).to_string(),
            detail: e.to_string(),
        })?;
    if !per_gpu {
        t.devices = Vec::new();
    }
    Ok(match bucket {
        Some(b) => downsample(&t, b),
        None => t,
    })
}

/// The long frame: run_id, timestamp, relative_time_s, value, metric, then the run's key columns;
/// rows stably sorted by (task, model_id, relative_time_s) when several runs are combined.
fn long_frame(
    snapshot: &Dataset,
    domain: Domain,
    runs: &[(usize, DeviceTimeline)],
    m: Metric,
    sort: bool,
) -> Frame {
    let mut rows: Vec<(usize, usize)> = runs
        .iter()
        .enumerate()
        .flat_map(|(k, (_, t))| (0..t.timestamp.len()).map(move |i| (k, i)))
        .collect();
    if sort {
        let t = snapshot.table(domain);
        let (task, model) = (
            t.field_index("task").expect("task"),
            t.field_index("model_id").expect("model_id"),
        );
        rows.sort_by(|&(ka, ia), &(kb, ib)| {
            let (ra, rb) = (runs[ka].0, runs[kb].0);
            crate::engine::table::cmp_values(t.column(task).get(ra), t.column(task).get(rb))
                .then(crate::engine::table::cmp_values(
                    t.column(model).get(ra),
                    t.column(model).get(rb),
                ))
                .then(runs[ka].1.relative_time_s[ia].total_cmp(&runs[kb].1.relative_time_s[ib]))
        });
    }
    let run_rows: Vec<Option<usize>> = rows.iter().map(|&(k, _)| Some(runs[k].0)).collect();
    let pick = |f: fn(&DeviceTimeline) -> &Vec<f64>| -> Vec<f64> {
        rows.iter().map(|&(k, i)| f(&runs[k].1)[i]).collect()
    };
    let t = snapshot.table(domain);
    let mut columns = vec![
        FrameColumn {
            name: "run_id".into(),
            data: t.column(0).take(&run_rows),
        },
        float_col("timestamp", &pick(|d| &d.timestamp)),
        float_col("relative_time_s", &pick(|d| &d.relative_time_s)),
        float_col("value", &pick(|d| &d.total)),
        FrameColumn {
            name: "metric".into(),
            data: ColumnData::Str(vec![Some(Arc::from(m.name())); rows.len()]),
        },
    ];
    columns.extend(key_columns(snapshot, domain, &run_rows));
    Frame { columns }
}

/// The wide per-GPU frame of one run: timestamp, relative_time_s, `<label>_device_<id>`..., `<label>_total`.
fn wide_frame(
    snapshot: &Dataset,
    domain: Domain,
    row: usize,
    t: &DeviceTimeline,
    m: Metric,
) -> Frame {
    let rows = vec![Some(row); t.timestamp.len()];
    let mut columns = vec![
        FrameColumn {
            name: "run_id".into(),
            data: snapshot.table(domain).column(0).take(&rows),
        },
        float_col("timestamp", &t.timestamp),
        float_col("relative_time_s", &t.relative_time_s),
    ];
    for (id, vals) in &t.devices {
        columns.push(FrameColumn {
            name: format!("{}_device_{id}", m.label()),
            data: ColumnData::Float(vals.clone()),
        });
    }
    columns.push(float_col(&format!("{}_total", m.label()), &t.total));
    Frame { columns }
}

fn encoded(
    state: &AppState,
    p: &Prepared,
    uri: &axum::http::Uri,
    frame: Frame,
) -> Result<Response, AppError> {
    let format = p.format;
    let e = cached(&state.cache, &p.snapshot, uri, format, || {
        let warnings = p
            .params
            .filter_warnings(p.domain, p.snapshot.table(p.domain));
        let nullable = |n: &str| n.contains("_device_");
        let rows = frame.num_rows();
        let body = encode::encode_owned_frame(frame, format, &nullable, encode::json_array)?;
        Ok(Encoded {
            total: Some(rows),
            warnings: warnings.clone(),
            ..Encoded::new(format.content_type(), body)
        })
    })?;
    Ok(respond(&e))
}

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
pub async fn run_timeline_handler(
    State(state): State<AppState>,
    ApiPath((domain, run)): ApiPath<(String, String)>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let p = prepare(
        &state,
        &domain,
        ask::TIMELINE_ONE,
        query.as_deref(),
        &headers,
    )?;
    let m = metric(&p)?;
    // Errors are never cached, so a hit is the answer to a valid request.
    if let Some(hit) = lookup(&state.cache, &p.snapshot, &uri, p.format) {
        return Ok(hit);
    }
    let per_gpu = p.params.flag("per_gpu")?;
    let domain = p.domain;
    let row = p
        .snapshot
        .table(domain)
        .row_of(&run)
        .ok_or_else(|| AppError::UnknownRun {
            domain: domain.as_str().into(),
            run_id: run.clone(),
        })?;
    let runs = collect(&state, &p, domain, &[row], m, per_gpu).await?;
    let frame = if per_gpu {
        wide_frame(&p.snapshot, domain, row, &runs[0].1, m)
    } else {
        long_frame(&p.snapshot, domain, &runs, m, false)
    };
    encoded(&state, &p, &uri, frame)
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
pub async fn timelines(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let p = prepare(
        &state,
        &domain,
        ask::TIMELINE_MANY,
        query.as_deref(),
        &headers,
    )?;
    let m = metric(&p)?;
    // Errors are never cached, so a hit is the answer to a valid request.
    if let Some(hit) = lookup(&state.cache, &p.snapshot, &uri, p.format) {
        return Ok(hit);
    }
    let domain = p.domain;
    let rows = p.filtered_rows()?;
    let runs = collect(&state, &p, domain, &rows, m, false).await?;
    let frame = long_frame(&p.snapshot, domain, &runs, m, true);
    encoded(&state, &p, &uri, frame)
}
