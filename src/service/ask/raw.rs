//! The raw-derived questions answered whole (docs/toolkit.md §11): runs' timelines of one metric
//! (§11.3), and the per-run statistics of LLM runs' inter-token latencies (`summary=true`, §11.2),
//! from the service's derived data of each run.

use std::sync::Arc;

use crate::engine::frame::{ColumnData, Frame, FrameColumn};
use crate::engine::{Dataset, Domain, RunTable};
use crate::rawfile::timeline::{DeviceTimeline, Metric, downsample, run_timeline};
use crate::service::{Service, ServiceError, Snapshot};

use super::answer::{Answer, Nullable, Rows, Shape};
use super::declare::{ITL_MANY, ITL_ONE, TIMELINE_MANY, TIMELINE_ONE};
use super::grammar::Params;
use super::request::Request;

/// Whether `req` asks one of this module's questions: a timeline, or ITL statistics
/// (`summary=true`).
pub(super) fn answers(req: &Request) -> Result<bool, ServiceError> {
    Ok(match req.question {
        TIMELINE_ONE | TIMELINE_MANY => true,
        ITL_ONE | ITL_MANY => req.params.flag("summary")?,
        _ => false,
    })
}

/// The answer to `req`, one of this module's questions (`answers`).
pub(super) async fn answer(
    service: &Service,
    req: &Request,
    snapshot: &Arc<Snapshot>,
) -> Result<Answer, ServiceError> {
    let table = snapshot.table(req.domain);
    let warnings = req.params.filter_warnings(req.domain, table);
    let (frame, nullable) = match req.question {
        TIMELINE_ONE => (
            timeline_one(service, req, snapshot).await?,
            Nullable::Where(per_device),
        ),
        TIMELINE_MANY => (
            timeline_many(service, req, snapshot).await?,
            Nullable::Where(per_device),
        ),
        _ => {
            let rows = target_rows(req, snapshot)?;
            (
                itl_summary(service, snapshot, &rows).await?,
                Nullable::TableOr(Domain::Llm, |n| n.ends_with("_s")),
            )
        }
    };
    Ok(Answer {
        shape: Shape::Array,
        nullable,
        total: Some(frame.num_rows()),
        next: None,
        warnings,
        rows: Rows::Frame(frame),
    })
}

/// A wide timeline's per-GPU columns may hold nulls (a GPU without a sample in a bucket).
fn per_device(name: &str) -> bool {
    name.contains("_device_")
}

/// The row of `req`'s run, refused when the domain has no run of that id.
fn run_row(req: &Request, table: &RunTable) -> Result<usize, ServiceError> {
    let run = req.run_id.as_deref().unwrap_or_default();
    table.row_of(run).ok_or_else(|| ServiceError::UnknownRun {
        domain: req.domain,
        run_id: run.to_string(),
    })
}

/// Which rows a question covers: its one run, or the filtered runs in default order.
pub(super) fn target_rows(req: &Request, snapshot: &Snapshot) -> Result<Vec<usize>, ServiceError> {
    let table = snapshot.table(req.domain);
    if req.run_id.is_some() {
        return Ok(vec![run_row(req, table)?]);
    }
    let q = req.params.run_filters(req.domain)?;
    Ok(table.filter_rows(&q.filters, q.stability)?)
}

/// `every=1s` / `500ms` / `2m`: the downsampling bucket in seconds, if asked for.
pub fn every(params: &Params) -> Result<Option<f64>, ServiceError> {
    let Some(v) = params.single_value("every")? else {
        return Ok(None);
    };
    match humantime::parse_duration(v) {
        Ok(d) if d.as_secs_f64() > 0.0 => Ok(Some(d.as_secs_f64())),
        _ => Err(ServiceError::InvalidParameter {
            parameter: "every".into(),
            detail: format!("'{v}' is not a positive duration such as 500ms, 1s or 2m"),
            allowed: None,
        }),
    }
}

/// `metric` (default power.device_instant).
pub fn metric(params: &Params) -> Result<Metric, ServiceError> {
    match params.single_value("metric")? {
        None => Ok(Metric::DeviceInstant),
        Some(m) => Metric::parse(m).ok_or_else(|| ServiceError::InvalidParameter {
            parameter: "metric".into(),
            detail: format!("unknown metric '{m}'"),
            allowed: Some(Metric::NAMES.iter().map(|n| n.to_string()).collect()),
        }),
    }
}

/// A run's timeline of metric `m` (per GPU too if `per_gpu`), downsampled to `bucket` seconds.
pub async fn device_timeline(
    service: &Service,
    snapshot: &Arc<Snapshot>,
    domain: Domain,
    row: usize,
    m: Metric,
    per_gpu: bool,
    bucket: Option<f64>,
) -> Result<DeviceTimeline, ServiceError> {
    let d = service.derived(snapshot, domain, row).await?;
    let mut t = run_timeline(&d.timeline, m, domain == Domain::Llm).map_err(|e| {
        ServiceError::RawInvalid {
            run_id: snapshot.table(domain).run_id(row).to_string(),
            detail: e.to_string(),
        }
    })?;
    if !per_gpu {
        t.devices = Vec::new();
    }
    Ok(match bucket {
        Some(b) => downsample(&t, b),
        None => t,
    })
}

/// One run's timeline: the long form, or the wide per-GPU one (`per_gpu=true`).
async fn timeline_one(
    service: &Service,
    req: &Request,
    snapshot: &Arc<Snapshot>,
) -> Result<Frame, ServiceError> {
    let m = metric(&req.params)?;
    let per_gpu = req.params.flag("per_gpu")?;
    let row = run_row(req, snapshot.table(req.domain))?;
    let bucket = every(&req.params)?;
    let t = device_timeline(service, snapshot, req.domain, row, m, per_gpu, bucket).await?;
    Ok(if per_gpu {
        wide_frame(snapshot, req.domain, row, &t, m)
    } else {
        long_frame(snapshot, req.domain, &[(row, t)], m, false)
    })
}

/// The filtered runs' timelines, long form, stably sorted by (task, model_id, relative_time_s)
/// as the toolkit's collection `timelines()`.
async fn timeline_many(
    service: &Service,
    req: &Request,
    snapshot: &Arc<Snapshot>,
) -> Result<Frame, ServiceError> {
    let m = metric(&req.params)?;
    let rows = target_rows(req, snapshot)?;
    let bucket = every(&req.params)?;
    let mut runs = Vec::with_capacity(rows.len());
    for row in rows {
        let t = device_timeline(service, snapshot, req.domain, row, m, false, bucket).await?;
        runs.push((row, t));
    }
    Ok(long_frame(snapshot, req.domain, &runs, m, true))
}

fn float_col(name: &str, v: &[f64]) -> FrameColumn {
    FrameColumn {
        name: name.into(),
        data: ColumnData::Float(v.iter().map(|x| Some(*x)).collect()),
    }
}

/// The toolkit's key columns of a run, repeated `n` times.
fn key_columns(snapshot: &Dataset, domain: Domain, rows: &[Option<usize>]) -> Vec<FrameColumn> {
    let last = if domain == Domain::Llm {
        "max_num_seqs"
    } else {
        "batch_size"
    };
    let names = ["task", "model_id", "num_gpus", last];
    table_columns(snapshot.table(domain), &names, rows)
}

/// The run table's columns `names` at `rows`, a row each (null where a row is none).
pub fn table_columns(t: &RunTable, names: &[&str], rows: &[Option<usize>]) -> Vec<FrameColumn> {
    names
        .iter()
        .map(|n| FrameColumn {
            name: n.to_string(),
            data: t.column(t.field_index(n).expect("key field")).take(rows),
        })
        .collect()
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

/// The wide per-GPU frame of one run: timestamp, relative_time_s, `<label>_device_<id>`...,
/// `<label>_total`.
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

/// The run columns that precede raw-derived LLM values (the toolkit's frames, plus run_id).
pub const KEY_COLUMNS: [&str; 5] = ["run_id", "task", "model_id", "num_gpus", "max_num_seqs"];

/// Bins of the ITL summary histogram (and of the ITL chart's).
pub(super) const ITL_BINS: usize = 50;

/// One row per run: the key columns, count, mean and numpy percentiles of the ITL samples
/// (seconds), and a 50-bin histogram (`np.histogram`), `{"edges": [...], "counts": [...]}`: an
/// object in JSON and NDJSON, its JSON text in CSV, and a string of the `arrow.json` extension
/// type in Arrow and Parquet.
async fn itl_summary(
    service: &Service,
    snapshot: &Arc<Snapshot>,
    rows: &[usize],
) -> Result<Frame, ServiceError> {
    use crate::pycompat::numpy::{np_histogram, np_mean, np_percentiles};
    let t = &snapshot.llm;
    let mut stats: Vec<[Option<f64>; 6]> = Vec::new();
    let mut counts = Vec::new();
    let mut hists = Vec::new();
    for &row in rows {
        let raw = service.derived(snapshot, Domain::Llm, row).await?;
        let joined = crate::rawfile::itl_samples(&raw)
            .map_err(|e| crate::service::derived::raw_error(t.run_id(row), &e))?
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
    let mut frame = Frame {
        columns: key_frame(t, rows),
    };
    frame.columns.push(FrameColumn {
        name: "count".into(),
        data: ColumnData::Int(counts),
    });
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
        data: ColumnData::Json(hists),
    });
    Ok(frame)
}

/// The key columns (`KEY_COLUMNS`) of LLM `rows`, one row each.
fn key_frame(t: &RunTable, rows: &[usize]) -> Vec<FrameColumn> {
    let rows: Vec<Option<usize>> = rows.iter().copied().map(Some).collect();
    table_columns(t, &KEY_COLUMNS, &rows)
}
