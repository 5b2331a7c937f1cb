//! Turning a raw benchmark tree into run tables, as the toolkit's `from_raw_results(...,
//! stable_only=False)` does (docs/toolkit.md §5-§8): discovery, row derivation, the stability
//! checks in order, and the cascade across every root.
//!
//! Deliberate differences from the toolkit (its defects, §16): a file that cannot be parsed or
//! grouped is skipped and listed instead of aborting the whole load, files are discovered in
//! sorted order instead of file-system order, and rows are sorted with the service's run-id
//! tie-break.
//!
//! Layer: beside `engine` (whose `RunTable` it builds), below `service`; imports `engine`,
//! `rawfile` (reading results.json), `store` (path confinement) and `pycompat`. Reached from the
//! CLI's `build` and `sample` commands and from `service::open` for `--data raw:`.

pub mod compile;
pub mod configs;
pub mod discover;
pub mod generate;
pub mod histograms;
pub use mlenergy_rawfile::path;
pub mod results;
pub mod rows;
pub mod sample;
pub mod stability;

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use self::configs::{ConfigCache, config_paths, detect_config};
pub use self::discover::{RawRun, Skipped, discover, infer_benchmark_root};
use self::path::RawDomain;
use self::rows::{
    DiffusionRow, LlmOutcome, LlmRow, diffusion_columns, diffusion_row, llm_columns, llm_outcome,
    stored_path,
};
pub use self::stability::{
    BATCH_UTILIZATION_THRESHOLD, MIN_STEADY_DURATION_S, Stability, apply_cascade, stability_status,
};
use crate::engine::{Domain, EngineError, RunTable};

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
    /// The output lengths of each LLM row's successful requests, by its `results_path`, where
    /// they could be read (the leaderboard's histograms are made from them).
    pub output_lengths: HashMap<String, Vec<i64>>,
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

    let (llm_rows, output_lengths) = llm_rows(llm, &mut skipped);
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
        output_lengths,
    })
}

/// The LLM rows of the runs' outcomes, each run's stability settled over its group (the
/// cascade), with the output lengths of each by its stored results path; runs without a row are
/// added to `skipped` with why.
fn llm_rows(
    llm: Vec<(&RawRun, LlmOutcome)>,
    skipped: &mut Vec<Skipped>,
) -> (Vec<LlmRow>, HashMap<String, Vec<i64>>) {
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
    let mut output_lengths = HashMap::new();
    for ((run, outcome), st) in llm.into_iter().zip(status) {
        match outcome.row {
            Ok(Some(mut row)) => {
                row.stability = st;
                row.results_path = stored_path(&run.path, &run.bench_root);
                row.prometheus_path = stored_path(&run.prometheus_path(), &run.bench_root);
                if let Some(lengths) = outcome.output_lengths {
                    output_lengths.insert(row.results_path.clone(), lengths);
                }
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
    (llm_rows, output_lengths)
}
