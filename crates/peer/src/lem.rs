//! LLM Energy Measure results (peer-formats §1): v1 results directories (`aggregated/<id>.json`,
//! else `raw/<id>/process_<k>.json` aggregated here by §1.4's rules, `<base>_multi_cycle.json`)
//! and v2 result directories (`result.json`, `timeseries.parquet`).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::Tables;
use super::common::{
    RunIds, SourceCtx, accelerator, derive, dir_name, entries, iso_micros, json_list, name_is,
    span_s,
};
use super::json::{J, Node, Warnings};
use super::schema::{RepeatStatRow, RunMetricRow, RunRow, Series, Text, TimeseriesRow};
use mlenergy_pycompat::numpy::{np_mean, np_percentiles};

/// One process's figures (a `RawProcessResult`).
#[derive(Debug, Default)]
struct Process {
    index: Option<i64>,
    gpu_id: Option<String>,
    gpu_name: Option<String>,
    is_mig: bool,
    tracking_failed: bool,
    model_name: Option<String>,
    start: Option<String>,
    end: Option<String>,
    start_us: Option<i64>,
    end_us: Option<i64>,
    duration_s: Option<f64>,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    tokens_per_second: Option<f64>,
    total_energy_j: Option<f64>,
    gpu_energy_j: Option<f64>,
    cpu_energy_j: Option<f64>,
    ram_energy_j: Option<f64>,
    gpu_power_w: Option<f64>,
    flops: Option<f64>,
    ttft_ms: Option<Vec<f64>>,
    itl_trimmed_ms: Option<Vec<f64>>,
    itl_full_ms: Option<Vec<f64>>,
    request_count: Option<i64>,
}

fn process(j: J<'_>) -> Process {
    let ts = j.at("timestamps");
    let inf = j.at("inference_metrics");
    let en = j.at("energy_metrics");
    let lat = inf.at("latency_measurements");
    let start = ts.at("start").text();
    let end = ts.at("end").text();
    let gpu_id = match j.at("gpu_id").v {
        Some(Node::Number(n)) => Some(n.to_string()),
        Some(Node::String(s)) => Some(s.to_string()),
        _ => None,
    };
    Process {
        index: j.at("process_index").i64(),
        gpu_id,
        gpu_name: j.at("gpu_name").text(),
        is_mig: j.at("gpu_is_mig").bool().unwrap_or(false),
        tracking_failed: j.at("energy_tracking_failed").bool().unwrap_or(false),
        model_name: j.at("model_name").text(),
        start_us: start.as_deref().and_then(iso_micros),
        end_us: end.as_deref().and_then(iso_micros),
        start,
        end,
        duration_s: ts.at("duration_sec").f64(),
        input_tokens: inf.at("input_tokens").i64(),
        output_tokens: inf.at("output_tokens").i64(),
        tokens_per_second: inf.at("tokens_per_second").f64(),
        total_energy_j: en.at("total_energy_j").f64(),
        gpu_energy_j: en.at("gpu_energy_j").f64(),
        cpu_energy_j: en.at("cpu_energy_j").f64(),
        ram_energy_j: en.at("ram_energy_j").f64(),
        gpu_power_w: en.at("gpu_power_w").f64(),
        flops: j.path("compute_metrics.flops_total").f64(),
        ttft_ms: lat.at("ttft_ms").f64s(),
        itl_trimmed_ms: lat.at("itl_trimmed_ms").f64s(),
        itl_full_ms: lat.at("itl_full_ms").f64s(),
        request_count: lat.at("request_count").i64(),
    }
}

/// Σ over processes, absent unless every process has the value.
fn sum_all<T: Copy + std::iter::Sum<T>>(
    procs: &[Process],
    f: impl Fn(&Process) -> Option<T>,
) -> Option<T> {
    if procs.is_empty() {
        return None;
    }
    procs
        .iter()
        .map(&f)
        .collect::<Option<Vec<T>>>()
        .map(|v| v.into_iter().sum())
}

/// Σ of the processes that have the value, absent when none does.
fn sum_some(procs: &[Process], f: impl Fn(&Process) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = procs.iter().filter_map(f).collect();
    (!v.is_empty()).then(|| v.iter().sum())
}

/// The mean, p50, p95 and p99 of a sample in ms, in seconds.
fn latency_stats(ms: &[f64]) -> [Option<f64>; 4] {
    let mean = np_mean(ms).map(|x| x / 1000.0);
    match np_percentiles(ms, &[50.0, 95.0, 99.0]) {
        Some(p) => [
            mean,
            Some(p[0] / 1000.0),
            Some(p[1] / 1000.0),
            Some(p[2] / 1000.0),
        ],
        None => [None; 4],
    }
}

/// The run columns §1.4's aggregation gives from a set of processes (used by v1, and by v2 for
/// the fields it kept).
fn aggregate(run: &mut RunRow, procs: &[Process], warnings: &mut Vec<String>) {
    if procs.is_empty() {
        return;
    }
    let failed = procs.iter().any(|p| p.tracking_failed);
    if failed {
        warnings.push("energy_tracking_failed: a process's energy tracking failed; its energies are zero placeholders, so the run's energies are null".into());
    }
    if procs.iter().any(|p| p.is_mig) {
        warnings.push("MIG: energy covers the whole parent GPU, not the MIG slice".into());
    }
    let gpus: BTreeSet<&str> = procs.iter().filter_map(|p| p.gpu_id.as_deref()).collect();
    run.num_gpus = (!gpus.is_empty()).then_some(gpus.len() as i64);
    run.hardware_raw = procs[0].gpu_name.as_deref().map(Into::into);
    run.hardware = run.hardware_raw.as_deref().map(|h| accelerator(h).into());
    if run.model.is_none() {
        run.model = procs[0].model_name.as_deref().map(Into::into);
    }
    // Times: earliest start, latest end (compared as instants, written as the source wrote them).
    let first = procs
        .iter()
        .filter(|p| p.start_us.is_some())
        .min_by_key(|p| p.start_us);
    let last = procs
        .iter()
        .filter(|p| p.end_us.is_some())
        .max_by_key(|p| p.end_us);
    run.started_at = first.and_then(|p| p.start.as_deref()).map(Into::into);
    run.ended_at = last.and_then(|p| p.end.as_deref()).map(Into::into);
    run.wall_s = match (first.and_then(|p| p.start_us), last.and_then(|p| p.end_us)) {
        (Some(a), Some(b)) => Some(span_s(a, b)),
        _ => None,
    };
    run.window_s = procs
        .iter()
        .filter_map(|p| p.duration_s)
        .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.max(d))));
    run.input_tokens = sum_all(procs, |p| p.input_tokens);
    run.output_tokens = sum_all(procs, |p| p.output_tokens);
    if !failed {
        run.gpu_energy_j = sum_some(procs, |p| p.gpu_energy_j);
        run.cpu_energy_j = sum_some(procs, |p| p.cpu_energy_j);
        run.ram_energy_j = sum_some(procs, |p| p.ram_energy_j);
        run.gpu_cpu_ram_energy_j = sum_some(procs, |p| p.total_energy_j);
        if procs
            .iter()
            .all(|p| p.gpu_energy_j.is_some_and(|e| e > 0.0))
        {
            run.energy_j = run.gpu_energy_j;
            run.energy_scope = Some("gpu".into());
            run.avg_power_w = sum_all(procs, |p| p.gpu_power_w);
        } else {
            run.energy_j = run.gpu_cpu_ram_energy_j;
            run.energy_scope = Some("gpu_cpu_ram".into());
        }
    } else {
        run.energy_scope = Some(
            if procs.iter().all(|p| p.gpu_energy_j.is_some()) {
                "gpu"
            } else {
                "gpu_cpu_ram"
            }
            .into(),
        );
    }
    run.attribution = Some("measured".into());
    let tps: Option<Vec<f64>> = procs.iter().map(|p| p.tokens_per_second).collect();
    if let Some(tps) = tps {
        run.output_tps_per_process = np_mean(&tps);
        run.output_tps = run.output_tps_per_process.map(|m| m * procs.len() as f64);
    }
    if procs.iter().all(|p| p.request_count.is_some()) {
        run.requests = sum_all(procs, |p| p.request_count);
    }
    run.flops = sum_some(procs, |p| p.flops);
    // Latency: the samples of every process concatenated first, then the statistics.
    if procs.iter().any(|p| p.ttft_ms.is_some()) {
        let ttft: Vec<f64> = procs
            .iter()
            .flat_map(|p| p.ttft_ms.iter().flatten().copied())
            .collect();
        [
            run.ttft_mean_s,
            run.ttft_p50_s,
            run.ttft_p95_s,
            run.ttft_p99_s,
        ] = latency_stats(&ttft);
    }
    if procs.iter().any(|p| p.itl_trimmed_ms.is_some()) {
        let itl: Vec<f64> = procs
            .iter()
            .flat_map(|p| p.itl_trimmed_ms.iter().flatten().copied())
            .collect();
        [run.itl_mean_s, run.itl_p50_s, run.itl_p95_s, run.itl_p99_s] = latency_stats(&itl);
        run.itl_kind = Some("trimmed".into());
    }
}

/// Temporal overlap (§1.4): the intersection of all process windows is positive and at least half
/// the shortest process's duration. GPU attribution: the GPU ids are unique.
fn verification(procs: &[Process]) -> (Option<bool>, bool) {
    let starts: Option<Vec<i64>> = procs.iter().map(|p| p.start_us).collect();
    let ends: Option<Vec<i64>> = procs.iter().map(|p| p.end_us).collect();
    let overlap = starts
        .zip(ends)
        .filter(|(s, _)| !s.is_empty())
        .map(|(s, e)| {
            let latest_start = s.iter().copied().max().unwrap_or(0);
            let earliest_end = e.iter().copied().min().unwrap_or(0);
            let shortest = s.iter().zip(&e).map(|(a, b)| b - a).min().unwrap_or(0);
            let inter = earliest_end - latest_start;
            inter > 0 && 2 * inter >= shortest
        });
    let ids: Vec<&str> = procs.iter().filter_map(|p| p.gpu_id.as_deref()).collect();
    let unique = ids.iter().collect::<BTreeSet<_>>().len() == ids.len();
    (overlap, unique)
}

/// Base id and cycle of an experiment id (`0042_c3` → (`0042`, 3)).
fn cycle_of(id: &str) -> (String, Option<i64>) {
    if let Some((base, k)) = id.rsplit_once("_c")
        && !base.is_empty()
        && !k.is_empty()
        && k.bytes().all(|b| b.is_ascii_digit())
        && let Ok(k) = k.parse::<i64>()
    {
        return (base.to_string(), Some(k));
    }
    (id.to_string(), None)
}

/// Keys of an `AggregatedResult` this reader understands (the rest is kept in `extra`).
const AGGREGATED_KEYS: &[&str] = &[
    "schema_version",
    "experiment_id",
    "backend",
    "backend_version",
    "aggregation",
    "total_tokens",
    "total_energy_j",
    "total_inference_time_sec",
    "avg_tokens_per_second",
    "avg_energy_per_token_j",
    "total_flops",
    "process_results",
    "start_time",
    "end_time",
    "effective_config",
    "cli_overrides",
    "config_warnings",
    "parameter_provenance",
    "preset_chain",
    "latency_stats",
    "energy_tracking_failed",
    // v2 additions read here
    "measurement_config_hash",
    "measurement_methodology",
    "steady_state_window",
    "baseline_power_w",
    "energy_adjusted_j",
    "multi_gpu",
    "measurement_warnings",
    "timeseries",
    "energy_breakdown",
    "energy_per_device_j",
    "flops_per_output_token",
    "flops_per_input_token",
    "flops_per_second",
];

/// Reported run-level values kept for audit (metric, dotted source field, unit).
const REPORTED: &[(&str, &str, &str)] = &[
    ("total_tokens", "total_tokens", "tokens"),
    ("total_energy_j", "total_energy_j", "J"),
    ("total_inference_time_sec", "total_inference_time_sec", "s"),
    ("avg_tokens_per_second", "avg_tokens_per_second", "tokens/s"),
    (
        "avg_energy_per_token_j",
        "avg_energy_per_token_j",
        "J/token (input+output, CPU+GPU+RAM)",
    ),
    ("total_flops", "total_flops", "FLOP"),
    ("energy_adjusted_j", "energy_adjusted_j", "J"),
    ("ttft_mean_ms", "latency_stats.ttft_mean_ms", "ms"),
    ("ttft_median_ms", "latency_stats.ttft_median_ms", "ms"),
    ("ttft_p95_ms", "latency_stats.ttft_p95_ms", "ms"),
    ("ttft_p99_ms", "latency_stats.ttft_p99_ms", "ms"),
    ("itl_mean_ms", "latency_stats.itl_mean_ms", "ms"),
    ("itl_median_ms", "latency_stats.itl_median_ms", "ms"),
    ("itl_p95_ms", "latency_stats.itl_p95_ms", "ms"),
    ("itl_p99_ms", "latency_stats.itl_p99_ms", "ms"),
    ("itl_full_mean_ms", "latency_stats.itl_full_mean_ms", "ms"),
    ("itl_full_p99_ms", "latency_stats.itl_full_p99_ms", "ms"),
];

/// The configuration facts of a run from `effective_config`.
fn config(run: &mut RunRow, doc: J<'_>, backend: Option<&str>) {
    let cfg = doc.at("effective_config");
    run.model = cfg.at("model_name").text().map(Into::into);
    run.task = cfg.path("dataset.name").text().map(Into::into);
    run.workload_kind = Some("single_turn".into());
    run.engine = backend
        .map(str::to_string)
        .or_else(|| cfg.at("backend").text())
        .map(Into::into);
    let vllm_seqs = cfg.path("vllm.max_num_seqs").i64();
    (run.batch_value, run.batch_semantics) = match (run.engine.as_deref(), vllm_seqs) {
        (Some("vllm"), Some(n)) => (Some(n), Some("max_num_seqs".into())),
        _ => (
            cfg.path("batching.batch_size").i64(),
            Some("static_batch_size".into()),
        ),
    };
}

/// The request count when the processes did not record it: the dataset's sample size, else the
/// number of prompts.
fn configured_requests(doc: J<'_>) -> Option<i64> {
    let cfg = doc.at("effective_config");
    cfg.path("dataset.sample_size")
        .i64()
        .or_else(|| cfg.at("num_input_prompts").i64())
}

/// One experiment read: its run row, the reported metrics, and the processes whose latency
/// samples become sample rows when it is pushed into the tables.
struct Experiment {
    run: RunRow,
    metrics: Vec<RunMetricRow>,
    samples: Vec<Series>,
}

/// The kinds of LEM's latency series, in the order [`series`] gives them.
const SAMPLE_KINDS: [&str; 3] = ["ttft", "itl_raw", "itl_trimmed"];

/// An experiment's latency series, in seconds: each process's ttft, itl_raw (itl_full_ms) and
/// itl_trimmed samples, in that order, those it has. The processes' sample vectors are taken
/// and scaled where they are.
fn series(run_id: &Text, procs: &mut [Process]) -> Vec<Series> {
    static KINDS: std::sync::OnceLock<[Text; 3]> = std::sync::OnceLock::new();
    let kinds = KINDS.get_or_init(|| SAMPLE_KINDS.map(Text::from));
    let mut out = Vec::new();
    for (k, p) in procs.iter_mut().enumerate() {
        let pi = p.index.unwrap_or(k as i64);
        let all = [
            p.ttft_ms.take(),
            p.itl_full_ms.take(),
            p.itl_trimmed_ms.take(),
        ];
        for (kind, ms) in kinds.iter().zip(all) {
            if let Some(mut values) = ms {
                for v in &mut values {
                    *v /= 1000.0;
                }
                out.push(Series {
                    run_id: Some(run_id.clone()),
                    process_index: Some(pi),
                    kind: kind.clone(),
                    values_s: values,
                });
            }
        }
    }
    out
}

impl Experiment {
    /// Experiments' rows, appended to the tables in order.
    fn push_all(experiments: Vec<Experiment>, out: &mut Tables) {
        for e in experiments {
            e.push(out);
        }
    }

    /// Its rows, appended to the tables.
    fn push(self, out: &mut Tables) {
        for s in self.samples {
            out.latency_samples.push_series(s);
        }
        for m in self.metrics {
            out.run_metrics.push(m);
        }
        out.runs.push(self.run);
    }
}

/// The row of a run before anything is read into it: its ids, its experiment and cycle (from
/// the local id), and the window LEM measures.
fn identity(ctx: &RunIds, local_id: &str, run_id: &Text) -> RunRow {
    let mut run = RunRow {
        run_id: Some(run_id.clone()),
        source_id: Some(ctx.source_id.clone()),
        source_kind: Some(ctx.kind.into()),
        local_id: Some(local_id.into()),
        window: Some("inference_only".into()),
        ..Default::default()
    };
    let (base, cycle) = cycle_of(local_id);
    run.experiment_id = Some(ctx.experiment_id(&base));
    run.repeat_index = cycle;
    run
}

/// An aggregate without its processes: its own totals stand for the run's energy and window.
fn aggregate_totals(run: &mut RunRow, d: J<'_>, warnings: &mut Vec<String>) {
    run.gpu_cpu_ram_energy_j = d.at("total_energy_j").f64();
    run.energy_j = run.gpu_cpu_ram_energy_j;
    run.energy_scope = Some("gpu_cpu_ram".into());
    run.attribution = Some("measured".into());
    run.window_s = d.at("total_inference_time_sec").f64();
    warnings.push("no process results: energy is the aggregate's total_energy_j".into());
}

/// The latency statistics the document reported (in ms), for a run whose processes gave no
/// samples to compute them from.
fn reported_latency(run: &mut RunRow, d: J<'_>) {
    let ls = d.at("latency_stats");
    let s = |k: &'static str| ls.at(k).f64().map(|x| x / 1000.0);
    [
        run.ttft_mean_s,
        run.ttft_p50_s,
        run.ttft_p95_s,
        run.ttft_p99_s,
    ] = [
        s("ttft_mean_ms"),
        s("ttft_median_ms"),
        s("ttft_p95_ms"),
        s("ttft_p99_ms"),
    ];
    [run.itl_mean_s, run.itl_p50_s, run.itl_p95_s, run.itl_p99_s] = [
        s("itl_mean_ms"),
        s("itl_median_ms"),
        s("itl_p95_ms"),
        s("itl_p99_ms"),
    ];
    if run.itl_mean_s.is_some() {
        run.itl_kind = Some("trimmed".into());
    }
}

/// §1.4's checks: whether the run is stable (the processes overlap in time, report distinct GPUs
/// and tracked their energy), with a warning when the overlap or the GPU attribution is not
/// verified; and §1.8 trap 4's warning.
fn verify(
    run: &mut RunRow,
    d: J<'_>,
    procs: &[Process],
    first: Option<J<'_>>,
    warnings: &mut Vec<String>,
) {
    let (overlap, unique) = verification(procs);
    if overlap == Some(false) {
        warnings.push("temporal overlap not verified: the processes' windows overlap by less than half the shortest".into());
    }
    if !unique {
        warnings.push("GPU attribution not verified: two processes report the same GPU id".into());
    }
    let failed = procs.iter().any(|p| p.tracking_failed)
        || d.at("energy_tracking_failed").bool() == Some(true);
    run.is_stable = Some(overlap.unwrap_or(false) && unique && !failed && !procs.is_empty());
    if procs.iter().any(|p| p.gpu_energy_j.is_some())
        && first.and_then(|p| p.path("energy_metrics.energy_per_token_j").f64()) == Some(0.0)
    {
        // §1.8 trap 4: always 0 in this era; recomputed as energy_per_output_token_j.
        warnings.push("energy_metrics.energy_per_token_j is 0 in the source (never set by LEM v1); recomputed".into());
    }
}

/// The fields LEM v2 added: the steady-state window, the GPU count, the baseline power and the
/// tool's own measurement warnings.
fn v2_fields(run: &mut RunRow, d: J<'_>, warnings: &mut Vec<String>) {
    if d.at("measurement_methodology").str() == Some("steady_state") {
        run.window = Some("steady_state".into());
        if let (Some(a), Some(b)) = (
            d.path("steady_state_window.start_s").f64(),
            d.path("steady_state_window.end_s").f64(),
        ) {
            run.window_s = Some(b - a);
        }
    }
    if let Some(n) = d.path("multi_gpu.num_gpus").i64() {
        run.num_gpus = Some(n);
    }
    run.baseline_power_w = d.at("baseline_power_w").f64();
    for m in d.at("measurement_warnings").array() {
        if let Some(s) = m.as_str() {
            warnings.push(s.to_string());
        }
    }
}

/// The document's run-level values named in [`REPORTED`], kept for audit.
fn reported_metrics(run_id: &Text, d: J<'_>) -> Vec<RunMetricRow> {
    let mut metrics = Vec::new();
    for (metric, field, unit) in REPORTED {
        if let Some(v) = d.path(field).f64() {
            metrics.push(RunMetricRow {
                run_id: Some(run_id.clone()),
                metric: Some((*metric).into()),
                value: Some(v),
                unit: Some((*unit).into()),
                source_field: Some((*field).into()),
            });
        }
    }
    metrics
}

/// Turn one experiment (aggregated document or raw processes) into its rows.
fn experiment(
    ctx: &RunIds,
    local_id: &str,
    doc: Option<&Node<'_>>,
    procs_json: &[Node<'_>],
    mut warnings: Vec<String>,
    w: &Warnings,
) -> Experiment {
    let empty = Node::Null;
    let d = J::root(doc.unwrap_or(&empty), w);
    let mut procs: Vec<Process> = procs_json.iter().map(|p| process(J::root(p, w))).collect();
    let first = procs_json.first().map(|p| J::root(p, w));
    let run_id = ctx.run_id(local_id);
    let mut run = identity(ctx, local_id, &run_id);
    let backend = d.at("backend").text();
    config(&mut run, d, backend.as_deref());
    if doc.is_none() {
        // Raw-only: the config is in each process's effective_config.
        if let Some(p0) = first {
            config(&mut run, p0, None);
            if run.engine.is_none() {
                run.engine = p0.at("backend").text().map(Into::into);
            }
        }
    }
    aggregate(&mut run, &procs, &mut warnings);
    if run.requests.is_none() {
        run.requests = configured_requests(d).or_else(|| first.and_then(configured_requests));
    }
    run.requests_completed = run.requests;
    if procs.is_empty() {
        aggregate_totals(&mut run, d, &mut warnings);
    }
    if run.ttft_mean_s.is_none() && run.itl_mean_s.is_none() {
        reported_latency(&mut run, d);
    }
    verify(&mut run, d, &procs, first, &mut warnings);
    v2_fields(&mut run, d, &mut warnings);
    let metrics = reported_metrics(&run_id, d);
    let hw = run.hardware_raw.clone();
    derive(&mut run, hw.as_deref());
    warnings.extend(w.take());
    run.warnings = json_list(&warnings);
    run.extra = d
        .unknown(AGGREGATED_KEYS)
        .map(|m| Value::Object(m).to_string().into());
    let samples = series(&run_id, &mut procs);
    Experiment {
        run,
        metrics,
        samples,
    }
}

fn json_files(dir: &Path) -> Vec<std::path::PathBuf> {
    entries(dir, |p| {
        p.extension().is_some_and(|e| e == "json") && p.is_file()
    })
}

/// Aggregated experiments (`aggregated/<id>.json`): each file read and turned into rows on any
/// core, then kept in file order (an experiment id seen before is dropped, as it would not have
/// been read).
fn read_aggregated(
    ctx: &mut SourceCtx,
    out: &mut Tables,
    root: &Path,
    seen: &mut BTreeSet<String>,
) {
    let paths = json_files(&root.join("aggregated"));
    let ids = ctx.ids.clone();
    let docs = ctx.read_json_all(&paths, |path, doc| {
        let w = Warnings::default();
        let d = J::root(&doc, &w);
        let version = d.at("schema_version").text();
        let id = d
            .at("experiment_id")
            .text()
            .filter(|s| !s.is_empty())
            .or_else(|| {
                path.file_stem()
                    .and_then(|s| s.to_str())
                    .map(str::to_string)
            })?;
        let procs = d.at("process_results").array();
        let e = experiment(&ids, &id, Some(&doc), procs, Vec::new(), &w);
        Some((id, version, e))
    });
    let mut kept = Vec::with_capacity(docs.len());
    for (id, version, e) in docs.into_iter().flatten().flatten() {
        if ctx.tool_version.is_none() {
            ctx.tool_version = version;
        }
        if seen.insert(id) {
            kept.push(e);
        }
    }
    Experiment::push_all(kept, out);
}

/// A raw experiment's `process_<k>.json` documents that read, with the `k` of each file name.
fn read_processes(ctx: &mut SourceCtx, dir: &Path) -> (Vec<Node<'static>>, Vec<Option<i64>>) {
    let mut procs = Vec::new();
    let mut indices = Vec::new();
    for path in json_files(dir) {
        let name = path.file_name().and_then(|s| s.to_str()).unwrap_or("");
        let Some(k) = name
            .strip_prefix("process_")
            .and_then(|s| s.strip_suffix(".json"))
        else {
            continue;
        };
        let Some(doc) = ctx.read_json(&path) else {
            continue;
        };
        indices.push(k.parse::<i64>().ok());
        procs.push(doc);
    }
    (procs, indices)
}

/// The processes ordered by process_index (the file name's `k` when a document has none; file
/// order breaks ties).
fn in_process_order<'a>(
    procs: &[Node<'a>],
    indices: &[Option<i64>],
    w: &Warnings,
) -> Vec<Node<'a>> {
    let mut order: Vec<usize> = (0..procs.len()).collect();
    order.sort_by_key(|&i| {
        J::root(&procs[i], w)
            .at("process_index")
            .i64()
            .or(indices[i])
            .unwrap_or(i64::MAX)
    });
    order.iter().map(|&i| procs[i].clone()).collect()
}

/// Warnings for a process set that may be incomplete: process indices repeated or missing, and
/// processes without their `.completed_<k>` marker in `dir`.
fn process_set_warnings(dir: &Path, procs: &[Node<'_>], w: &Warnings) -> Vec<String> {
    let mut warnings = Vec::new();
    let idx: Vec<i64> = procs
        .iter()
        .enumerate()
        .map(|(k, p)| J::root(p, w).at("process_index").i64().unwrap_or(k as i64))
        .collect();
    let distinct: BTreeSet<i64> = idx.iter().copied().collect();
    if distinct.len() != idx.len() {
        warnings.push("incomplete process set: duplicate process indices".into());
    } else if distinct.iter().copied().ne(0..idx.len() as i64) {
        warnings.push("incomplete process set: missing process indices".into());
    }
    let missing: Vec<String> = idx
        .iter()
        .filter(|k| !dir.join(format!(".completed_{k}")).exists())
        .map(|k| k.to_string())
        .collect();
    if !missing.is_empty() {
        warnings.push(format!(
            "incomplete process set: no .completed marker for process {}",
            missing.join(", ")
        ));
    }
    warnings
}

/// Raw-only experiments (`raw/<id>/process_<k>.json`, an id not seen among the aggregated
/// ones): aggregated here.
fn read_raw(ctx: &mut SourceCtx, out: &mut Tables, root: &Path, seen: &mut BTreeSet<String>) {
    for dir in entries(&root.join("raw"), Path::is_dir) {
        let Some(id) = dir.file_name().and_then(|s| s.to_str()).map(str::to_string) else {
            continue;
        };
        if seen.contains(&id) {
            continue;
        }
        let (procs, indices) = read_processes(ctx, &dir);
        if procs.is_empty() {
            continue;
        }
        let w = Warnings::default();
        let procs = in_process_order(&procs, &indices, &w);
        let warnings = process_set_warnings(&dir, &procs, &w);
        if ctx.tool_version.is_none() {
            ctx.tool_version = J::root(&procs[0], &w).at("schema_version").text();
        }
        seen.insert(id.clone());
        experiment(&ctx.ids, &id, None, &procs, warnings, &w).push(out);
    }
}

/// Multi-cycle files (`<base>_multi_cycle.json`): the reported statistics, and cycles found
/// nowhere else.
fn read_multi_cycle(
    ctx: &mut SourceCtx,
    out: &mut Tables,
    root: &Path,
    seen: &mut BTreeSet<String>,
) {
    let multi = entries(root, |p| name_is(p, |n| n.ends_with("_multi_cycle.json")));
    for path in multi {
        let Some(doc) = ctx.read_json(&path) else {
            continue;
        };
        let w = Warnings::default();
        let d = J::root(&doc, &w);
        let name = path.file_name().and_then(|s| s.to_str()).unwrap_or("");
        let base = d
            .at("experiment_id")
            .text()
            .unwrap_or_else(|| name.trim_end_matches("_multi_cycle.json").to_string());
        if let Some(stats) = d.at("statistics").object() {
            for (k, v) in stats {
                if let Some(x) = v.as_f64() {
                    out.reported_stats.push(RepeatStatRow {
                        experiment_id: Some(ctx.ids.experiment_id(&base)),
                        source_id: Some(ctx.ids.source_id.clone()),
                        statistic: Some(k.into()),
                        value: Some(x),
                    });
                }
            }
        }
        for cyc in d.at("cycle_results").array() {
            let Some(id) = J::root(cyc, &w).at("experiment_id").text() else {
                continue;
            };
            if seen.insert(id.clone()) {
                let procs = J::root(cyc, &w).at("process_results").array();
                experiment(&ctx.ids, &id, Some(cyc), procs, Vec::new(), &w).push(out);
            }
        }
    }
}

/// A LEM v1 results directory: aggregated experiments, then raw-only ones, then the cycles of
/// multi-cycle files (an experiment id is read once, where it is first found).
pub fn read_v1(ctx: &mut SourceCtx, out: &mut Tables) {
    let root = ctx.root.clone();
    let mut seen = BTreeSet::new();
    read_aggregated(ctx, out, &root, &mut seen);
    read_raw(ctx, out, &root, &mut seen);
    read_multi_cycle(ctx, out, &root, &mut seen);
}

/// A LEM v2 result directory (`result.json`, optional `timeseries.parquet`).
pub fn read_v2(ctx: &mut SourceCtx, out: &mut Tables) {
    let root = ctx.root.clone();
    let dirs = if root.join("result.json").is_file() {
        vec![root.clone()]
    } else {
        entries(&root, |p| p.join("result.json").is_file())
    };
    for dir in dirs {
        let local = dir_name(&dir, "result");
        let Some(doc) = ctx.read_json(&dir.join("result.json")) else {
            continue;
        };
        let w = Warnings::default();
        let d = J::root(&doc, &w);
        if ctx.tool_version.is_none() {
            ctx.tool_version = d.at("schema_version").text();
        }
        let procs = d.at("process_results").array();
        let mut e = experiment(&ctx.ids, &local, Some(&doc), procs, Vec::new(), &w);
        let run = &mut e.run;
        // v2: GPU energy by default (NVML), not CodeCarbon; the experiment is the config hash.
        run.experiment_id = Some(
            ctx.ids.experiment_id(
                &d.at("measurement_config_hash")
                    .text()
                    .unwrap_or_else(|| local.clone()),
            ),
        );
        run.repeat_index = None;
        run.energy_j = d.at("total_energy_j").f64();
        run.gpu_energy_j = run.energy_j;
        run.gpu_cpu_ram_energy_j = None;
        run.energy_scope = Some("gpu".into());
        if run.window_s.is_none() {
            run.window_s = d.at("total_inference_time_sec").f64();
        }
        run.avg_power_w = None;
        run.energy_per_output_token_j = None;
        run.tokens_per_joule = None;
        run.energy_per_request_j = None;
        run.adjusted_energy_j = None;
        run.mfu = None;
        let hw = run.hardware_raw.clone();
        derive(run, hw.as_deref());
        let run_id = run.run_id.clone().unwrap_or_else(|| "".into());
        e.push(out);
        let ts = dir.join(d.at("timeseries").str().unwrap_or("timeseries.parquet"));
        if ts.is_file() {
            read_timeseries(ctx, out, &ts, &run_id);
        }
    }
}

/// LEM v2's `timeseries.parquet` (locked columns) into the timeseries table.
fn read_timeseries(ctx: &mut SourceCtx, out: &mut Tables, path: &Path, run_id: &Text) {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Float32Type, Float64Type, Int32Type, Int64Type};
    let Some(bytes) = ctx.read(path) else { return };
    let reader = match parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        bytes::Bytes::from(bytes),
    )
    .and_then(|b| b.build())
    {
        Ok(r) => r,
        Err(e) => {
            ctx.fail_path(path, format!("not a readable parquet file: {e}"));
            return;
        }
    };
    let num = |a: &dyn Array, i: usize| -> Option<f64> {
        if a.is_null(i) {
            return None;
        }
        match a.data_type() {
            DataType::Float64 => Some(a.as_primitive::<Float64Type>().value(i)),
            DataType::Float32 => Some(a.as_primitive::<Float32Type>().value(i) as f64),
            DataType::Int64 => Some(a.as_primitive::<Int64Type>().value(i) as f64),
            DataType::Int32 => Some(a.as_primitive::<Int32Type>().value(i) as f64),
            _ => None,
        }
    };
    let metrics: [(&str, &str, f64); 6] = [
        ("power_w", "power.device_instant", 1.0),
        ("temperature_c", "temperature", 1.0),
        ("sm_utilisation_pct", "sm_util_pct", 1.0),
        ("memory_used_mb", "mem_used_bytes", 1_048_576.0),
        ("memory_total_mb", "mem_total_bytes", 1_048_576.0),
        ("throttle_reasons", "throttle_reasons", 1.0),
    ];
    for batch in reader {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                ctx.fail_path(path, format!("parquet batch unreadable: {e}"));
                return;
            }
        };
        let Some(t) = batch.column_by_name("timestamp_s") else {
            ctx.fail_path(path, "no timestamp_s column".into());
            return;
        };
        let gpu = batch.column_by_name("gpu_index");
        for (col, metric, scale) in metrics {
            let Some(a) = batch.column_by_name(col) else {
                continue;
            };
            for i in 0..batch.num_rows() {
                let Some(v) = num(a.as_ref(), i) else {
                    continue;
                };
                out.timeseries.push(TimeseriesRow {
                    run_id: Some(run_id.clone()),
                    device_index: gpu.and_then(|g| num(g.as_ref(), i)).map(|x| x as i64),
                    metric: Some(metric.into()),
                    t: num(t.as_ref(), i),
                    value: Some(v * scale),
                });
            }
        }
    }
}

/// Whether a directory is a LEM v1 results directory.
pub fn is_v1(dir: &Path) -> bool {
    dir.join("aggregated").is_dir()
        || dir.join("raw").is_dir()
        || !entries(dir, |p| name_is(p, |n| n.ends_with("_multi_cycle.json"))).is_empty()
}

/// Whether a directory is a LEM v2 result directory, or holds some.
pub fn is_v2(dir: &Path) -> bool {
    dir.join("result.json").is_file()
        || !entries(dir, |p| p.join("result.json").is_file()).is_empty()
}
