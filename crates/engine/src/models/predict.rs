//! Predictions for configurations nobody measured, with intervals whose coverage is measured.
//!
//! Two methods, chosen per configuration by what the snapshot holds:
//!
//! - **sweep**: the model was measured on this task, GPU model and GPU count at two batch sizes
//!   or more. Each field's logarithm is interpolated linearly in log2 of the batch size between
//!   the measured batch sizes around the one asked (the median where a batch size was run more
//!   than once), and extended along the nearest two beyond them. Held out one run at a time, its
//!   error is small (see `Quality`), so it is used wherever it applies.
//! - **regression**: anything else, including a model that is not in the snapshot, given by its
//!   parameters. A ridge regression of each field's logarithm on what is known before running:
//!   ln activated and ln total parameters, log2 batch size and its square, log2 GPU count, and
//!   one indicator per task, GPU model, weight precision and architecture (LLM), every column
//!   standardised over the training runs and a penalty of `RIDGE_LAMBDA` on all but the
//!   intercept. Chosen by leave-one-model-out error on the embedded snapshot: interactions
//!   (category × batch, parameters × batch), a memory-headroom term and gradient-boosted trees
//!   were all tried and were no better held out (the 90th percentile got worse); `RIDGE_LAMBDA`
//!   was the best of 0.3, 1, 3, 10 and 30 in mean absolute log error for all four LLM fields.
//!
//! Intervals are split-conformal: a prediction `p` gets `[p·e^-q, p·e^q]` where `q` is the
//! ⌈(n+1)·level⌉-th smallest absolute log residual of the method's held-out predictions (each
//! run predicted without its model for the regression; without itself for the sweep, kept apart
//! for interpolation and extension). `Quality` reports the coverage of intervals calibrated
//! without the held-out model's residuals, so what it reports is what a new model would see.
//!
//! Pure numerics over a [`RunTable`]; no I/O.

use std::collections::{BTreeMap, BTreeSet};

use crate::Domain;
use crate::frame::{ColumnData, Frame, FrameColumn, Value};
use crate::table::RunTable;

/// The ridge penalty on standardised columns (see the module's documentation).
pub const RIDGE_LAMBDA: f64 = 3.0;

/// The interval levels reported (`_lo80`/`_hi80`, `_lo95`/`_hi95`).
pub const LEVELS: [f64; 2] = [0.8, 0.95];

/// EcoLogits' published LLM energy formula (ecologits.ai, methodology "LLM inference": energy
/// per output token and GPU, in Wh, `alpha · exp(beta · batch) · active_params_B + gamma`),
/// fitted by its authors to earlier ML.ENERGY leaderboard data; scored here as a baseline.
pub const ECOLOGITS_ALPHA: f64 = 1.1665e-6;
pub const ECOLOGITS_BETA: f64 = -0.011206;
pub const ECOLOGITS_GAMMA: f64 = 4.0529e-5;

/// What is predicted for a domain, and from what.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub domain: Domain,
    /// The batch field (`max_num_seqs`, `batch_size`).
    pub batch: &'static str,
    /// The fields predicted.
    pub targets: &'static [&'static str],
    /// The categorical inputs.
    pub categories: &'static [&'static str],
}

pub const LLM: Spec = Spec {
    domain: Domain::Llm,
    batch: "max_num_seqs",
    targets: &[
        "energy_per_token_joules",
        "avg_power_watts",
        "median_itl_ms",
        "output_throughput_tokens_per_sec",
        "p90_itl_ms",
    ],
    categories: &["task", "gpu_model", "weight_precision", "architecture"],
};

pub const DIFFUSION: Spec = Spec {
    domain: Domain::Diffusion,
    batch: "batch_size",
    targets: &[
        "energy_per_generation_joules",
        "batch_latency_s",
        "avg_power_watts",
        "throughput_generations_per_sec",
    ],
    categories: &["task", "gpu_model", "weight_precision"],
};

impl Spec {
    pub fn of(domain: Domain) -> Spec {
        match domain {
            Domain::Llm => LLM,
            Domain::Diffusion => DIFFUSION,
        }
    }
}

/// One configuration: what is known before running it.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The model, when it is one of the snapshot's (its sweep may apply).
    pub model_id: Option<String>,
    pub total_params_billions: f64,
    pub activated_params_billions: f64,
    /// Values of `Spec::categories`, in order (an unknown value counts as the first level).
    pub categories: Vec<String>,
    pub num_gpus: f64,
    pub batch: f64,
}

/// How a prediction was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Method {
    /// Between two measured batch sizes of the model's sweep.
    SweepInterpolated,
    /// Beyond the measured batch sizes of the model's sweep.
    SweepExtended,
    Regression,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::SweepInterpolated => "sweep_interpolated",
            Method::SweepExtended => "sweep_extended",
            Method::Regression => "regression",
        }
    }
    const ALL: [Method; 3] = [
        Method::SweepInterpolated,
        Method::SweepExtended,
        Method::Regression,
    ];
}

/// A predicted value with its intervals (`lo[i]`, `hi[i]` at `LEVELS[i]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub lo: [f64; 2],
    pub hi: [f64; 2],
    pub method: Method,
}

/// One training run.
#[derive(Debug, Clone)]
struct Row {
    model: String,
    /// (task, gpu_model, num_gpus): the sweep a run belongs to, with the model.
    sweep: String,
    config: Config,
    /// ln of each target (None where missing or not positive).
    y: Vec<Option<f64>>,
    /// The target values as measured.
    run: usize,
}

/// A ridge regression of one target on standardised features.
#[derive(Debug, Clone)]
struct Ridge {
    mean: Vec<f64>,
    scale: Vec<f64>,
    weights: Vec<f64>,
}

impl Ridge {
    fn fit(x: &[Vec<f64>], y: &[f64], lambda: f64) -> Option<Ridge> {
        let n = x.len();
        let p = x.first()?.len();
        let mut mean = vec![0.0; p];
        let mut scale = vec![1.0; p];
        for j in 1..p {
            mean[j] = x.iter().map(|r| r[j]).sum::<f64>() / n as f64;
            let var = x.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / n as f64;
            if var > 0.0 {
                scale[j] = var.sqrt();
            }
        }
        let mut a = vec![vec![0.0; p]; p];
        let mut b = vec![0.0; p];
        let mut z = vec![0.0; p];
        for (r, &yv) in x.iter().zip(y) {
            for j in 0..p {
                z[j] = (r[j] - mean[j]) / scale[j];
            }
            for i in 0..p {
                b[i] += z[i] * yv;
                for j in 0..p {
                    a[i][j] += z[i] * z[j];
                }
            }
        }
        for (i, row) in a.iter_mut().enumerate().skip(1) {
            row[i] += lambda;
        }
        let weights = solve(a, b)?;
        Some(Ridge {
            mean,
            scale,
            weights,
        })
    }

    fn predict(&self, x: &[f64]) -> f64 {
        x.iter()
            .zip(&self.mean)
            .zip(&self.scale)
            .zip(&self.weights)
            .map(|(((v, m), s), w)| (v - m) / s * w)
            .sum()
    }
}

/// Gaussian elimination with partial pivoting; `None` for a singular system.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for c in 0..n {
        let pivot = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[pivot][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, pivot);
        b.swap(c, pivot);
        for r in c + 1..n {
            let f = a[r][c] / a[c][c];
            if f != 0.0 {
                for k in c..n {
                    a[r][k] -= f * a[c][k];
                }
                b[r] -= f * b[c];
            }
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|k| a[r][k] * x[k]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    Some(x)
}

/// The conformal quantile of `residuals` (absolute) at `level`: the ⌈(n+1)·level⌉-th smallest,
/// infinite when there are too few.
pub fn conformal_quantile(residuals: &[f64], level: f64) -> f64 {
    let mut r: Vec<f64> = residuals.iter().map(|v| v.abs()).collect();
    r.sort_by(f64::total_cmp);
    let k = ((r.len() + 1) as f64 * level).ceil() as usize;
    if k == 0 || k > r.len() {
        f64::INFINITY
    } else {
        r[k - 1]
    }
}

/// The fitted predictor of one domain.
#[derive(Debug, Clone)]
pub struct Predictor {
    pub spec: Spec,
    rows: Vec<Row>,
    /// Each category's levels, sorted (the first is the baseline).
    levels: Vec<Vec<String>>,
    /// Per target: the regression over every training run.
    ridges: Vec<Option<Ridge>>,
    /// Per target and method: the held-out (training row, ln residual) pairs.
    residuals: Vec<BTreeMap<Method, Vec<(usize, f64)>>>,
    /// Per target and method: the interval half-widths in log space at `LEVELS`.
    widths: Vec<BTreeMap<Method, [f64; 2]>>,
}

impl Predictor {
    /// Fit from the runs of `table` (LLM: the stable ones).
    pub fn fit(spec: Spec, table: &RunTable) -> Predictor {
        let rows = training_rows(spec, table);
        let mut levels = vec![BTreeSet::new(); spec.categories.len()];
        for r in &rows {
            for (l, v) in levels.iter_mut().zip(&r.config.categories) {
                l.insert(v.clone());
            }
        }
        let levels: Vec<Vec<String>> = levels
            .into_iter()
            .map(|l| l.into_iter().collect())
            .collect();
        let mut p = Predictor {
            spec,
            rows,
            levels,
            ridges: Vec::new(),
            residuals: Vec::new(),
            widths: Vec::new(),
        };
        let features: Vec<Vec<f64>> = p.rows.iter().map(|r| p.features(&r.config)).collect();
        let models: BTreeSet<&str> = p.rows.iter().map(|r| r.model.as_str()).collect();
        for t in 0..spec.targets.len() {
            let have: Vec<usize> = (0..p.rows.len())
                .filter(|&i| p.rows[i].y[t].is_some())
                .collect();
            let fit_on = |keep: &dyn Fn(usize) -> bool| {
                let idx: Vec<usize> = have.iter().copied().filter(|&i| keep(i)).collect();
                let x: Vec<Vec<f64>> = idx.iter().map(|&i| features[i].clone()).collect();
                let y: Vec<f64> = idx.iter().map(|&i| p.rows[i].y[t].unwrap_or(0.0)).collect();
                Ridge::fit(&x, &y, RIDGE_LAMBDA)
            };
            p.ridges.push(fit_on(&|_| true));
            // Leave one model out: every run predicted by a regression that never saw its model.
            let mut res: BTreeMap<Method, Vec<(usize, f64)>> = BTreeMap::new();
            for m in &models {
                if let Some(ridge) = fit_on(&|i| p.rows[i].model != *m) {
                    for &i in have.iter().filter(|&&i| p.rows[i].model == *m) {
                        let pred = ridge.predict(&features[i]);
                        res.entry(Method::Regression)
                            .or_default()
                            .push((i, pred - p.rows[i].y[t].unwrap_or(0.0)));
                    }
                }
            }
            // Leave one run out of its sweep.
            for &i in &have {
                if let Some((pred, method)) = p.sweep_estimate(t, &p.rows[i].config, Some(i)) {
                    res.entry(method)
                        .or_default()
                        .push((i, pred - p.rows[i].y[t].unwrap_or(0.0)));
                }
            }
            let widths = Method::ALL
                .iter()
                .map(|m| {
                    let r: Vec<f64> = res
                        .get(m)
                        .map(|v| v.iter().map(|x| x.1).collect())
                        .unwrap_or_default();
                    (*m, LEVELS.map(|l| conformal_quantile(&r, l)))
                })
                .collect();
            p.residuals.push(res);
            p.widths.push(widths);
        }
        p
    }

    /// The feature vector of a configuration (intercept first).
    fn features(&self, c: &Config) -> Vec<f64> {
        let lb = c.batch.max(1.0).log2();
        let mut x = vec![
            1.0,
            c.activated_params_billions.ln(),
            c.total_params_billions.ln(),
            lb,
            c.num_gpus.max(1.0).log2(),
            lb * lb,
        ];
        for (levels, v) in self.levels.iter().zip(&c.categories) {
            for l in levels.iter().skip(1) {
                x.push(if l == v { 1.0 } else { 0.0 });
            }
        }
        x
    }

    /// The configurations of a model's training runs.
    pub fn measured_configs<'a>(&'a self, model: &'a str) -> impl Iterator<Item = &'a Config> + 'a {
        self.rows
            .iter()
            .filter(move |r| r.model == model)
            .map(|r| &r.config)
    }

    /// The batch sizes of the training runs, ascending.
    pub fn batch_sizes(&self) -> Vec<f64> {
        let set: BTreeSet<u64> = self.rows.iter().map(|r| r.config.batch as u64).collect();
        set.into_iter().map(|b| b as f64).collect()
    }

    /// The models the predictor was fitted on.
    pub fn models(&self) -> BTreeSet<&str> {
        self.rows.iter().map(|r| r.model.as_str()).collect()
    }

    /// Each category's values seen in training.
    pub fn levels(&self, category: &str) -> Option<&[String]> {
        let i = self.spec.categories.iter().position(|c| *c == category)?;
        Some(&self.levels[i])
    }

    /// The known (total, activated) parameters and categories of a model of the snapshot.
    pub fn model_config(&self, model: &str) -> Option<&Config> {
        self.rows
            .iter()
            .find(|r| r.model == model)
            .map(|r| &r.config)
    }

    /// The sweep prediction (ln) of target `t` for `c`, leaving training row `without` out.
    fn sweep_estimate(
        &self,
        t: usize,
        c: &Config,
        without: Option<usize>,
    ) -> Option<(f64, Method)> {
        let model = c.model_id.as_deref()?;
        let key = sweep_key(&c.categories, c.num_gpus);
        let mut by_batch: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        for (i, r) in self.rows.iter().enumerate() {
            if Some(i) == without || r.model != model || r.sweep != key {
                continue;
            }
            if let Some(y) = r.y[t] {
                by_batch
                    .entry(r.config.batch.to_bits())
                    .or_default()
                    .push(y);
            }
        }
        let mut points: Vec<(f64, f64)> = by_batch
            .into_iter()
            .map(|(b, ys)| (f64::from_bits(b).max(1.0).log2(), median(ys)))
            .collect();
        if points.len() < 2 {
            return None;
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let x = c.batch.max(1.0).log2();
        let line = |a: (f64, f64), b: (f64, f64)| a.1 + (b.1 - a.1) / (b.0 - a.0) * (x - a.0);
        let n = points.len();
        if x < points[0].0 {
            Some((line(points[0], points[1]), Method::SweepExtended))
        } else if x > points[n - 1].0 {
            Some((line(points[n - 2], points[n - 1]), Method::SweepExtended))
        } else {
            let k = points.iter().position(|p| p.0 >= x).unwrap_or(n - 1);
            if points[k].0 == x {
                return Some((points[k].1, Method::SweepInterpolated));
            }
            Some((line(points[k - 1], points[k]), Method::SweepInterpolated))
        }
    }

    /// Predict target `t` (an index into `spec.targets`) for `c`.
    pub fn predict(&self, t: usize, c: &Config) -> Option<Estimate> {
        let (ln, method) = match self.sweep_estimate(t, c, None) {
            Some(s) => s,
            None => (
                self.ridges.get(t)?.as_ref()?.predict(&self.features(c)),
                Method::Regression,
            ),
        };
        let w = self.widths[t]
            .get(&method)
            .copied()
            .unwrap_or([f64::INFINITY; 2]);
        Some(Estimate {
            value: ln.exp(),
            lo: w.map(|q| (ln - q).exp()),
            hi: w.map(|q| (ln + q).exp()),
            method,
        })
    }

    /// The predictor's held-out figures (see [`quality_frame`]).
    pub fn quality(&self) -> Vec<QualityRow> {
        let mut out = Vec::new();
        let scopes = self.scopes();
        for (t, target) in self.spec.targets.iter().enumerate() {
            for method in Method::ALL {
                let Some(res) = self.residuals[t].get(&method) else {
                    continue;
                };
                // The rows' residuals with their scope values, and cross-conformal coverage:
                // each run's interval calibrated without its model's residuals.
                let model = |k: usize| self.rows[res[k].0].model.as_str();
                let cover: Vec<[bool; 2]> = (0..res.len())
                    .map(|k| {
                        let others: Vec<f64> = (0..res.len())
                            .filter(|&o| model(o) != model(k))
                            .map(|o| res[o].1)
                            .collect();
                        LEVELS.map(|l| res[k].1.abs() <= conformal_quantile(&others, l))
                    })
                    .collect();
                for (scope, value) in &scopes {
                    let pick: Vec<usize> = (0..res.len())
                        .filter(|&k| scope_matches(&self.rows[res[k].0], self.spec, scope, value))
                        .collect();
                    if pick.is_empty() {
                        continue;
                    }
                    let rel: Vec<f64> =
                        pick.iter().map(|&k| (res[k].1.exp() - 1.0).abs()).collect();
                    out.push(QualityRow {
                        field: target.to_string(),
                        method: method.as_str().to_string(),
                        scope: scope.to_string(),
                        value: value.clone(),
                        runs: pick.len(),
                        models: pick
                            .iter()
                            .map(|&k| model(k))
                            .collect::<BTreeSet<_>>()
                            .len(),
                        median_rel_error: percentile(&rel, 50.0),
                        p90_rel_error: percentile(&rel, 90.0),
                        coverage80: Some(
                            pick.iter().filter(|&&k| cover[k][0]).count() as f64
                                / pick.len() as f64,
                        ),
                        coverage95: Some(
                            pick.iter().filter(|&&k| cover[k][1]).count() as f64
                                / pick.len() as f64,
                        ),
                    });
                }
            }
            if self.spec.domain == Domain::Llm && *target == "energy_per_token_joules" {
                out.extend(self.ecologits_rows(t, &scopes));
            }
        }
        out
    }

    /// EcoLogits' formula scored on the training runs (energy per token: Wh per GPU × GPUs).
    fn ecologits_rows(&self, t: usize, scopes: &[(&'static str, String)]) -> Vec<QualityRow> {
        let rel: Vec<(usize, f64)> = (0..self.rows.len())
            .filter_map(|i| {
                let r = &self.rows[i];
                let y = r.y[t]?.exp();
                let wh = (ECOLOGITS_ALPHA
                    * (ECOLOGITS_BETA * r.config.batch).exp()
                    * r.config.activated_params_billions
                    + ECOLOGITS_GAMMA)
                    * r.config.num_gpus;
                Some((i, (wh * 3600.0 / y - 1.0).abs()))
            })
            .collect();
        scopes
            .iter()
            .filter_map(|(scope, value)| {
                let pick: Vec<&(usize, f64)> = rel
                    .iter()
                    .filter(|(i, _)| scope_matches(&self.rows[*i], self.spec, scope, value))
                    .collect();
                if pick.is_empty() {
                    return None;
                }
                let e: Vec<f64> = pick.iter().map(|x| x.1).collect();
                Some(QualityRow {
                    field: self.spec.targets[t].to_string(),
                    method: "ecologits".into(),
                    scope: scope.to_string(),
                    value: value.clone(),
                    runs: pick.len(),
                    models: pick
                        .iter()
                        .map(|x| self.rows[x.0].model.as_str())
                        .collect::<BTreeSet<_>>()
                        .len(),
                    median_rel_error: percentile(&e, 50.0),
                    p90_rel_error: percentile(&e, 90.0),
                    coverage80: None,
                    coverage95: None,
                })
            })
            .collect()
    }

    /// The scopes reported: every run, then each GPU model, then each task.
    fn scopes(&self) -> Vec<(&'static str, String)> {
        let mut s = vec![("all", String::new())];
        for (name, at) in [("gpu_model", 1usize), ("task", 0)] {
            for v in &self.levels[at] {
                s.push((name, v.clone()));
            }
        }
        s
    }
}

fn scope_matches(r: &Row, spec: Spec, scope: &str, value: &str) -> bool {
    match scope {
        "all" => true,
        s => spec
            .categories
            .iter()
            .position(|c| *c == s)
            .is_some_and(|i| r.config.categories[i] == value),
    }
}

/// One row of the quality table.
#[derive(Debug, Clone, PartialEq)]
pub struct QualityRow {
    pub field: String,
    pub method: String,
    /// `all`, `gpu_model` or `task`.
    pub scope: String,
    pub value: String,
    pub runs: usize,
    pub models: usize,
    pub median_rel_error: f64,
    pub p90_rel_error: f64,
    pub coverage80: Option<f64>,
    pub coverage95: Option<f64>,
}

/// The quality rows as a frame (columns in `QualityRow`'s order; `value` null for `all`).
pub fn quality_frame(rows: &[QualityRow]) -> Frame {
    let s = |f: &dyn Fn(&QualityRow) -> Option<String>| {
        ColumnData::Str(rows.iter().map(|r| f(r).map(Into::into)).collect())
    };
    let fl =
        |f: &dyn Fn(&QualityRow) -> Option<f64>| ColumnData::Float(rows.iter().map(f).collect());
    let int = |f: &dyn Fn(&QualityRow) -> usize| {
        ColumnData::Int(rows.iter().map(|r| Some(f(r) as i64)).collect())
    };
    let col = |name: &str, data| FrameColumn {
        name: name.to_string(),
        data,
    };
    Frame {
        columns: vec![
            col("field", s(&|r| Some(r.field.clone()))),
            col("method", s(&|r| Some(r.method.clone()))),
            col("scope", s(&|r| Some(r.scope.clone()))),
            col("value", s(&|r| (r.scope != "all").then(|| r.value.clone()))),
            col("runs", int(&|r| r.runs)),
            col("models", int(&|r| r.models)),
            col("median_rel_error", fl(&|r| Some(r.median_rel_error))),
            col("p90_rel_error", fl(&|r| Some(r.p90_rel_error))),
            col("coverage80", fl(&|r| r.coverage80)),
            col("coverage95", fl(&|r| r.coverage95)),
        ],
    }
}

/// numpy's `percentile` (linear interpolation).
fn percentile(a: &[f64], q: f64) -> f64 {
    mlenergy_pycompat::numpy::np_percentile(a, q).unwrap_or(f64::NAN)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A run's sweep within its model: task, GPU model and GPU count.
fn sweep_key(categories: &[String], num_gpus: f64) -> String {
    format!("{}|{}|{num_gpus}", categories[0], categories[1])
}

fn training_rows(spec: Spec, table: &RunTable) -> Vec<Row> {
    let col = |name: &str| table.field_index(name).map(|i| table.column(i));
    let num = |c: Option<&ColumnData>, r: usize| c.and_then(|c| c.get(r).as_f64());
    let text = |c: Option<&ColumnData>, r: usize| match c.map(|c| c.get(r)) {
        Some(Value::Str(s)) => Some(s.to_string()),
        _ => None,
    };
    let stable = col("is_stable");
    let model = col("model_id");
    let (total, active) = (
        col("total_params_billions"),
        col("activated_params_billions"),
    );
    let (gpus, batch) = (col("num_gpus"), col(spec.batch));
    let cats: Vec<Option<&ColumnData>> = spec.categories.iter().map(|c| col(c)).collect();
    let targets: Vec<Option<&ColumnData>> = spec.targets.iter().map(|t| col(t)).collect();
    let mut rows = Vec::new();
    for r in 0..table.len() {
        if let Some(s) = stable
            && s.get(r) != Value::Bool(true)
        {
            continue;
        }
        let (Some(m), Some(tp), Some(ap), Some(g), Some(b)) = (
            text(model, r),
            num(total, r),
            num(active, r),
            num(gpus, r),
            num(batch, r),
        ) else {
            continue;
        };
        if !(tp > 0.0 && ap > 0.0 && g >= 1.0 && b >= 1.0) {
            continue;
        }
        let categories: Vec<String> = cats
            .iter()
            .map(|c| text(*c, r).unwrap_or_default())
            .collect();
        let y = targets
            .iter()
            .map(|c| {
                num(*c, r)
                    .filter(|v| v.is_finite() && *v > 0.0)
                    .map(f64::ln)
            })
            .collect();
        rows.push(Row {
            sweep: sweep_key(&categories, g),
            model: m.clone(),
            config: Config {
                model_id: Some(m),
                total_params_billions: tp,
                activated_params_billions: ap,
                categories,
                num_gpus: g,
                batch: b,
            },
            y,
            run: r,
        });
    }
    rows
}

impl Predictor {
    /// The snapshot's run of exactly this configuration (model, categories, GPUs, batch), if any.
    pub fn measured_run(&self, c: &Config) -> Option<usize> {
        let model = c.model_id.as_deref()?;
        self.rows
            .iter()
            .find(|r| {
                r.model == model
                    && r.config.categories == c.categories
                    && r.config.num_gpus == c.num_gpus
                    && r.config.batch == c.batch
            })
            .map(|r| r.run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ridge_without_penalty_recovers_a_plane() {
        let x: Vec<Vec<f64>> = (0..20)
            .map(|i| vec![1.0, i as f64, (i * i % 7) as f64])
            .collect();
        let y: Vec<f64> = x.iter().map(|r| 2.0 + 0.5 * r[1] - 3.0 * r[2]).collect();
        let r = Ridge::fit(&x, &y, 0.0).unwrap();
        assert!((r.predict(&[1.0, 4.0, 2.0]) - (2.0 + 2.0 - 6.0)).abs() < 1e-9);
    }

    #[test]
    fn conformal_quantile_is_the_rank_split_conformal_takes() {
        let r: Vec<f64> = (1..=9).map(f64::from).collect();
        // ceil(10 * 0.8) = 8th smallest; ceil(10 * 0.95) = 10 > 9: infinite.
        assert_eq!(conformal_quantile(&r, 0.8), 8.0);
        assert!(conformal_quantile(&r, 0.95).is_infinite());
        assert_eq!(conformal_quantile(&[-3.0, 1.0, 2.0], 0.5), 2.0);
    }
}
