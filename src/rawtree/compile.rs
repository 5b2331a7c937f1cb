//! Writing a compiled data directory from a raw build (docs/toolkit.md §2, §13.1): the two
//! parquet tables, the leaderboard's output-length histograms of the stable LLM runs (so a server
//! of the directory, local or remote, reads no raw file for them), the raw
//! `results.json`/`prometheus.json` files and the config files under their relative paths, and a
//! dataset card.

use std::fs;
use std::path::{Path, PathBuf};

use super::{Built, histograms};
use crate::engine::EngineError;
use crate::rawtree::sample::write_parquet;

/// What `write_compiled` did.
#[derive(Debug, Default)]
pub struct CompileReport {
    /// Stable LLM runs whose output-length histograms were written, of all stable LLM runs.
    pub histogram_runs: usize,
    pub stable_llm_runs: usize,
    pub raw_files_copied: usize,
    pub raw_files_unchanged: usize,
    pub config_files: usize,
}

/// Copy `src` to `dst` unless `dst` already has the same size and modification time; keeps the
/// modification time. Returns whether a copy was made.
fn copy_if_changed(src: &Path, dst: &Path) -> std::io::Result<bool> {
    let meta = fs::metadata(src)?;
    if let Ok(d) = fs::metadata(dst)
        && d.len() == meta.len()
        && d.modified().ok() == meta.modified().ok()
    {
        return Ok(false);
    }
    if let Some(parent) = dst.parent() {
        fs::create_dir_all(parent)?;
    }
    let tmp = dst.with_extension("partial");
    fs::copy(src, &tmp)?;
    if let Ok(m) = meta.modified() {
        fs::File::options()
            .write(true)
            .open(&tmp)?
            .set_modified(m)?;
    }
    fs::rename(&tmp, dst)?;
    Ok(true)
}

/// Config files the builder publishes: `model_info.json` and `monolithic.config.yaml` (LLM),
/// `model_info.json` (diffusion), with their paths relative to the config directory.
fn config_files(dir: &Path, names: &[&str]) -> Vec<(PathBuf, PathBuf)> {
    let mut out: Vec<(PathBuf, PathBuf)> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && names.iter().any(|n| e.file_name() == *n))
        .filter_map(|e| {
            let rel = e.path().strip_prefix(dir).ok()?.to_path_buf();
            Some((e.into_path(), rel))
        })
        .collect();
    out.sort();
    out
}

/// Write the compiled directory `out` for `built`.
pub fn write_compiled(
    built: &Built,
    out: &Path,
    skip_raw: bool,
) -> Result<CompileReport, EngineError> {
    let mut report = CompileReport::default();
    write_parquet(
        &out.join("runs/llm.parquet"),
        &built.llm.published_frame(),
        &|n| built.llm.is_nullable(n),
    )?;
    write_parquet(
        &out.join("runs/diffusion.parquet"),
        &built.diffusion.published_frame(),
        &|n| built.diffusion.is_nullable(n),
    )?;
    let llm = &built.llm;
    let lengths: Vec<Option<Vec<i64>>> = match llm.field_index("results_path") {
        Some(col) => (0..llm.len())
            .map(|r| match llm.column(col).get(r) {
                crate::engine::frame::Value::Str(p) => built.output_lengths.get(p).cloned(),
                _ => None,
            })
            .collect(),
        None => vec![None; llm.len()],
    };
    let histograms = histograms::leaderboard_histograms(llm, &lengths);
    report.histogram_runs = histograms.len();
    report.stable_llm_runs = llm.stability_counts().0;
    histograms::write_histograms(out, llm, histograms::bins_of(llm, &histograms))?;
    if !skip_raw {
        for run in &built.runs {
            for src in [run.path.clone(), run.prometheus_path()] {
                if !src.is_file() {
                    continue;
                }
                let Ok(rel) = src.strip_prefix(&run.bench_root) else {
                    continue;
                };
                // A symlink out of the tree is not copied into the dataset (discover and the
                // row derivation refuse it too).
                if crate::store::confine::inside(&run.bench_root, &src).is_err() {
                    continue;
                }
                if copy_if_changed(&src, &out.join(rel))? {
                    report.raw_files_copied += 1;
                } else {
                    report.raw_files_unchanged += 1;
                }
            }
        }
    }
    for (dir, sub, names) in [
        (
            built.llm_config_dir.clone(),
            "configs/vllm",
            &["model_info.json", "monolithic.config.yaml"][..],
        ),
        (
            built.diffusion_config_dir.clone(),
            "configs/xdit",
            &["model_info.json"][..],
        ),
    ] {
        let Some(dir) = dir else { continue };
        for (src, rel) in config_files(&dir, names) {
            copy_if_changed(&src, &out.join(sub).join(rel))?;
            report.config_files += 1;
        }
    }
    let (stable, unstable) = built.llm.stability_counts();
    fs::write(
        out.join("README.md"),
        format!(
            "---\npretty_name: \"The ML.ENERGY Benchmark v3 Dataset\"\nlicense: apache-2.0\nconfigs:\n- config_name: llm\n  data_files:\n  - split: all\n    path: runs/llm.parquet\n  default: true\n- config_name: diffusion\n  data_files:\n  - split: all\n    path: runs/diffusion.parquet\n---\n\n\
# ML.ENERGY benchmark results\n\nCompiled by `mlenergy-server build` from raw benchmark results: LLM and diffusion inference runs with\n\
their measured GPU energy, throughput and latency.\n\n* `runs/llm.parquet`: {} LLM runs ({stable} stable, {unstable} unstable, see `is_stable` and `unstable_reason`).\n\
* `runs/diffusion.parquet`: {} diffusion runs.\n* `histograms/llm_output_lengths.parquet`: the output-length histogram of each stable LLM run ({} of {}), one row\n\
  per (run, bin), keyed by `run_id`: the leaderboard's model files are made from them.\n\
* `llm/`, `diffusion/`: the raw `results.json` and `prometheus.json` files{}.\n\
* `configs/`: the model_info.json and monolithic.config.yaml files the rows were derived from.\n\n\
License: Apache-2.0. Cite \"The ML.ENERGY Benchmark: Toward Automated Inference Energy Measurement and Optimization\"\n\
(Chung et al., NeurIPS 2025 Datasets and Benchmarks).\n",
            built.llm.len(),
            built.diffusion.len(),
            report.histogram_runs,
            report.stable_llm_runs,
            if skip_raw {
                " (not included in this build)"
            } else {
                ""
            },
        ),
    )?;
    Ok(report)
}
