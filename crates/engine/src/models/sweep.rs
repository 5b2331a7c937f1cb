//! Logistic fits of batch sweeps over a run table: the filtered runs grouped (by default by
//! model, task, GPU model and GPU count), and within each group, for each field asked for, the
//! logistic model of the per-batch median of the field against log2 of the batch size, as the
//! toolkit's users build it (docs/toolkit.md §12.2, "typical use"). Fits that share their batch
//! sizes share one grid, the fits run in parallel, and a table remembers the fits it has made: a
//! fit depends on its batch sizes and y values only, and the same groups recur across queries that
//! filter differently (most of an uncached /fits/logistic or sweep chart was refitting them).

use std::sync::Arc;

use super::logistic::{FitQuality, LogisticModel};
use crate::domain::Domain;
use crate::error::EngineError;
use crate::frame::{ColumnData, Frame, FrameColumn};
use crate::query::{Filter, Stability};
use crate::table::RunTable;
use mlenergy_pycompat::numpy::np_median;

/// The default grouping of a sweep.
pub const DEFAULT_BY: [&str; 4] = ["model_id", "task", "gpu_model", "num_gpus"];

/// A sweep-fit question.
#[derive(Debug, Clone, Default)]
pub struct SweepQuery {
    pub by: Vec<String>,
    /// Numeric fields to fit, each against the batch size.
    pub ys: Vec<String>,
    pub filters: Vec<Filter>,
    pub stability: Stability,
    /// Batch sizes to predict each fitted field at (each > 0).
    pub predict: Vec<f64>,
}

/// The fields fitted when none are named: power, latency, throughput and energy.
pub fn default_ys(domain: Domain) -> &'static [&'static str] {
    match domain {
        Domain::Llm => &[
            "avg_power_watts",
            "median_itl_ms",
            "output_throughput_tokens_per_sec",
            "energy_per_token_joules",
        ],
        Domain::Diffusion => &[
            "avg_power_watts",
            "batch_latency_s",
            "throughput_generations_per_sec",
            "energy_per_generation_joules",
        ],
    }
}

/// The batch-size field of a domain.
pub fn batch_field(domain: Domain) -> &'static str {
    match domain {
        Domain::Llm => "max_num_seqs",
        Domain::Diffusion => "batch_size",
    }
}

/// One fitted field of one group.
#[derive(Debug, Clone)]
struct Fit {
    batches: Vec<i64>,
    model: LogisticModel,
    quality: FitQuality,
}

/// (batch, median of y) of the rows, ascending by batch; rows with a null batch or y left out.
fn sweep(table: &RunTable, rows: &[usize], batch: usize, y: usize) -> Vec<(i64, f64)> {
    let mut pairs: Vec<(i64, f64)> = rows
        .iter()
        .filter_map(|&r| {
            let b = table.column(batch).get(r).as_f64()?;
            let v = table.column(y).get(r).as_f64()?;
            Some((b as i64, v))
        })
        .collect();
    pairs.sort_by_key(|p| p.0);
    let mut out = Vec::new();
    let mut i = 0;
    while i < pairs.len() {
        let j = pairs[i..].iter().take_while(|p| p.0 == pairs[i].0).count() + i;
        let values: Vec<f64> = pairs[i..j].iter().map(|p| p.1).collect();
        out.push((pairs[i].0, np_median(&values).unwrap_or(f64::NAN)));
        i = j;
    }
    out
}

impl RunTable {
    /// One row per (group, field): the `by` values, `y`, `L`, `x0`, `k`, `b0`, `n` (batch sizes
    /// fitted), `batch_sizes` (JSON list), `mse`, `r2`, `max_rel_residual`, `degenerate`, and one
    /// `pred_<batch>` column per batch size in `predict`.
    pub fn sweep_fits(&self, q: &SweepQuery) -> Result<Frame, EngineError> {
        let by_cols =
            q.by.iter()
                .map(|f| self.require_field(f))
                .collect::<Result<Vec<_>, _>>()?;
        let y_cols =
            q.ys.iter()
                .map(|f| self.require_numeric(f))
                .collect::<Result<Vec<_>, _>>()?;
        let batch = self.require_field(batch_field(self.domain))?;
        let rows = self.filter_rows(&q.filters, q.stability)?;
        let groups = self.group_rows(&by_cols, rows);

        let sweeps: Vec<(usize, Vec<(i64, f64)>)> = groups
            .iter()
            .enumerate()
            .flat_map(|(g, rows)| y_cols.iter().map(move |&y| (g, rows, y)))
            .map(|(g, rows, y)| (g, sweep(self, rows, batch, y)))
            .collect();
        let split: Vec<(Vec<i64>, Vec<f64>)> = sweeps
            .iter()
            .map(|(_, s)| {
                (
                    s.iter().map(|p| p.0).collect(),
                    s.iter().map(|p| p.1).collect(),
                )
            })
            .collect();
        let fits: Vec<Fit> = self
            .sweep_memo
            .fit_all(&split)
            .into_iter()
            .zip(split)
            .map(|((model, quality), (batches, _))| Fit {
                batches,
                model,
                quality,
            })
            .collect();

        let group_of: Vec<Option<usize>> = sweeps
            .iter()
            .map(|(g, _)| groups[*g].first().copied())
            .collect();
        let mut columns: Vec<FrameColumn> = by_cols
            .iter()
            .map(|&c| FrameColumn {
                name: self.fields[c].name.to_string(),
                data: self.column(c).take(&group_of),
            })
            .collect();
        let float = |name: &str, f: &dyn Fn(&Fit) -> f64| FrameColumn {
            name: name.to_string(),
            data: ColumnData::Float(fits.iter().map(|x| Some(f(x))).collect()),
        };
        columns.push(FrameColumn {
            name: "y".into(),
            data: ColumnData::Str(
                (0..fits.len())
                    .map(|i| Some(Arc::from(q.ys[i % q.ys.len()].as_str())))
                    .collect(),
            ),
        });
        columns.push(float("L", &|f| f.model.l));
        columns.push(float("x0", &|f| f.model.x0));
        columns.push(float("k", &|f| f.model.k));
        columns.push(float("b0", &|f| f.model.b0));
        columns.push(FrameColumn {
            name: "n".into(),
            data: ColumnData::Int(fits.iter().map(|f| Some(f.batches.len() as i64)).collect()),
        });
        columns.push(FrameColumn {
            name: "batch_sizes".into(),
            data: ColumnData::Json(
                fits.iter()
                    .map(|f| {
                        let list: Vec<String> = f.batches.iter().map(|b| b.to_string()).collect();
                        Some(Arc::from(format!("[{}]", list.join(",")).as_str()))
                    })
                    .collect(),
            ),
        });
        columns.push(float("mse", &|f| f.quality.mse));
        columns.push(float("r2", &|f| f.quality.r2));
        columns.push(float("max_rel_residual", &|f| f.quality.max_rel_residual));
        columns.push(FrameColumn {
            name: "degenerate".into(),
            data: ColumnData::Bool(fits.iter().map(|f| Some(f.quality.degenerate)).collect()),
        });
        for &b in &q.predict {
            columns.push(float(&format!("pred_{}", fmt_batch(b)), &|f| {
                f.model.eval(b)
            }));
        }
        Ok(Frame { columns })
    }
}

/// A batch size as a column-name suffix: `96`, or `1.5` for a fractional one.
fn fmt_batch(b: f64) -> String {
    if b.fract() == 0.0 && b.abs() < 1e15 {
        format!("{}", b as i64)
    } else {
        format!("{b}")
    }
}
