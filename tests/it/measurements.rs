//! Measurements (issue 18): the exact t quantile against scipy's values, the dataset's LLM runs in
//! the unified table equal to /v1/llm/runs, an import read back through the endpoints, and the
//! problems bad parameters get.

use mlenergy_server::engine::stats::{t_quantile, t_two_sided_p};
use mlenergy_server::peer::{self, ImportSpec};
use mlenergy_server::service::measurements::Measurements;

use crate::common::TestApp;

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

#[test]
fn t_quantiles_match_scipy() {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("data/t_quantiles.json")).expect("the table");
    let mut checked = 0;
    for (df, want) in doc["df_to_t"].as_object().unwrap() {
        let df: f64 = df.parse().unwrap();
        let got = t_quantile(0.975, df).unwrap();
        let want = want.as_f64().unwrap();
        assert!(close(got, want, 1e-12), "df {df}: {got} vs scipy {want}");
        checked += 1;
    }
    assert_eq!(checked, 199, "df 1..199, i.e. n = 2..200");
    for (df, want) in doc["fractional"].as_object().unwrap() {
        let df: f64 = df.parse().unwrap();
        let got = t_quantile(0.975, df).unwrap();
        assert!(
            close(got, want.as_f64().unwrap(), 1e-12),
            "df {df}: {got} vs {want}"
        );
    }
    for case in doc["sf2"].as_array().unwrap() {
        let (x, df, p) = (
            case["x"].as_f64().unwrap(),
            case["df"].as_f64().unwrap(),
            case["p"].as_f64().unwrap(),
        );
        let got = t_two_sided_p(x, df);
        assert!(
            (got - p).abs() <= 1e-12 * p.max(1e-300) || (got - p).abs() < 1e-15,
            "x {x} df {df}: {got} vs {p}"
        );
    }
}

#[tokio::test]
async fn the_datasets_llm_runs_in_the_unified_table_equal_the_run_list() {
    let app = TestApp::sample().await;
    let llm = app.get("/v1/llm/runs?stability=all").await.json();
    let unified = app
        .get("/v1/measurements/runs?source_kind=mlenergy_v3")
        .await
        .json();
    let ours = llm["runs"].as_array().unwrap();
    let theirs = unified["runs"].as_array().unwrap();
    assert_eq!(ours.len(), 838);
    assert_eq!(theirs.len(), ours.len());
    for (a, b) in ours.iter().zip(theirs) {
        assert_eq!(b["local_id"], a["run_id"]);
        assert_eq!(
            b["run_id"],
            format!("mlenergy_v3~{}", a["run_id"].as_str().unwrap())
        );
        assert_eq!(b["model"], a["model_id"]);
        assert_eq!(b["hardware"], a["gpu_model"]);
        assert_eq!(b["task"], a["task"]);
        assert_eq!(b["num_gpus"], a["num_gpus"]);
        assert_eq!(b["batch_value"], a["max_num_seqs"]);
        assert_eq!(b["energy_j"], a["steady_state_energy_joules"]);
        assert_eq!(b["window_s"], a["steady_state_duration_seconds"]);
        assert_eq!(b["energy_per_output_token_j"], a["energy_per_token_joules"]);
        assert_eq!(b["output_tps"], a["output_throughput_tokens_per_sec"]);
        assert_eq!(b["avg_power_w"], a["avg_power_watts"]);
        assert_eq!(b["is_stable"], a["is_stable"]);
        assert_eq!(
            (b["energy_scope"].as_str(), b["window"].as_str()),
            (Some("gpu"), Some("steady_state"))
        );
        assert_eq!(b["batch_semantics"], "max_num_seqs");
    }
}

/// A small LEM v1 results directory with two processes, written here.
fn lem_dir(root: &std::path::Path) {
    let proc_json = |k: u32, gpu: u32, energy: f64| {
        serde_json::json!({
            "schema_version": "2.0.0", "experiment_id": "0007", "backend": "pytorch",
            "process_index": k, "gpu_id": gpu, "gpu_name": "NVIDIA H100 80GB HBM3",
            "model_name": "m/x",
            "timestamps": {"start": "2026-01-01T00:00:00", "end": "2026-01-01T00:00:10.5", "duration_sec": 10.5},
            "inference_metrics": {"input_tokens": 100, "output_tokens": 50, "tokens_per_second": 5.0 + k as f64,
                "latency_measurements": {"ttft_ms": [10.0, 30.0], "itl_trimmed_ms": [1.0, 2.0, 3.0], "request_count": 2}},
            "energy_metrics": {"total_energy_j": energy + 5.0, "gpu_energy_j": energy, "cpu_energy_j": 4.0, "ram_energy_j": 1.0, "gpu_power_w": 100.0, "energy_per_token_j": 0.0},
            "effective_config": {"model_name": "m/x", "dataset": {"name": "d"}, "batching": {"batch_size": 4}},
            "surprise": {"kept": true}
        })
    };
    let raw = root.join("raw/0007");
    std::fs::create_dir_all(&raw).unwrap();
    std::fs::write(
        raw.join("process_0.json"),
        proc_json(0, 0, 300.0).to_string(),
    )
    .unwrap();
    std::fs::write(
        raw.join("process_1.json"),
        proc_json(1, 1, 500.0).to_string(),
    )
    .unwrap();
    std::fs::write(raw.join(".completed_0"), "").unwrap();
    // process 1's marker is missing: imported, with a warning.
}

/// The sample dataset served with the import directory `out` (as `serve --import out`).
async fn serve_import(out: &std::path::Path) -> TestApp {
    let frames = peer::load(&[ImportSpec::parse(&out.display().to_string())]).unwrap();
    TestApp::with_options(|s| s.measurements = Measurements::new(frames)).await
}

#[tokio::test]
async fn an_import_is_served_with_its_aggregation_and_warnings() {
    let dir = tempfile::tempdir().unwrap();
    lem_dir(dir.path());
    let out = dir.path().join("imported");
    let report = peer::import(
        &[ImportSpec::parse(&format!("lem:{}", dir.path().display()))],
        &out,
    )
    .unwrap();
    assert_eq!(report.runs, 1);
    let app = serve_import(&out).await;
    let body = app
        .get("/v1/measurements/runs?source_kind=lem_v1")
        .await
        .json();
    let run = &body["runs"][0];
    assert_eq!(run["local_id"], "0007");
    // §1.4: energies summed, throughput the mean per process times the processes.
    assert_eq!(run["energy_j"], 800.0);
    assert_eq!(run["energy_scope"], "gpu");
    assert_eq!(run["gpu_cpu_ram_energy_j"], 810.0);
    assert_eq!(run["output_tokens"], 100);
    assert_eq!(run["output_tps_per_process"], 5.5);
    assert_eq!(run["output_tps"], 11.0);
    assert_eq!(run["energy_per_output_token_j"], 8.0);
    assert_eq!(run["requests"], 4);
    assert_eq!(run["avg_power_w"], 200.0);
    // Pooled samples [10, 30, 10, 30] ms: mean 20 ms, median 20 ms.
    assert_eq!(run["ttft_mean_s"], 0.02);
    assert_eq!(run["ttft_p50_s"], 0.02);
    assert_eq!(run["wall_s"], 10.5);
    assert_eq!(run["is_stable"], true);
    let warnings = run["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains(".completed marker for process 1")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("energy_per_token_j is 0")),
        "{warnings:?}"
    );
    // Latency samples: 2 processes × (2 ttft + 3 trimmed ITL).
    let samples = app
        .get("/v1/measurements/latency_samples?format=csv")
        .await
        .text();
    assert_eq!(samples.lines().count(), 1 + 10);
    let sources = app.get("/v1/measurements/sources?kind=lem_v1").await.json();
    assert_eq!(sources["sources"][0]["files_read"], 2);
    // Importing the same directory again writes the same bytes (its import time is kept).
    let before = std::fs::read(out.join("sources.parquet")).unwrap();
    let again = peer::import(
        &[ImportSpec::parse(&format!("lem:{}", dir.path().display()))],
        &out,
    )
    .unwrap();
    assert_eq!(again.unchanged, 1);
    assert_eq!(std::fs::read(out.join("sources.parquet")).unwrap(), before);
    // A second source imported into the same directory: the first one's rows are kept (read back
    // from the files, text dictionaries included) ahead of the new ones, in every table.
    let other = tempfile::tempdir().unwrap();
    lem_dir(other.path());
    let third = peer::import(
        &[ImportSpec::parse(&format!(
            "lem:{}",
            other.path().display()
        ))],
        &out,
    )
    .unwrap();
    assert_eq!((third.runs, third.kept, third.unchanged), (1, 1, 0));
    let app = serve_import(&out).await;
    let runs = app
        .get("/v1/measurements/runs?source_kind=lem_v1&fields=run_id,source_id,energy_j")
        .await
        .json();
    let runs = runs["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_ne!(runs[0]["source_id"], runs[1]["source_id"]);
    assert!(runs.iter().all(|r| r["energy_j"] == 800.0));
    for r in runs {
        let id = r["run_id"].as_str().unwrap();
        let samples = app
            .get(&format!(
                "/v1/measurements/latency_samples?run_id={id}&format=csv"
            ))
            .await
            .text();
        assert_eq!(samples.lines().count(), 1 + 10, "{id}");
    }
}

#[tokio::test]
async fn bad_parameters_are_named() {
    let app = TestApp::sample().await;
    let p = app
        .get("/v1/measurements/runs?colour=red")
        .await
        .problem(400, "unknown_parameter");
    assert_eq!(p["parameter"], "colour");
    assert!(
        p["allowed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "energy_scope")
    );
    let p = app
        .get("/v1/measurements/runs?energy_j_min=lots")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "energy_j_min");
    let p = app
        .get("/v1/measurements/repeat-stats?metric=model")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "metric");
    let p = app
        .get("/v1/measurements/repeat-stats?trim=-1")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "trim");
    let p = app
        .get("/v1/measurements/compare?a.num_gpus=1,")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "a.num_gpus");
    let p = app
        .get("/v1/measurements/requests?ttft_s=")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "ttft_s");
    // A boolean filter's blank item names neither value (schemathesis found `b.is_stable=`
    // answered as a filter that matches nothing).
    for q in ["b.is_stable=", "b.is_stable=true,"] {
        let p = app
            .get(&format!("/v1/measurements/compare?metric=energy_j&{q}"))
            .await
            .problem(400, "invalid_parameter");
        assert_eq!(p["parameter"], "b.is_stable", "{q}");
        assert_eq!(p["allowed"], serde_json::json!(["true", "false"]));
    }
    // Numbers as the document writes them: at most 15 digits before the point.
    let p = app
        .get("/v1/measurements/latency_samples?process_index=9999999999999999")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "process_index");
    assert_eq!(
        app.get("/v1/measurements/repeat-stats?by=").await.status,
        200
    );
    app.get("/v1/measurements/runs/nope~1")
        .await
        .problem(404, "unknown_run");
    let r = app.get("/v1/measurements/nonsense").await;
    assert_eq!(r.status, 404);
}

/// A measurement's numeric filters read as the run lists' do (one reading, `numeric_filters_of`):
/// exact values and a range, each bound once; a range selects what its bounds say.
#[tokio::test]
async fn measurement_numeric_filters_read_as_the_run_lists_do() {
    let app = TestApp::sample().await;
    let all = app
        .get("/v1/measurements/runs?source_kind=mlenergy_v3")
        .await
        .json();
    let want = all["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| (2..=4).contains(&r["num_gpus"].as_i64().unwrap()))
        .count();
    let got = app
        .get("/v1/measurements/runs?source_kind=mlenergy_v3&num_gpus_min=2&num_gpus_max=4")
        .await
        .json();
    assert!(want > 0);
    assert_eq!(got["runs"].as_array().unwrap().len(), want);
    let run_list = app
        .get("/v1/llm/runs?stability=all&num_gpus_min=2&num_gpus_max=4")
        .await
        .json();
    assert_eq!(run_list["total"], want);
    // Exact values and a range both apply (the measurements' document lists them apart).
    let total = |q: &str| {
        let app = &app;
        let q = q.to_string();
        async move {
            app.get(&format!(
                "/v1/measurements/runs?source_kind=mlenergy_v3&{q}"
            ))
            .await
            .json()["runs"]
                .as_array()
                .unwrap()
                .len()
        }
    };
    let two = total("num_gpus=2").await;
    assert!(two > 0);
    assert_eq!(total("num_gpus=2&num_gpus_min=1").await, two);
    assert_eq!(total("num_gpus=2&num_gpus_min=4").await, 0);
    // A repeated parameter's values are one list, as the run lists read them.
    let two_or_four = total("num_gpus=2,4").await;
    assert!(two_or_four > two);
    assert_eq!(total("num_gpus=2&num_gpus=4").await, two_or_four);
    let p = app
        .get("/v1/measurements/runs?energy_j_min=1&energy_j_min=2")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "energy_j_min");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("takes a single value")
    );
}

#[tokio::test]
async fn repeat_stats_over_the_datasets_seeds() {
    let app = TestApp::sample().await;
    // Groups of the dataset's runs by model and GPU: the statistics of each group follow from its
    // rows (checked against a hand computation over the listed values for the first group).
    let body = app
        .get("/v1/measurements/repeat-stats?by=model,hardware&metric=avg_power_w&task=gpqa")
        .await
        .json();
    let g = &body["groups"][0];
    let key = &g["key"];
    let runs = app
        .get(&format!(
            "/v1/measurements/runs?task=gpqa&model={}&hardware={}&fields=avg_power_w",
            key["model"].as_str().unwrap(),
            key["hardware"].as_str().unwrap()
        ))
        .await
        .json();
    let v: Vec<f64> = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["avg_power_w"].as_f64())
        .collect();
    assert_eq!(g["n"].as_u64().unwrap() as usize, v.len());
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    assert!(close(g["mean"].as_f64().unwrap(), mean, 1e-12));
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt();
    assert!(close(g["std"].as_f64().unwrap(), sd, 1e-12));
    let t = t_quantile(0.975, (v.len() - 1) as f64).unwrap();
    assert!(close(
        g["ci95_hi"].as_f64().unwrap(),
        mean + t * sd / (v.len() as f64).sqrt(),
        1e-12
    ));
    // CSV carries one row per group.
    let csv = app.get("/v1/measurements/repeat-stats?by=model,hardware&metric=avg_power_w&task=gpqa&format=csv").await.text();
    assert_eq!(
        csv.lines().count(),
        1 + body["groups"].as_array().unwrap().len()
    );
}
