//! Raw paths from the data never leave the dataset root: a summary whose `results_path` or
//! `prometheus_path` climbs out with `..`, is absolute, or goes through a symlink out of the root
//! loads, lists the path under `refused_paths`, and its raw endpoints answer 404
//! `raw_unavailable` without reading the file; for a local directory and an object-store source
//! (`file://`). The cache and hub cases are in `hub.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mlenergy_server::http::{AppState, Limits};
use mlenergy_server::server::app;
use mlenergy_server::service::Service;
use mlenergy_server::service::open::{SourceOptions, open_dataset};

use crate::common::{TestApp, sample_dir};

/// The one LLM run of data/sample with a raw file.
const REAL: &str = "llm/h100/current/run/mllm/video-chat/results/Qwen/Qwen3-VL-30B-A3B-Instruct/H100/num_gpus+2+max_num_seqs+8+num_request_repeats+1+dataset_split+train+num_requests+512+seed+48105/results.json";
const SECRET: &str = "this file is outside the dataset";

/// data/sample's LLM table with the raw paths of some rows replaced: (row, results_path,
/// prometheus_path).
pub(crate) fn rewrite_llm(dst: &Path, rows: &[(usize, &str, Option<&str>)]) {
    let edits: Vec<(&str, usize, Option<&str>)> = rows
        .iter()
        .flat_map(|&(row, r, p)| [("results_path", row, Some(r)), ("prometheus_path", row, p)])
        .collect();
    crate::common::rewrite_llm_strings(dst, &edits);
}

/// A dataset directory beside a directory `outside` it: the real raw run, a symlink `llm/escape`
/// to `outside` (which holds a copy of that results.json and a secret), and rows whose paths try
/// every way out.
struct Escapes {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    cache: PathBuf,
}

/// (row, results_path, prometheus_path) of the rows that try to leave the root.
const ESCAPES: [(usize, &str, Option<&str>); 5] = [
    (0, "../../../../../../../../etc/passwd", None),
    (1, "/etc/passwd", None),
    (2, "llm/escape/results.json", None),
    (3, REAL, Some("llm/escape/secret.txt")),
    (4, "llm\\..\\..\\outside\\results.json", None),
];

impl Escapes {
    fn new() -> Escapes {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        let data = tmp.path().join("data");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::copy(sample_dir().join(REAL), outside.join("results.json")).unwrap();
        std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
        let real = data.join(REAL);
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::copy(sample_dir().join(REAL), &real).unwrap();
        std::fs::copy(sample_dir().join("runs/diffusion.parquet"), {
            std::fs::create_dir_all(data.join("runs")).unwrap();
            data.join("runs/diffusion.parquet")
        })
        .unwrap();
        rewrite_llm(&data.join("runs/llm.parquet"), &ESCAPES);
        std::os::unix::fs::symlink(&outside, data.join("llm/escape")).unwrap();
        Escapes {
            cache: tmp.path().join("cache"),
            data,
            _tmp: tmp,
        }
    }

    async fn open(&self, spec: &str) -> TestApp {
        let opts = SourceOptions {
            hub: Default::default(),
            cache: self.cache.display().to_string(),
            catalog: None,
            max_bytes: 1 << 30,
            lease_ttl: std::time::Duration::from_secs(30),
        };
        let (dataset, catalog) = open_dataset(spec, &opts).await.expect("the dataset opens");
        let state = AppState::new(
            Arc::new(Service::new(dataset, catalog)),
            Limits {
                max_rows: 100_000,
                stream_bytes: Limits::STREAM_BYTES,
            },
            8 * 1024 * 1024,
        );
        TestApp { router: app(state) }
    }
}

/// Run id of each row of `ESCAPES` (by its paths), and of the real run.
async fn run_ids(app: &TestApp) -> (Vec<String>, String) {
    let r = app
        .get("/v1/llm/runs?stability=all&fields=run_id,results_path,prometheus_path")
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let runs = r.json()["runs"].as_array().unwrap().clone();
    let find = |res: &str, prom: Option<&str>| {
        let hits: Vec<&serde_json::Value> = runs
            .iter()
            .filter(|run| {
                run["results_path"].as_str() == Some(res) && run["prometheus_path"].as_str() == prom
            })
            .collect();
        assert_eq!(hits.len(), 1, "one run with {res}, {prom:?}");
        hits[0]["run_id"].as_str().unwrap().to_string()
    };
    let escapes = ESCAPES.iter().map(|&(_, r, p)| find(r, p)).collect();
    (escapes, find(REAL, None))
}

/// Every refused raw endpoint answers 404 raw_unavailable and never the outside file's bytes.
async fn assert_refused(app: &TestApp, id: &str, file: &str) -> String {
    let r = app.get(&format!("/v1/llm/runs/{id}/raw/{file}")).await;
    let p = r.problem(404, "raw_unavailable");
    assert!(!r.text().contains(SECRET) && !r.text().contains("root:"));
    p["detail"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_local_dataset_serves_no_path_out_of_its_root() {
    let dir = Escapes::new();
    let app = dir.open(dir.data.to_str().unwrap()).await;
    let (ids, real) = run_ids(&app).await;

    // Every way out is listed at load, with the row served and its reason.
    let refused = app.get("/v1/datasets").await.json()["refused_paths"].clone();
    let listed: Vec<(String, String, String)> = refused
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["run_id"].as_str().unwrap().to_string(),
                r["field"].as_str().unwrap().to_string(),
                r["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let reason = |id: &str, field: &str| {
        listed
            .iter()
            .find(|l| l.0 == id && l.1 == field)
            .unwrap_or_else(|| panic!("{id} {field} not listed in {refused}"))
            .2
            .clone()
    };
    assert_eq!(listed.len(), 5, "{refused}");
    assert!(reason(&ids[0], "results_path").contains("'..'"));
    assert!(reason(&ids[1], "results_path").contains("absolute"));
    assert!(reason(&ids[2], "results_path").contains("symbolic link"));
    assert!(reason(&ids[3], "prometheus_path").contains("symbolic link"));
    assert!(reason(&ids[4], "results_path").contains("'..'"));
    assert_eq!(refused[0]["domain"], "llm");

    // Relative escape, absolute path, symlink out (results and prometheus), backslash escape.
    for (id, file) in [
        (&ids[0], "results.json"),
        (&ids[1], "results.json"),
        (&ids[2], "results.json"),
        (&ids[3], "prometheus.json"),
        (&ids[4], "results.json"),
    ] {
        let detail = assert_refused(&app, id, file).await;
        assert!(detail.contains("is not served"), "{detail}");
    }
    // The derived endpoints read nothing either.
    let r = app
        .get(&format!("/v1/llm/runs/{}/output-lengths", ids[2]))
        .await;
    r.problem(404, "raw_unavailable");
    let r = app.get(&format!("/v1/llm/runs/{}/itl", ids[0])).await;
    r.problem(404, "raw_unavailable");

    // The row whose prometheus path escapes still has its results file; the real run answers.
    let r = app
        .get(&format!("/v1/llm/runs/{}/raw/results.json", ids[3]))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, std::fs::read(sample_dir().join(REAL)).unwrap());
    let r = app
        .get(&format!("/v1/llm/runs/{real}/output-lengths"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());

    // A symlink put in after the load is refused when the file is opened.
    let real_file = dir.data.join(REAL);
    std::fs::remove_file(&real_file).unwrap();
    std::os::unix::fs::symlink(dir.data.join("llm/escape/secret.txt"), &real_file).unwrap();
    let detail = assert_refused(&app, &real, "results.json").await;
    assert!(detail.contains("symbolic link"), "{detail}");
}

#[tokio::test]
async fn an_object_store_source_serves_no_key_out_of_its_root() {
    let dir = Escapes::new();
    let url = format!("file://{}", dir.data.display());
    let app = dir.open(&url).await;
    let (ids, real) = run_ids(&app).await;

    // The keys that leave the root lexically are refused at load; the symlinks, which only the
    // file system can tell, when fetched.
    let refused = app.get("/v1/datasets").await.json()["refused_paths"].clone();
    let listed: Vec<&str> = refused
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        [ids[0].as_str(), ids[1].as_str(), ids[4].as_str()],
        "{refused}"
    );
    for (id, file) in [
        (&ids[0], "results.json"),
        (&ids[1], "results.json"),
        (&ids[2], "results.json"),
        (&ids[3], "prometheus.json"),
        (&ids[4], "results.json"),
    ] {
        let detail = assert_refused(&app, id, file).await;
        assert!(detail.contains("not served"), "{detail}");
    }
    // Nothing of the outside reached the cache.
    for e in walkdir::WalkDir::new(&dir.cache).into_iter().flatten() {
        if e.file_type().is_file() && !e.file_name().to_string_lossy().starts_with("catalog.db") {
            assert_ne!(std::fs::read(e.path()).unwrap(), SECRET.as_bytes());
        }
    }
    let r = app
        .get(&format!("/v1/llm/runs/{real}/raw/results.json"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.body, std::fs::read(sample_dir().join(REAL)).unwrap());
}

/// A raw benchmark tree served with `--data raw:`: a run directory that is a symlink out of the
/// tree is not walked into; a prometheus.json and a model_info.json that are symlinks out are not
/// read, and their runs are listed under `skipped` with the reason.
#[tokio::test]
async fn a_raw_tree_reads_nothing_through_symlinks_out_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, outside) = (tmp.path().join("bench"), tmp.path().join("outside"));
    let results = std::fs::read(sample_dir().join(REAL)).unwrap();
    let run_dir = |batch: u32, model: &str| {
        root.join(format!(
            "llm/h100/current/run/mllm/video-chat/results/Qwen/{model}/H100/num_gpus+2+max_num_seqs+{batch}+num_request_repeats+1+dataset_split+train+num_requests+512+seed+48105"
        ))
    };
    let config = |model: &str| root.join(format!("configs/vllm/video-chat/Qwen/{model}"));
    let model = "Qwen3-VL-30B-A3B-Instruct";
    let write = |path: PathBuf, bytes: &[u8]| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    let model_info = br#"{"total_parameters_billion": 31.07, "active_parameters_billion": 3.3, "nickname": "Qwen 3 VL 30B"}"#;
    let mono = b"tensor-parallel-size: 2\n";
    write(config(model).join("model_info.json"), model_info);
    write(config(model).join("H100/monolithic.config.yaml"), mono);
    // Batch 8: an ordinary run.
    write(run_dir(8, model).join("results.json"), &results);
    // Batch 16: the run directory is a symlink to a directory outside the tree.
    write(outside.join("run16/results.json"), &results);
    std::fs::create_dir_all(run_dir(16, model).parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(outside.join("run16"), run_dir(16, model)).unwrap();
    // Batch 32: its prometheus.json is a symlink out.
    write(run_dir(32, model).join("results.json"), &results);
    write(
        outside.join("prometheus.json"),
        br#"{"steady_state_stats": {"vllm:num_requests_running": 32}}"#,
    );
    std::os::unix::fs::symlink(
        outside.join("prometheus.json"),
        run_dir(32, model).join("prometheus.json"),
    )
    .unwrap();
    // Another model whose model_info.json is a symlink out.
    let other = "Qwen3-VL-8B-Instruct";
    write(run_dir(8, other).join("results.json"), &results);
    write(outside.join("model_info.json"), model_info);
    std::fs::create_dir_all(config(other).join("H100")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("model_info.json"),
        config(other).join("model_info.json"),
    )
    .unwrap();
    write(config(other).join("H100/monolithic.config.yaml"), mono);

    let opts = SourceOptions {
        hub: Default::default(),
        cache: tmp.path().join("cache").display().to_string(),
        catalog: None,
        max_bytes: 1 << 30,
        lease_ttl: std::time::Duration::from_secs(30),
    };
    let (dataset, catalog) = open_dataset(&format!("raw:{}", root.display()), &opts)
        .await
        .expect("the raw tree loads");
    let skipped: Vec<(String, String)> = dataset.source.skipped.clone();
    let state = AppState::new(
        Arc::new(Service::new(dataset, catalog)),
        Limits {
            max_rows: 100_000,
            stream_bytes: Limits::STREAM_BYTES,
        },
        8 * 1024 * 1024,
    );
    let app = TestApp { router: app(state) };
    let reason = |needle: &str| {
        skipped
            .iter()
            .find(|(p, _)| p.contains(needle))
            .unwrap_or_else(|| panic!("nothing skipped at {needle}: {skipped:?}"))
            .1
            .clone()
    };
    // The symlinked run directory is not walked into at all (discovery follows no links).
    assert!(!skipped.iter().any(|(p, _)| p.contains("max_num_seqs+16")));
    let r32 = reason("max_num_seqs+32");
    assert!(
        r32.contains("prometheus.json is not read") && r32.contains("symbolic link"),
        "{r32}"
    );
    let other_reason = reason(other);
    assert!(
        other_reason.contains("model_info.json is not read"),
        "{other_reason}"
    );
    assert_eq!(skipped.len(), 2, "{skipped:?}");

    let runs = app
        .get("/v1/llm/runs?stability=all&fields=run_id,max_num_seqs,results_path")
        .await
        .json();
    let runs = runs["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "only the ordinary run has a row: {runs:?}");
    let id = runs[0]["run_id"].as_str().unwrap();
    let r = app
        .get(&format!("/v1/llm/runs/{id}/raw/results.json"))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, results);
}
