//! Per-run data that only the raw `results.json` holds (toolkit-behaviour.md §11.1, §11.2):
//! output lengths with the success rules, and ITL samples in seconds. A file is read once,
//! streamed through the lenient model (no DOM of the request list), and what the endpoints need is
//! kept in a compact `RunRaw`.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde_json::Value;

use serde::de::DeserializeOwned;

use super::pyjson::{self, LlmResults, Request, RequestList};

/// Why a run's raw data cannot be produced.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RawError {
    /// The file is not there.
    #[error("raw file not found: {0}")]
    NotFound(String),
    /// The file is there but is not JSON or cannot be read.
    #[error("cannot read {path}: {detail}")]
    Unreadable { path: String, detail: String },
    /// The content lacks something the computation requires (the toolkit's ValueError).
    #[error("{0}")]
    Content(String),
}

/// What the raw endpoints need of one LLM run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRaw {
    /// Per request: success flag and `output_len` (None when null or absent).
    pub requests: Vec<(bool, Option<Value>)>,
    /// `results` was a list.
    pub results_is_list: bool,
    /// Some request record is not an object (`req.get` raises in the toolkit).
    pub non_object: bool,
    /// Smoothed ITLs of the successful requests, or why the toolkit's computation raises.
    pub itl_pool: Result<Vec<f64>, String>,
}

impl RunRaw {
    /// Approximate memory, for cache weighing.
    pub fn weight(&self) -> usize {
        self.requests.len() * 40 + self.itl_pool.as_ref().map_or(0, |p| p.len() * 8) + 64
    }
}

/// Read a raw JSON file into `T` with bounded memory: a buffered reader and a typed target, so
/// keys `T` does not name are skipped while parsing and no DOM is built.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, RawError> {
    let file = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => RawError::NotFound(path.display().to_string()),
        _ => RawError::Unreadable {
            path: path.display().to_string(),
            detail: e.to_string(),
        },
    })?;
    read_json_from(file, &path.display().to_string())
}

/// `read_json` over any reader; `label` names the file in errors.
pub fn read_json_from<T: DeserializeOwned>(
    reader: impl std::io::Read,
    label: &str,
) -> Result<T, RawError> {
    serde_json::from_reader(BufReader::with_capacity(1 << 20, reader)).map_err(|e| {
        RawError::Unreadable {
            path: label.to_string(),
            detail: e.to_string(),
        }
    })
}

/// Read an LLM `results.json` (see `read_json`).
pub fn read_llm_results(path: &Path) -> Result<LlmResults, RawError> {
    read_json(path)
}

/// Extract the per-run data.
pub fn run_raw(results: LlmResults) -> RunRaw {
    let itl_pool = pyjson::itl_pool(&results.results);
    let (requests, results_is_list, non_object) = match results.results {
        RequestList::List(reqs) => {
            let non_object = reqs.iter().any(|r| matches!(r, Request::NotObject));
            let requests = reqs
                .into_iter()
                .map(|r| match r {
                    Request::Object {
                        success,
                        output_len,
                        ..
                    } => (success, output_len),
                    Request::NotObject => (false, None),
                })
                .collect();
            (requests, true, non_object)
        }
        RequestList::Missing | RequestList::NotAList => (Vec::new(), false, false),
    };
    RunRaw {
        requests,
        results_is_list,
        non_object,
        itl_pool,
    }
}

/// `LLMRun.output_lengths(include_unsuccessful=...)` (§11.1).
pub fn output_lengths(raw: &RunRaw, include_unsuccessful: bool) -> Result<Vec<i64>, RawError> {
    if !raw.results_is_list {
        return Err(RawError::Content("Missing required 'results' list".into()));
    }
    if raw.non_object {
        return Err(RawError::Content(
            "a request record in 'results' is not an object".into(),
        ));
    }
    let mut out = Vec::with_capacity(raw.requests.len());
    for (i, (success, len)) in raw.requests.iter().enumerate() {
        if !success && !include_unsuccessful {
            continue;
        }
        match len.as_ref().filter(|v| !v.is_null()) {
            None if *success => {
                return Err(RawError::Content(format!(
                    "Missing required 'output_len' in successful request {i}"
                )));
            }
            None => {}
            Some(v) => out.push(pyjson::py_int(v).map_err(|_| {
                RawError::Content(format!(
                    "'output_len' of request {i} is not an integer: {v}"
                ))
            })?),
        }
    }
    Ok(out)
}

/// `LLMRun.inter_token_latencies()` (§11.2): the smoothed pool, positive and finite values only.
pub fn itl_samples(raw: &RunRaw) -> Result<Vec<f64>, RawError> {
    let pool = raw
        .itl_pool
        .as_ref()
        .map_err(|e| RawError::Content(e.clone()))?;
    let v: Vec<f64> = pool
        .iter()
        .copied()
        .filter(|x| *x > 0.0 && x.is_finite())
        .collect();
    if v.is_empty() {
        return Err(RawError::Content("No valid ITL samples in run".into()));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> RunRaw {
        run_raw(serde_json::from_str(json).unwrap())
    }

    #[test]
    fn output_length_rules() {
        let r = raw(
            r#"{"results": [{"success": true, "output_len": 4}, {"success": false, "output_len": 0},
                                     {"success": false}, {"success": true, "output_len": 2.0}]}"#,
        );
        assert_eq!(output_lengths(&r, false), Ok(vec![4, 2]));
        assert_eq!(output_lengths(&r, true), Ok(vec![4, 0, 2]));
        let missing = raw(r#"{"results": [{"success": true}]}"#);
        assert!(
            matches!(output_lengths(&missing, false), Err(RawError::Content(m)) if m.contains("output_len"))
        );
        assert_eq!(
            output_lengths(&raw("{}"), false),
            Err(RawError::Content("Missing required 'results' list".into()))
        );
    }

    #[test]
    fn itl_samples_are_the_positive_finite_smoothed_pool() {
        let r = raw(
            r#"{"results": [{"success": true, "itl": [0.01, 0, 0, 0.02]}, {"success": false, "itl": [5]},
                                     {"success": true, "itl": [0.01, 0.01]}]}"#,
        );
        let third = 0.01 / 3.0;
        assert_eq!(
            itl_samples(&r),
            Ok(vec![third, third, third, 0.02, 0.01, 0.01])
        );
        let none = raw(r#"{"results": [{"success": false, "itl": [0.1]}]}"#);
        assert_eq!(
            itl_samples(&none),
            Err(RawError::Content("No valid ITL samples in run".into()))
        );
        let bad = raw(r#"{"results": [{"success": true, "itl": [null]}]}"#);
        assert!(itl_samples(&bad).is_err());
    }
}
