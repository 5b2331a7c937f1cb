//! The config files a row is derived from (docs/toolkit.md §5.1, §6, §7): model_info.json and
//! monolithic.config.yaml (read as PyYAML's safe_load reads them), found under the config
//! directories, each read once, never through a symlink out of its directory.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

use super::discover::RawRun;
use super::path::RawDomain;

/// YAML (as PyYAML's safe_load reads the monolithic configs) to JSON values.
fn yaml_to_json(y: &yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match y {
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(s) => s
            .parse::<f64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(s.clone())),
        Yaml::Boolean(b) => Value::from(*b),
        // YAML 1.1 booleans that PyYAML resolves and YAML 1.2 readers keep as strings.
        Yaml::String(s) => match s.as_str() {
            "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Value::from(true),
            "no" | "No" | "NO" | "off" | "Off" | "OFF" => Value::from(false),
            _ => Value::from(s.clone()),
        },
        Yaml::Array(a) => Value::Array(a.iter().map(yaml_to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) | Yaml::Real(s) => s.clone(),
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Boolean(b) => b.to_string(),
                        _ => String::new(),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Yaml::Null | Yaml::Alias(_) | Yaml::BadValue => Value::Null,
    }
}

/// `path` if it resolves inside `root` (symlinks followed); else why it is not read.
pub(super) fn confined(root: &Path, path: PathBuf) -> Result<PathBuf, String> {
    crate::store::confine::inside(root, &path)
        .map(|()| path.clone())
        .map_err(|e| format!("{} is not read: {e}", path.display()))
}

/// Small config files, read once per path.
#[derive(Default)]
pub(super) struct ConfigCache {
    json: Mutex<HashMap<PathBuf, Result<Value, String>>>,
    yaml: Mutex<HashMap<PathBuf, Result<Value, String>>>,
}

impl ConfigCache {
    pub(super) fn model_info(&self, path: &Path) -> Result<serde_json::Map<String, Value>, String> {
        let mut cache = self.json.lock().unwrap_or_else(|e| e.into_inner());
        let v = cache
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let text = fs::read_to_string(path)
                    .map_err(|_| format!("Missing required model_info.json: {}", path.display()))?;
                serde_json::from_str::<Value>(&text).map_err(|e| format!("{}: {e}", path.display()))
            })
            .clone()?;
        match v {
            Value::Object(m) => Ok(m),
            _ => Err(format!(
                "Invalid model_info.json (not object): {}",
                path.display()
            )),
        }
    }

    pub(super) fn monolithic(&self, path: &Path) -> Result<serde_json::Map<String, Value>, String> {
        let mut cache = self.yaml.lock().unwrap_or_else(|e| e.into_inner());
        let v = cache
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let text = fs::read_to_string(path).map_err(|_| {
                    format!(
                        "Missing required monolithic.config.yaml: {}",
                        path.display()
                    )
                })?;
                let docs = yaml_rust2::YamlLoader::load_from_str(&text)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                Ok(docs.first().map_or(Value::Null, yaml_to_json))
            })
            .clone()?;
        match v {
            Value::Object(m) => Ok(m),
            _ => Err(format!(
                "Invalid monolithic.config.yaml (not object): {}",
                path.display()
            )),
        }
    }
}

/// Auto-detect a config directory (§5.1): the first root with `configs/<sub>`.
pub(super) fn detect_config(roots: &[PathBuf], sub: &str) -> Option<PathBuf> {
    roots
        .iter()
        .map(|r| r.join("configs").join(sub))
        .find(|p| p.is_dir())
}

/// The config files a run's row is derived from.
pub(super) fn config_paths(
    run: &RawRun,
    llm_cfg: Option<&Path>,
    diff_cfg: Option<&Path>,
) -> Vec<PathBuf> {
    let p = &run.parsed;
    match (p.domain, llm_cfg, diff_cfg) {
        (RawDomain::Llm, Some(c), _) => {
            let model = c.join(&p.workload).join(&p.org).join(&p.model);
            vec![
                model.join("model_info.json"),
                model
                    .join(p.gpu_sku.as_deref().unwrap_or(""))
                    .join("monolithic.config.yaml"),
            ]
        }
        (RawDomain::Diffusion, _, Some(c)) => vec![
            c.join(&p.workload)
                .join(&p.org)
                .join(&p.model)
                .join("model_info.json"),
        ],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pycompat::value::py_int;

    #[test]
    fn config_values_follow_python_and_pyyaml() {
        assert_eq!(py_int(&Value::from(4)), Ok(4));
        assert_eq!(py_int(&Value::from(2.7)), Ok(2));
        assert_eq!(py_int(&Value::from(" 8 ")), Ok(8));
        assert_eq!(py_int(&Value::from(true)), Ok(1));
        assert!(py_int(&Value::Null).is_err());
        assert!(py_int(&Value::from("2.0")).is_err());
        let docs = yaml_rust2::YamlLoader::load_from_str(
            "enable-expert-parallel: yes\ndata-parallel-size: 0\ntensor-parallel-size: 2.0\nnote: hello\n",
        )
        .unwrap();
        let v = yaml_to_json(&docs[0]);
        assert_eq!(v["enable-expert-parallel"], Value::from(true));
        assert_eq!(v["data-parallel-size"], Value::from(0));
        assert_eq!(py_int(&v["tensor-parallel-size"]), Ok(2));
        assert_eq!(v["note"], Value::from("hello"));
    }

    #[test]
    fn parallelism_from_a_monolithic_config() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ConfigCache::default();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            fs::write(&p, text).unwrap();
            p
        };
        let ep_dp0 = cache
            .monolithic(&write(
                "a.yaml",
                "enable-expert-parallel: true\ndata-parallel-size: 0\n",
            ))
            .unwrap();
        assert_eq!(ep_dp0.get("data-parallel-size"), Some(&Value::from(0)));
        assert!(
            cache
                .monolithic(&write("b.yaml", "- 1\n- 2\n"))
                .unwrap_err()
                .contains("not object")
        );
        assert!(
            cache
                .monolithic(&dir.path().join("missing.yaml"))
                .unwrap_err()
                .starts_with("Missing required monolithic.config.yaml")
        );
        assert!(
            cache
                .model_info(&write("c.json", "[1]"))
                .unwrap_err()
                .contains("not object")
        );
    }
}
