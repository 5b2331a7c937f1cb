//! Builds the embedded dataset `data/sample/` from the public run tables in
//! `shared/data/real` (the leaderboard reconstruction): `runs/llm.parquet` and
//! `runs/diffusion.parquet` with exactly the published schema (fields unknown for these runs are
//! null), rows in the service's default order, plus the per-run output-length histograms as a
//! side table `histograms/llm_output_lengths.parquet`. The output is byte-for-byte reproducible.

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value as Json;

use super::{Domain, EngineError, RunTable};
pub use crate::engine::arrow_conv::{write_parquet, write_parquet_with};
use crate::engine::fields::{FieldSpec, FieldType, published_fields};
use crate::engine::frame::{ColumnData, Value};

fn bad(msg: impl Into<String>) -> EngineError {
    EngineError::Load(msg.into())
}

/// Parse one JSONL table into published columns; also returns each row's source `run_id`.
fn read_jsonl(
    path: &Path,
    specs: &[FieldSpec],
) -> Result<(Vec<ColumnData>, Vec<String>), EngineError> {
    let mut cols: Vec<ColumnData> = specs.iter().map(|s| ColumnData::empty(s.ty)).collect();
    let mut ids = Vec::new();
    let file = fs::File::open(path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    for (lineno, line) in BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let row: serde_json::Map<String, Json> = serde_json::from_str(&line)
            .map_err(|e| bad(format!("{}:{}: {e}", path.display(), lineno + 1)))?;
        ids.push(
            row.get("run_id")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string(),
        );
        for (spec, col) in specs.iter().zip(cols.iter_mut()) {
            let v = row.get(spec.name).unwrap_or(&Json::Null);
            let wrong = || {
                bad(format!(
                    "{}:{}: field '{}' is {v}",
                    path.display(),
                    lineno + 1,
                    spec.name
                ))
            };
            match (col, spec.ty) {
                (ColumnData::Str(c), FieldType::String) => c.push(if v.is_null() {
                    None
                } else {
                    Some(Arc::from(v.as_str().ok_or_else(wrong)?))
                }),
                (ColumnData::Int(c), FieldType::Int64) => c.push(if v.is_null() {
                    None
                } else {
                    Some(v.as_i64().ok_or_else(wrong)?)
                }),
                (ColumnData::Float(c), FieldType::Double) => c.push(if v.is_null() {
                    None
                } else {
                    Some(v.as_f64().ok_or_else(wrong)?)
                }),
                (ColumnData::Bool(c), FieldType::Bool) => c.push(if v.is_null() {
                    None
                } else {
                    Some(v.as_bool().ok_or_else(wrong)?)
                }),
                _ => unreachable!("columns are created from the specs"),
            }
        }
    }
    Ok((cols, ids))
}

/// Build `out` from the shared tables directory `real` (`shared/data/real`).
pub fn build_sample(real: &Path, out: &Path) -> Result<(), EngineError> {
    let date = snapshot_date(real)?;
    let mut tables = Vec::new();
    let mut llm_id_map: HashMap<String, usize> = HashMap::new();
    for (domain, file) in [
        (Domain::Llm, "llm_runs.jsonl"),
        (Domain::Diffusion, "diffusion_runs.jsonl"),
    ] {
        let specs = published_fields(domain);
        let (cols, source_ids) = read_jsonl(&real.join(file), specs)?;
        let mut table = RunTable::from_published(domain, cols)?;
        add_generated_raw(&mut table, out)?;
        if domain == Domain::Llm {
            // Map the source ids (task|model|gpu|...) to rows of the sorted table through the
            // natural key, which both id schemes encode.
            let mut by_key: HashMap<String, usize> = HashMap::new();
            let key = |t: &RunTable, r: usize| {
                [
                    "task",
                    "model_id",
                    "gpu_model",
                    "num_gpus",
                    "max_num_seqs",
                    "num_request_repeats",
                ]
                .iter()
                .map(
                    |f| match t.column(t.field_index(f).expect("llm field")).get(r) {
                        Value::Str(s) => s.to_string(),
                        Value::Int(i) => i.to_string(),
                        _ => String::new(),
                    },
                )
                .collect::<Vec<_>>()
                .join("|")
            };
            for r in 0..table.len() {
                by_key.insert(key(&table, r), r);
            }
            for id in source_ids {
                let row = *by_key
                    .get(&id)
                    .ok_or_else(|| bad(format!("source run id '{id}' has no row")))?;
                llm_id_map.insert(id, row);
            }
        }
        write_parquet_with(
            &out.join("runs")
                .join(format!("{}.parquet", domain.as_str())),
            &table.published_frame(),
            &|name| table.is_nullable(name),
            &[("snapshot_date", date.clone())],
        )?;
        tables.push(table);
    }
    write_histograms(real, out, &tables[0], &llm_id_map)?;
    fs::write(out.join("README.md"), SAMPLE_README)?;
    Ok(())
}

/// The leaderboard snapshot's date: `source.last_updated` of the tables' `manifest.json`.
fn snapshot_date(real: &Path) -> Result<String, EngineError> {
    let path = real.join("manifest.json");
    let text = fs::read_to_string(&path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    let manifest: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    manifest["source"]["last_updated"]
        .as_str()
        .filter(|d| crate::store::hub::is_iso_date(d))
        .map(str::to_string)
        .ok_or_else(|| bad(format!("{}: no source.last_updated date", path.display())))
}

/// Runs that get a generated `results.json` (docs/raw-format.md §8, `rawtree::generate`), so the raw endpoints
/// answer on the embedded dataset: an LLM run on 2 GPUs, a diffusion image run and a video run.
/// Each is (field, value) pairs that pick one row.
const GENERATED_RAW: &[(Domain, &[(&str, &str)])] = &[
    (
        Domain::Llm,
        &[
            ("task", "video-chat"),
            ("model_id", "Qwen/Qwen3-VL-30B-A3B-Instruct"),
            ("gpu_model", "H100"),
            ("num_gpus", "2"),
            ("max_num_seqs", "8"),
        ],
    ),
    (
        Domain::Diffusion,
        &[
            ("task", "text-to-image"),
            (
                "model_id",
                "Efficient-Large-Model/SANA1.5_1.6B_1024px_diffusers",
            ),
            ("gpu_model", "B200"),
            ("ulysses_degree", "1"),
            ("ring_degree", "2"),
        ],
    ),
    (
        Domain::Diffusion,
        &[
            ("task", "text-to-video"),
            ("model_id", "Wan-AI/Wan2.1-T2V-1.3B-Diffusers"),
            ("gpu_model", "B200"),
            ("ulysses_degree", "1"),
            ("ring_degree", "2"),
        ],
    ),
];

/// Write the generated raw files of `table`'s domain under `out` and point `results_path` at them.
fn add_generated_raw(table: &mut RunTable, out: &Path) -> Result<(), EngineError> {
    for (n, (domain, picks)) in GENERATED_RAW.iter().enumerate() {
        if *domain != table.domain {
            continue;
        }
        let text = |t: &RunTable, r: usize, f: &str| match t
            .column(t.field_index(f).expect("field"))
            .get(r)
        {
            Value::Str(s) => s.to_string(),
            Value::Int(i) => i.to_string(),
            _ => String::new(),
        };
        let row = (0..table.len())
            .find(|&r| picks.iter().all(|(f, v)| text(table, r, f) == *v))
            .ok_or_else(|| bad(format!("no {domain} run matches {picks:?}")))?;
        let seed = n as u64 + 1;
        let rel = match domain {
            Domain::Llm => crate::rawtree::generate::llm_run(out, table, row, seed),
            Domain::Diffusion => crate::rawtree::generate::diffusion_run(out, table, row, seed),
        }
        .map_err(bad)?;
        let col = table.field_index("results_path").expect("results_path");
        if let ColumnData::Str(v) = &mut table.frame.columns[col].data {
            v[row] = Some(rel.to_string_lossy().replace('\\', "/").into());
        }
    }
    Ok(())
}

/// `histograms/llm_output_lengths.parquet`: one row per (run, bin), runs in default order.
fn write_histograms(
    real: &Path,
    out: &Path,
    llm: &RunTable,
    id_map: &HashMap<String, usize>,
) -> Result<(), EngineError> {
    use super::histograms::Bin;
    let path = real.join("llm_output_length_histogram_bins.csv");
    let mut rdr =
        csv::Reader::from_path(&path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    let mut bins = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| bad(format!("{}: {e}", path.display())))?;
        let get = |i: usize| rec.get(i).unwrap_or_default();
        let num = |i: usize| {
            get(i)
                .parse::<f64>()
                .map_err(|e| bad(format!("{}: '{}': {e}", path.display(), get(i))))
        };
        let int = |i: usize| {
            get(i)
                .parse::<i64>()
                .map_err(|e| bad(format!("{}: '{}': {e}", path.display(), get(i))))
        };
        let row = *id_map
            .get(get(0))
            .ok_or_else(|| bad(format!("histogram of unknown run '{}'", get(0))))?;
        bins.push(Bin {
            row,
            index: int(6)?,
            lo: num(7)?,
            hi: num(8)?,
            right_closed: get(9) == "true",
            count: int(10)?,
        });
    }
    super::histograms::write_histograms(out, llm, bins)
}

const SAMPLE_README: &str = "\
# data/sample: the embedded ML.ENERGY benchmark-v3 dataset

A compiled data directory (the layout of the Hugging Face dataset `ml-energy/benchmark-v3`) that
`mlenergy-server` serves when started without `--data`.

* `runs/llm.parquet`: the 838 stable LLM/MLLM runs of the ML.ENERGY leaderboard (snapshot 2026-02-16),
  with the published 37-column schema.
* `runs/diffusion.parquet`: the 1020 diffusion runs, with the published 23-column schema.
  Both carry the snapshot's date in their footer metadata (`snapshot_date`: 2026-02-16), the
  leaderboard's `last_updated` unless configured otherwise.
* `histograms/llm_output_lengths.parquet`: each LLM run's 50-bin output-length histogram, one row per
  (run, bin), keyed by the service's `run_id`: the leaderboard's model files are served from them.

Built from the run tables reconstructed from the leaderboard's published JSON
(`shared/data/real`) by `mlenergy-server sample --from ../shared/data/real --out data/sample`;
do not edit by hand. Fields the leaderboard does not publish are null: `seed`,
`steady_state_energy_joules`, `steady_state_duration_seconds`, `mean_itl_ms`, `results_path`
(but see below), `prometheus_path` (LLM) and `use_torch_compile` (diffusion). `num_request_repeats`
is inferred (completed requests / the task's request count).

Three runs have a generated `results.json` (no published raw files are included): the LLM run
video-chat Qwen3-VL-30B-A3B-Instruct on 2 x H100 at max_num_seqs 8, and the diffusion runs
SANA1.5 1.6B (text-to-image) and Wan2.1-T2V-1.3B (text-to-video) on 2 x B200 with ring degree 2.
They are written by the project's raw generator (`rawtree::generate`, docs/raw-format.md §8) to agree with the
runs' published aggregates (request count, output tokens, ITL median, throughput, energy per token,
power, batch latency), with a real-shaped power and temperature timeline, so the raw endpoints
(output lengths, ITL, timelines, raw passthrough) answer on `cargo run`. Their `results_path`
points at them; every other run's is null.

License: Apache-2.0, as the ML.ENERGY benchmark-v3 dataset it is derived from. Please cite
\"The ML.ENERGY Benchmark: Toward Automated Inference Energy Measurement and Optimization\"
(Chung et al., NeurIPS 2025 Datasets and Benchmarks) when using or redistributing it.
";
