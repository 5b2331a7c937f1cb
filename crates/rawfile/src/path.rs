//! Results-path grammar (docs/toolkit.md §3): the domain, GPU, task, model and run
//! configuration a `results.json` path encodes, parsed by position as the toolkit does, and the
//! toolkit's integer coercion of configuration values (Python `int(str)`). `rawtree` discovers
//! a tree's runs with it; it stands here, with the raw file reader, so that both are fuzzed alone.

use std::collections::BTreeMap;

use mlenergy_pycompat::value::coerce_int;

/// Why a path is not a results path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("Unrecognized results path: {0}")]
    Unrecognized(String),
    #[error("Unsupported domain={0}")]
    UnsupportedDomain(String),
    #[error("results path too short for its domain: {0}")]
    TooShort(String),
}

/// The two raw domains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawDomain {
    Llm,
    Diffusion,
}

/// A parsed results path (relative to the benchmark root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedPath {
    pub domain: RawDomain,
    /// Lower-case GPU family directory (`h100`, `b200`).
    pub gpu_family: String,
    /// Snapshot directory (`current`).
    pub snapshot: String,
    /// `llm`/`mllm` suite for LLM runs, always `diffusion` for diffusion runs.
    pub workload_family: String,
    /// The task (`gpqa`, `text-to-image`, ...).
    pub workload: String,
    pub org: String,
    pub model: String,
    /// The run directory's key/value pairs (LLM: plus `suite`).
    pub config: BTreeMap<String, String>,
    /// LLM only: the GPU SKU directory as written (`H100`), index 9 of the path.
    pub gpu_sku: Option<String>,
    pub relpath: String,
}

impl ParsedPath {
    /// `"<org>/<model>"`.
    pub fn model_id(&self) -> String {
        format!("{}/{}", self.org, self.model)
    }

    /// The toolkit's `gpu_model`: the SKU (LLM) or the GPU family, upper-cased.
    pub fn gpu_model(&self) -> String {
        self.gpu_sku
            .as_deref()
            .unwrap_or(&self.gpu_family)
            .to_uppercase()
    }

    /// A configuration value through Python's `int()`.
    pub fn config_int(&self, key: &str) -> Option<i64> {
        coerce_int(self.config.get(key).map(String::as_str))
    }
}

/// `k1+v1+k2+v2...`: consecutive pairs, a trailing odd token ignored, the last duplicate winning.
fn plus_kv(s: &str) -> BTreeMap<String, String> {
    let tokens: Vec<&str> = s.split('+').collect();
    tokens
        .chunks_exact(2)
        .map(|kv| (kv[0].to_string(), kv[1].to_string()))
        .collect()
}

/// `k1-v1+k2-v2...`: tokens without `-` skipped, each split at its first `-`.
fn dash_kv(s: &str) -> BTreeMap<String, String> {
    s.split('+')
        .filter_map(|t| t.split_once('-'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Parse a results path relative to the benchmark root (POSIX separators).
///
/// LLM: `llm/<gpu>/<snapshot>/run/<suite>/<task>/results/<org>/<model>/<SKU>/<cfg>/results.json`;
/// diffusion: `diffusion/<gpu>/<snapshot>/run/diffusion/<task>/<org>/<model>/<cfg>/results.json`.
/// The literal segments are not checked, as in the toolkit.
pub fn parse_results_path(rel: &str) -> Result<ParsedPath, PathError> {
    let parts: Vec<&str> = rel.split('/').collect();
    if parts.len() < 5 {
        return Err(PathError::Unrecognized(rel.to_string()));
    }
    let s = |i: usize| parts[i].to_string();
    match parts[0] {
        "llm" => {
            if parts.len() < 11 {
                return Err(PathError::TooShort(rel.to_string()));
            }
            let mut config = plus_kv(parts[10]);
            config.insert("suite".into(), s(4));
            Ok(ParsedPath {
                domain: RawDomain::Llm,
                gpu_family: s(1),
                snapshot: s(2),
                workload_family: s(4),
                workload: s(5),
                org: s(7),
                model: s(8),
                config,
                gpu_sku: Some(s(9)),
                relpath: rel.to_string(),
            })
        }
        "diffusion" => {
            if parts.len() < 9 {
                return Err(PathError::TooShort(rel.to_string()));
            }
            Ok(ParsedPath {
                domain: RawDomain::Diffusion,
                gpu_family: s(1),
                snapshot: s(2),
                workload_family: "diffusion".into(),
                workload: s(5),
                org: s(6),
                model: s(7),
                config: dash_kv(parts[8]),
                gpu_sku: None,
                relpath: rel.to_string(),
            })
        }
        other => Err(PathError::UnsupportedDomain(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llm_path_from_the_toolkit_tests() {
        let p = parse_results_path(
            "llm/h100/current/run/llm/lm-arena-chat/results/meta-llama/Llama-3.1-8B-Instruct/H100/num_gpus+1+max_num_seqs+64+num_request_repeats+1+dataset_split+train+num_requests+1024+seed+48105/results.json",
        )
        .unwrap();
        assert_eq!(p.domain, RawDomain::Llm);
        assert_eq!(
            (p.gpu_family.as_str(), p.snapshot.as_str()),
            ("h100", "current")
        );
        assert_eq!(
            (p.workload_family.as_str(), p.workload.as_str()),
            ("llm", "lm-arena-chat")
        );
        assert_eq!(p.model_id(), "meta-llama/Llama-3.1-8B-Instruct");
        assert_eq!(p.gpu_model(), "H100");
        let want: BTreeMap<String, String> = [
            ("num_gpus", "1"),
            ("max_num_seqs", "64"),
            ("num_request_repeats", "1"),
            ("dataset_split", "train"),
            ("num_requests", "1024"),
            ("seed", "48105"),
            ("suite", "llm"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(p.config, want);
        assert_eq!(p.config_int("max_num_seqs"), Some(64));
    }

    #[test]
    fn diffusion_path_from_the_toolkit_tests() {
        let p = parse_results_path(
            "diffusion/b200/current/run/diffusion/text-to-image/black-forest-labs/FLUX.1-dev/batch-4+size-1024x1024+steps-50+seed-48105+uly-1+ring-8+tc-False/results.json",
        )
        .unwrap();
        assert_eq!(p.domain, RawDomain::Diffusion);
        assert_eq!(
            (p.workload_family.as_str(), p.workload.as_str()),
            ("diffusion", "text-to-image")
        );
        assert_eq!(p.model_id(), "black-forest-labs/FLUX.1-dev");
        assert_eq!(p.gpu_model(), "B200");
        assert_eq!(p.config.get("size").map(String::as_str), Some("1024x1024"));
        assert_eq!(p.config.get("tc").map(String::as_str), Some("False"));
        assert_eq!(p.config_int("batch"), Some(4));
        assert_eq!(p.config.len(), 7);
    }

    #[test]
    fn grammar_edge_cases() {
        // Odd trailing token ignored, last duplicate wins, suite overrides the string's own.
        let p = parse_results_path("llm/h100/current/run/mllm/image-chat/results/o/m/H100/num_gpus+1+num_gpus+2+suite+x+dangling/results.json").unwrap();
        assert_eq!(p.config.get("num_gpus").map(String::as_str), Some("2"));
        assert_eq!(p.config.get("suite").map(String::as_str), Some("mllm"));
        assert!(!p.config.contains_key("dangling"));
        // Tokens without '-' are skipped; the split is at the first '-'.
        let d = parse_results_path("diffusion/h100/current/run/diffusion/text-to-video/o/m/batch-1+junk+size-480x832+note-a-b/results.json").unwrap();
        assert_eq!(d.config.get("note").map(String::as_str), Some("a-b"));
        assert!(!d.config.contains_key("junk"));
        assert_eq!(
            parse_results_path("llm/x/results.json"),
            Err(PathError::Unrecognized("llm/x/results.json".into()))
        );
        assert!(
            matches!(parse_results_path("audio/a/b/c/d/results.json"), Err(PathError::UnsupportedDomain(d)) if d == "audio")
        );
        assert!(matches!(
            parse_results_path("llm/h100/current/run/llm/gpqa/results.json"),
            Err(PathError::TooShort(_))
        ));
    }
}
