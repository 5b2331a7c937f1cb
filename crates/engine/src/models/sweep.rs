//! Logistic fits of batch sweeps over a run table: the filtered runs grouped (by default by
//! model, task, GPU model and GPU count), and within each group, for each field asked for, the
//! logistic model of the per-batch median of the field against log2 of the batch size, as the
//! toolkit's users build it (docs/toolkit.md §12.2, "typical use"). Fits that share their batch
//! sizes share one grid, the fits run in parallel, and a table remembers the fits it has made: a
//! fit depends on its batch sizes and y values only, and the same groups recur across queries that
//! filter differently (most of an uncached /fits/logistic or sweep chart was refitting them).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rayon::prelude::*;

use super::logistic::{FitQuality, Grid, LogisticModel, batch_x};
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

/// Grids kept per table (one per distinct set of batch sizes; a grid of n batch sizes holds
/// 2,400 × n floats).
const MAX_GRIDS: usize = 64;
/// Fits kept per table (about 200 bytes each; the sample's default sweep is a few hundred).
const MAX_FITS: usize = 16_384;

/// The sweep fits a table has made, by batch sizes and y (bit for bit), and the grids they used.
/// Bounded: a map at its limit is emptied before it takes a new entry (a table's queries mostly
/// repeat the same groups, so it refills with what they use).
#[derive(Debug, Default)]
pub(crate) struct SweepMemo {
    grids: Mutex<HashMap<Vec<i64>, Arc<Grid>>>,
    fits: Mutex<HashMap<FitKey, (LogisticModel, FitQuality)>>,
}

type FitKey = (Vec<i64>, Vec<u64>);

fn put<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>, limit: usize, key: K, value: V) {
    if map.len() >= limit && !map.contains_key(&key) {
        map.clear();
    }
    map.insert(key, value);
}

impl SweepMemo {
    /// The fit of each sweep (batch sizes ascending, y): remembered ones as they were, the rest
    /// fitted in parallel (one grid per distinct set of batch sizes) and remembered.
    fn fit_all(&self, sweeps: &[(Vec<i64>, Vec<f64>)]) -> Vec<(LogisticModel, FitQuality)> {
        let keys: Vec<FitKey> = sweeps
            .iter()
            .map(|(b, y)| (b.clone(), y.iter().map(|v| v.to_bits()).collect()))
            .collect();
        let mut out: Vec<Option<(LogisticModel, FitQuality)>> = {
            let fits = self.fits.lock().unwrap_or_else(PoisonError::into_inner);
            keys.iter().map(|k| fits.get(k).copied()).collect()
        };
        let missing: Vec<usize> = (0..sweeps.len()).filter(|&i| out[i].is_none()).collect();
        if missing.is_empty() {
            return out.into_iter().flatten().collect();
        }
        let grids = self.grids_for(missing.iter().map(|&i| &sweeps[i].0));
        let fitted: Vec<(LogisticModel, FitQuality)> = missing
            .par_iter()
            .map(|&i| match grids.get(&sweeps[i].0) {
                Some(grid) => grid.fit(&sweeps[i].1),
                None => LogisticModel::fit_with_quality(&[], &[]),
            })
            .collect();
        let mut fits = self.fits.lock().unwrap_or_else(PoisonError::into_inner);
        for (&i, fit) in missing.iter().zip(fitted) {
            put(&mut fits, MAX_FITS, keys[i].clone(), fit);
            out[i] = Some(fit);
        }
        out.into_iter().flatten().collect()
    }

    /// The grid of each non-empty set of batch sizes: remembered ones, the rest built in parallel.
    fn grids_for<'a>(
        &self,
        batches: impl Iterator<Item = &'a Vec<i64>>,
    ) -> HashMap<Vec<i64>, Arc<Grid>> {
        let mut found: HashMap<Vec<i64>, Arc<Grid>> = HashMap::new();
        let mut build: Vec<Vec<i64>> = Vec::new();
        {
            let grids = self.grids.lock().unwrap_or_else(PoisonError::into_inner);
            for b in batches {
                if b.is_empty() || found.contains_key(b) || build.contains(b) {
                    continue;
                }
                match grids.get(b) {
                    Some(g) => {
                        found.insert(b.clone(), g.clone());
                    }
                    None => build.push(b.clone()),
                }
            }
        }
        let built: Vec<(Vec<i64>, Arc<Grid>)> = build
            .into_par_iter()
            .map(|b| {
                let x: Vec<f64> = b.iter().map(|&v| batch_x(v as f64)).collect();
                (b, Arc::new(Grid::new(&x)))
            })
            .collect();
        let mut grids = self.grids.lock().unwrap_or_else(PoisonError::into_inner);
        for (b, g) in built {
            put(&mut grids, MAX_GRIDS, b.clone(), g.clone());
            found.insert(b, g);
        }
        found
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A remembered fit is the fit made afresh, and a full memo starts over rather than grow.
    #[test]
    fn remembered_fits_are_fresh_fits() {
        let memo = SweepMemo::default();
        let sweeps = vec![
            (vec![8, 16, 32, 64], vec![200.0, 260.0, 410.0, 470.0]),
            (vec![8, 16, 32, 64], vec![0.9, 0.7, 0.4, 0.35]),
            (vec![1, 2], vec![5.0, 9.0]),
            (vec![], vec![]),
        ];
        let fresh: Vec<(LogisticModel, FitQuality)> = sweeps
            .iter()
            .map(|(b, y)| {
                let x: Vec<f64> = b.iter().map(|&v| batch_x(v as f64)).collect();
                LogisticModel::fit_with_quality(&x, y)
            })
            .collect();
        let first = memo.fit_all(&sweeps);
        assert_eq!(memo.fits.lock().unwrap().len(), 4);
        // Two grids: the empty sweep has none.
        assert_eq!(memo.grids.lock().unwrap().len(), 2);
        let again = memo.fit_all(&sweeps);
        for ((a, b), c) in first.iter().zip(&again).zip(&fresh) {
            assert_eq!(a.0, c.0);
            assert_eq!(b.0, c.0);
            // NaN quality fields (r2 of a constant y) compare by bits.
            for (p, q) in [(a.1, c.1), (b.1, c.1)] {
                assert_eq!(p.mse.to_bits(), q.mse.to_bits());
                assert_eq!(p.r2.to_bits(), q.r2.to_bits());
                assert_eq!(p.degenerate, q.degenerate);
            }
        }
        assert_eq!(first[0].0.x0, fresh[0].0.x0);
        assert!(first[0].0.l > 0.0 && first[1].0.l < 0.0);

        let mut map = HashMap::new();
        for i in 0..5 {
            put(&mut map, 3, i, i);
        }
        assert_eq!(map.len(), 2, "emptied at the limit, then 3 and 4");
        put(&mut map, 3, 4, 40);
        assert_eq!(map.get(&4), Some(&40));
    }
}
