//! Measurements beside the dataset: the imported tables (`--import`), with the served snapshot's
//! LLM runs mapped into the run table, and the questions asked of them: lists, repeat statistics
//! and A/B comparisons with the comparability rules of peer-formats §4.4.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::engine::frame::{ColumnData, Frame, FrameColumn, Value};
use crate::engine::query::Filter;
use crate::engine::query::filter_frame;
use crate::engine::stats::{self, Describe, Welch};
use crate::engine::{Domain, EngineError};
use crate::peer::files::Frames;
use crate::peer::schema::{RunRow, SourceRow};
use crate::peer::{Tables, mlenergy};

use super::Snapshot;

/// The imported tables, and the combined view for the snapshot last asked about.
pub struct Measurements {
    imported: Arc<Frames>,
    view: Mutex<Option<(u64, Arc<View>)>>,
}

/// What the endpoints read: the run and source tables led by the snapshot's LLM runs, every other
/// table as imported (shared, not copied: the per-request and per-sample tables are the large ones).
pub struct View {
    combined: Frames,
    imported: Arc<Frames>,
}

impl View {
    pub fn table(&self, name: &str) -> &Frame {
        match self.combined.0.get(name) {
            Some(f) => f,
            None => self.imported.table(name),
        }
    }
}

impl Default for Measurements {
    fn default() -> Self {
        Measurements::new(Frames::from_tables(Tables::default()))
    }
}

impl Measurements {
    pub fn new(imported: Frames) -> Self {
        Measurements {
            imported: Arc::new(imported),
            view: Mutex::new(None),
        }
    }

    /// Runs imported (not counting the dataset's).
    pub fn imported_runs(&self) -> usize {
        self.imported.table("runs").num_rows()
    }

    /// The tables for this snapshot (made once per snapshot).
    pub fn view(&self, snapshot: &Snapshot) -> Arc<View> {
        let mut guard = self.view.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((generation, v)) = guard.as_ref()
            && *generation == snapshot.generation
        {
            return v.clone();
        }
        let (source, runs): (SourceRow, Vec<RunRow>) =
            mlenergy::runs(snapshot.table(Domain::Llm), &snapshot.source.location);
        let ours = Frames::from_tables(Tables {
            sources: vec![source].into(),
            runs: runs.into(),
            ..Default::default()
        });
        let mut combined = Frames(Default::default());
        for name in ["runs", "sources"] {
            let mut f = ours.table(name).clone();
            for (a, b) in f.columns.iter_mut().zip(&self.imported.table(name).columns) {
                a.data.extend(b.data.clone());
            }
            combined.0.insert(name, f);
        }
        let v = Arc::new(View {
            combined,
            imported: self.imported.clone(),
        });
        *guard = Some((snapshot.generation, v.clone()));
        v
    }
}

/// Metrics whose comparison depends on the energy qualifiers (scope, window, attribution).
pub fn is_energy_metric(metric: &str) -> bool {
    metric.contains("energy")
        || metric.contains("joule")
        || metric.contains("power")
        || matches!(metric, "ipj" | "ipw" | "mfu")
}

/// Metrics counted per token: they also depend on the batch semantics (§4.4 rule 2).
fn is_per_token(metric: &str) -> bool {
    matches!(
        metric,
        "energy_per_output_token_j" | "tokens_per_joule" | "output_tps" | "output_tps_per_process"
    )
}

fn str_at<'a>(frame: &'a Frame, col: &str, row: usize) -> Option<&'a str> {
    match frame.column(col)?.data.get(row) {
        Value::Str(s) => Some(s),
        _ => None,
    }
}

/// §4.4's comparability rules over a set of runs: a warning for every qualifier that differs among
/// them for this metric.
pub fn comparability(runs: &Frame, rows: &[usize], metric: &str) -> Vec<String> {
    let mut out = Vec::new();
    let distinct = |col: &str| -> Vec<String> {
        let mut v: Vec<String> = rows
            .iter()
            .filter_map(|&r| str_at(runs, col, r).map(str::to_string))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    if is_energy_metric(metric) {
        for (col, what) in [
            (
                "energy_scope",
                "energy scope (what hardware the energy covers; compare LEM's gpu_energy_j with ML.ENERGY's GPU energy, never total_energy_j)",
            ),
            ("window", "energy window (what time span the energy covers)"),
            (
                "attribution",
                "energy attribution (measured or shared among concurrent queries)",
            ),
        ] {
            let d = distinct(col);
            if d.len() > 1 {
                out.push(format!("{metric} mixes {col} values {}: the {what} differs, so the values are not comparable", d.join(", ")));
            }
        }
    }
    if is_per_token(metric) {
        let d = distinct("batch_semantics");
        if d.len() > 1 {
            out.push(format!(
                "{metric} mixes batch_semantics {}: runs at different operating points (a vLLM batch cap, a static batch, client concurrency); compare at like batch values",
                d.join(", ")
            ));
        }
    }
    if metric.starts_with("itl_") {
        let d = distinct("itl_kind");
        if d.len() > 1 {
            out.push(format!("{metric} mixes ITL definitions {}", d.join(", ")));
        }
    }
    out
}

/// One group of repeat statistics.
#[derive(Debug, Clone)]
pub struct Group {
    /// The `by` columns' values.
    pub key: Vec<(String, Option<String>)>,
    pub stats: Describe,
    /// Values dropped by trimming.
    pub trimmed: usize,
    /// Runs of the group without a value of the metric.
    pub missing: usize,
    /// The source's own statistics for this group and metric (LEM CycleStatistics), if any.
    pub reported: Option<BTreeMap<String, serde_json::Value>>,
    pub warnings: Vec<String>,
}

fn cell_text(v: Value<'_>) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Str(s) => Some(s.to_string()),
        Value::Int(i) => Some(i.to_string()),
        Value::Float(x) => Some(crate::pycompat::repr::python_float_repr(x)),
        Value::Bool(b) => Some(b.to_string()),
    }
}

/// The values of a numeric column at the rows (nulls skipped; their count returned).
fn values(runs: &Frame, metric: &str, rows: &[usize]) -> (Vec<f64>, usize) {
    let Some(c) = runs.column(metric) else {
        return (Vec::new(), rows.len());
    };
    let mut v = Vec::with_capacity(rows.len());
    for &r in rows {
        if let Some(x) = c.data.get(r).as_f64().filter(|x| x.is_finite()) {
            v.push(x);
        }
    }
    let missing = rows.len() - v.len();
    (v, missing)
}

/// LEM's reported CycleStatistics for (source, experiment) and one of the two metrics it covers.
fn reported(
    frames: &View,
    source: &str,
    experiment: &str,
    metric: &str,
) -> Option<BTreeMap<String, serde_json::Value>> {
    let prefix = match metric {
        "gpu_cpu_ram_energy_j" => "energy",
        "output_tps_per_process" => "throughput",
        _ => return None,
    };
    let t = frames.table("reported_stats");
    let mut m = BTreeMap::new();
    for r in 0..t.num_rows() {
        if str_at(t, "source_id", r) != Some(source)
            || str_at(t, "experiment_id", r) != Some(experiment)
        {
            continue;
        }
        let Some(stat) = str_at(t, "statistic", r) else {
            continue;
        };
        let Some(x) = t.column("value").and_then(|c| c.data.get(r).as_f64()) else {
            continue;
        };
        let name = match stat {
            "num_cycles" => "n".to_string(),
            s => match s.strip_prefix(prefix).and_then(|s| s.strip_prefix('_')) {
                Some("mean_j" | "mean_tps") => "mean".into(),
                Some("std_j" | "std_tps") => "std".into(),
                Some("ci_95_lower") => "ci95_lo".into(),
                Some("ci_95_upper") => "ci95_hi".into(),
                Some("cv") => "cv".into(),
                _ => continue,
            },
        };
        // The cycle count is a count.
        let v = if name == "n" && x.fract() == 0.0 {
            serde_json::Value::from(x as i64)
        } else {
            serde_json::Value::from(x)
        };
        m.insert(name, v);
    }
    (m.len() > 1).then_some(m)
}

/// Repeat statistics of `metric` per group of `by` over the runs passing `filters`.
pub fn repeat_stats(
    frames: &View,
    filters: &[Filter],
    by: &[String],
    metric: &str,
    trim: f64,
) -> Result<Vec<Group>, EngineError> {
    let runs = frames.table("runs");
    let rows = filter_frame(runs, filters)?;
    let mut groups: BTreeMap<Vec<Option<String>>, Vec<usize>> = BTreeMap::new();
    let mut order: Vec<Vec<Option<String>>> = Vec::new();
    let key_cols: Vec<&FrameColumn> = by
        .iter()
        .map(|b| {
            runs.column(b)
                .ok_or_else(|| EngineError::InvalidQuery(format!("unknown column '{b}'")))
        })
        .collect::<Result<_, _>>()?;
    for r in rows {
        let key: Vec<Option<String>> = key_cols.iter().map(|c| cell_text(c.data.get(r))).collect();
        let entry = groups.entry(key.clone()).or_default();
        if entry.is_empty() {
            order.push(key);
        }
        entry.push(r);
    }
    let mut out = Vec::new();
    for key in order {
        let rows = &groups[&key];
        let (v, missing) = values(runs, metric, rows);
        let kept = stats::trimmed(&v, trim);
        let Some(d) = stats::describe(&kept) else {
            continue;
        };
        let sources: Vec<&str> = rows
            .iter()
            .filter_map(|&r| str_at(runs, "source_id", r))
            .collect();
        let experiments: Vec<&str> = rows
            .iter()
            .filter_map(|&r| str_at(runs, "experiment_id", r))
            .collect();
        fn one<'a>(v: &[&'a str]) -> Option<&'a str> {
            v.first().copied().filter(|f| v.iter().all(|x| x == f))
        }
        let reported = match (one(&sources), one(&experiments)) {
            (Some(s), Some(e)) if trim == 0.0 => reported(frames, s, e, metric),
            _ => None,
        };
        out.push(Group {
            key: by.iter().cloned().zip(key.iter().cloned()).collect(),
            trimmed: v.len() - kept.len(),
            missing,
            stats: d,
            reported,
            warnings: comparability(runs, rows, metric),
        });
    }
    Ok(out)
}

/// One side of a comparison.
#[derive(Debug, Clone)]
pub struct Side {
    pub runs: usize,
    pub stats: Option<Describe>,
    pub trimmed: usize,
    pub missing: usize,
}

/// A/B comparison of `metric`.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub a: Side,
    pub b: Side,
    pub welch: Option<Welch>,
    pub warnings: Vec<String>,
    /// Runs in both groups (the samples are then not independent).
    pub overlap: usize,
}

pub fn compare(
    frames: &View,
    a: &[Filter],
    b: &[Filter],
    metric: &str,
    trim: f64,
) -> Result<Comparison, EngineError> {
    let runs = frames.table("runs");
    let (ra, rb) = (filter_frame(runs, a)?, filter_frame(runs, b)?);
    let side = |rows: &[usize]| {
        let (v, missing) = values(runs, metric, rows);
        let kept = stats::trimmed(&v, trim);
        Side {
            runs: rows.len(),
            trimmed: v.len() - kept.len(),
            missing,
            stats: stats::describe(&kept),
        }
    };
    let (sa, sb) = (side(&ra), side(&rb));
    let mut both = ra.clone();
    both.extend(&rb);
    let warnings = comparability(runs, &both, metric);
    // Both row lists are in frame order (ascending).
    let overlap = ra.iter().filter(|r| rb.binary_search(r).is_ok()).count();
    let welch = match (&sa.stats, &sb.stats) {
        (Some(x), Some(y)) => Some(stats::welch(x, y)),
        _ => None,
    };
    Ok(Comparison {
        a: sa,
        b: sb,
        welch,
        warnings,
        overlap,
    })
}

/// A frame of strings and numbers built column by column (the repeat-stats table).
pub fn group_frame(groups: &[Group], by: &[String]) -> Frame {
    let mut cols: Vec<FrameColumn> = by
        .iter()
        .enumerate()
        .map(|(i, b)| FrameColumn {
            name: b.clone(),
            data: ColumnData::Str(
                groups
                    .iter()
                    .map(|g| g.key[i].1.as_deref().map(Into::into))
                    .collect(),
            ),
        })
        .collect();
    let ints = |name: &str, f: &dyn Fn(&Group) -> Option<i64>| FrameColumn {
        name: name.into(),
        data: ColumnData::Int(groups.iter().map(f).collect()),
    };
    let floats = |name: &str, f: &dyn Fn(&Group) -> Option<f64>| FrameColumn {
        name: name.into(),
        data: ColumnData::Float(groups.iter().map(f).collect()),
    };
    cols.push(ints("n", &|g| Some(g.stats.n as i64)));
    cols.push(floats("mean", &|g| Some(g.stats.mean)));
    cols.push(floats("std", &|g| Some(g.stats.std)));
    cols.push(floats("sem", &|g| Some(g.stats.sem)));
    cols.push(floats("t", &|g| g.stats.t));
    cols.push(floats("ci95_lo", &|g| Some(g.stats.ci95_lo)));
    cols.push(floats("ci95_hi", &|g| Some(g.stats.ci95_hi)));
    cols.push(floats("cv", &|g| Some(g.stats.cv)));
    cols.push(floats("min", &|g| Some(g.stats.min)));
    cols.push(floats("max", &|g| Some(g.stats.max)));
    cols.push(ints("trimmed", &|g| Some(g.trimmed as i64)));
    cols.push(ints("missing", &|g| Some(g.missing as i64)));
    cols.push(FrameColumn {
        name: "reported".into(),
        data: ColumnData::Json(
            groups
                .iter()
                .map(|g| {
                    g.reported
                        .as_ref()
                        .map(|m| serde_json::to_string(m).unwrap_or_default().into())
                })
                .collect(),
        ),
    });
    cols.push(FrameColumn {
        name: "warnings".into(),
        data: ColumnData::Json(
            groups
                .iter()
                .map(|g| {
                    Some(
                        serde_json::to_string(&g.warnings)
                            .unwrap_or_default()
                            .into(),
                    )
                })
                .collect(),
        ),
    });
    Frame { columns: cols }
}
