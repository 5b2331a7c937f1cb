//! Charts as SVG (`chart`), questions of the door: the Pareto frontier, a batch sweep with its
//! fitted logistic curves, a run's power or temperature timeline per GPU with the total, the
//! histogram of a run's smoothed inter-token latencies, a deployment plan's energy a day against
//! the GPUs each configuration needs, and a run's energy rating as a badge. Each takes the
//! parameters of the data it draws (but `format` and `fields`).

use std::sync::Arc;

use crate::chart::{Axis, Chart, Mark, Series};
use crate::engine::frame::Value;
use crate::engine::frontier;
use crate::engine::models::SweepQuery;
use crate::engine::models::logistic::batch_x;
use crate::engine::models::sweep::{DEFAULT_BY, batch_field};
use crate::engine::{Domain, RunTable};
use crate::rawfile::timeline::{Metric, downsample};
use crate::service::leaderboard::files::in_file_order;
use crate::service::{Service, ServiceError, Snapshot};

use super::answer::Encoded;
use super::declare::{
    ITL_CHART, PARETO_CHART, PLAN_CHART, RATING_CHART, SWEEP_CHART, TIMELINE_CHART,
};
use super::grammar::Params;
use super::raw;
use super::request::Request;

/// The chart `req` asks for (`None` when it asks for something else), drawn as SVG.
pub(super) async fn answer(
    service: &Service,
    req: &Request,
    snapshot: &Arc<Snapshot>,
) -> Option<Result<Encoded, ServiceError>> {
    Some(match req.question {
        PARETO_CHART => pareto(req, snapshot),
        SWEEP_CHART => sweep(req, snapshot),
        TIMELINE_CHART => timeline(service, req, snapshot).await,
        ITL_CHART => itl(service, req, snapshot).await,
        PLAN_CHART => plan(req, snapshot),
        RATING_CHART => rating(req, snapshot),
        _ => return None,
    })
}

const SVG: &str = "image/svg+xml";

/// The most series a chart draws (its legend must fit); beyond them, the first are drawn and a
/// `Warning` says how many there were.
const MAX_SERIES: usize = 14;

/// A field's name with its unit, as an axis label.
fn axis_label(t: &RunTable, field: &str) -> String {
    match t.field_index(field).and_then(|i| t.fields[i].unit) {
        Some(u) => format!("{field} ({u})"),
        None => field.to_string(),
    }
}

/// A cell as a legend shows it.
fn shown(v: Value<'_>) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(x) => x.to_string(),
        Value::Bool(b) => b.to_string(),
    }
}

/// Keep the first `MAX_SERIES` of `items`; if some are dropped, the hint that says so.
fn at_most<T>(items: &mut Vec<T>, what: &str) -> Option<String> {
    let n = items.len();
    (n > MAX_SERIES).then(|| {
        items.truncate(MAX_SERIES);
        format!(
            "the runs selected make {n} {what}; the chart draws the first {MAX_SERIES}: filter further (task, model_id, gpu_model, num_gpus) to see the others"
        )
    })
}

/// The SVG answer of a chart drawn by `draw`, its title marked and `warning` given when it
/// draws only the first series.
fn svg(
    warning: Option<String>,
    draw: impl FnOnce() -> Result<Chart, ServiceError>,
) -> Result<Encoded, ServiceError> {
    let mut chart = draw()?;
    if warning.is_some() {
        chart.title.push_str(&format!(" (first {MAX_SERIES})"));
    }
    let body = crate::chart::svg(&chart).map_err(|e| ServiceError::Internal(e.to_string()))?;
    Ok(Encoded {
        warnings: warning.into_iter().collect(),
        ..Encoded::new(SVG, body)
    })
}

/// The one task the filters name, for a title.
fn one_task(params: &Params) -> Option<String> {
    params
        .single_value("task")
        .ok()
        .flatten()
        .map(str::to_string)
}

/// The Pareto frontier drawn: per `per` group its frontier runs joined by a line (latency
/// ascending), the other filtered runs as grey points behind.
pub(super) fn pareto(req: &Request, snapshot: &Snapshot) -> Result<Encoded, ServiceError> {
    let domain = req.domain;
    let params = &req.params;
    let table = snapshot.table(domain);
    let (filters, q) = params.pareto_query(domain, table)?;
    let mut rows = table.filter_rows(&filters.filters, filters.stability)?;
    in_file_order(table, &mut rows);
    let chosen = frontier::pareto(table, &rows, &q)?;
    let per_cols: Vec<usize> = q.per.iter().filter_map(|p| table.field_index(p)).collect();
    let key = |r: usize| -> String {
        per_cols
            .iter()
            .map(|&c| shown(table.column(c).get(r)))
            .collect::<Vec<_>>()
            .join(" · ")
    };
    // The frontier's runs come grouped; a group is a run of equal keys.
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for &r in &chosen.rows {
        let k = key(r);
        match groups.last_mut() {
            Some((last, members)) if *last == k => members.push(r),
            _ => groups.push((k, vec![r])),
        }
    }
    let warning = at_most(&mut groups, "frontiers");
    svg(warning, || {
        let (xc, yc) = (table.require_numeric(&q.x)?, table.require_numeric(&q.y)?);
        let point = |r: usize| {
            Some((
                table.column(xc).get(r).as_f64()?,
                table.column(yc).get(r).as_f64()?,
            ))
        };
        let on: std::collections::HashSet<usize> = chosen.rows.iter().copied().collect();
        let mut series = Vec::new();
        let others: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| !on.contains(r))
            .filter_map(|&r| point(r))
            .collect();
        if !others.is_empty() {
            let mut s = Series::new("other runs", Mark::Points, others);
            s.context = true;
            series.push(s);
        }
        for (k, members) in &groups {
            let name = if k.is_empty() {
                "frontier".to_string()
            } else {
                k.clone()
            };
            series.push(Series::new(
                name,
                Mark::PointsJoined,
                members.iter().filter_map(|&r| point(r)).collect(),
            ));
        }
        let title = match one_task(params) {
            Some(t) => format!("Pareto frontier, {t}: {} against {}", q.y, q.x),
            None => format!("Pareto frontier: {} against {}", q.y, q.x),
        };
        Ok(Chart {
            title,
            x: Axis {
                label: axis_label(table, &q.x),
                log2: false,
            },
            y: Axis {
                label: axis_label(table, &q.y),
                log2: false,
            },
            series,
            empty_note: Some("no run matches the filters".into()),
        })
    })
}

/// A batch sweep drawn: per (model, task, GPU, GPU count) group, every run's `y` at its batch
/// size (log2 axis), and the logistic curve fitted to the per-batch medians (the fits of
/// `/fits/logistic`) when the group has two batch sizes or more.
pub(super) fn sweep(req: &Request, snapshot: &Snapshot) -> Result<Encoded, ServiceError> {
    let domain = req.domain;
    let params = &req.params;
    let table = snapshot.table(domain);
    let y = params.chart_y(domain, table)?;
    let filters = params.run_filters(domain)?;
    let by_cols: Vec<usize> = DEFAULT_BY
        .iter()
        .map(|f| table.require_field(f))
        .collect::<Result<_, _>>()?;
    let rows = table.filter_rows(&filters.filters, filters.stability)?;
    let mut groups = table.group_rows(&by_cols, rows);
    let warning = at_most(&mut groups, "sweeps");
    svg(warning, || {
        // Fitted only when the chart is not cached.
        let fits = table.sweep_fits(&SweepQuery {
            by: DEFAULT_BY.iter().map(|s| s.to_string()).collect(),
            ys: vec![y.clone()],
            filters: filters.filters.clone(),
            stability: filters.stability,
            predict: Vec::new(),
        })?;
        let batch = table.require_field(batch_field(domain))?;
        let yc = table.require_numeric(&y)?;
        let fit = |name: &str, g: usize| -> Option<f64> { fits.column(name)?.data.get(g).as_f64() };
        let mut series = Vec::new();
        for (g, members) in groups.iter().enumerate() {
            let r0 = members[0];
            let model = shown(table.column(by_cols[0]).get(r0));
            let short = model.rsplit('/').next().unwrap_or(&model).to_string();
            let name = format!(
                "{short} · {} · {}×{}",
                shown(table.column(by_cols[1]).get(r0)),
                shown(table.column(by_cols[2]).get(r0)),
                shown(table.column(by_cols[3]).get(r0)),
            );
            let points: Vec<(f64, f64)> = members
                .iter()
                .filter_map(|&r| {
                    Some((
                        table.column(batch).get(r).as_f64()?,
                        table.column(yc).get(r).as_f64()?,
                    ))
                })
                .collect();
            let mut s = Series::new(name, Mark::Points, points);
            let n = fits
                .column("n")
                .map(|c| c.data.get(g).as_f64().unwrap_or(0.0));
            if n.unwrap_or(0.0) >= 2.0
                && let (Some(l), Some(x0), Some(k), Some(b0)) =
                    (fit("L", g), fit("x0", g), fit("k", g), fit("b0", g))
            {
                let model = crate::engine::models::logistic::LogisticModel { l, x0, k, b0 };
                let (lo, hi) = s.points.iter().fold((f64::INFINITY, 0f64), |(lo, hi), p| {
                    (lo.min(p.0), hi.max(p.0))
                });
                let (a, b) = (batch_x(lo), hi.max(1.0).log2());
                s.curve = (0..=80)
                    .map(|i| {
                        let x = a + (b - a) * i as f64 / 80.0;
                        (2f64.powf(x), model.eval_x(x))
                    })
                    .collect();
            }
            series.push(s);
        }
        Ok(Chart {
            title: format!("{y} against batch size, with fitted logistic curves"),
            x: Axis {
                label: format!("{} (log2 scale)", batch_field(domain)),
                log2: true,
            },
            y: Axis {
                label: axis_label(table, &y),
                log2: false,
            },
            series,
            empty_note: Some("no run matches the filters".into()),
        })
    })
}

/// A run's timeline drawn: the metric per GPU, and for power their total.
pub(super) async fn timeline(
    service: &Service,
    req: &Request,
    snapshot: &Arc<Snapshot>,
) -> Result<Encoded, ServiceError> {
    let run_id = req.run_id.as_deref().unwrap_or_default();
    let domain = req.domain;
    let params = &req.params;
    let m = raw::metric(params)?;
    let bucket = raw::every(params)?;
    let row = run_row(req, snapshot)?;
    let mut t = raw::device_timeline(service, snapshot, domain, row, m, true, bucket).await?;
    // Without `every`, about one point per pixel of the plot: the mean of each slice.
    let span = t.relative_time_s.last().copied().unwrap_or(0.0);
    if bucket.is_none() && t.relative_time_s.len() > TIMELINE_POINTS && span > 0.0 {
        t = downsample(&t, span / TIMELINE_POINTS as f64);
    }
    svg(None, || {
        let mut series = Vec::new();
        if m != Metric::Temperature {
            let mut total = Series::new(
                "total",
                Mark::Line,
                t.relative_time_s
                    .iter()
                    .copied()
                    .zip(t.total.iter().copied())
                    .collect(),
            );
            total.emphasis = true;
            series.push(total);
        }
        for (gpu, values) in &t.devices {
            series.push(Series::new(
                format!("GPU {gpu}"),
                Mark::Line,
                t.relative_time_s
                    .iter()
                    .zip(values)
                    .filter_map(|(&x, v)| Some((x, (*v)?)))
                    .collect(),
            ));
        }
        let unit = if m == Metric::Temperature {
            "temperature (°C)"
        } else {
            "power (W)"
        };
        Ok(Chart {
            title: format!("{} of {run_id}", m.name()),
            x: Axis {
                label: "time since the run's start (s)".into(),
                log2: false,
            },
            y: Axis {
                label: format!("GPU {unit}"),
                log2: false,
            },
            series,
            empty_note: Some("the run's file has no samples of this metric".into()),
        })
    })
}

/// The histogram of a run's smoothed inter-token latencies (50 bins), with its median and p99.
pub(super) async fn itl(
    service: &Service,
    req: &Request,
    snapshot: &Arc<Snapshot>,
) -> Result<Encoded, ServiceError> {
    let run_id = req.run_id.as_deref().unwrap_or_default();
    use crate::pycompat::numpy::{np_histogram, np_percentiles};
    let row = run_row(req, snapshot)?;
    let raw = service.derived(snapshot, Domain::Llm, row).await?;
    let samples: Vec<f64> = crate::rawfile::itl_samples(&raw)
        .map_err(|e| crate::service::derived::raw_error(run_id, &e))?
        .joined()
        .iter()
        .map(|s| s * 1000.0)
        .collect();
    svg(None, || {
        let mut series = Vec::new();
        if !samples.is_empty() {
            let (edges, counts) = np_histogram(&samples, raw::ITL_BINS);
            let counts: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
            let top = counts.iter().copied().fold(0.0, f64::max);
            series.push(Series::bars(
                format!("{} inter-token gaps", samples.len()),
                &edges,
                &counts,
            ));
            let pct = np_percentiles(&samples, &[50.0, 99.0]).unwrap_or_default();
            for (label, v) in ["median", "p99"].iter().zip(pct) {
                series.push(Series::new(
                    format!("{label} {v:.1} ms"),
                    Mark::Line,
                    vec![(v, 0.0), (v, top)],
                ));
            }
        }
        Ok(Chart {
            title: format!("Smoothed ITLs of {run_id}"),
            x: Axis {
                label: "inter-token latency (ms)".into(),
                log2: false,
            },
            y: Axis {
                label: "inter-token gaps (count)".into(),
                log2: false,
            },
            series,
            empty_note: Some("the run has no inter-token latencies".into()),
        })
    })
}

/// A deployment plan drawn: for each configuration that meets the workload's latency target (the
/// parameters of `/v1/llm/plan`), its energy a day (kWh) against the GPUs it needs (log2 axis),
/// a series per GPU model, and the chosen one (least energy a day) marked.
pub(super) fn plan(req: &Request, snapshot: &Snapshot) -> Result<Encoded, ServiceError> {
    use crate::engine::models::plan::plan;
    let params = &req.params;
    let predictor = snapshot.predictor(Domain::Llm);
    let candidates =
        crate::service::ask::predict::configurations(params, Domain::Llm, &predictor, true)?;
    let (workload, _, _) = crate::service::ask::predict::workload(params)?;
    svg(None, || {
        let (rows, reason) = plan(&predictor, &candidates, &workload);
        let mut series: Vec<Series> = Vec::new();
        for r in &rows {
            let gpu = &r.config.categories[1];
            let point = (r.gpus as f64, r.kwh_per_day);
            match series.iter_mut().find(|s| &s.name == gpu) {
                Some(s) => s.points.push(point),
                None => series.push(Series::new(gpu.clone(), Mark::Points, vec![point])),
            }
        }
        if let Some(best) = rows.first() {
            let c = &best.config;
            let mut chosen = Series::new(
                format!(
                    "chosen: {} × {} GPU{} at batch {} ({})",
                    best.replicas,
                    c.num_gpus,
                    if c.num_gpus == 1.0 { "" } else { "s" },
                    c.batch,
                    c.categories[1]
                ),
                Mark::Points,
                vec![(best.gpus as f64, best.kwh_per_day)],
            );
            chosen.emphasis = true;
            series.push(chosen);
        }
        let model = candidates
            .first()
            .and_then(|c| c.model_id.clone())
            .unwrap_or_else(|| "the model".into());
        Ok(Chart {
            title: format!(
                "{model}: energy a day against GPUs needed, {:.0} output tokens/s",
                workload.tokens_per_s
            ),
            x: Axis {
                label: "GPUs needed (log2 scale)".into(),
                log2: true,
            },
            y: Axis {
                label: "kWh a day".into(),
                log2: false,
            },
            series,
            empty_note: Some(reason.unwrap_or_else(|| "no configuration".into())),
        })
    })
}

/// A run's energy rating as a badge (260 × 100): its stars, its group (task, and for LLM runs the
/// size class), its energy, and the range the bands divide (see the run field `energy_rating`).
pub(super) fn rating(req: &Request, snapshot: &Snapshot) -> Result<Encoded, ServiceError> {
    let domain = req.domain;
    let row = run_row(req, snapshot)?;
    let table = snapshot.table(domain);
    let rating = crate::engine::rating::ratings(domain, &table.frame).swap_remove(row);
    Ok(Encoded::new(SVG, badge(domain, rating.as_ref())))
}

/// Points of a timeline drawn without `every` (about the plot's width in pixels).
const TIMELINE_POINTS: usize = 700;

/// The row of the run a chart of one run draws.
fn run_row(req: &Request, snapshot: &Snapshot) -> Result<usize, ServiceError> {
    let run_id = req.run_id.as_deref().unwrap_or_default();
    snapshot
        .table(req.domain)
        .row_of(run_id)
        .ok_or_else(|| ServiceError::UnknownRun {
            domain: req.domain,
            run_id: run_id.to_string(),
        })
}

/// Text for an SVG document: `&`, `<`, `>` and quotes escaped.
fn xml_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn badge(domain: Domain, rating: Option<&crate::engine::rating::Rating>) -> String {
    let unit = match domain {
        Domain::Llm => "J/token",
        Domain::Diffusion => "J/generation",
    };
    let (label, stars, line1, line2) = match rating {
        Some(r) => (
            format!("Energy rating: {} of 5 stars", r.stars),
            format!(
                "{}{}",
                "\u{2605}".repeat(r.stars as usize),
                "\u{2606}".repeat(5 - r.stars as usize)
            ),
            format!("{}: {:.4} {unit}", r.group, r.energy),
            format!(
                "5 bands of {:.4}\u{2013}{:.4} over {} runs",
                r.min, r.max, r.runs
            ),
        ),
        None => (
            "Energy rating: not rated".to_string(),
            "not rated".to_string(),
            match domain {
                Domain::Llm => "an unstable run, or one without an energy".to_string(),
                Domain::Diffusion => "a run without an energy".to_string(),
            },
            String::new(),
        ),
    };
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="260" height="100" viewBox="0 0 260 100" role="img" aria-label="{label}"><title>{label}</title><rect x="0.5" y="0.5" width="259" height="99" fill="#ffffff" stroke="#333333"/><text x="12" y="22" font-family="sans-serif" font-size="13" font-weight="bold" fill="#111111">Energy rating (AI Energy Score's bands)</text><text x="12" y="50" font-family="sans-serif" font-size="24" fill="#111111">{stars}</text><text x="12" y="71" font-family="sans-serif" font-size="11" fill="#222222">{line1}</text><text x="12" y="88" font-family="sans-serif" font-size="10" fill="#555555">{line2}</text></svg>"##,
        label = xml_text(&label),
        stars = xml_text(&stars),
        line1 = xml_text(&line1),
        line2 = xml_text(&line2),
    )
}
