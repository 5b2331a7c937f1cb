//! Intelligence Per Watt results (peer-formats §2): single-turn profiles (HF-datasets Arrow stream
//! shards whose `model_metrics` struct is keyed by the model id, `summary.json`,
//! `analysis/accuracy.json`) and agentic runs (`traces.jsonl`, `summary.json`).

use std::path::{Path, PathBuf};

use arrow::array::{Array, ArrayRef, AsArray, StructArray};
use arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type,
};

use super::Tables;
use super::common::{
    RunIds, SourceCtx, accelerator, derive, dir_name, entries, json_list, name_is,
};
use super::json::{J, Node, Warnings};
use super::schema::{EvaluationRow, RequestRow, RunMetricRow, RunRow, Text, ToolCallRow, TurnRow};
use mlenergy_pycompat::numpy::{np_mean, np_percentiles};

/// A column reached through nested structs: the arrays from the top-level column down to the leaf
/// (a value is present only when every level is valid at the row).
struct Leaf(Vec<ArrayRef>);

impl Leaf {
    fn valid(&self, i: usize) -> bool {
        self.0.iter().all(|a| a.is_valid(i))
    }

    fn f64(&self, i: usize) -> Option<f64> {
        if !self.valid(i) {
            return None;
        }
        let a = self.0.last()?;
        let x = match a.data_type() {
            DataType::Float64 => a.as_primitive::<Float64Type>().value(i),
            DataType::Float32 => a.as_primitive::<Float32Type>().value(i) as f64,
            DataType::Int64 => a.as_primitive::<Int64Type>().value(i) as f64,
            DataType::Int32 => a.as_primitive::<Int32Type>().value(i) as f64,
            DataType::UInt64 => a.as_primitive::<UInt64Type>().value(i) as f64,
            DataType::UInt32 => a.as_primitive::<UInt32Type>().value(i) as f64,
            DataType::Utf8 => a.as_string::<i32>().value(i).trim().parse().ok()?,
            DataType::LargeUtf8 => a.as_string::<i64>().value(i).trim().parse().ok()?,
            _ => return None,
        };
        x.is_finite().then_some(x)
    }

    fn i64(&self, i: usize) -> Option<i64> {
        self.f64(i).filter(|x| x.fract() == 0.0).map(|x| x as i64)
    }

    fn bool(&self, i: usize) -> Option<bool> {
        if !self.valid(i) {
            return None;
        }
        let a = self.0.last()?;
        match a.data_type() {
            DataType::Boolean => Some(a.as_boolean().value(i)),
            _ => None,
        }
    }

    fn str(&self, i: usize) -> Option<&str> {
        if !self.valid(i) {
            return None;
        }
        let a = self.0.last()?;
        match a.data_type() {
            DataType::Utf8 => Some(a.as_string::<i32>().value(i)),
            DataType::LargeUtf8 => Some(a.as_string::<i64>().value(i)),
            _ => None,
        }
    }
}

/// The record batches of an Arrow IPC stream read into memory, decoded in place: an array's
/// buffers are slices of the file's bytes, not copies (unless misaligned). An error ends the
/// batches, saying whether the stream never started or a batch could not be read.
struct Batches {
    decoder: arrow::ipc::reader::StreamDecoder,
    bytes: arrow::buffer::Buffer,
    done: bool,
}

impl Batches {
    fn new(bytes: Vec<u8>) -> Self {
        Batches {
            decoder: arrow::ipc::reader::StreamDecoder::new(),
            bytes: arrow::buffer::Buffer::from_vec(bytes),
            done: false,
        }
    }

    fn reason(&self, e: impl std::fmt::Display) -> String {
        match self.decoder.schema() {
            None => format!("not an Arrow IPC stream: {e}"),
            Some(_) => format!("Arrow batch unreadable: {e}"),
        }
    }
}

impl Iterator for Batches {
    type Item = Result<arrow::array::RecordBatch, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.decoder.decode(&mut self.bytes) {
            Ok(Some(batch)) => Some(Ok(batch)),
            Ok(None) => {
                self.done = true;
                let end = match self.decoder.finish() {
                    Err(e) => Err(e.to_string()),
                    Ok(()) if self.decoder.schema().is_none() => Err("no schema message".into()),
                    Ok(()) => Ok(()),
                };
                end.err().map(|e| Err(self.reason(e)))
            }
            Err(e) => {
                self.done = true;
                Some(Err(self.reason(e)))
            }
        }
    }
}

/// The leaf at a dotted path below `top` (a struct array); `None` when a level is missing.
fn leaf(top: &ArrayRef, path: &str) -> Option<Leaf> {
    let mut chain = vec![top.clone()];
    for key in path.split('.') {
        let s = chain.last()?.as_any().downcast_ref::<StructArray>()?;
        chain.push(s.column_by_name(key)?.clone());
    }
    Some(Leaf(chain))
}

/// The struct column of one row field keyed by the model (`model_metrics."llama3.2:1b"`): the
/// field named `model`, else the only one.
fn model_child(col: &ArrayRef, model: Option<&str>, w: &Warnings) -> Option<(String, ArrayRef)> {
    let s = col.as_any().downcast_ref::<StructArray>()?;
    let names: Vec<String> = s.fields().iter().map(|f| f.name().clone()).collect();
    if let Some(m) = model
        && let Some(c) = s.column_by_name(m)
    {
        return Some((m.to_string(), c.clone()));
    }
    match names.len() {
        1 => Some((names[0].clone(), s.column(0).clone())),
        0 => None,
        _ => {
            w.push(format!(
                "model_metrics holds {} models ({}); the first is read",
                names.len(),
                names.join(", ")
            ));
            Some((names[0].clone(), s.column(0).clone()))
        }
    }
}

/// The shard files of a saved dataset: `state.json`'s `_data_files` (names confined to the
/// directory), else every `data-*.arrow`.
fn shards(ctx: &mut SourceCtx, dir: &Path) -> Vec<PathBuf> {
    let w = Warnings::default();
    if dir.join("state.json").is_file()
        && let Some(state) = ctx.read_json(&dir.join("state.json"))
    {
        let files: Vec<String> = J::root(&state, &w)
            .at("_data_files")
            .array()
            .iter()
            .filter_map(|f| f.get("filename").and_then(Node::as_str).map(str::to_string))
            .collect();
        if !files.is_empty() {
            let mut out = Vec::new();
            for f in files {
                match mlenergy_rawfile::confine::resolve_local(dir, &f) {
                    Ok(p) => out.push(p),
                    Err(e) => ctx.fail(
                        &format!("state.json:{f}"),
                        format!("shard path refused: {e}"),
                    ),
                }
            }
            return out;
        }
    }
    shard_files(dir)
}

/// The `data-*.arrow` files of a directory.
fn shard_files(dir: &Path) -> Vec<PathBuf> {
    entries(dir, |p| {
        name_is(p, |n| n.starts_with("data-") && n.ends_with(".arrow"))
    })
}

/// Per-query figures of a single-turn row.
#[derive(Debug, Default, Clone)]
struct Query {
    input: Option<i64>,
    output: Option<i64>,
    ttft_s: Option<f64>,
    latency_s: Option<f64>,
    energy: Option<f64>,
    total_energy: Option<f64>,
    prefill: Option<f64>,
    decode: Option<f64>,
    power_avg: Option<f64>,
    power_any: Option<f64>,
    flops: Option<f64>,
    mfu: Option<f64>,
    cost: Option<f64>,
    is_correct: Option<bool>,
    failed: bool,
    evaluation: Option<Text>,
    start: Option<f64>,
    end: Option<f64>,
    basis: Option<Text>,
}

/// IPJ/IPW per §2.7(a) over the scored records: accuracy, mean energy (with imputation), mean power.
struct Efficiency {
    correct: i64,
    incorrect: i64,
    unevaluated: i64,
    failed: i64,
    accuracy: Option<f64>,
    ipj: Option<f64>,
    ipw: Option<f64>,
    imputed: i64,
}

fn efficiency(qs: &[Query]) -> Efficiency {
    let (mut correct, mut incorrect, mut unevaluated, mut failed, mut imputed) = (0, 0, 0, 0, 0);
    let mut energies = Vec::new();
    let mut powers = Vec::new();
    for q in qs {
        if q.failed {
            failed += 1;
            continue;
        }
        match q.is_correct {
            Some(true) => correct += 1,
            Some(false) => incorrect += 1,
            None => {
                unevaluated += 1;
                continue;
            }
        }
        let e = q.energy.filter(|e| e.is_finite() && *e > 1e-12);
        let l = q.latency_s.filter(|l| l.is_finite() && *l > 0.0);
        let p = match (e, l) {
            (Some(e), Some(l)) => Some(e / l),
            _ => q.power_any.filter(|p| p.is_finite()),
        };
        match e {
            Some(e) => energies.push(e),
            None => {
                if let (Some(p), Some(l)) = (p, l) {
                    energies.push(p * l);
                    imputed += 1;
                }
            }
        }
        if let Some(p) = p {
            powers.push(p);
        }
    }
    let scored = correct + incorrect;
    let accuracy = (scored > 0).then(|| correct as f64 / scored as f64);
    let per = |v: &[f64]| match (accuracy, np_mean(v)) {
        (Some(a), Some(m)) if m != 0.0 => Some(a / m),
        _ => None,
    };
    Efficiency {
        correct,
        incorrect,
        unevaluated,
        failed,
        accuracy,
        ipj: per(&energies),
        ipw: per(&powers),
        imputed,
    }
}

fn ttft_stats(run: &mut RunRow, ttfts: &[f64]) {
    if ttfts.is_empty() {
        return;
    }
    run.ttft_mean_s = np_mean(ttfts);
    if let Some(p) = np_percentiles(ttfts, &[50.0, 95.0, 99.0]) {
        [run.ttft_p50_s, run.ttft_p95_s, run.ttft_p99_s] = [Some(p[0]), Some(p[1]), Some(p[2])];
    }
}

/// The two energy bases a profile's rows name, allocated once: every row shares one of them.
struct Bases {
    gpu: Text,
    soc: Text,
}

impl Bases {
    /// The two words, each allocated once for the whole profile.
    fn new() -> Self {
        Bases {
            gpu: "gpu".into(),
            soc: "soc".into(),
        }
    }

    /// The basis of a row (`gpu` when absent), shared when it is one of the two words.
    fn of(&self, word: Option<&str>) -> Text {
        match word {
            None | Some("gpu") => self.gpu.clone(),
            Some("soc") => self.soc.clone(),
            Some(other) => other.into(),
        }
    }
}

/// A leaf's finite number at row `i`, absent when the leaf is.
fn f64_at(l: &Option<Leaf>, i: usize) -> Option<f64> {
    l.as_ref().and_then(|l| l.f64(i))
}

/// The per-query columns of one shard batch, looked up once so each row only reads values.
struct ProfileColumns {
    basis: Option<Leaf>,
    energy: Option<Leaf>,
    soc_energy: Option<Leaf>,
    total_energy: Option<Leaf>,
    input: Option<Leaf>,
    output: Option<Leaf>,
    ttft: Option<Leaf>,
    latency: Option<Leaf>,
    prefill: Option<Leaf>,
    decode: Option<Leaf>,
    /// avg, median, max, min watts of the GPU (then of the SoC).
    gpu_power: Vec<Option<Leaf>>,
    soc_power: Vec<Option<Leaf>>,
    flops: Option<Leaf>,
    mfu: Option<Leaf>,
    cost: Option<Leaf>,
    is_correct: Option<Leaf>,
    metadata: Option<Leaf>,
    lm_correctness: Option<Leaf>,
    start: Option<Leaf>,
    end: Option<Leaf>,
}

impl ProfileColumns {
    /// The columns under the model's struct `m`, and the request times at the batch's top level.
    fn new(batch: &arrow::array::RecordBatch, m: &ArrayRef) -> Self {
        let g = |p: &str| leaf(m, p);
        let top = |c: &str| batch.column_by_name(c).map(|a| Leaf(vec![a.clone()]));
        let watts = |device: &str| -> Vec<Option<Leaf>> {
            ["avg", "median", "max", "min"]
                .iter()
                .map(|k| g(&format!("power_metrics.{device}.per_query_watts.{k}")))
                .collect()
        };
        ProfileColumns {
            basis: g("energy_metrics.basis"),
            energy: g("energy_metrics.per_query_joules"),
            soc_energy: g("energy_metrics.soc_per_query_joules"),
            total_energy: g("energy_metrics.total_joules"),
            input: g("token_metrics.input"),
            output: g("token_metrics.output"),
            ttft: g("latency_metrics.time_to_first_token_seconds"),
            latency: g("latency_metrics.total_query_seconds"),
            prefill: g("phase_metrics.prefill_energy_j"),
            decode: g("phase_metrics.decode_energy_j"),
            gpu_power: watts("gpu"),
            soc_power: watts("soc"),
            flops: g("compute_metrics.total_flops"),
            mfu: g("hardware_utilization.derived.mfu"),
            cost: g("cost.total_cost_usd"),
            is_correct: g("evaluation.is_correct"),
            metadata: g("evaluation.metadata"),
            lm_correctness: g("lm_correctness"),
            start: top("request_start_time"),
            end: top("request_end_time"),
        }
    }

    /// Row `i` as a query: its energy and power on the row's own basis (GPU or SoC), its
    /// evaluation metadata parsed when it is JSON.
    fn query(&self, i: usize, bases: &Bases) -> Query {
        let b = bases.of(self.basis.as_ref().and_then(|l| l.str(i)));
        let soc = &*b == "soc";
        let energy = if soc {
            f64_at(&self.soc_energy, i)
        } else {
            f64_at(&self.energy, i)
        }
        .filter(|x| *x >= 0.0);
        let powers = if soc {
            &self.soc_power
        } else {
            &self.gpu_power
        };
        let metadata = self.metadata.as_ref().and_then(|l| l.str(i));
        let parsed = metadata.and_then(|t| super::json::parse(t.as_bytes()).ok());
        let failed = parsed
            .as_ref()
            .and_then(|v| v.get("evaluation_failed"))
            .and_then(Node::as_bool)
            == Some(true);
        Query {
            input: self.input.as_ref().and_then(|l| l.i64(i)),
            output: self.output.as_ref().and_then(|l| l.i64(i)),
            ttft_s: f64_at(&self.ttft, i),
            latency_s: f64_at(&self.latency, i),
            energy,
            total_energy: f64_at(&self.total_energy, i),
            prefill: f64_at(&self.prefill, i),
            decode: f64_at(&self.decode, i),
            power_avg: f64_at(&powers[0], i),
            power_any: powers.iter().find_map(|l| f64_at(l, i)),
            flops: f64_at(&self.flops, i),
            mfu: f64_at(&self.mfu, i),
            cost: f64_at(&self.cost, i),
            is_correct: self
                .is_correct
                .as_ref()
                .and_then(|l| l.bool(i))
                .or_else(|| self.lm_correctness.as_ref().and_then(|l| l.bool(i))),
            failed,
            evaluation: parsed
                .map(|v| {
                    serde_json::to_string(&v)
                        .expect("a JSON document writes")
                        .into()
                })
                .or(metadata.map(Into::into)),
            start: f64_at(&self.start, i),
            end: f64_at(&self.end, i),
            basis: Some(b),
        }
    }
}

/// Every shard's queries in order, the model named by the summary or else by the first shard's
/// `model_metrics`; a shard that cannot be read is recorded as failed and the rest still read.
fn read_profile_queries(
    ctx: &mut SourceCtx,
    dir: &Path,
    model: &mut Option<String>,
    w: &Warnings,
) -> Vec<Query> {
    let mut queries: Vec<Query> = Vec::new();
    let bases = Bases::new();
    for shard in shards(ctx, dir) {
        let Some(bytes) = ctx.read(&shard) else {
            continue;
        };
        for batch in Batches::new(bytes) {
            let batch = match batch {
                Ok(b) => b,
                Err(reason) => {
                    ctx.fail_path(&shard, reason);
                    break;
                }
            };
            let Some(mm) = batch.column_by_name("model_metrics") else {
                ctx.fail_path(&shard, "no model_metrics column".into());
                break;
            };
            let Some((name, m)) = model_child(mm, model.as_deref(), w) else {
                ctx.fail_path(
                    &shard,
                    "model_metrics is not a struct keyed by model".into(),
                );
                break;
            };
            model.get_or_insert(name);
            let columns = ProfileColumns::new(&batch, &m);
            queries.reserve(batch.num_rows());
            for i in 0..batch.num_rows() {
                queries.push(columns.query(i, &bases));
            }
        }
    }
    queries
}

/// What a profile's `summary.json` says about the run as a whole, read in one place (and in
/// this order, which is the order its warnings are listed in).
struct ProfileSummary {
    conc: i64,
    /// More than one query at a time: each query's energy is shared with the others.
    shared: bool,
    attribution: Text,
    hw_raw: Option<String>,
    task: Option<String>,
    engine: Option<String>,
}

impl ProfileSummary {
    /// The run's facts from the summary `s` (absent ones as `None`, concurrency 1 by default).
    fn read(s: J<'_>) -> Self {
        let conc = s.path("profiler_config.max_concurrency").i64().unwrap_or(1);
        let shared = conc > 1;
        let attribution: Text = if shared {
            "shared_by_concurrency"
        } else {
            "measured"
        }
        .into();
        let hw_raw = s
            .path("gpu_info.name")
            .text()
            .or_else(|| s.path("hardware.gpu_name").text())
            .or_else(|| s.at("hardware_label").text());
        let task = s
            .at("dataset_name")
            .text()
            .or_else(|| s.at("dataset").text())
            .or_else(|| s.path("profiler_config.dataset_id").text());
        let engine = s
            .path("profiler_config.client_id")
            .text()
            .or_else(|| s.at("client").text());
        ProfileSummary {
            conc,
            shared,
            attribution,
            hw_raw,
            task,
            engine,
        }
    }
}

/// The run's energy scope: the queries' one basis, `mixed` (with a warning, as their energies
/// are summed anyway) when they differ, `gpu` when none says.
fn profile_scope(queries: &[Query], warnings: &mut Vec<String>) -> Option<String> {
    let bases: std::collections::BTreeSet<&str> =
        queries.iter().filter_map(|q| q.basis.as_deref()).collect();
    let scope = if bases.len() == 1 {
        bases.iter().next().map(|b| b.to_string())
    } else if bases.is_empty() {
        Some("gpu".into())
    } else {
        Some("mixed".into())
    };
    if bases.len() > 1 {
        warnings.push("queries on different energy bases (gpu and soc) are summed".to_string());
    }
    scope
}

/// The run row of a profile: the summary's facts and the sums over its queries.
fn profile_run(
    ids: &RunIds,
    (local, run_id): (&str, &Text),
    model: Option<String>,
    facts: &ProfileSummary,
    queries: &[Query],
    warnings: &mut Vec<String>,
) -> RunRow {
    let conc = facts.conc;
    let (hw_raw, task) = (&facts.hw_raw, &facts.task);
    let scope = profile_scope(queries, warnings);
    let energies: Vec<f64> = queries.iter().filter_map(|q| q.energy).collect();
    let window_s: Vec<f64> = queries.iter().filter_map(|q| q.latency_s).collect();
    let sum_i = |f: fn(&Query) -> Option<i64>| {
        let v: Vec<i64> = queries.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| v.iter().sum::<i64>())
    };
    let mut run = RunRow {
        run_id: Some(run_id.clone()),
        source_id: Some(ids.source_id.clone()),
        source_kind: Some(ids.kind.into()),
        local_id: Some(local.into()),
        model: model.as_deref().map(Into::into),
        hardware: hw_raw.as_deref().map(|h| accelerator(h).into()),
        hardware_raw: hw_raw.as_deref().map(Into::into),
        task: task.as_deref().map(Into::into),
        workload_kind: Some("single_turn".into()),
        engine: facts.engine.as_deref().map(Into::into),
        batch_value: Some(conc),
        batch_semantics: Some("client_concurrency".into()),
        energy_j: (!energies.is_empty()).then(|| energies.iter().sum()),
        energy_scope: scope.map(Into::into),
        window: Some("per_query_sum".into()),
        window_s: (!window_s.is_empty()).then(|| window_s.iter().sum()),
        attribution: Some(facts.attribution.clone()),
        requests: Some(queries.len() as i64),
        requests_completed: Some(
            queries
                .iter()
                .filter(|q| q.output.is_some_and(|o| o > 0))
                .count() as i64,
        ),
        input_tokens: sum_i(|q| q.input),
        output_tokens: sum_i(|q| q.output),
        ..Default::default()
    };
    run.experiment_id = Some(
        format!(
            "ipw:{}|{}|{}|c{conc}",
            model.as_deref().unwrap_or(""),
            hw_raw.as_deref().unwrap_or(""),
            task.as_deref().unwrap_or("")
        )
        .into(),
    );
    if matches!(run.energy_scope.as_deref(), Some("gpu")) {
        run.gpu_energy_j = run.energy_j;
    } else if matches!(run.energy_scope.as_deref(), Some("soc")) {
        run.soc_energy_j = run.energy_j;
    }
    run.output_tps = profile_output_tps(&run, queries, facts.shared, warnings);
    let ttfts: Vec<f64> = queries.iter().filter_map(|q| q.ttft_s).collect();
    ttft_stats(&mut run, &ttfts);
    let flops: Vec<f64> = queries.iter().filter_map(|q| q.flops).collect();
    run.flops = (!flops.is_empty()).then(|| flops.iter().sum());
    run
}

/// Output tokens per second: over the summed query time when queries ran one at a time, else
/// over the span from the first request's start to the last one's end (none without the times).
fn profile_output_tps(
    run: &RunRow,
    queries: &[Query],
    shared: bool,
    warnings: &mut Vec<String>,
) -> Option<f64> {
    let out_tokens = run.output_tokens.map(|t| t as f64);
    if !shared {
        match (out_tokens, run.window_s) {
            (Some(o), Some(w)) if w > 0.0 => Some(o / w),
            _ => None,
        }
    } else {
        let starts: Vec<f64> = queries.iter().filter_map(|q| q.start).collect();
        let ends: Vec<f64> = queries.iter().filter_map(|q| q.end).collect();
        if !starts.is_empty() && !ends.is_empty() {
            let span = ends.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                - starts.iter().copied().fold(f64::INFINITY, f64::min);
            out_tokens.filter(|_| span > 0.0).map(|o| o / span)
        } else {
            warnings.push("concurrent profile without request times: no system throughput".into());
            None
        }
    }
}

/// The evaluation computed here from the rows' correctness (§2.7(a)).
fn rows_evaluation(run_id: &Text, eff: &Efficiency, energy_basis: Option<Text>) -> EvaluationRow {
    EvaluationRow {
        run_id: Some(run_id.clone()),
        evaluator: Some("rows".into()),
        correct: Some(eff.correct),
        incorrect: Some(eff.incorrect),
        unevaluated: Some(eff.unevaluated),
        failed: Some(eff.failed),
        accuracy: eff.accuracy,
        ipj_norm: eff.ipj,
        ipw_norm: eff.ipw,
        energy_basis,
        imputed_count: Some(eff.imputed),
        ..Default::default()
    }
}

/// The evaluation IPW reported in `analysis/accuracy.json`, when the file is there and reads.
fn accuracy_json_evaluation(
    ctx: &mut SourceCtx,
    dir: &Path,
    run_id: &Text,
    w: &Warnings,
) -> Option<EvaluationRow> {
    let acc_path = dir.join("analysis/accuracy.json");
    if !acc_path.is_file() {
        return None;
    }
    let doc = ctx.read_json(&acc_path)?;
    let a = J::root(&doc, w).at("summary");
    Some(EvaluationRow {
        run_id: Some(run_id.clone()),
        evaluator: Some("accuracy.json".into()),
        correct: a.at("correct").i64(),
        incorrect: a.at("incorrect").i64(),
        unevaluated: a.at("unevaluated").i64(),
        failed: a.at("failed").i64(),
        accuracy: a.at("accuracy").f64(),
        ipj_reported: a.at("intelligence_per_joule").f64(),
        ipw_reported: a.at("intelligence_per_watt").f64(),
        energy_basis: a.at("energy_basis").text().map(Into::into),
        ..Default::default()
    })
}

/// One request row per query, in order.
fn push_profile_requests(out: &mut Tables, run_id: &Text, queries: &[Query], attribution: &Text) {
    out.requests.reserve(queries.len());
    for (i, q) in queries.iter().enumerate() {
        out.requests.push(RequestRow {
            run_id: Some(run_id.clone()),
            request_index: Some(i as i64),
            input_tokens: q.input,
            output_tokens: q.output,
            success: Some(q.output.is_some_and(|o| o > 0)),
            ttft_s: q.ttft_s,
            latency_s: q.latency_s,
            energy_j: q.energy,
            energy_scope: q.basis.clone(),
            attribution: Some(attribution.clone()),
            total_energy_j: q.total_energy,
            prefill_energy_j: q.prefill,
            decode_energy_j: q.decode,
            avg_power_w: q.power_avg,
            flops: q.flops,
            mfu: q.mfu,
            cost_usd: q.cost,
            is_correct: q.is_correct,
            evaluation: q.evaluation.clone(),
            ..Default::default()
        });
    }
}

/// The summary's reported run-level numbers, kept for audit.
fn push_profile_summary_metrics(out: &mut Tables, run_id: &Text, s: J<'_>) {
    for (k, field) in [
        ("generated_at", "generated_at"),
        ("total_queries", "total_queries"),
    ] {
        if let Some(v) = s.at(field).f64() {
            out.run_metrics.push(RunMetricRow {
                run_id: Some(run_id.clone()),
                metric: Some(k.into()),
                value: Some(v),
                unit: None,
                source_field: Some(format!("summary.json:{field}").into()),
            });
        }
    }
}

/// A single-turn profile directory.
pub fn read_profile(ctx: &mut SourceCtx, out: &mut Tables, dir: &Path) {
    let local = dir_name(dir, "profile");
    let w = Warnings::default();
    let summary = ctx.read_json_if_present(dir, "summary.json");
    let null = Node::Null;
    let s = J::root(summary.as_ref().unwrap_or(&null), &w);
    if ctx.tool_version.is_none() {
        ctx.tool_version = s.path("versions.ipw").text();
    }
    let mut model = s.at("model").text();
    let queries = read_profile_queries(ctx, dir, &mut model, &w);
    let run_id = ctx.run_id(&local);
    let facts = ProfileSummary::read(s);
    let mut warnings = Vec::new();
    let mut run = profile_run(
        &ctx.ids,
        (&local, &run_id),
        model,
        &facts,
        &queries,
        &mut warnings,
    );
    let eff = efficiency(&queries);
    run.accuracy = eff.accuracy;
    run.ipj = eff.ipj;
    run.ipw = eff.ipw;
    out.evaluations
        .push(rows_evaluation(&run_id, &eff, run.energy_scope.clone()));
    if let Some(e) = accuracy_json_evaluation(ctx, dir, &run_id, &w) {
        out.evaluations.push(e);
    }
    push_profile_requests(out, &run_id, &queries, &facts.attribution);
    if s.exists() {
        push_profile_summary_metrics(out, &run_id, s);
    } else {
        warnings.push("no summary.json: model and hardware from the rows only".into());
    }
    derive(&mut run, facts.hw_raw.as_deref());
    warnings.extend(w.take());
    run.warnings = json_list(&warnings);
    out.runs.push(run);
}

/// The parsed lines of `traces.jsonl` (blank lines skipped; a line that is not JSON is recorded
/// as failed and left out).
fn parse_traces<'a>(ctx: &mut SourceCtx, bytes: &'a [u8]) -> Vec<Node<'a>> {
    let mut traces = Vec::new();
    for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match super::json::parse(line) {
            Ok(v) => traces.push(v),
            Err(e) => ctx.fail(&format!("traces.jsonl:{}", n + 1), e),
        }
    }
    traces
}

/// What an agentic run's queries add up to, gathered while their rows are written: the run row
/// and its efficiency are computed from it.
#[derive(Default)]
struct AgenticTotals {
    energy: Vec<f64>,
    power: Vec<f64>,
    wall: Vec<f64>,
    input: Vec<i64>,
    output: Vec<i64>,
    resolved: i64,
    unresolved: i64,
    /// Queries, and those whose trace says `completed: true`.
    queries: i64,
    completed: i64,
}

impl AgenticTotals {
    /// Resolved over judged queries; `None` when none was judged.
    fn accuracy(&self) -> Option<f64> {
        let judged = self.resolved + self.unresolved;
        (judged > 0).then(|| self.resolved as f64 / judged as f64)
    }
}

/// One trace's request row, and its turns' and tool calls' rows; its figures are added to
/// `totals`.
fn push_agentic_query(
    out: &mut Tables,
    run_id: &Text,
    qi: usize,
    t: &Node<'_>,
    w: &Warnings,
    totals: &mut AgenticTotals,
) {
    let q = J::root(t, w);
    let e = q.at("query_gpu_energy_joules").f64();
    let wall = q.at("total_wall_clock_s").f64();
    let p = q.at("query_gpu_power_avg_watts").f64();
    totals.energy.extend(e);
    totals.power.extend(p);
    totals.wall.extend(wall);
    let input = q.at("total_input_tokens").i64();
    let output = q.at("total_output_tokens").i64();
    totals.input.extend(input);
    totals.output.extend(output);
    let is_resolved = q.at("is_resolved").bool();
    match is_resolved {
        Some(true) => totals.resolved += 1,
        Some(false) => totals.unresolved += 1,
        None => {}
    }
    totals.queries += 1;
    if t.get("completed").and_then(Node::as_bool) == Some(true) {
        totals.completed += 1;
    }
    out.requests.push(RequestRow {
        run_id: Some(run_id.clone()),
        request_index: Some(qi as i64),
        query_id: q.at("query_id").text().map(Into::into),
        input_tokens: input,
        output_tokens: output,
        success: q.at("completed").bool(),
        latency_s: wall,
        energy_j: e,
        energy_scope: Some("gpu".into()),
        attribution: Some("measured".into()),
        avg_power_w: p,
        cost_usd: q.at("total_cost_usd").f64(),
        is_correct: is_resolved,
        ..Default::default()
    });
    push_agentic_turns(out, run_id, qi, q, e);
}

/// A query's turn rows and their tool calls. A turn's energy is its own when any turn of the
/// query has one, else the query's energy shared by the turns' wall-clock times.
fn push_agentic_turns(
    out: &mut Tables,
    run_id: &Text,
    qi: usize,
    q: J<'_>,
    query_energy: Option<f64>,
) {
    let w = q.w;
    let turns = q.at("turns").array();
    let own = turns
        .iter()
        .any(|tu| J::root(tu, w).at("gpu_energy_joules").f64().is_some());
    let walls: Vec<f64> = turns
        .iter()
        .map(|tu| J::root(tu, w).at("wall_clock_s").f64().unwrap_or(0.0))
        .collect();
    let wall_sum: f64 = walls.iter().sum();
    for (ti, tu) in turns.iter().enumerate() {
        let u = J::root(tu, w);
        let (energy, attribution) = if own {
            (u.at("gpu_energy_joules").f64(), "measured")
        } else {
            (
                query_energy
                    .filter(|_| wall_sum > 0.0)
                    .map(|e| e * walls[ti] / wall_sum),
                "wall_clock_share",
            )
        };
        let tools = u.at("tools_called").array();
        let lat = u.at("tool_latencies_s");
        for (k, tool) in tools.iter().enumerate() {
            let name = tool.as_str().map(str::to_string);
            out.tool_calls.push(ToolCallRow {
                run_id: Some(run_id.clone()),
                request_index: Some(qi as i64),
                turn_index: Some(ti as i64),
                ordinal: Some(k as i64),
                latency_s: name
                    .as_deref()
                    .and_then(|n| lat.v.and_then(|m| m.get(n)).and_then(Node::as_f64)),
                tool_name: name.map(Into::into),
            });
        }
        out.turns.push(TurnRow {
            run_id: Some(run_id.clone()),
            request_index: Some(qi as i64),
            turn_index: Some(u.at("turn_index").i64().unwrap_or(ti as i64)),
            input_tokens: u.at("input_tokens").i64(),
            output_tokens: u.at("output_tokens").i64(),
            tool_result_tokens: u.at("tool_result_tokens").i64(),
            wall_s: u.at("wall_clock_s").f64(),
            gpu_energy_j: energy,
            cpu_energy_j: u.at("cpu_energy_joules").f64(),
            gpu_power_avg_w: u.at("gpu_power_avg_watts").f64(),
            cpu_power_avg_w: u.at("cpu_power_avg_watts").f64(),
            cost_usd: u.at("cost_usd").f64(),
            error: u.at("error").text().map(Into::into),
            attribution: energy.map(|_| attribution.into()),
            tools: Some(tools.len() as i64),
        });
    }
}

/// The run row of an agentic run: the summary's config and the sums over its queries, with
/// IPJ/IPW as accuracy over mean query energy and power.
fn agentic_run(
    ids: &RunIds,
    local: &str,
    run_id: &Text,
    cfg: J<'_>,
    conc: i64,
    totals: &AgenticTotals,
) -> RunRow {
    let accuracy = totals.accuracy();
    let per = |v: &[f64]| match (accuracy, np_mean(v)) {
        (Some(a), Some(m)) if m != 0.0 => Some(a / m),
        _ => None,
    };
    let model = cfg.at("model").text();
    let task = cfg.at("dataset").text();
    let energy: Option<f64> = (!totals.energy.is_empty()).then(|| totals.energy.iter().sum());
    let window: Option<f64> = (!totals.wall.is_empty()).then(|| totals.wall.iter().sum());
    let output = (!totals.output.is_empty()).then(|| totals.output.iter().sum::<i64>());
    RunRow {
        run_id: Some(run_id.clone()),
        source_id: Some(ids.source_id.clone()),
        source_kind: Some(ids.kind.into()),
        local_id: Some(local.into()),
        experiment_id: Some(
            format!(
                "ipw-agentic:{}|{}|{}|c{conc}",
                cfg.at("agent").text().unwrap_or_default(),
                model.as_deref().unwrap_or(""),
                task.as_deref().unwrap_or("")
            )
            .into(),
        ),
        model: model.map(Into::into),
        task: task.map(Into::into),
        workload_kind: Some("agentic".into()),
        engine: cfg.at("agent").text().map(Into::into),
        batch_value: Some(conc),
        batch_semantics: Some("client_concurrency".into()),
        energy_j: energy,
        gpu_energy_j: energy,
        energy_scope: Some("gpu".into()),
        window: Some("per_query_sum".into()),
        window_s: window,
        attribution: Some("measured".into()),
        requests: Some(totals.queries),
        requests_completed: Some(totals.completed),
        input_tokens: (!totals.input.is_empty()).then(|| totals.input.iter().sum()),
        output_tokens: output,
        output_tps: match (output, window) {
            (Some(o), Some(w)) if conc <= 1 && w > 0.0 => Some(o as f64 / w),
            _ => None,
        },
        accuracy,
        ipj: per(&totals.energy),
        ipw: per(&totals.power),
        ..Default::default()
    }
}

/// The evaluation of an agentic run: resolved queries counted here, IPJ/IPW as the summary
/// reported them and as computed here.
fn agentic_evaluation(run: &RunRow, eff: J<'_>, totals: &AgenticTotals) -> EvaluationRow {
    EvaluationRow {
        run_id: run.run_id.clone(),
        evaluator: Some("summary.json".into()),
        correct: Some(totals.resolved),
        incorrect: Some(totals.unresolved),
        unevaluated: Some(totals.queries - totals.resolved - totals.unresolved),
        accuracy: run.accuracy,
        ipj_reported: eff.at("ipj").f64(),
        ipw_reported: eff.at("ipw").f64(),
        ipj_norm: run.ipj,
        ipw_norm: run.ipw,
        energy_basis: Some("gpu".into()),
        ..Default::default()
    }
}

/// The summary's reported totals and efficiency, kept for audit.
fn push_agentic_summary_metrics(out: &mut Tables, run_id: &Text, s: J<'_>) {
    for (metric, field) in [
        ("totals.gpu_energy_joules", "totals.gpu_energy_joules"),
        ("totals.wall_clock_s", "totals.wall_clock_s"),
        ("efficiency.ipj", "efficiency.ipj"),
        ("efficiency.ipw", "efficiency.ipw"),
        ("efficiency.accuracy", "efficiency.accuracy"),
    ] {
        if let Some(v) = s.path(field).f64() {
            out.run_metrics.push(RunMetricRow {
                run_id: Some(run_id.clone()),
                metric: Some(metric.into()),
                value: Some(v),
                unit: None,
                source_field: Some(format!("summary.json:{field}").into()),
            });
        }
    }
}

/// An agentic run directory (`traces.jsonl`, `summary.json`).
pub fn read_agentic(ctx: &mut SourceCtx, out: &mut Tables, dir: &Path) {
    let local = dir_name(dir, "run");
    let w = Warnings::default();
    let summary = ctx.read_json_if_present(dir, "summary.json");
    let null = Node::Null;
    let s = J::root(summary.as_ref().unwrap_or(&null), &w);
    let cfg = s.at("config");
    let run_id = ctx.run_id(&local);
    let Some(bytes) = ctx.read(&dir.join("traces.jsonl")) else {
        return;
    };
    let traces = parse_traces(ctx, &bytes);
    let conc = cfg.at("concurrency").i64().unwrap_or(1);
    let mut warnings = Vec::new();
    if conc > 1 {
        warnings.push("concurrent agentic run: each query's energy is the whole device's over its window, so concurrent queries count shared energy more than once".to_string());
    }
    let mut totals = AgenticTotals::default();
    for (qi, t) in traces.iter().enumerate() {
        push_agentic_query(out, &run_id, qi, t, &w, &mut totals);
    }
    let mut run = agentic_run(&ctx.ids, &local, &run_id, cfg, conc, &totals);
    let hw = s.path("gpu_info.name").text();
    run.hardware = hw.as_deref().map(|h| accelerator(h).into());
    run.hardware_raw = hw.as_deref().map(Into::into);
    out.evaluations
        .push(agentic_evaluation(&run, s.at("efficiency"), &totals));
    push_agentic_summary_metrics(out, &run_id, s);
    derive(&mut run, hw.as_deref());
    warnings.extend(w.take());
    run.warnings = json_list(&warnings);
    out.runs.push(run);
}

/// Whether a directory is an IPW agentic run.
pub fn is_agentic(dir: &Path) -> bool {
    dir.join("traces.jsonl").is_file()
}

/// Whether a directory is an IPW single-turn profile.
pub fn is_profile(dir: &Path) -> bool {
    dir.join("state.json").is_file() || !shard_files(dir).is_empty()
}
