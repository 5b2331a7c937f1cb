//! A raw-tree generator: writes `results.json` files in the real format (docs/raw-format.md §2, §4,
//! §8) whose numbers agree with a run's published aggregates, so the raw endpoints have real-shaped
//! input where the published raw files are not at hand (data/sample, tests, benchmarks).
//!
//! LLM: `completed_requests` successful requests whose `output_len` sum to `total_output_tokens`;
//! ITLs around `median_itl_ms` with bundled-token zeros; `duration` from the output throughput; a
//! steady-state window whose per-GPU power plateau gives `energy_per_token_joules`; a power and
//! temperature timeline polled on a grid shared by all GPUs and de-duplicated per GPU.
//! Diffusion: `num_iterations` per §4.1 with iteration times around `batch_latency_s` and GPU
//! energy from `avg_power_watts`, plus the media-saving overhead in the totals.
//!
//! Deterministic: the same row and seed give the same bytes.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Value, json};

use crate::engine::RunTable;
use crate::engine::frame::Value as Cell;

/// A JSON object that keeps its keys in the given order (results.json key order matters:
/// `results` comes last).
struct Ordered(Vec<(&'static str, Value)>);

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// splitmix64: small, fast and reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = self.unit().max(1e-12);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

fn round_to(x: f64, decimals: i32) -> f64 {
    let p = 10f64.powi(decimals);
    (x * p).round() / p
}

fn cell_f64(t: &RunTable, row: usize, name: &str) -> Option<f64> {
    match t.column(t.field_index(name)?).get(row) {
        Cell::Float(f) => Some(f),
        Cell::Int(i) => Some(i as f64),
        _ => None,
    }
}

fn cell_str(t: &RunTable, row: usize, name: &str) -> String {
    match t.field_index(name).map(|i| t.column(i).get(row)) {
        Some(Cell::Str(s)) => s.to_string(),
        Some(Cell::Int(i)) => i.to_string(),
        _ => String::new(),
    }
}

fn need(t: &RunTable, row: usize, name: &str) -> Result<f64, String> {
    cell_f64(t, row, name).ok_or_else(|| format!("run {} has no {name}", t.run_id(row)))
}

/// Power and temperature series on a poll grid shared by all GPUs, each GPU's series
/// de-duplicated; `level(t)` is the per-GPU power in watts at time `t`.
fn timeline(
    rng: &mut Rng,
    gpus: usize,
    start: f64,
    end: f64,
    level: &dyn Fn(f64) -> f64,
) -> serde_json::Map<String, Value> {
    let mut series = |period: f64, decimals: i32, value: &mut dyn FnMut(&mut Rng, f64) -> f64| {
        let mut per_gpu: Vec<(Vec<Value>, Option<f64>)> = vec![(Vec::new(), None); gpus];
        let mut k = 0u64;
        loop {
            let t = round_to(start + k as f64 * period + rng.unit() * 0.002, 6);
            if t > end {
                break;
            }
            for (pts, prev) in per_gpu.iter_mut() {
                let v = round_to(value(rng, t), decimals);
                if v > 0.0 && *prev != Some(v) {
                    pts.push(if decimals == 0 {
                        json!([t, v as i64])
                    } else {
                        json!([t, v])
                    });
                    *prev = Some(v);
                }
            }
            k += 1;
        }
        let mut m = serde_json::Map::new();
        for (g, (pts, _)) in per_gpu.into_iter().enumerate() {
            m.insert(g.to_string(), Value::Array(pts));
        }
        Value::Object(m)
    };
    let instant = series(0.1, 3, &mut |r, t| level(t) * (1.0 + 0.03 * r.normal()));
    let average = series(0.1, 0, &mut |r, t| level(t) * (1.0 + 0.005 * r.normal()));
    let memory = series(0.1, 0, &mut |r, t| 40.0 + 0.08 * level(t) + r.unit());
    let temperature = series(0.5, 0, &mut |_, t| {
        35.0 + 30.0 * (1.0 - (-(t - start) / 60.0).exp()) * (level(t) / 700.0).min(1.2)
    });
    let mut out = serde_json::Map::new();
    out.insert("benchmark_start_time".into(), json!(start));
    out.insert("benchmark_end_time".into(), json!(end));
    out.insert(
        "power".into(),
        json!({"device_instant": instant, "device_average": average, "memory_average": memory}),
    );
    out.insert("temperature".into(), temperature);
    out
}

fn gpu_dirs(gpu_model: &str) -> (String, String) {
    (
        gpu_model.to_ascii_lowercase(),
        gpu_model.to_ascii_uppercase(),
    )
}

fn write(path: &Path, doc: &Ordered) -> Result<(), String> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let mut buf = Vec::new();
    serde_json::to_writer(&mut buf, doc).map_err(|e| e.to_string())?;
    buf.write_all(b"\n").map_err(|e| e.to_string())?;
    std::fs::write(path, buf).map_err(|e| format!("{}: {e}", path.display()))
}

fn measurement(time: f64, per_gpu: &[f64]) -> Value {
    let energies: serde_json::Map<String, Value> = per_gpu
        .iter()
        .enumerate()
        .map(|(g, e)| (g.to_string(), json!(round_to(*e, 3))))
        .collect();
    json!({"time": time, "gpu_energy": energies, "cpu_energy": null, "dram_energy": null, "soc_energy": null})
}

/// Write an LLM run's `results.json` under `root` in the published layout; returns its path
/// relative to `root`.
pub fn llm_run(root: &Path, t: &RunTable, row: usize, seed: u64) -> Result<PathBuf, String> {
    let task = cell_str(t, row, "task");
    let model_id = cell_str(t, row, "model_id");
    let (gpu_dir, sku) = gpu_dirs(&cell_str(t, row, "gpu_model"));
    let gpus = need(t, row, "num_gpus")? as usize;
    let batch = need(t, row, "max_num_seqs")? as i64;
    let repeats = need(t, row, "num_request_repeats")?.max(1.0) as i64;
    let completed = need(t, row, "completed_requests")? as usize;
    let total_tokens = need(t, row, "total_output_tokens")? as i64;
    let median_itl = need(t, row, "median_itl_ms")? / 1000.0;
    let throughput = need(t, row, "output_throughput_tokens_per_sec")?;
    let per_token = need(t, row, "energy_per_token_joules")?;
    let unique = (completed as i64 / repeats).max(1);
    let suite = if matches!(task.as_str(), "image-chat" | "video-chat") {
        "mllm"
    } else {
        "llm"
    };
    let rel = PathBuf::from(format!(
        "llm/{gpu_dir}/current/run/{suite}/{task}/results/{model_id}/{sku}/num_gpus+{gpus}+max_num_seqs+{batch}+num_request_repeats+{repeats}+dataset_split+train+num_requests+{unique}+seed+48105/results.json"
    ));
    let mut rng = Rng(seed ^ 0x6d6c_656e_6572_6779);

    let mean = total_tokens as f64 / completed.max(1) as f64;
    let lens = output_lengths(&mut rng, completed, total_tokens);

    let duration = total_tokens as f64 / throughput;
    let start = 1_750_000_000.0 + (seed % 1000) as f64 * 3600.0;
    let end = round_to(start + duration, 6);
    let (ss_start, ss_end) = (
        round_to(start + 0.05 * duration, 6),
        round_to(start + 0.9 * duration, 6),
    );
    let window = ss_end - ss_start;
    let steady_tokens = (total_tokens as f64 * window / duration).round().max(1.0);
    let energy = per_token * steady_tokens;
    let plateau = energy / window / gpus as f64;
    let idle = 0.15 * plateau;
    let level = move |x: f64| {
        if x < ss_start {
            idle + (plateau - idle) * ((x - start) / (ss_start - start)).clamp(0.0, 1.0)
        } else if x <= ss_end {
            plateau
        } else {
            plateau - (plateau - idle) * ((x - ss_end) / (end - ss_end)).clamp(0.0, 1.0)
        }
    };

    let requests = requests(&mut rng, &lens, median_itl, mean, duration, per_token);

    let mut tl = timeline(&mut rng, gpus, start, end, &level);
    tl.insert("steady_state_start_time".into(), json!(ss_start));
    tl.insert("steady_state_end_time".into(), json!(ss_end));
    let per_gpu = vec![energy / gpus as f64; gpus];
    let whole: Vec<f64> = per_gpu
        .iter()
        .map(|e| e * duration / window * 0.9)
        .collect();
    let doc = Ordered(vec![
        ("date", json!("20250915-120000")),
        ("endpoint_type", json!("openai-chat")),
        ("model_id", json!(model_id)),
        ("seed", json!(48105)),
        ("num_unique_prompts", json!(unique)),
        ("num_prompts", json!(completed)),
        ("num_request_repeats", json!(repeats)),
        ("gpu_model", json!(sku)),
        ("num_gpus", json!(gpus)),
        ("max_num_seqs", json!(batch)),
        ("max_num_batched_tokens", Value::Null),
        ("request_rate", json!("inf")),
        ("burstiness", json!(1.0)),
        ("max_concurrency", Value::Null),
        ("max_output_tokens", json!(4096)),
        ("duration", json!(end - start)),
        ("completed", json!(completed)),
        ("steady_state_duration", json!(window)),
        ("steady_state_energy", json!(energy)),
        ("steady_state_energy_per_token", json!(per_token)),
        ("total_input_tokens", json!(0)),
        ("total_output_tokens", json!(total_tokens)),
        ("request_throughput", json!(completed as f64 / duration)),
        ("output_throughput", json!(throughput)),
        ("total_token_throughput", json!(throughput)),
        ("steady_state_measurement", measurement(window, &per_gpu)),
        (
            "entire_benchmark_measurement",
            measurement(duration, &whole),
        ),
        ("timeline", Value::Object(tl)),
        ("results", Value::Array(requests)),
    ]);
    write(&root.join(&rel), &doc)?;
    Ok(rel)
}

/// `completed` output lengths spread around their mean, then corrected so they sum to
/// `total_tokens` exactly.
fn output_lengths(rng: &mut Rng, completed: usize, total_tokens: i64) -> Vec<i64> {
    let mean = total_tokens as f64 / completed.max(1) as f64;
    let mut lens: Vec<i64> = (0..completed)
        .map(|_| ((mean * (0.2 + 1.6 * rng.unit())).round() as i64).max(1))
        .collect();
    let mut diff = total_tokens - lens.iter().sum::<i64>();
    let mut i = 0;
    while diff != 0 && !lens.is_empty() {
        let step = diff.signum();
        if lens[i] + step >= 1 {
            lens[i] += step;
            diff -= step;
        }
        i = (i + 1) % lens.len();
    }
    lens
}

/// The requests of a generated LLM run, one per output length: inter-token gaps around
/// `median_itl` (a few zero gaps and spikes), a time to first token, and energy by the token.
fn requests(
    rng: &mut Rng,
    lens: &[i64],
    median_itl: f64,
    mean: f64,
    duration: f64,
    per_token: f64,
) -> Vec<Value> {
    let mut requests = Vec::with_capacity(lens.len());
    for &len in lens {
        let mut itl = Vec::with_capacity(len as usize);
        itl.push(json!(0));
        for _ in 1..len {
            if rng.unit() < 0.04 {
                itl.push(json!(0));
            } else {
                let spike = if rng.unit() < 0.01 { 3.0 } else { 1.0 };
                let gap = median_itl * (0.15 * rng.normal()).exp() * spike;
                itl.push(json!(round_to(gap, 6)));
            }
        }
        let ttft = round_to(0.05 + rng.unit() * duration * 0.1, 6);
        let sum: f64 = itl.iter().filter_map(Value::as_f64).sum();
        requests.push(Value::Object(
            [
                (
                    "prompt",
                    json!("(prompt text not included in generated runs)"),
                ),
                ("output_text", json!("")),
                ("reasoning_output_text", json!("")),
                ("input_len", json!(50 + (rng.unit() * 900.0) as i64)),
                ("output_len", json!(len)),
                (
                    "dataset_output_len",
                    json!((mean * (0.5 + rng.unit())) as i64),
                ),
                ("latency", json!(round_to(ttft + sum, 6))),
                ("ttft", json!(ttft)),
                ("itl", Value::Array(itl)),
                ("success", json!(true)),
                ("error", json!("")),
                ("energy", json!(per_token * len as f64)),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        ));
    }
    requests
}

/// Write a diffusion run's `results.json` under `root`; returns its path relative to `root`.
pub fn diffusion_run(root: &Path, t: &RunTable, row: usize, seed: u64) -> Result<PathBuf, String> {
    let task = cell_str(t, row, "task");
    let model_id = cell_str(t, row, "model_id");
    let (gpu_dir, _) = gpu_dirs(&cell_str(t, row, "gpu_model"));
    let gpus = need(t, row, "num_gpus")? as usize;
    let batch = need(t, row, "batch_size")? as i64;
    let steps = need(t, row, "inference_steps")? as i64;
    let (h, w) = (
        need(t, row, "height")? as i64,
        need(t, row, "width")? as i64,
    );
    let (uly, ring) = (
        need(t, row, "ulysses_degree")? as i64,
        need(t, row, "ring_degree")? as i64,
    );
    let latency = need(t, row, "batch_latency_s")?;
    let power = need(t, row, "avg_power_watts")?;
    let video = task == "text-to-video";
    let iterations = if video {
        2
    } else if steps <= 30 {
        8
    } else {
        4
    };
    let rel = PathBuf::from(format!(
        "diffusion/{gpu_dir}/current/run/diffusion/{task}/{model_id}/batch-{batch}+size-{h}x{w}+steps-{steps}+seed-48105+uly-{uly}+ring-{ring}+tc-False/results.json"
    ));
    let mut rng = Rng(seed ^ 0x6469_6666_7573_696f);
    let times: Vec<f64> = (0..iterations)
        .map(|_| latency * (1.0 + 0.005 * rng.normal()))
        .collect();
    let its: Vec<Value> = times
        .iter()
        .map(|&t| measurement(t, &vec![power * t / gpus as f64; gpus]))
        .collect();
    let images = batch * iterations as i64;
    let saving = if video { 4.0 } else { 0.5 } * images as f64;
    let total_time = times.iter().sum::<f64>() + saving;
    let idle = 0.2 * power / gpus as f64;
    let total_energy = power * times.iter().sum::<f64>() + idle * gpus as f64 * saving;
    let start = 1_750_000_000.0 + (seed % 1000) as f64 * 3600.0;
    let end = round_to(start + total_time, 6);
    let per_gpu = power / gpus as f64;
    let busy = times.iter().sum::<f64>();
    let level = move |x: f64| {
        // Iterations back to back from the start, saving at the end.
        if x - start <= busy { per_gpu } else { idle }
    };
    let tl = timeline(&mut rng, gpus, start, end, &level);
    let mut keys = vec![
        ("date", json!("20250915-120000")),
        ("model_id", json!(model_id)),
        ("batch_size", json!(batch)),
        ("num_iterations", json!(iterations)),
        ("height", json!(h)),
        ("width", json!(w)),
        ("inference_steps", json!(steps)),
        ("seed", json!(48105)),
    ];
    if video {
        keys.push((
            "num_frames",
            json!(cell_f64(t, row, "num_frames").unwrap_or(81.0) as i64),
        ));
        keys.push(("fps", json!(cell_f64(t, row, "fps").unwrap_or(16.0) as i64)));
    }
    keys.extend([
        ("total_images", json!(images)),
        ("total_time", json!(total_time)),
        (
            "throughput_images_per_sec",
            json!(images as f64 / total_time),
        ),
        ("avg_time_per_image", json!(total_time / images as f64)),
        ("total_energy", json!(total_energy)),
        ("energy_per_image", json!(total_energy / images as f64)),
        (
            "energy_measurement",
            measurement(total_time, &vec![total_energy / gpus as f64; gpus]),
        ),
        ("iteration_energy_measurements", Value::Array(its)),
        (
            "configurations",
            json!({"ulysses_degree": uly, "ring_degree": ring, "use_torch_compile": false}),
        ),
        ("timeline", Value::Object(tl)),
    ]);
    write(&root.join(&rel), &Ordered(keys))?;
    Ok(rel)
}
