//! Finding the results files of raw benchmark roots (docs/toolkit.md §5.2, §13.1): the toolkit's
//! fast-path globs, the benchmark root inferred above a given root, deduplication across roots by
//! resolved path; and which files were passed over, and why.

use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::path::{ParsedPath, parse_results_path};

/// Tasks the toolkit's fast discovery path knows (§5.2).
const KNOWN_LLM_TASKS: [&str; 5] = [
    "gpqa",
    "lm-arena-chat",
    "sourcegraph-fim",
    "image-chat",
    "video-chat",
];
const KNOWN_DIFFUSION_TASKS: [&str; 2] = ["text-to-image", "text-to-video"];

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

pub(super) fn posix_rel(path: &Path, root: &Path) -> Option<String> {
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
