//! What every reader shares: accelerator names, the peak-FLOPS table, time stamps, the derived
//! columns of a run, and the one source context (its id, files and warnings).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::schema::{RunRow, Text};

/// Normalised accelerator model from a reported name ("NVIDIA H100 80GB HBM3" → "H100").
pub fn accelerator(name: &str) -> String {
    let u = name.to_ascii_uppercase();
    for (needle, model) in [
        ("H100", "H100"),
        ("H200", "H200"),
        ("B200", "B200"),
        ("GB200", "B200"),
        ("A100", "A100"),
        ("L40S", "L40S"),
        ("4090", "RTX4090"),
        ("MI300X", "MI300X"),
    ] {
        if u.contains(needle) {
            return model.to_string();
        }
    }
    name.trim().to_string()
}

/// Dense bf16 peak of one accelerator in TFLOPS (IPW's table), from the reported name.
pub fn peak_tflops(raw_name: &str) -> Option<f64> {
    let u = raw_name.to_ascii_uppercase();
    if u.contains("H100") && u.contains("PCIE") {
        return Some(756.0);
    }
    Some(match accelerator(raw_name).as_str() {
        "H100" | "H200" => 989.5,
        "B200" => 2250.0,
        "A100" => 312.0,
        "L40S" => 183.0,
        "RTX4090" => 165.2,
        "MI300X" => 1307.4,
        _ => return None,
    })
}

/// Microseconds since the epoch of an ISO-8601 time stamp (with or without an offset; without one
/// it is taken as UTC, as Python's naive `isoformat()` writes it). Integer microseconds, so that a
/// difference of two stamps is exact (Python's `timedelta.total_seconds()`).
pub fn iso_micros(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp_micros());
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, fmt) {
            return Some(t.and_utc().timestamp_micros());
        }
    }
    None
}

/// Seconds between two stamps in microseconds.
pub fn span_s(from_us: i64, to_us: i64) -> f64 {
    (to_us - from_us) as f64 / 1e6
}

/// Quotient, absent when either side is or the divisor is 0.
pub fn div(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// Fill the derived columns of a run from its primitives (see the catalog's formulas); a column the
/// reader already set is kept.
pub fn derive(run: &mut RunRow, peak_name: Option<&str>) {
    run.token_basis = Some("output".into());
    let out = run.output_tokens.map(|t| t as f64);
    if run.energy_per_output_token_j.is_none() {
        run.energy_per_output_token_j = div(run.energy_j, out);
    }
    if run.tokens_per_joule.is_none() {
        run.tokens_per_joule = run
            .energy_per_output_token_j
            .filter(|e| *e != 0.0)
            .map(|e| 1.0 / e);
    }
    if run.energy_per_request_j.is_none() {
        run.energy_per_request_j = div(run.energy_j, run.requests.map(|r| r as f64));
    }
    if run.avg_power_w.is_none() {
        run.avg_power_w = div(run.energy_j, run.window_s);
    }
    if run.adjusted_energy_j.is_none()
        && let (Some(e), Some(b), Some(w)) = (run.energy_j, run.baseline_power_w, run.window_s)
    {
        run.adjusted_energy_j = Some(e - b * w);
    }
    if run.mfu.is_none()
        && let (Some(flops), Some(w), Some(g), Some(peak)) = (
            run.flops.filter(|f| *f > 0.0),
            run.window_s.filter(|w| *w > 0.0),
            run.num_gpus.filter(|g| *g > 0),
            peak_name.and_then(peak_tflops),
        )
    {
        run.mfu = Some(flops / w / (g as f64 * peak * 1e12));
    }
}

/// A JSON list of strings.
pub fn json_list(items: &[String]) -> Option<Text> {
    Some(serde_json::Value::from(items.to_vec()).to_string().into())
}

/// BLAKE3 of one file's bytes.
type FileDigest = [u8; 32];

/// The ids of one source's runs: `{source_id}~{local id}`.
#[derive(Debug, Clone)]
pub struct RunIds {
    pub kind: &'static str,
    pub source_id: Text,
}

impl RunIds {
    /// `{source_id}~{local}`.
    pub fn run_id(&self, local: &str) -> Text {
        self.namespaced(local)
    }

    /// The experiment of a source that numbers its own (LEM's base id, its counter "0042"
    /// repeats across machines): `{source_id}~{base}`, as §4.1 namespaces ids.
    pub fn experiment_id(&self, base: &str) -> Text {
        self.namespaced(base)
    }

    fn namespaced(&self, id: &str) -> Text {
        format!("{}~{id}", self.source_id).into()
    }
}

/// One source being imported: its id, the files read (for the content hash) and those that failed.
pub struct SourceCtx {
    pub ids: RunIds,
    pub root: PathBuf,
    /// The root with its symlinks resolved, when it exists (what every read is checked against).
    resolved_root: Option<PathBuf>,
    hasher: blake3::Hasher,
    pub files_read: i64,
    pub failed: Vec<(String, String)>,
    pub warnings: Vec<String>,
    pub tool_version: Option<String>,
}

impl SourceCtx {
    pub fn new(kind: &'static str, root: &Path) -> Self {
        let resolved_root = root.canonicalize().ok();
        let canonical = resolved_root.clone().unwrap_or_else(|| root.to_path_buf());
        let digest = Sha256::digest(canonical.to_string_lossy().as_bytes());
        SourceCtx {
            ids: RunIds {
                kind,
                source_id: format!("{kind}-{}", &hex::encode(digest)[..8]).into(),
            },
            root: root.to_path_buf(),
            resolved_root,
            hasher: blake3::Hasher::new(),
            files_read: 0,
            failed: Vec::new(),
            warnings: Vec::new(),
            tool_version: None,
        }
    }

    /// `{source_id}~{local}`.
    pub fn run_id(&self, local: &str) -> Text {
        self.ids.run_id(local)
    }

    fn rel(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
    }

    /// Read a file under the root (never one outside it: a symlink out of the root is refused),
    /// counting it into the content hash; a failure is recorded and answered with `None`.
    pub fn read(&mut self, path: &Path) -> Option<Vec<u8>> {
        let rel = self.rel(path);
        if let Err(e) = self.confined(path) {
            self.fail(&rel, format!("refused: {e}"));
            return None;
        }
        match std::fs::read(path) {
            Ok(bytes) => {
                self.count(&rel, blake3::hash(&bytes).as_bytes());
                Some(bytes)
            }
            Err(e) => {
                self.fail(&rel, format!("unreadable: {e}"));
                None
            }
        }
    }

    /// Read JSON files and hand each parsed document to `f`, on every core (a document is
    /// dropped as soon as `f` is done with it); then count the files into the content hash and
    /// record the failures in path order, as reading them one by one would.
    pub fn read_json_all<T: Send>(
        &mut self,
        paths: &[PathBuf],
        f: impl Fn(&Path, super::json::Node<'_>) -> T + Sync,
    ) -> Vec<Option<T>> {
        use rayon::prelude::*;
        let this = &*self;
        let loaded: Vec<Result<(FileDigest, Result<T, String>), String>> = paths
            .par_iter()
            .map(|path| {
                this.confined(path).map_err(|e| format!("refused: {e}"))?;
                let bytes = std::fs::read(path).map_err(|e| format!("unreadable: {e}"))?;
                let digest = *blake3::hash(&bytes).as_bytes();
                let done = super::json::parse(&bytes).map(|doc| f(path, doc));
                Ok((digest, done))
            })
            .collect();
        paths
            .iter()
            .zip(loaded)
            .map(|(path, r)| {
                let rel = self.rel(path);
                match r {
                    Ok((digest, done)) => {
                        self.count(&rel, &digest);
                        done.map_err(|e| self.fail(&rel, e)).ok()
                    }
                    Err(e) => {
                        self.fail(&rel, e);
                        None
                    }
                }
            })
            .collect()
    }

    /// Whether `path` (symlinks resolved) is inside the source's root.
    fn confined(&self, path: &Path) -> Result<(), mlenergy_rawfile::confine::Escape> {
        match &self.resolved_root {
            Some(root) => mlenergy_rawfile::confine::inside_resolved(root, path),
            None => Ok(()),
        }
    }

    /// A file read, into the content hash: its path and the BLAKE3 of its bytes (hashed where it
    /// was read, on any core).
    fn count(&mut self, rel: &str, digest: &FileDigest) {
        self.hasher.update(rel.as_bytes());
        self.hasher.update(&[0]);
        self.hasher.update(digest);
        self.files_read += 1;
    }

    /// Read and parse a JSON file; a failure is recorded.
    pub fn read_json(&mut self, path: &Path) -> Option<super::json::Node<'static>> {
        let bytes = self.read(path)?;
        match super::json::parse(&bytes) {
            Ok(v) => Some(v.into_owned()),
            Err(e) => {
                let rel = self.rel(path);
                self.fail(&rel, e);
                None
            }
        }
    }

    pub fn fail(&mut self, rel: &str, reason: String) {
        self.failed.push((rel.to_string(), reason));
    }

    pub fn fail_path(&mut self, path: &Path, reason: String) {
        let rel = self.rel(path);
        self.fail(&rel, reason);
    }

    /// The content hash of every file read so far.
    pub fn content_hash(&self) -> String {
        self.hasher.finalize().to_hex().to_string()
    }
}

/// The entries of a directory for which `keep` holds, sorted by path (none when it cannot be read).
pub fn entries(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| keep(p))
        .collect();
    v.sort();
    v
}

/// Whether a path's file name satisfies `f`.
pub fn name_is(p: &Path, f: impl Fn(&str) -> bool) -> bool {
    p.file_name().and_then(|s| s.to_str()).is_some_and(f)
}

/// A directory's own name (the local id of a run directory), or `default`.
pub fn dir_name(dir: &Path, default: &str) -> String {
    dir.file_name()
        .and_then(|s| s.to_str())
        .unwrap_or(default)
        .to_string()
}

impl SourceCtx {
    /// `dir/name` parsed when the file exists (a failure is recorded), else `None`.
    pub fn read_json_if_present(
        &mut self,
        dir: &Path,
        name: &str,
    ) -> Option<super::json::Node<'static>> {
        let path = dir.join(name);
        if path.is_file() {
            self.read_json(&path)
        } else {
            None
        }
    }
}
