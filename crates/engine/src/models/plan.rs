//! Deployment plans: which configurations serve a workload within a latency target, how many
//! replicas and GPUs each needs, and the energy, emissions and cost a day, from the predictor's
//! estimates (measured sweeps where they exist). Pure arithmetic; no I/O.

use super::predict::{Config, Estimate, Method, Predictor};

/// The grid intensities embedded (gCO2e/kWh; see `crates/engine/data/grid-intensities.json`).
pub const GRID_JSON: &str = include_str!("../../data/grid-intensities.json");

/// The grid intensity of `code` (an ISO 3166-1 alpha-3 code or an Ember region, any case), with
/// the code as stored.
pub fn grid_intensity(code: &str) -> Option<(String, f64)> {
    grid_codes()
        .into_iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(code))
}

/// Every grid code with its intensity, in the file's order.
pub fn grid_codes() -> Vec<(String, f64)> {
    let doc: serde_json::Value =
        serde_json::from_str(GRID_JSON).expect("embedded grid data is JSON");
    doc["data"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Where the grid data comes from and its licence, as the file states them.
pub fn grid_source() -> (String, String, String) {
    let doc: serde_json::Value =
        serde_json::from_str(GRID_JSON).expect("embedded grid data is JSON");
    let s = |k: &str| doc[k].as_str().unwrap_or_default().to_string();
    (s("source"), s("via"), s("licence"))
}

/// What is served and under which limits.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Output tokens a second, on average over the day.
    pub tokens_per_s: f64,
    /// Largest predicted median ITL allowed (ms).
    pub median_itl_ms_max: Option<f64>,
    /// Largest predicted 90th-percentile ITL allowed (ms).
    pub p90_itl_ms_max: Option<f64>,
    /// Power usage effectiveness multiplying GPU energy (1: GPU energy only).
    pub pue: f64,
    pub gco2_per_kwh: Option<f64>,
    pub price_per_kwh: Option<f64>,
}

/// One configuration's plan.
#[derive(Debug, Clone)]
pub struct PlanRow {
    pub config: Config,
    pub method: Method,
    pub measured_run: Option<usize>,
    pub median_itl_ms: f64,
    pub p90_itl_ms: Option<f64>,
    /// Output tokens a second one replica serves at its measured or predicted operating point.
    pub tokens_per_s_per_replica: f64,
    pub replicas: u64,
    pub gpus: u64,
    /// Power drawn by all replicas at that operating point (W, times PUE).
    pub power_watts: f64,
    /// Energy a day for the workload's tokens (kWh, times PUE), with its 80% and 95% bounds.
    pub kwh_per_day: f64,
    pub kwh_per_day_lo: [f64; 2],
    pub kwh_per_day_hi: [f64; 2],
    pub kwh_per_million_tokens: f64,
    pub kg_co2e_per_day: Option<f64>,
    pub cost_per_day: Option<f64>,
}

const TARGETS: [&str; 5] = [
    "energy_per_token_joules",
    "avg_power_watts",
    "median_itl_ms",
    "output_throughput_tokens_per_sec",
    "p90_itl_ms",
];

/// The configurations of `candidates` that meet `w`'s latency targets, cheapest in energy a day
/// first (then fewest GPUs); when none does, the reason.
pub fn plan(p: &Predictor, candidates: &[Config], w: &Workload) -> (Vec<PlanRow>, Option<String>) {
    let index = |name: &str| p.spec.targets.iter().position(|t| *t == name);
    let idx: Vec<Option<usize>> = TARGETS.iter().map(|t| index(t)).collect();
    let est = |k: usize, c: &Config| -> Option<Estimate> { p.predict(idx[k]?, c) };
    let mut rows = Vec::new();
    let mut fastest: Option<f64> = None;
    for c in candidates {
        let (Some(e), Some(power), Some(itl), Some(thr)) =
            (est(0, c), est(1, c), est(2, c), est(3, c))
        else {
            continue;
        };
        let p90 = est(4, c).map(|x| x.value);
        fastest = Some(fastest.map_or(itl.value, |f: f64| f.min(itl.value)));
        if w.median_itl_ms_max.is_some_and(|m| itl.value > m)
            || w.p90_itl_ms_max.is_some_and(|m| p90.is_none_or(|v| v > m))
        {
            continue;
        }
        let replicas = (w.tokens_per_s / thr.value).ceil().max(1.0) as u64;
        let kwh = |j_per_token: f64| j_per_token * w.tokens_per_s * 86_400.0 / 3.6e6 * w.pue;
        let kwh_per_day = kwh(e.value);
        rows.push(PlanRow {
            config: c.clone(),
            method: e.method,
            measured_run: p.measured_run(c),
            median_itl_ms: itl.value,
            p90_itl_ms: p90,
            tokens_per_s_per_replica: thr.value,
            replicas,
            gpus: replicas * c.num_gpus as u64,
            power_watts: power.value * replicas as f64 * w.pue,
            kwh_per_day,
            kwh_per_day_lo: e.lo.map(kwh),
            kwh_per_day_hi: e.hi.map(kwh),
            kwh_per_million_tokens: e.value * 1e6 / 3.6e6 * w.pue,
            kg_co2e_per_day: w.gco2_per_kwh.map(|g| kwh_per_day * g / 1000.0),
            cost_per_day: w.price_per_kwh.map(|c| kwh_per_day * c),
        });
    }
    rows.sort_by(|a, b| {
        a.kwh_per_day
            .total_cmp(&b.kwh_per_day)
            .then(a.gpus.cmp(&b.gpus))
    });
    let reason = rows.is_empty().then(|| match fastest {
        None => "no configuration could be predicted".to_string(),
        Some(f) => format!(
            "no configuration meets the latency target: the lowest predicted median ITL among the {} configurations considered is {f:.2} ms",
            candidates.len()
        ),
    });
    (rows, reason)
}
