//! Turning a raw benchmark tree into run tables, as the toolkit's `from_raw_results(...,
//! stable_only=False)` does (toolkit-behaviour.md §5-§8): discovery, row derivation, the stability
//! checks in order, and the cascade across every root.
//!
//! Deliberate differences from the toolkit (its defects, §16): a file that cannot be parsed or
//! grouped is skipped and listed instead of aborting the whole load, files are discovered in
//! sorted order instead of file-system order, and rows are sorted with the service's run-id
//! tie-break.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::path::{ParsedPath, RawDomain, parse_results_path};
use crate::engine::{Domain, EngineError, RunTable, frame::ColumnData};
use crate::pycompat::numpy::np_mean;
use crate::pycompat::repr::python_float_repr;
use crate::pycompat::value::{coerce_int, py_int, safe_float, truthy};
use crate::rawfile::itl::itl_stats;
use crate::rawfile::lenient::{LlmResults, Prometheus, itl_pool};

/// Tasks the toolkit's fast discovery path knows (§5.2).
const KNOWN_LLM_TASKS: [&str; 5] = [
    "gpqa",
    "lm-arena-chat",
    "sourcegraph-fim",
    "image-chat",
    "video-chat",
];
const KNOWN_DIFFUSION_TASKS: [&str; 2] = ["text-to-image", "text-to-video"];
/// Stability thresholds (§8.1).
pub const MIN_STEADY_DURATION_S: f64 = 20.0;
pub const BATCH_UTILIZATION_THRESHOLD: f64 = 0.85;

/// What to build from.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    pub roots: Vec<PathBuf>,
    pub llm_config_dir: Option<PathBuf>,
    pub diffusion_config_dir: Option<PathBuf>,
    /// Keep only these tasks.
    pub tasks: Option<BTreeSet<String>>,
    /// Report progress on stderr about once a second.
    pub progress: bool,
}

/// Size and modification time of a file, `None` if it does not exist.
type Stamp = Option<(u64, u128)>;

fn stamp(path: &Path) -> Stamp {
    let m = fs::metadata(path).ok()?;
    let mtime = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some((m.len(), mtime))
}

/// What parsing one results file gave.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Outcome {
    Llm(Box<LlmOutcome>),
    Diffusion(Box<Result<DiffusionRow, String>>),
}

/// Parsed outcomes by results file, with the stamps of every file they were derived from
/// (results, prometheus, model_info, monolithic config). A rebuild re-parses only the files
/// whose stamps changed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BuildCache {
    entries: HashMap<String, (Vec<Stamp>, Outcome)>,
}

impl BuildCache {
    /// Read a cache written by `save`; a missing or unreadable cache is an empty one.
    pub fn load(path: &Path) -> BuildCache {
        fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Write atomically (temp file + rename).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("partial");
        fs::write(
            &tmp,
            serde_json::to_vec(self).map_err(std::io::Error::other)?,
        )?;
        fs::rename(tmp, path)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Prints `[done/total]` to stderr at most once a second.
struct Progress {
    enabled: bool,
    total: usize,
    done: std::sync::atomic::AtomicUsize,
    last: Mutex<std::time::Instant>,
}

impl Progress {
    fn tick(&self) {
        let done = self.done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if !self.enabled {
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.elapsed().as_secs_f64() >= 1.0 || done == self.total {
            eprintln!("  [{done}/{}] results files read", self.total);
            *last = std::time::Instant::now();
        }
    }
}

/// A results file found under a root.
#[derive(Debug, Clone)]
pub struct RawRun {
    /// The file as found (`<root>/<relative path>`).
    pub path: PathBuf,
    /// The benchmark root its relative path is taken from.
    pub bench_root: PathBuf,
    pub parsed: ParsedPath,
    /// The resolved path: identifies the file across roots (dedup, build cache).
    pub canonical: PathBuf,
}

impl RawRun {
    /// The sibling `prometheus.json` (set even when the file does not exist, as in the toolkit).
    pub fn prometheus_path(&self) -> PathBuf {
        self.path.with_file_name("prometheus.json")
    }
}

/// A file that was passed over, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// The result of a build: the two tables, the runs behind each row, and what was skipped.
pub struct Built {
    pub llm: RunTable,
    pub diffusion: RunTable,
    /// Every discovered file (rows or not), for copying the raw tree.
    pub runs: Vec<RawRun>,
    pub skipped: Vec<Skipped>,
    /// Outcomes of this build, to pass to the next one.
    pub cache: BuildCache,
    /// Files parsed in this build, and files whose previous outcome was reused.
    pub parsed: usize,
    pub reused: usize,
    /// The config directories the rows were derived from (given or auto-detected).
    pub llm_config_dir: Option<PathBuf>,
    pub diffusion_config_dir: Option<PathBuf>,
}

fn posix_rel(path: &Path, root: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(parts.join("/"))
}

/// All files named `results.json` below `dir`, sorted.
fn results_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.file_name() == "results.json")
        .map(|e| e.into_path())
        .collect();
    out.sort();
    out
}

/// Whether a relative path matches the toolkit's fast-path globs.
fn fast_path_match(parts: &[&str], tasks: Option<&BTreeSet<String>>) -> bool {
    let n = parts.len();
    let base = |domain: &str, min: usize| {
        n >= min && parts[0] == domain && parts[2] == "current" && parts[3] == "run"
    };
    match tasks {
        None => base("llm", 5) || base("diffusion", 5),
        Some(t) => {
            (base("llm", 8)
                && parts[6] == "results"
                && KNOWN_LLM_TASKS.contains(&parts[5])
                && t.contains(parts[5]))
                || (base("diffusion", 7)
                    && parts[4] == "diffusion"
                    && KNOWN_DIFFUSION_TASKS.contains(&parts[5])
                    && t.contains(parts[5]))
        }
    }
}

/// The benchmark root of a given root (§5.2 fallback, §13.1).
pub fn infer_benchmark_root(root: &Path) -> PathBuf {
    if root.file_name().is_some_and(|n| n == "run") && root.ancestors().count() > 4 {
        return root.ancestors().nth(4).expect("checked").to_path_buf();
    }
    root.ancestors()
        .find(|c| c.join("llm").exists() || c.join("diffusion").exists())
        .unwrap_or(root)
        .to_path_buf()
}

/// Discover the results files of `roots` (§5.2), deduplicated across roots by resolved path.
pub fn discover(
    roots: &[PathBuf],
    tasks: Option<&BTreeSet<String>>,
) -> (Vec<RawRun>, Vec<Skipped>) {
    let mut seen = HashSet::new();
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    let keep =
        |p: &ParsedPath| p.snapshot == "current" && tasks.is_none_or(|t| t.contains(&p.workload));
    for root in roots {
        let mut found = Vec::new();
        for domain in ["llm", "diffusion"] {
            for path in results_files(&root.join(domain)) {
                let Some(rel) = posix_rel(&path, root) else {
                    continue;
                };
                let parts: Vec<&str> = rel.split('/').collect();
                if !fast_path_match(&parts, tasks) {
                    continue;
                }
                match parse_results_path(&rel) {
                    Ok(parsed) if keep(&parsed) => found.push(RawRun {
                        canonical: PathBuf::new(),
                        path,
                        bench_root: root.clone(),
                        parsed,
                    }),
                    Ok(_) => {}
                    Err(e) => skipped.push(Skipped {
                        path: path.display().to_string(),
                        reason: e.to_string(),
                    }),
                }
            }
        }
        if found.is_empty() {
            let bench_root = infer_benchmark_root(root);
            for path in results_files(root) {
                let Some(rel) = posix_rel(&path, &bench_root) else {
                    continue;
                };
                match parse_results_path(&rel) {
                    Ok(parsed) if keep(&parsed) => found.push(RawRun {
                        canonical: PathBuf::new(),
                        path,
                        bench_root: bench_root.clone(),
                        parsed,
                    }),
                    Ok(_) => {}
                    Err(e) => skipped.push(Skipped {
                        path: path.display().to_string(),
                        reason: e.to_string(),
                    }),
                }
            }
        }
        for mut run in found {
            // A results.json reached through a symlinked directory out of the tree is not read.
            if let Err(e) = crate::store::confine::inside(&run.bench_root, &run.path) {
                skipped.push(Skipped {
                    path: run.path.display().to_string(),
                    reason: format!("not read: {e}"),
                });
                continue;
            }
            run.canonical = fs::canonicalize(&run.path).unwrap_or_else(|_| run.path.clone());
            if seen.insert(run.canonical.clone()) {
                runs.push(run);
            }
        }
    }
    (runs, skipped)
}

/// Stability of one LLM run before the cascade.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stability {
    pub unstable: bool,
    pub reason: String,
}

impl Stability {
    fn stable() -> Self {
        Stability {
            unstable: false,
            reason: String::new(),
        }
    }
    fn unstable(reason: String) -> Self {
        Stability {
            unstable: true,
            reason,
        }
    }
}

fn repr_or_none(v: Option<f64>) -> String {
    v.map_or_else(|| "None".to_string(), python_float_repr)
}

/// The per-run checks of §8.1, in order; the first failing one gives the reason.
pub fn stability_status(
    results: &Result<LlmResults, String>,
    max_num_seqs: Option<i64>,
    avg_batch: Option<f64>,
) -> Stability {
    let r = match results {
        Ok(r) => r,
        Err(e) => return Stability::unstable(format!("failed_to_load_results:{e}")),
    };
    let duration = safe_float(r.steady_state_duration.as_ref());
    if duration.is_none_or(|d| d < MIN_STEADY_DURATION_S) {
        return Stability::unstable(format!("short_steady_state:{}", repr_or_none(duration)));
    }
    let ept = r.energy_per_token();
    if ept.is_none_or(|e| e <= 0.0) {
        return Stability::unstable(format!("invalid_energy_per_token:{}", repr_or_none(ept)));
    }
    if let (Some(m), Some(avg)) = (max_num_seqs, avg_batch)
        && m > 0
    {
        let u = avg / m as f64;
        if u < BATCH_UTILIZATION_THRESHOLD {
            return Stability::unstable(format!("low_batch_utilization:{u:.6}"));
        }
    }
    Stability::stable()
}

/// Apply the cascade (§8.2) in place: per (model, task, GPU, num_gpus) group, every run at or
/// above the smallest unstable `max_num_seqs` becomes unstable.
pub fn apply_cascade(
    groups: &[Option<(String, String, String, i64)>],
    max_num_seqs: &[Option<i64>],
    status: &mut [Stability],
) {
    let mut threshold: HashMap<&(String, String, String, i64), i64> = HashMap::new();
    for ((g, m), s) in groups.iter().zip(max_num_seqs).zip(status.iter()) {
        if let (Some(g), Some(m), true) = (g, m, s.unstable) {
            let t = threshold.entry(g).or_insert(*m);
            *t = (*t).min(*m);
        }
    }
    for ((g, m), s) in groups.iter().zip(max_num_seqs).zip(status.iter_mut()) {
        if let (Some(g), Some(m)) = (g, m)
            && let Some(&t) = threshold.get(g)
            && *m >= t
            && !s.unstable
        {
            *s = Stability::unstable(format!("cascade_from_unstable_batch:{t}"));
        }
    }
}

/// YAML (as PyYAML's safe_load reads the monolithic configs) to JSON values.
fn yaml_to_json(y: &yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match y {
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(s) => s
            .parse::<f64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(s.clone())),
        Yaml::Boolean(b) => Value::from(*b),
        // YAML 1.1 booleans that PyYAML resolves and YAML 1.2 readers keep as strings.
        Yaml::String(s) => match s.as_str() {
            "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Value::from(true),
            "no" | "No" | "NO" | "off" | "Off" | "OFF" => Value::from(false),
            _ => Value::from(s.clone()),
        },
        Yaml::Array(a) => Value::Array(a.iter().map(yaml_to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) | Yaml::Real(s) => s.clone(),
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Boolean(b) => b.to_string(),
                        _ => String::new(),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Yaml::Null | Yaml::Alias(_) | Yaml::BadValue => Value::Null,
    }
}

/// `path` if it resolves inside `root` (symlinks followed); else why it is not read.
fn confined(root: &Path, path: PathBuf) -> Result<PathBuf, String> {
    crate::store::confine::inside(root, &path)
        .map(|()| path.clone())
        .map_err(|e| format!("{} is not read: {e}", path.display()))
}

/// Small config files, read once per path.
#[derive(Default)]
struct ConfigCache {
    json: Mutex<HashMap<PathBuf, Result<Value, String>>>,
    yaml: Mutex<HashMap<PathBuf, Result<Value, String>>>,
}

impl ConfigCache {
    fn model_info(&self, path: &Path) -> Result<serde_json::Map<String, Value>, String> {
        let mut cache = self.json.lock().unwrap_or_else(|e| e.into_inner());
        let v = cache
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let text = fs::read_to_string(path)
                    .map_err(|_| format!("Missing required model_info.json: {}", path.display()))?;
                serde_json::from_str::<Value>(&text).map_err(|e| format!("{}: {e}", path.display()))
            })
            .clone()?;
        match v {
            Value::Object(m) => Ok(m),
            _ => Err(format!(
                "Invalid model_info.json (not object): {}",
                path.display()
            )),
        }
    }

    fn monolithic(&self, path: &Path) -> Result<serde_json::Map<String, Value>, String> {
        let mut cache = self.yaml.lock().unwrap_or_else(|e| e.into_inner());
        let v = cache
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let text = fs::read_to_string(path).map_err(|_| {
                    format!(
                        "Missing required monolithic.config.yaml: {}",
                        path.display()
                    )
                })?;
                let docs = yaml_rust2::YamlLoader::load_from_str(&text)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                Ok(docs.first().map_or(Value::Null, yaml_to_json))
            })
            .clone()?;
        match v {
            Value::Object(m) => Ok(m),
            _ => Err(format!(
                "Invalid monolithic.config.yaml (not object): {}",
                path.display()
            )),
        }
    }
}

/// One LLM row (§6), fields in published order.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LlmRow {
    task: String,
    model_id: String,
    nickname: String,
    architecture: String,
    total_params: f64,
    active_params: f64,
    weight_precision: String,
    gpu_model: String,
    num_gpus: i64,
    max_num_seqs: i64,
    seed: Option<i64>,
    num_request_repeats: Option<i64>,
    tp: i64,
    ep: i64,
    dp: i64,
    energy: f64,
    duration: f64,
    ept: f64,
    energy_per_request: Option<f64>,
    output_throughput: f64,
    request_throughput: Option<f64>,
    total_output_tokens: Option<f64>,
    completed: Option<f64>,
    avg_output_len: Option<f64>,
    itl: [f64; 5],
    avg_batch_size: Option<f64>,
    stability: Stability,
    results_path: String,
    prometheus_path: String,
}

/// One diffusion row (§7).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct DiffusionRow {
    task: String,
    model_id: String,
    nickname: String,
    total_params: f64,
    active_params: f64,
    weight_precision: String,
    gpu_model: String,
    num_gpus: i64,
    batch_size: i64,
    inference_steps: Option<i64>,
    height: i64,
    width: i64,
    num_frames: Option<i64>,
    fps: Option<i64>,
    uly: i64,
    ring: i64,
    use_torch_compile: bool,
    batch_latency: f64,
    avg_power: f64,
    energy_per_generation: f64,
    throughput: f64,
    results_path: String,
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

fn read_llm_results(path: &Path) -> Result<LlmResults, String> {
    crate::rawfile::reader::read_llm_results(path).map_err(|e| match e {
        crate::rawfile::reader::RawError::Unreadable { detail, .. } => detail,
        other => other.to_string(),
    })
}

/// Outcome of one LLM file: its stability (before the cascade) and its row, or why there is none.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LlmOutcome {
    stability: Stability,
    group: Option<(String, String, String, i64)>,
    max_num_seqs: Option<i64>,
    row: Result<Option<LlmRow>, String>,
}

fn llm_outcome(run: &RawRun, cfg: Option<&Path>, cache: &ConfigCache) -> LlmOutcome {
    let p = &run.parsed;
    let results = read_llm_results(&run.path);
    let prom_path = run.prometheus_path();
    let prometheus: Option<Result<Prometheus, String>> = prom_path.exists().then(|| {
        confined(&run.bench_root, prom_path.clone())
            .and_then(|p| fs::read(&p).map_err(|e| e.to_string()))
            .and_then(|b| {
                serde_json::from_slice::<Prometheus>(&b)
                    .map_err(|e| format!("{}: {e}", prom_path.display()))
            })
    });
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
        let Some(stats) = itl_pool(&r.results).ok().and_then(|pool| itl_stats(&pool)) else {
            return Ok(None);
        };
        let mi = model_info(cache, cfg, p)?;
        let architecture = match mi.info.get("architecture") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ if mi.total != mi.active => "MoE".into(),
            _ => "Dense".into(),
        };
        let model_id = p.model_id();
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
    }
}

fn diffusion_row(
    run: &RawRun,
    cfg: Option<&Path>,
    cache: &ConfigCache,
) -> Result<DiffusionRow, String> {
    let p = &run.parsed;
    let bytes = fs::read(&run.path).map_err(|e| e.to_string())?;
    let results: serde_json::Map<String, Value> =
        serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
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
        let Some(Value::Object(ge)) = it.get("gpu_energy") else {
            continue;
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

/// Auto-detect a config directory (§5.1): the first root with `configs/<sub>`.
fn detect_config(roots: &[PathBuf], sub: &str) -> Option<PathBuf> {
    roots
        .iter()
        .map(|r| r.join("configs").join(sub))
        .find(|p| p.is_dir())
}

fn s(v: &str) -> Option<Arc<str>> {
    Some(Arc::from(v))
}

fn llm_columns(rows: &[LlmRow]) -> Vec<ColumnData> {
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

fn diffusion_columns(rows: &[DiffusionRow]) -> Vec<ColumnData> {
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
fn stored_path(path: &Path, bench_root: &Path) -> String {
    posix_rel(path, bench_root).unwrap_or_else(|| path.display().to_string())
}

/// The config files a run's row is derived from.
fn config_paths(run: &RawRun, llm_cfg: Option<&Path>, diff_cfg: Option<&Path>) -> Vec<PathBuf> {
    let p = &run.parsed;
    match (p.domain, llm_cfg, diff_cfg) {
        (RawDomain::Llm, Some(c), _) => {
            let model = c.join(&p.workload).join(&p.org).join(&p.model);
            vec![
                model.join("model_info.json"),
                model
                    .join(p.gpu_sku.as_deref().unwrap_or(""))
                    .join("monolithic.config.yaml"),
            ]
        }
        (RawDomain::Diffusion, _, Some(c)) => vec![
            c.join(&p.workload)
                .join(&p.org)
                .join(&p.model)
                .join("model_info.json"),
        ],
        _ => Vec::new(),
    }
}

/// Build both run tables from raw roots (stable and unstable LLM runs, as the published
/// parquet). Outcomes in `previous` whose files are unchanged are reused instead of re-parsed.
pub fn build(opts: &BuildOptions, previous: Option<&BuildCache>) -> Result<Built, EngineError> {
    let (runs, mut skipped) = discover(&opts.roots, opts.tasks.as_ref());
    let llm_cfg = opts
        .llm_config_dir
        .clone()
        .or_else(|| detect_config(&opts.roots, "vllm"));
    let diff_cfg = opts
        .diffusion_config_dir
        .clone()
        .or_else(|| detect_config(&opts.roots, "xdit"));
    let cache = ConfigCache::default();
    let progress = Progress {
        enabled: opts.progress,
        total: runs.len(),
        done: Default::default(),
        last: Mutex::new(std::time::Instant::now()),
    };

    // Parse every file (or reuse its unchanged outcome), in parallel.
    let results: Vec<(String, Vec<Stamp>, Outcome, bool)> = runs
        .par_iter()
        .map(|run| {
            let key = run.canonical.display().to_string();
            let mut stamps = vec![stamp(&run.path)];
            if run.parsed.domain == RawDomain::Llm {
                stamps.push(stamp(&run.prometheus_path()));
            }
            stamps.extend(
                config_paths(run, llm_cfg.as_deref(), diff_cfg.as_deref())
                    .iter()
                    .map(|p| stamp(p)),
            );
            let reuse = previous
                .and_then(|c| c.entries.get(&key))
                .filter(|(old, _)| *old == stamps)
                .map(|(_, o)| o.clone());
            let reused = reuse.is_some();
            let outcome = reuse.unwrap_or_else(|| match run.parsed.domain {
                RawDomain::Llm => {
                    Outcome::Llm(Box::new(llm_outcome(run, llm_cfg.as_deref(), &cache)))
                }
                RawDomain::Diffusion => {
                    Outcome::Diffusion(Box::new(diffusion_row(run, diff_cfg.as_deref(), &cache)))
                }
            });
            progress.tick();
            (key, stamps, outcome, reused)
        })
        .collect();
    let reused = results.iter().filter(|r| r.3).count();
    let mut new_cache = BuildCache::default();
    let mut llm: Vec<(&RawRun, LlmOutcome)> = Vec::new();
    let mut diffusion: Vec<(&RawRun, Result<DiffusionRow, String>)> = Vec::new();
    for (run, (key, stamps, outcome, _)) in runs.iter().zip(results) {
        new_cache.entries.insert(key, (stamps, outcome.clone()));
        match outcome {
            Outcome::Llm(o) => llm.push((run, *o)),
            Outcome::Diffusion(d) => diffusion.push((run, *d)),
        }
    }

    let groups: Vec<_> = llm
        .iter()
        .map(|(r, o)| {
            if o.max_num_seqs.is_some() && o.group.is_none() {
                skipped.push(Skipped {
                    path: r.path.display().to_string(),
                    reason: "has max_num_seqs but no parseable num_gpus: left out of the stability groups".into(),
                });
            }
            o.group.clone()
        })
        .collect();
    let mns: Vec<Option<i64>> = llm.iter().map(|(_, o)| o.max_num_seqs).collect();
    let mut status: Vec<Stability> = llm.iter().map(|(_, o)| o.stability.clone()).collect();
    apply_cascade(&groups, &mns, &mut status);

    let mut llm_rows = Vec::new();
    for ((run, outcome), st) in llm.into_iter().zip(status) {
        match outcome.row {
            Ok(Some(mut row)) => {
                row.stability = st;
                row.results_path = stored_path(&run.path, &run.bench_root);
                row.prometheus_path = stored_path(&run.prometheus_path(), &run.bench_root);
                llm_rows.push(row);
            }
            Ok(None) => skipped.push(Skipped {
                path: run.path.display().to_string(),
                reason: "no valid ITL samples".into(),
            }),
            Err(reason) => skipped.push(Skipped {
                path: run.path.display().to_string(),
                reason,
            }),
        }
    }
    let mut diff_rows = Vec::new();
    for (run, res) in diffusion {
        match res {
            Ok(mut row) => {
                row.results_path = stored_path(&run.path, &run.bench_root);
                diff_rows.push(row);
            }
            Err(reason) => skipped.push(Skipped {
                path: run.path.display().to_string(),
                reason,
            }),
        }
    }

    Ok(Built {
        llm: RunTable::from_published(Domain::Llm, llm_columns(&llm_rows))?,
        diffusion: RunTable::from_published(Domain::Diffusion, diffusion_columns(&diff_rows))?,
        parsed: runs.len() - reused,
        reused,
        runs,
        skipped,
        cache: new_cache,
        llm_config_dir: llm_cfg,
        diffusion_config_dir: diff_cfg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(duration: f64, ept: f64) -> Result<LlmResults, String> {
        Ok(serde_json::from_value(serde_json::json!({
            "steady_state_duration": duration, "steady_state_energy_per_token": ept
        }))
        .unwrap())
    }

    #[test]
    fn stability_rules_in_order_with_exact_thresholds() {
        assert_eq!(
            stability_status(&results(20.0, 0.2), Some(16), Some(16.0)),
            Stability::stable()
        );
        assert_eq!(
            stability_status(&results(15.3, 0.2), Some(16), Some(16.0)).reason,
            "short_steady_state:15.3"
        );
        assert_eq!(
            stability_status(&results(30.0, 0.0), Some(16), Some(1.0)).reason,
            "invalid_energy_per_token:0.0"
        );
        assert_eq!(
            stability_status(&results(30.0, -1e-5), None, None).reason,
            "invalid_energy_per_token:-1e-05"
        );
        assert_eq!(
            stability_status(&results(30.0, 0.2), Some(32), Some(16.0)).reason,
            "low_batch_utilization:0.500000"
        );
        assert_eq!(
            stability_status(&results(30.0, 0.2), Some(32), Some(8.0)).reason,
            "low_batch_utilization:0.250000"
        );
        // Exactly 0.85 is stable; no prometheus skips the rule.
        assert!(!stability_status(&results(30.0, 0.2), Some(100), Some(85.0)).unstable);
        assert!(!stability_status(&results(30.0, 0.2), Some(100), None).unstable);
        let missing: Result<LlmResults, String> = Ok(LlmResults::default());
        assert_eq!(
            stability_status(&missing, None, None).reason,
            "short_steady_state:None"
        );
        assert_eq!(
            stability_status(&Err("boom".into()), None, None).reason,
            "failed_to_load_results:boom"
        );
    }

    #[test]
    fn config_values_follow_python_and_pyyaml() {
        assert_eq!(py_int(&Value::from(4)), Ok(4));
        assert_eq!(py_int(&Value::from(2.7)), Ok(2));
        assert_eq!(py_int(&Value::from(" 8 ")), Ok(8));
        assert_eq!(py_int(&Value::from(true)), Ok(1));
        assert!(py_int(&Value::Null).is_err());
        assert!(py_int(&Value::from("2.0")).is_err());
        let docs = yaml_rust2::YamlLoader::load_from_str(
            "enable-expert-parallel: yes\ndata-parallel-size: 0\ntensor-parallel-size: 2.0\nnote: hello\n",
        )
        .unwrap();
        let v = yaml_to_json(&docs[0]);
        assert_eq!(v["enable-expert-parallel"], Value::from(true));
        assert_eq!(v["data-parallel-size"], Value::from(0));
        assert_eq!(py_int(&v["tensor-parallel-size"]), Ok(2));
        assert_eq!(v["note"], Value::from("hello"));
    }

    #[test]
    fn parallelism_from_a_monolithic_config() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ConfigCache::default();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            fs::write(&p, text).unwrap();
            p
        };
        let ep_dp0 = cache
            .monolithic(&write(
                "a.yaml",
                "enable-expert-parallel: true\ndata-parallel-size: 0\n",
            ))
            .unwrap();
        assert_eq!(ep_dp0.get("data-parallel-size"), Some(&Value::from(0)));
        assert!(
            cache
                .monolithic(&write("b.yaml", "- 1\n- 2\n"))
                .unwrap_err()
                .contains("not object")
        );
        assert!(
            cache
                .monolithic(&dir.path().join("missing.yaml"))
                .unwrap_err()
                .starts_with("Missing required monolithic.config.yaml")
        );
        assert!(
            cache
                .model_info(&write("c.json", "[1]"))
                .unwrap_err()
                .contains("not object")
        );
    }

    #[test]
    fn cascade_from_the_smallest_unstable_batch() {
        let g = Some((
            "org/m".to_string(),
            "gpqa".to_string(),
            "H100".to_string(),
            1,
        ));
        let other = Some((
            "org/m".to_string(),
            "gpqa".to_string(),
            "H100".to_string(),
            2,
        ));
        let groups = vec![g.clone(), g.clone(), g.clone(), other];
        let mns = vec![Some(8), Some(16), Some(32), Some(64)];
        let mut st = vec![
            Stability::unstable("low_batch_utilization:0.100000".into()),
            Stability::stable(),
            Stability::unstable("low_batch_utilization:0.500000".into()),
            Stability::stable(),
        ];
        apply_cascade(&groups, &mns, &mut st);
        assert_eq!(st[1].reason, "cascade_from_unstable_batch:8");
        assert_eq!(st[2].reason, "low_batch_utilization:0.500000");
        assert!(!st[3].unstable);
    }
}
