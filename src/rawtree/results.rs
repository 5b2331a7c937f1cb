//! What the build reads of a run's raw files, through `rawfile`'s one reader (the same that
//! serves the raw endpoints, so the two can never read a file differently): the top-level values
//! of an LLM `results.json` the toolkit reads, with its ITL pool, the diffusion values, and the
//! part of `prometheus.json` the toolkit reads.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::pycompat::value::safe_float;
use crate::rawfile::reader::{Reading, read_path};
use crate::rawfile::{RawError, RunDerived};

/// The top-level keys of an LLM `results.json` the toolkit reads besides `results`.
const LLM_KEYS: &[&str] = &[
    "steady_state_energy",
    "steady_state_duration",
    "steady_state_energy_per_token",
    "energy_per_token_joules",
    "completed",
    "total_output_tokens",
    "output_throughput",
];

/// The top-level keys of a diffusion `results.json` the toolkit reads.
const DIFFUSION_KEYS: &[&str] = &[
    "batch_size",
    "ulysses_degree",
    "ring_degree",
    "num_frames",
    "fps",
    "iteration_energy_measurements",
];

/// The top-level values of an LLM `results.json` the toolkit reads (JSON, to be read with
/// Python's conversions).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct LlmResults {
    pub steady_state_energy: Option<Value>,
    pub steady_state_duration: Option<Value>,
    pub steady_state_energy_per_token: Option<Value>,
    pub energy_per_token_joules: Option<Value>,
    pub completed: Option<Value>,
    pub total_output_tokens: Option<Value>,
    pub output_throughput: Option<Value>,
}

impl LlmResults {
    /// Energy per token with the toolkit's fallback key.
    pub fn energy_per_token(&self) -> Option<f64> {
        safe_float(self.steady_state_energy_per_token.as_ref())
            .or_else(|| safe_float(self.energy_per_token_joules.as_ref()))
    }
}

/// A reading error as the build reports it (the JSON parser's message for a file that is not
/// JSON).
fn message(e: RawError) -> String {
    match e {
        RawError::Unreadable { detail, .. } => detail,
        other => other.to_string(),
    }
}

/// The kept values as one JSON object.
fn top_object(d: &mut RunDerived) -> serde_json::Map<String, Value> {
    std::mem::take(&mut d.top).into_iter().collect()
}

/// What the build reads of an LLM `results.json`.
pub struct LlmRead {
    pub values: LlmResults,
    /// The smoothed ITL pool of the successful requests as the row statistics read it; `None`
    /// where the toolkit's computation raises or the pool is empty (either drops the run).
    pub itl: Option<Vec<f64>>,
    /// The successful requests' output lengths (`LLMRun.output_lengths()`), if readable.
    pub output_lengths: Option<Vec<i64>>,
}

/// An LLM `results.json`: its values, ITL pool and output lengths. The timeline is checked but
/// not kept.
pub fn read_llm(path: &Path) -> Result<LlmRead, String> {
    let spec = Reading {
        requests: true,
        timeline: false,
        keep: LLM_KEYS,
        finite_itl: false,
    };
    let mut d = read_path(path, spec).map_err(message)?;
    let values =
        serde_json::from_value(Value::Object(top_object(&mut d))).map_err(|e| e.to_string())?;
    let output_lengths = crate::rawfile::output_lengths(&d, false).ok();
    Ok(LlmRead {
        values,
        itl: d.itl.ok().map(|s| s.iter().collect()),
        output_lengths,
    })
}

/// A diffusion `results.json`: the top-level values the toolkit reads, by key. The timeline is
/// checked but not kept.
pub fn read_diffusion(path: &Path) -> Result<serde_json::Map<String, Value>, String> {
    let spec = Reading {
        requests: false,
        timeline: false,
        keep: DIFFUSION_KEYS,
        finite_itl: false,
    };
    let mut d = read_path(path, spec).map_err(message)?;
    Ok(top_object(&mut d))
}

/// The part of `prometheus.json` the toolkit reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Prometheus {
    pub steady_state_stats: Option<Value>,
}

impl Prometheus {
    /// `steady_state_stats["vllm:num_requests_running"]` as a float, if there is one.
    pub fn avg_batch_size(&self) -> Option<f64> {
        match &self.steady_state_stats {
            Some(Value::Object(m)) => safe_float(m.get("vllm:num_requests_running")),
            _ => None,
        }
    }
}
