//! One row per results file (docs/toolkit.md §6, §7): the LLM and diffusion fields derived from
//! results.json, prometheus.json and the config files, and the row tables' columns.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::configs::{ConfigCache, confined};
use super::discover::{RawRun, posix_rel};
use super::path::ParsedPath;
use super::results::{LlmResults, Prometheus, read_diffusion, read_llm};
use super::stability::{Stability, stability_status};
use crate::engine::frame::ColumnData;
use crate::pycompat::numpy::np_mean;
use crate::pycompat::value::{coerce_int, py_int, safe_float, truthy};
use crate::rawfile::itl::itl_stats;

/// One LLM row (§6), fields in published order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct LlmRow {
    pub(super) task: String,
    pub(super) model_id: String,
    pub(super) nickname: String,
    pub(super) architecture: String,
    pub(super) total_params: f64,
    pub(super) active_params: f64,
    pub(super) weight_precision: String,
    pub(super) gpu_model: String,
    pub(super) num_gpus: i64,
    pub(super) max_num_seqs: i64,
    pub(super) seed: Option<i64>,
    pub(super) num_request_repeats: Option<i64>,
    pub(super) tp: i64,
    pub(super) ep: i64,
    pub(super) dp: i64,
    pub(super) energy: f64,
    pub(super) duration: f64,
    pub(super) ept: f64,
    pub(super) energy_per_request: Option<f64>,
    pub(super) output_throughput: f64,
    pub(super) request_throughput: Option<f64>,
    pub(super) total_output_tokens: Option<f64>,
    pub(super) completed: Option<f64>,
    pub(super) avg_output_len: Option<f64>,
    pub(super) itl: [f64; 5],
    pub(super) avg_batch_size: Option<f64>,
    pub(super) stability: Stability,
    pub(super) results_path: String,
    pub(super) prometheus_path: String,
}

/// One diffusion row (§7).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct DiffusionRow {
    pub(super) task: String,
    pub(super) model_id: String,
    pub(super) nickname: String,
    pub(super) total_params: f64,
    pub(super) active_params: f64,
    pub(super) weight_precision: String,
    pub(super) gpu_model: String,
    pub(super) num_gpus: i64,
    pub(super) batch_size: i64,
    pub(super) inference_steps: Option<i64>,
    pub(super) height: i64,
    pub(super) width: i64,
    pub(super) num_frames: Option<i64>,
    pub(super) fps: Option<i64>,
    pub(super) uly: i64,
    pub(super) ring: i64,
    pub(super) use_torch_compile: bool,
    pub(super) batch_latency: f64,
    pub(super) avg_power: f64,
    pub(super) energy_per_generation: f64,
    pub(super) throughput: f64,
    pub(super) results_path: String,
}

/// Model parameters, nickname and precision from model_info.json (shared rules of §6/§7).
struct ModelInfo {
    total: f64,
    active: f64,
    nickname: String,
    info: serde_json::Map<String, Value>,
}

fn model_info(
    cache: &ConfigCache,
    cfg: Option<&Path>,
    p: &ParsedPath,
) -> Result<ModelInfo, String> {
    let cfg = cfg.ok_or("Missing required config root (llm_config_dir/diffusion_config_dir)")?;
    let info = cache.model_info(&confined(
        cfg,
        cfg.join(&p.workload)
            .join(&p.org)
            .join(&p.model)
            .join("model_info.json"),
    )?)?;
    let total = safe_float(info.get("total_parameters_billion")).ok_or_else(|| {
        format!(
            "Missing required model_info.total_parameters_billion for {}",
            p.model_id()
        )
    })?;
    let active = safe_float(info.get("active_parameters_billion")).unwrap_or(total);
    let nickname = match info.get("nickname") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => p.model.clone(),
    };
    Ok(ModelInfo {
        total,
        active,
        nickname,
        info,
    })
}

/// Outcome of one LLM file: its stability (before the cascade) and its row, or why there is none.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct LlmOutcome {
    pub(super) stability: Stability,
    pub(super) group: Option<(String, String, String, i64)>,
    pub(super) max_num_seqs: Option<i64>,
    pub(super) row: Result<Option<LlmRow>, String>,
    /// The output lengths of the successful requests, where the file gives them all (no
    /// `serde(default)`: a build cache written before they were kept is read as empty, so every
    /// file is read again once).
    pub(super) output_lengths: Option<Vec<i64>>,
}

pub(super) fn llm_outcome(run: &RawRun, cfg: Option<&Path>, cache: &ConfigCache) -> LlmOutcome {
    let p = &run.parsed;
    let read = read_llm(&run.path);
    let results: Result<LlmResults, String> = read
        .as_ref()
        .map(|r| r.values.clone())
        .map_err(String::clone);
    let (pool, output_lengths) = match read {
        Ok(r) => (r.itl, r.output_lengths),
        Err(_) => (None, None),
    };
    let prometheus = read_prometheus(run);
    let avg_batch = prometheus
        .as_ref()
        .and_then(|r| r.as_ref().ok())
        .and_then(Prometheus::avg_batch_size);
    let max_num_seqs = p.config_int("max_num_seqs");
    let num_gpus = p.config_int("num_gpus");
    let stability = stability_status(&results, max_num_seqs, avg_batch);
    let group = num_gpus.map(|g| (p.model_id(), p.workload.clone(), p.gpu_model(), g));
    let row = (|| -> Result<Option<LlmRow>, String> {
        let r = results?;
        if let Some(Err(e)) = prometheus {
            return Err(e);
        }
        let num_gpus = num_gpus.ok_or("Missing required config num_gpus")?;
        let max_num_seqs = max_num_seqs.ok_or("Missing required config max_num_seqs")?;
        let energy = safe_float(r.steady_state_energy.as_ref())
            .ok_or("Missing required steady_state_energy")?;
        let duration = safe_float(r.steady_state_duration.as_ref())
            .filter(|d| *d > 0.0)
            .ok_or("Missing/invalid required steady_state_duration")?;
        let completed = safe_float(r.completed.as_ref());
        let total_output_tokens = safe_float(r.total_output_tokens.as_ref());
        let avg_output_len = match (completed, total_output_tokens) {
            (Some(c), Some(t)) if c > 0.0 => Some(t / c),
            _ => None,
        };
        let ept = r
            .energy_per_token()
            .ok_or("Missing required steady_state_energy_per_token")?;
        let output_throughput = if ept > 0.0 {
            (energy / ept) / duration
        } else {
            safe_float(r.output_throughput.as_ref())
                .ok_or("Cannot compute output_throughput: energy_per_token <= 0 and no fallback output_throughput")?
        };
        let (energy_per_request, request_throughput) = match avg_output_len {
            Some(l) if ept > 0.0 && l > 0.0 => (Some(ept * l), Some(output_throughput / l)),
            _ => (None, None),
        };
        // No ITL samples: the toolkit drops the run silently.
        let Some(stats) = pool.as_deref().and_then(itl_stats) else {
            return Ok(None);
        };
        let mi = model_info(cache, cfg, p)?;
        let model_id = p.model_id();
        let (architecture, weight_precision) = architecture_and_precision(&mi, &model_id);
        let (tp, ep, dp) = parallelism(cache, cfg, p, num_gpus)?;
        Ok(Some(LlmRow {
            task: p.workload.clone(),
            model_id,
            nickname: mi.nickname,
            architecture,
            total_params: mi.total,
            active_params: mi.active,
            weight_precision,
            gpu_model: p.gpu_model(),
            num_gpus,
            max_num_seqs,
            seed: p.config_int("seed"),
            num_request_repeats: p.config_int("num_request_repeats"),
            tp,
            ep,
            dp,
            energy,
            duration,
            ept,
            energy_per_request,
            output_throughput,
            request_throughput,
            total_output_tokens,
            completed,
            avg_output_len,
            itl: [
                stats.mean_ms,
                stats.p50_ms,
                stats.p90_ms,
                stats.p95_ms,
                stats.p99_ms,
            ],
            avg_batch_size: avg_batch,
            stability: Stability::stable(),
            results_path: String::new(),
            prometheus_path: String::new(),
        }))
    })();
    LlmOutcome {
        stability,
        group,
        max_num_seqs,
        row,
        output_lengths,
    }
}

/// The run's `prometheus.json` beside its results, read if it is there (inside the benchmark
/// root).
fn read_prometheus(run: &RawRun) -> Option<Result<Prometheus, String>> {
    let prom_path = run.prometheus_path();
    prom_path.exists().then(|| {
        confined(&run.bench_root, prom_path.clone())
            .and_then(|p| fs::read(&p).map_err(|e| e.to_string()))
            .and_then(|b| {
                serde_json::from_slice::<Prometheus>(&b)
                    .map_err(|e| format!("{}: {e}", prom_path.display()))
            })
    })
}

/// A model's architecture (as its info says, else MoE when fewer parameters are active than it
/// has, else Dense) and weight precision (as its info says, else fp8 for the FP8 and DeepSeek
/// R1/V3 checkpoints, else bfloat16).
fn architecture_and_precision(mi: &ModelInfo, model_id: &str) -> (String, String) {
    let architecture = match mi.info.get("architecture") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ if mi.total != mi.active => "MoE".into(),
        _ => "Dense".into(),
    };
    let weight_precision = match mi.info.get("weight_precision") {
        Some(Value::String(s)) => s.clone(),
        _ if model_id.contains("FP8")
            || model_id.contains("DeepSeek-R1")
            || model_id.contains("DeepSeek-V3") =>
        {
            "fp8".into()
        }
        _ => "bfloat16".into(),
    };
    (architecture, weight_precision)
}

/// The run's (tensor, expert, data) parallel sizes, from the monolithic config of its model on
/// its GPU in the LLM config directory.
fn parallelism(
    cache: &ConfigCache,
    cfg: Option<&Path>,
    p: &ParsedPath,
    num_gpus: i64,
) -> Result<(i64, i64, i64), String> {
    let sku = p
        .gpu_sku
        .as_deref()
        .ok_or("gpu_sku is required for llm parallelization settings")?;
    let cfg_dir = cfg.ok_or("llm_config_dir is required to load parallelization settings")?;
    let mono = cache.monolithic(&confined(
        cfg_dir,
        cfg_dir
            .join(&p.workload)
            .join(&p.org)
            .join(&p.model)
            .join(sku)
            .join("monolithic.config.yaml"),
    )?)?;
    let get_int = |key: &str, default: i64| mono.get(key).map_or(Ok(default), py_int);
    let ep = if truthy(mono.get("enable-expert-parallel")) {
        get_int("expert-parallel-size", num_gpus)?
    } else {
        1
    };
    let tp = get_int("tensor-parallel-size", if ep > 1 { 1 } else { num_gpus })?;
    let dp = match get_int("data-parallel-size", 1)? {
        0 => num_gpus,
        d => d,
    };
    Ok((tp, ep, dp))
}

pub(super) fn diffusion_row(
    run: &RawRun,
    cfg: Option<&Path>,
    cache: &ConfigCache,
) -> Result<DiffusionRow, String> {
    let p = &run.parsed;
    let results = read_diffusion(&run.path)?;
    let from_results = |key: &str| safe_float(results.get(key)).map(|x| x.trunc() as i64);
    let batch = p
        .config_int("batch")
        .or_else(|| from_results("batch_size"))
        .filter(|b| *b > 0)
        .ok_or("Missing/invalid required batch size")?;
    let uly = p
        .config_int("uly")
        .or_else(|| from_results("ulysses_degree"))
        .filter(|u| *u > 0)
        .ok_or("Missing/invalid required ulysses degree")?;
    let ring = p
        .config_int("ring")
        .or_else(|| from_results("ring_degree"))
        .filter(|r| *r > 0)
        .ok_or("Missing/invalid required ring degree")?;
    let iters = match results.get("iteration_energy_measurements") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        _ => return Err("Missing required iteration_energy_measurements".into()),
    };
    let (mut energies, mut latencies) = (Vec::new(), Vec::new());
    for it in iters {
        let Value::Object(it) = it else {
            return Err("iteration measurement is not an object".into());
        };
        // `it.get("gpu_energy", {})`: a missing key is an empty dict (energy 0, the iteration
        // counts); anything but a dict skips the iteration.
        let empty = serde_json::Map::new();
        let ge = match it.get("gpu_energy") {
            None => &empty,
            Some(Value::Object(ge)) => ge,
            Some(_) => continue,
        };
        // Python's sum(): sequential from 0.
        let mut total = 0.0;
        for v in ge.values() {
            total += safe_float(Some(v)).ok_or("gpu_energy value is not a number")?;
        }
        let Some(t) = safe_float(it.get("time")).filter(|t| *t > 0.0) else {
            continue;
        };
        energies.push(total);
        latencies.push(t);
    }
    let (Some(e_bar), Some(t_bar)) = (np_mean(&energies), np_mean(&latencies)) else {
        return Err("No valid iteration energy/time samples".into());
    };
    let mi = model_info(cache, cfg, p)?;
    let (mut height, mut width) = (0, 0);
    if let Some(size) = p.config.get("size")
        && let Some((h, w)) = size.split_once('x')
    {
        height = coerce_int(Some(h)).ok_or_else(|| format!("Invalid size string {size:?}"))?;
        width = coerce_int(Some(w)).ok_or_else(|| format!("Invalid size string {size:?}"))?;
    }
    Ok(DiffusionRow {
        task: p.workload.clone(),
        model_id: p.model_id(),
        nickname: mi.nickname,
        total_params: mi.total,
        active_params: mi.active,
        weight_precision: match mi.info.get("weight_precision") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => "bfloat16".into(),
        },
        gpu_model: p.gpu_family.to_uppercase(),
        num_gpus: uly * ring,
        batch_size: batch,
        inference_steps: p.config_int("steps"),
        height,
        width,
        num_frames: from_results("num_frames"),
        fps: from_results("fps"),
        uly,
        ring,
        use_torch_compile: p
            .config
            .get("tc")
            .is_some_and(|t| t.to_lowercase() == "true"),
        batch_latency: t_bar,
        avg_power: e_bar / t_bar,
        energy_per_generation: e_bar / batch as f64,
        throughput: batch as f64 / t_bar,
        results_path: String::new(),
    })
}

fn s(v: &str) -> Option<Arc<str>> {
    Some(Arc::from(v))
}

pub(super) fn llm_columns(rows: &[LlmRow]) -> Vec<ColumnData> {
    macro_rules! col {
        ($kind:ident, $f:expr) => {
            ColumnData::$kind(rows.iter().map($f).collect())
        };
    }
    vec![
        col!(Str, |_| s("llm")),
        col!(Str, |r| s(&r.task)),
        col!(Str, |r| s(&r.model_id)),
        col!(Str, |r| s(&r.nickname)),
        col!(Str, |r| s(&r.architecture)),
        col!(Float, |r| Some(r.total_params)),
        col!(Float, |r| Some(r.active_params)),
        col!(Str, |r| s(&r.weight_precision)),
        col!(Str, |r| s(&r.gpu_model)),
        col!(Int, |r| Some(r.num_gpus)),
        col!(Int, |r| Some(r.max_num_seqs)),
        col!(Int, |r| r.seed),
        col!(Int, |r| r.num_request_repeats),
        col!(Int, |r| Some(r.tp)),
        col!(Int, |r| Some(r.ep)),
        col!(Int, |r| Some(r.dp)),
        col!(Float, |r| Some(r.energy)),
        col!(Float, |r| Some(r.duration)),
        col!(Float, |r| Some(r.ept)),
        col!(Float, |r| r.energy_per_request),
        col!(Float, |r| Some(r.output_throughput)),
        col!(Float, |r| r.request_throughput),
        col!(Float, |r| Some(r.energy / r.duration)),
        col!(Float, |r| r.total_output_tokens),
        col!(Float, |r| r.completed),
        col!(Float, |r| r.avg_output_len),
        col!(Float, |r| Some(r.itl[0])),
        col!(Float, |r| Some(r.itl[1])),
        col!(Float, |r| Some(r.itl[1])),
        col!(Float, |r| Some(r.itl[2])),
        col!(Float, |r| Some(r.itl[3])),
        col!(Float, |r| Some(r.itl[4])),
        col!(Float, |r| r.avg_batch_size),
        col!(Bool, |r| Some(!r.stability.unstable)),
        col!(Str, |r| s(&r.stability.reason)),
        col!(Str, |r| s(&r.results_path)),
        col!(Str, |r| s(&r.prometheus_path)),
    ]
}

pub(super) fn diffusion_columns(rows: &[DiffusionRow]) -> Vec<ColumnData> {
    macro_rules! col {
        ($kind:ident, $f:expr) => {
            ColumnData::$kind(rows.iter().map($f).collect())
        };
    }
    vec![
        col!(Str, |_| s("diffusion")),
        col!(Str, |r| s(&r.task)),
        col!(Str, |r| s(&r.model_id)),
        col!(Str, |r| s(&r.nickname)),
        col!(Float, |r| Some(r.total_params)),
        col!(Float, |r| Some(r.active_params)),
        col!(Str, |r| s(&r.weight_precision)),
        col!(Str, |r| s(&r.gpu_model)),
        col!(Int, |r| Some(r.num_gpus)),
        col!(Int, |r| Some(r.batch_size)),
        col!(Int, |r| r.inference_steps),
        col!(Int, |r| Some(r.height)),
        col!(Int, |r| Some(r.width)),
        col!(Int, |r| r.num_frames),
        col!(Int, |r| r.fps),
        col!(Int, |r| Some(r.uly)),
        col!(Int, |r| Some(r.ring)),
        col!(Bool, |r| Some(r.use_torch_compile)),
        col!(Float, |r| Some(r.batch_latency)),
        col!(Float, |r| Some(r.avg_power)),
        col!(Float, |r| Some(r.energy_per_generation)),
        col!(Float, |r| Some(r.throughput)),
        col!(Str, |r| s(&r.results_path)),
    ]
}

/// The stored form of a raw path: relative to the run's benchmark root (POSIX), else as found.
pub(super) fn stored_path(path: &Path, bench_root: &Path) -> String {
    posix_rel(path, bench_root).unwrap_or_else(|| path.display().to_string())
}
