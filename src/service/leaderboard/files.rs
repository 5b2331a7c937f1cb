//! The ML.ENERGY leaderboard's data files, generated from a snapshot as the leaderboard's own build
//! derives them (docs/leaderboard.md): `index.json`, `tasks/<task>.json` and
//! `models/<org>__<name>__<task>.json`, written the Python way, so that the embedded dataset gives
//! the 70 published files byte for byte.
//!
//! Stable LLM runs and every diffusion run, sorted as the build sorts them; no aggregation but the
//! LLM model files' output-length histograms: per run on the (model, task) group's shared edges
//! (numpy's 50 equal bins over the pooled lengths), and their sum.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use crate::engine::frame::Value;
use crate::engine::{Domain, RunTable};
use crate::pycompat::json::PyJson;
use crate::rawtree::histograms::{Histogram, Histograms};
use crate::service::snapshot::Snapshot;

/// The tasks of each architecture group (the leaderboard's fixed sets).
const GROUPS: [(&str, &[&str]); 3] = [
    ("diffusion", &["text-to-image", "text-to-video"]),
    ("llm", &["gpqa", "lm-arena-chat", "sourcegraph-fim"]),
    ("mllm", &["image-chat", "video-chat"]),
];

/// The display name of a task, as the leaderboard's build maps it (the task itself otherwise).
pub fn task_display_name(task: &str) -> &str {
    match task {
        "gpqa" => "GPQA Diamond",
        "lm-arena-chat" => "LLM Chat (LM Arena)",
        "sourcegraph-fim" => "Fill-in-the-Middle (Sourcegraph)",
        "image-chat" => "Image Chat",
        "video-chat" => "Video Chat",
        "text-to-image" => "Text to Image",
        "text-to-video" => "Text to Video",
        other => other,
    }
}

/// The file name of a (model, task) pair: every `/` of the id becomes `__`.
pub fn model_file(model_id: &str, task: &str) -> String {
    format!("{}__{task}.json", model_id.replace('/', "__"))
}

/// A cell as the leaderboard writes it: doubles as floats, integers as ints, text, null.
fn cell(t: &RunTable, field: &str, row: usize) -> PyJson {
    let Some(i) = t.field_index(field) else {
        return PyJson::Null;
    };
    match t.column(i).get(row) {
        Value::Null => PyJson::Null,
        Value::Str(s) => PyJson::Str(s.to_string()),
        Value::Int(v) => PyJson::Int(v),
        Value::Float(v) => PyJson::Float(v),
        Value::Bool(b) => PyJson::Bool(b),
    }
}

fn text(t: &RunTable, field: &str, row: usize) -> String {
    match cell(t, field, row) {
        PyJson::Str(s) => s,
        _ => String::new(),
    }
}

/// Order of the build's sort keys: nulls as the build's `or` defaults, numbers numerically.
fn key_order(t: &RunTable, keys: &[(&str, PyJson)], a: usize, b: usize) -> Ordering {
    for (field, default) in keys {
        let (x, y) = (cell(t, field, a), cell(t, field, b));
        let (x, y) = (
            if x == PyJson::Null {
                default.clone()
            } else {
                x
            },
            if y == PyJson::Null {
                default.clone()
            } else {
                y
            },
        );
        let o = match (&x, &y) {
            (PyJson::Str(p), PyJson::Str(q)) => p.cmp(q),
            (PyJson::Bool(p), PyJson::Bool(q)) => p.cmp(q),
            _ => num(&x).total_cmp(&num(&y)),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn num(v: &PyJson) -> f64 {
    match v {
        PyJson::Int(i) => *i as f64,
        PyJson::Float(f) => *f,
        PyJson::Bool(b) => f64::from(u8::from(*b)),
        _ => f64::NAN,
    }
}

/// The runs the leaderboard shows, in the build's order: stable LLM runs sorted by (model_id, task,
/// gpu_model, num_gpus, max_num_seqs, repeats or 1, seed or 0); diffusion runs by (model_id, task,
/// gpu_model, num_gpus, batch_size, height, width, steps or 0, ulysses or 0, ring or 0, compile or
/// false). The sort is stable over the load order.
pub fn ordered_runs(t: &RunTable) -> Vec<usize> {
    let mut rows: Vec<usize> = (0..t.len())
        .filter(|&r| t.domain == Domain::Diffusion || cell(t, "is_stable", r) == PyJson::Bool(true))
        .collect();
    in_file_order(t, &mut rows);
    rows
}

/// `rows` sorted as the leaderboard's files order their configurations (stable: rows the keys do
/// not tell apart keep their order), for the client logic's "first in file order" ties.
pub fn in_file_order(t: &RunTable, rows: &mut [usize]) {
    let keys: Vec<(&str, PyJson)> = match t.domain {
        Domain::Llm => vec![
            ("model_id", PyJson::Str(String::new())),
            ("task", PyJson::Str(String::new())),
            ("gpu_model", PyJson::Str(String::new())),
            ("num_gpus", PyJson::Int(0)),
            ("max_num_seqs", PyJson::Int(0)),
            ("num_request_repeats", PyJson::Int(1)),
            ("seed", PyJson::Int(0)),
        ],
        Domain::Diffusion => vec![
            ("model_id", PyJson::Str(String::new())),
            ("task", PyJson::Str(String::new())),
            ("gpu_model", PyJson::Str(String::new())),
            ("num_gpus", PyJson::Int(0)),
            ("batch_size", PyJson::Int(0)),
            ("height", PyJson::Int(0)),
            ("width", PyJson::Int(0)),
            ("inference_steps", PyJson::Int(0)),
            ("ulysses_degree", PyJson::Int(0)),
            ("ring_degree", PyJson::Int(0)),
            ("use_torch_compile", PyJson::Bool(false)),
        ],
    };
    rows.sort_by(|&a, &b| key_order(t, &keys, a, b));
}

/// `index.json`.
pub fn index(snapshot: &Snapshot, last_updated: &str) -> String {
    let (llm, diffusion) = (&snapshot.llm, &snapshot.diffusion);
    let llm_rows = ordered_runs(llm);
    let diffusion_rows = ordered_runs(diffusion);
    let tasks: BTreeSet<String> = llm_rows
        .iter()
        .map(|&r| text(llm, "task", r))
        .chain(diffusion_rows.iter().map(|&r| text(diffusion, "task", r)))
        .collect();
    let architectures = PyJson::object(GROUPS.iter().map(|(name, members)| {
        (
            *name,
            PyJson::Array(
                tasks
                    .iter()
                    .filter(|t| members.contains(&t.as_str()))
                    .map(|t| PyJson::Str(t.clone()))
                    .collect(),
            ),
        )
    }));
    let mut models: BTreeMap<String, PyJson> = BTreeMap::new();
    // LLM metadata from the first run of the model in the toolkit's load order (the table's).
    for r in (0..llm.len()).filter(|&r| cell(llm, "is_stable", r) == PyJson::Bool(true)) {
        models.entry(text(llm, "model_id", r)).or_insert_with(|| {
            PyJson::object(
                [
                    "activated_params_billions",
                    "architecture",
                    "nickname",
                    "total_params_billions",
                    "weight_precision",
                ]
                .map(|f| (f, cell(llm, f, r))),
            )
        });
    }
    for r in 0..diffusion.len() {
        models
            .entry(text(diffusion, "model_id", r))
            .or_insert_with(|| {
                PyJson::object(
                    [
                        "activated_params_billions",
                        "nickname",
                        "total_params_billions",
                        "weight_precision",
                    ]
                    .map(|f| (f, cell(diffusion, f, r))),
                )
            });
    }
    PyJson::object([
        ("architectures", architectures),
        ("last_updated", PyJson::Str(last_updated.to_string())),
        ("models", PyJson::Object(models)),
        (
            "tasks",
            PyJson::Array(tasks.into_iter().map(PyJson::Str).collect()),
        ),
    ])
    .dumps()
}

/// The LLM fields of a task configuration, as named in the file.
const LLM_TASK_FIELDS: [&str; 22] = [
    "activated_params_billions",
    "architecture",
    "avg_batch_size",
    "avg_output_len",
    "avg_power_watts",
    "data_parallel",
    "energy_per_request_joules",
    "energy_per_token_joules",
    "expert_parallel",
    "gpu_model",
    "max_num_seqs",
    "median_itl_ms",
    "model_id",
    "nickname",
    "num_gpus",
    "output_throughput_tokens_per_sec",
    "p90_itl_ms",
    "p95_itl_ms",
    "p99_itl_ms",
    "tensor_parallel",
    "total_params_billions",
    "weight_precision",
];

/// A diffusion run's task-specific keys: energy, throughput and resolution named for images or
/// videos, and the video's frames.
fn diffusion_media(t: &RunTable, r: usize, task: &str) -> Vec<(String, PyJson)> {
    let media = if task.contains("video") {
        "video"
    } else {
        "image"
    };
    let mut out = vec![
        (
            format!("energy_per_{media}_joules"),
            cell(t, "energy_per_generation_joules", r),
        ),
        (
            format!("throughput_{media}s_per_sec"),
            cell(t, "throughput_generations_per_sec", r),
        ),
        (format!("{media}_height"), cell(t, "height", r)),
        (format!("{media}_width"), cell(t, "width", r)),
    ];
    if media == "video" {
        out.push(("fps".into(), cell(t, "fps", r)));
        out.push(("num_frames".into(), cell(t, "num_frames", r)));
    }
    out
}

/// The runs of one leaderboard file: a task's, or a (model, task) pair's, in the build's order.
#[derive(Debug, Clone)]
pub struct Group {
    pub domain: Domain,
    /// The model id (empty for a task's group).
    pub model_id: String,
    pub task: String,
    pub rows: Vec<usize>,
}

impl Group {
    /// The file's path under the data directory: `tasks/<task>.json` or
    /// `models/<org>__<name>__<task>.json`.
    pub fn path(&self) -> String {
        if self.model_id.is_empty() {
            format!("tasks/{}.json", self.task)
        } else {
            format!("models/{}", model_file(&self.model_id, &self.task))
        }
    }
}

/// The task files' groups and the model files' groups, each in order of path. A task with runs
/// in both domains is the LLM domain's.
pub fn groups(snapshot: &Snapshot) -> (Vec<Group>, Vec<Group>) {
    let mut tasks: BTreeMap<String, Group> = BTreeMap::new();
    let mut models: BTreeMap<String, Group> = BTreeMap::new();
    for domain in Domain::ALL {
        let t = snapshot.table(domain);
        for r in ordered_runs(t) {
            let (task, model_id) = (text(t, "task", r), text(t, "model_id", r));
            let g = tasks.entry(task.clone()).or_insert_with(|| Group {
                domain,
                model_id: String::new(),
                task: task.clone(),
                rows: Vec::new(),
            });
            if g.domain == domain {
                g.rows.push(r);
            }
            let path = model_file(&model_id, &task);
            let g = models.entry(path).or_insert_with(|| Group {
                domain,
                model_id,
                task,
                rows: Vec::new(),
            });
            if g.domain == domain {
                g.rows.push(r);
            }
        }
    }
    (
        tasks.into_values().collect(),
        models.into_values().collect(),
    )
}

/// `tasks/<task>.json` of a task's group.
pub fn task(snapshot: &Snapshot, group: &Group) -> String {
    let (domain, task) = (group.domain, group.task.as_str());
    let t = snapshot.table(domain);
    let configurations = group
        .rows
        .iter()
        .map(|&r| match domain {
            Domain::Llm => PyJson::object(LLM_TASK_FIELDS.map(|f| (f, cell(t, f, r)))),
            Domain::Diffusion => {
                let mut members: Vec<(String, PyJson)> = [
                    "activated_params_billions",
                    "avg_power_watts",
                    "batch_latency_s",
                    "batch_size",
                    "gpu_model",
                    "inference_steps",
                    "model_id",
                    "nickname",
                    "num_gpus",
                    "ring_degree",
                    "total_params_billions",
                    "ulysses_degree",
                    "weight_precision",
                ]
                .map(|f| (f.to_string(), cell(t, f, r)))
                .into();
                members.extend(diffusion_media(t, r, task));
                PyJson::object(members)
            }
        })
        .collect();
    let mut top = vec![
        ("configurations".to_string(), PyJson::Array(configurations)),
        ("task".into(), PyJson::Str(task.to_string())),
        (
            "task_display_name".into(),
            PyJson::Str(task_display_name(task).to_string()),
        ),
    ];
    if domain == Domain::Diffusion {
        top.push(("architecture".into(), PyJson::Str("diffusion".into())));
    }
    PyJson::object(top).dumps()
}

fn histogram_json(h: &Histogram) -> PyJson {
    PyJson::object([
        (
            "bins",
            PyJson::Array(h.bins.iter().map(|&b| PyJson::Float(b)).collect()),
        ),
        (
            "counts",
            PyJson::Array(h.counts.iter().map(|&c| PyJson::Int(c)).collect()),
        ),
    ])
}

/// A model file of a (model, task) group. LLM files carry the runs' output-length histograms
/// (`histograms`, by run id, every run of the group in it); without them, the histogram keys are
/// left out (the frontend then hides that panel).
pub fn model(snapshot: &Snapshot, group: &Group, histograms: Option<&Histograms>) -> String {
    let (domain, model_id, task, rows) = (
        group.domain,
        group.model_id.as_str(),
        group.task.as_str(),
        group.rows.as_slice(),
    );
    let t = snapshot.table(domain);
    let first = rows[0];
    let mut top: Vec<(String, PyJson)> = vec![
        (
            "activated_params_billions".into(),
            cell(t, "activated_params_billions", first),
        ),
        ("model_id".into(), PyJson::Str(model_id.to_string())),
        ("task".into(), PyJson::Str(task.to_string())),
        (
            "total_params_billions".into(),
            cell(t, "total_params_billions", first),
        ),
        (
            "weight_precision".into(),
            cell(t, "weight_precision", first),
        ),
    ];
    let mut configurations = Vec::with_capacity(rows.len());
    match domain {
        Domain::Llm => {
            top.push(("architecture".into(), cell(t, "architecture", first)));
            let mut total: Option<Histogram> = None;
            for &r in rows {
                let h = histograms.and_then(|hs| hs.get(t.run_id(r)));
                if let Some(h) = h {
                    match &mut total {
                        None => total = Some(h.clone()),
                        Some(sum) => {
                            for (s, c) in sum.counts.iter_mut().zip(&h.counts) {
                                *s += c;
                            }
                        }
                    }
                }
                let (tp, ep, dp) = (
                    cell(t, "tensor_parallel", r),
                    cell(t, "expert_parallel", r),
                    cell(t, "data_parallel", r),
                );
                let notes = if num(&dp) > 1.0 && num(&ep) > 1.0 {
                    "DP for attention, EP for MLP experts"
                } else {
                    ""
                };
                let mut members: Vec<(String, PyJson)> = [
                    "avg_batch_size",
                    "avg_output_len",
                    "avg_power_watts",
                    "energy_per_request_joules",
                    "energy_per_token_joules",
                    "gpu_model",
                    "max_num_seqs",
                    "median_itl_ms",
                    "num_gpus",
                    "output_throughput_tokens_per_sec",
                    "p90_itl_ms",
                    "p95_itl_ms",
                    "p99_itl_ms",
                ]
                .map(|f| (f.to_string(), cell(t, f, r)))
                .into();
                if let Some(h) = h {
                    members.push(("output_length_distribution".into(), histogram_json(h)));
                }
                members.push((
                    "parallelization".into(),
                    PyJson::object([
                        ("data_parallel", dp),
                        ("expert_parallel", ep),
                        ("notes", PyJson::Str(notes.into())),
                        ("tensor_parallel", tp),
                    ]),
                ));
                configurations.push(PyJson::object(members));
            }
            if let Some(total) = &total {
                top.push(("output_length_distribution".into(), histogram_json(total)));
            }
        }
        Domain::Diffusion => {
            top.push(("nickname".into(), cell(t, "nickname", first)));
            for &r in rows {
                let mut members: Vec<(String, PyJson)> = [
                    "avg_power_watts",
                    "batch_latency_s",
                    "batch_size",
                    "gpu_model",
                    "inference_steps",
                    "num_gpus",
                ]
                .map(|f| (f.to_string(), cell(t, f, r)))
                .into();
                members.push((
                    "parallelization".into(),
                    PyJson::object([
                        ("ring_degree", cell(t, "ring_degree", r)),
                        ("ulysses_degree", cell(t, "ulysses_degree", r)),
                    ]),
                ));
                members.extend(diffusion_media(t, r, task));
                configurations.push(PyJson::object(members));
            }
        }
    }
    top.push(("configurations".into(), PyJson::Array(configurations)));
    PyJson::object(top).dumps()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_file_names() {
        assert_eq!(
            model_file("black-forest-labs/FLUX.1-dev", "text-to-image"),
            "black-forest-labs__FLUX.1-dev__text-to-image.json"
        );
    }
}
