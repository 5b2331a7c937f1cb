//! `/v1/{domain}/pareto` and `/v1/{domain}/best` on data/sample, against cases worked out by hand
//! from the published leaderboard files (../shared/data/leaderboard/tasks), and against the
//! browser's rules applied literally to every task file (contract §4.5): the same runs, in the
//! same order.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::TestApp;

const TASKS: [&str; 7] = [
    "gpqa",
    "lm-arena-chat",
    "sourcegraph-fim",
    "image-chat",
    "video-chat",
    "text-to-image",
    "text-to-video",
];

fn published(task: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/leaderboard/tasks")
        .join(format!("{task}.json"));
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    doc["configurations"].as_array().unwrap().clone()
}

fn diffusion(task: &str) -> bool {
    task.starts_with("text-to-")
}

/// (domain, latency key, energy key in the task file, energy field of the runs).
fn keys(task: &str) -> (&'static str, &'static str, &'static str, &'static str) {
    match task {
        "text-to-image" => (
            "diffusion",
            "batch_latency_s",
            "energy_per_image_joules",
            "energy_per_generation_joules",
        ),
        "text-to-video" => (
            "diffusion",
            "batch_latency_s",
            "energy_per_video_joules",
            "energy_per_generation_joules",
        ),
        _ => (
            "llm",
            "median_itl_ms",
            "energy_per_token_joules",
            "energy_per_token_joules",
        ),
    }
}

fn f(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} in {v}"))
}

/// A run as the test names it: model, GPU, GPU count, batch, energy.
fn ident(v: &Value, energy: &str) -> (String, String, i64, i64, f64) {
    let batch = if v.get("max_num_seqs").is_some() {
        &v["max_num_seqs"]
    } else {
        &v["batch_size"]
    };
    (
        v["model_id"].as_str().unwrap().to_string(),
        v["gpu_model"].as_str().unwrap().to_string(),
        v["num_gpus"].as_i64().unwrap(),
        batch.as_i64().unwrap(),
        f(v, energy),
    )
}

/// The leaderboard table's choice, literally: filter, per model the least energy (first on a
/// tie), ascending by energy.
fn browser_best(
    configs: &[Value],
    gpus: &[&str],
    lat: &str,
    en: &str,
    deadline: f64,
    budget: f64,
) -> Vec<(String, String, i64, i64, f64)> {
    let mut best: Vec<&Value> = Vec::new();
    for c in configs {
        if !gpus.contains(&c["gpu_model"].as_str().unwrap())
            || f(c, lat) > deadline
            || f(c, en) > budget
        {
            continue;
        }
        match best.iter_mut().find(|b| b["model_id"] == c["model_id"]) {
            Some(b) if f(c, en) < f(b, en) => *b = c,
            Some(_) => {}
            None => best.push(c),
        }
    }
    best.sort_by(|a, b| f(a, en).partial_cmp(&f(b, en)).unwrap());
    best.iter().map(|c| ident(c, en)).collect()
}

/// The modal's frontier, literally: configurations no other beats in both, sorted by latency.
fn browser_pareto(configs: &[&Value], lat: &str, en: &str) -> Vec<(String, String, i64, i64, f64)> {
    let mut out: Vec<&Value> = configs
        .iter()
        .copied()
        .filter(|c| {
            !configs
                .iter()
                .any(|o| f(o, lat) < f(c, lat) && f(o, en) < f(c, en))
        })
        .collect();
    out.sort_by(|a, b| f(a, lat).partial_cmp(&f(b, lat)).unwrap());
    out.iter().map(|c| ident(c, en)).collect()
}

fn runs(doc: &Value, energy: &str) -> Vec<(String, String, i64, i64, f64)> {
    doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| ident(r, energy))
        .collect()
}

fn ok(r: &crate::common::Reply) -> Value {
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

#[tokio::test]
async fn best_worked_by_hand() {
    let app = TestApp::sample().await;
    // gpqa on H100 at the default 500 ms: ten models; the four lowest, read off tasks/gpqa.json.
    let doc = ok(&app.get("/v1/llm/best?task=gpqa&gpu_model=H100").await);
    assert_eq!(doc["deadline"], 500.0);
    assert_eq!(doc["energy_budget"], Value::Null);
    assert_eq!(doc["latency"], "median_itl_ms");
    assert_eq!(doc["energy"], "energy_per_token_joules");
    assert_eq!(doc["per"], serde_json::json!(["model_id"]));
    assert_eq!(doc["count"], 10);
    let got = runs(&doc, "energy_per_token_joules");
    let want = [
        ("openai/gpt-oss-20b", 1, 1536, 0.04421621295946752),
        ("openai/gpt-oss-120b", 2, 2048, 0.08603986209171981),
        (
            "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
            1,
            256,
            0.10892531500222859,
        ),
        (
            "nvidia/NVIDIA-Nemotron-Nano-12B-v2",
            1,
            192,
            0.12537365876229262,
        ),
    ];
    for (g, (model, gpus, batch, energy)) in got.iter().zip(want) {
        assert_eq!(
            (g.0.as_str(), g.1.as_str(), g.2, g.3, g.4),
            (model, "H100", gpus, batch, energy)
        );
    }
    assert_eq!(doc["runs"][0]["median_itl_ms"], 102.49504250532482);

    // Fill-in-the-middle under 30 ms, both GPUs: three models qualify.
    let doc = ok(&app
        .get("/v1/llm/best?task=sourcegraph-fim&deadline=30")
        .await);
    assert_eq!(doc["deadline"], 30.0);
    let got = runs(&doc, "energy_per_token_joules");
    assert_eq!(
        got,
        vec![
            (
                "Qwen/Qwen3-Coder-30B-A3B-Instruct".into(),
                "B200".into(),
                1,
                256,
                0.14994026582568265
            ),
            (
                "Qwen/Qwen3-Coder-480B-A35B-Instruct".into(),
                "B200".into(),
                8,
                16,
                10.217131456725308
            ),
            (
                "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8".into(),
                "B200".into(),
                8,
                32,
                17.01469912238948
            ),
        ]
    );

    // Text to video at its default 300 s: every model, its cheapest video within the deadline.
    let doc = ok(&app.get("/v1/diffusion/best?task=text-to-video").await);
    assert_eq!(doc["deadline"], 300.0);
    assert_eq!(doc["latency"], "batch_latency_s");
    let got = runs(&doc, "energy_per_generation_joules");
    assert_eq!(
        got,
        vec![
            (
                "zai-org/CogVideoX-2b".into(),
                "B200".into(),
                1,
                8,
                26491.5947499983
            ),
            (
                "Wan-AI/Wan2.1-T2V-1.3B-Diffusers".into(),
                "B200".into(),
                1,
                4,
                61377.65450000018
            ),
            (
                "zai-org/CogVideoX1.5-5B".into(),
                "B200".into(),
                2,
                1,
                327419.6944999993
            ),
            (
                "Wan-AI/Wan2.1-T2V-14B-Diffusers".into(),
                "B200".into(),
                2,
                1,
                342623.05899995565
            ),
            (
                "tencent/HunyuanVideo".into(),
                "H100".into(),
                8,
                1,
                1331328.0294997692
            ),
        ]
    );

    // per= (empty): the one best run; no task filtered: no deadline.
    let doc = ok(&app.get("/v1/llm/best?per=&gpu_model=H100&task=gpqa").await);
    assert_eq!(doc["count"], 1);
    assert_eq!(doc["runs"][0]["model_id"], "openai/gpt-oss-20b");
    let doc = ok(&app.get("/v1/llm/best?task=gpqa,lm-arena-chat").await);
    assert_eq!(doc["deadline"], Value::Null);
    // A latency of another kind gets no default deadline.
    let doc = ok(&app
        .get("/v1/llm/best?task=gpqa&latency=steady_state_duration_seconds")
        .await);
    assert_eq!(doc["deadline"], Value::Null);
    let doc = ok(&app.get("/v1/llm/best?task=gpqa&latency=p90_itl_ms").await);
    assert_eq!(doc["deadline"], 500.0);
    // A budget below every run's energy leaves nothing.
    let doc = ok(&app.get("/v1/llm/best?task=gpqa&energy_budget=0.01").await);
    assert_eq!(doc["count"], 0);
    assert_eq!(doc["runs"], serde_json::json!([]));
}

#[tokio::test]
async fn pareto_worked_by_hand() {
    let app = TestApp::sample().await;
    // Qwen3-8B on gpqa (the model modal): six of its ten configurations, by median ITL.
    let doc = ok(&app
        .get("/v1/llm/pareto?task=gpqa&model_id=Qwen/Qwen3-8B")
        .await);
    assert_eq!(doc["x"], "median_itl_ms");
    assert_eq!(doc["y"], "energy_per_token_joules");
    assert_eq!(doc["per"], serde_json::json!([]));
    assert_eq!(doc["without_value"], 0);
    let got: Vec<(String, i64, i64)> = runs(&doc, "energy_per_token_joules")
        .into_iter()
        .map(|r| (r.1, r.2, r.3))
        .collect();
    let want: Vec<(String, i64, i64)> = [
        ("H100", 1, 8),
        ("H100", 1, 16),
        ("H100", 1, 32),
        ("H100", 1, 64),
        ("H100", 1, 96),
        ("B200", 1, 128),
    ]
    .iter()
    .map(|(g, n, b)| (g.to_string(), *n, *b))
    .collect();
    assert_eq!(got, want);
    assert_eq!(doc["runs"][0]["median_itl_ms"], 9.703529998660088);
    assert_eq!(
        doc["runs"][5]["energy_per_token_joules"],
        0.17316993503795244
    );

    // On B200 by P90 ITL (the chart's percentile): batches 8 to 128.
    let doc = ok(&app
        .get("/v1/llm/pareto?task=gpqa&model_id=Qwen/Qwen3-8B&gpu_model=B200&x=p90_itl_ms")
        .await);
    let batches: Vec<i64> = runs(&doc, "energy_per_token_joules")
        .iter()
        .map(|r| r.3)
        .collect();
    assert_eq!(batches, vec![8, 16, 32, 64, 128]);

    // FLUX.1-dev text to image: three of 104 configurations (a 4-GPU Ulysses run is fastest).
    let doc = ok(&app
        .get("/v1/diffusion/pareto?task=text-to-image&model_id=black-forest-labs/FLUX.1-dev")
        .await);
    assert_eq!(doc["x"], "batch_latency_s");
    assert_eq!(doc["y"], "energy_per_generation_joules");
    let got: Vec<(String, i64, i64, f64)> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["gpu_model"].as_str().unwrap().to_string(),
                r["num_gpus"].as_i64().unwrap(),
                r["ulysses_degree"].as_i64().unwrap(),
                f(r, "energy_per_generation_joules"),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("H100".into(), 4, 4, 9620.549250014126),
            ("B200".into(), 2, 1, 8077.348249986768),
            ("B200".into(), 1, 1, 6678.806750014424),
        ]
    );
}

/// Every task, every GPU selection of the filter chips, the default deadline and a budget: the
/// browser's choice; and each model's frontier (the comparison view's `per`).
#[tokio::test]
async fn every_task_as_the_browser_computes_it() {
    let app = TestApp::sample().await;
    for task in TASKS {
        let configs = published(task);
        let (domain, lat, en, field) = keys(task);
        let deadline = if diffusion(task) {
            if task == "text-to-image" { 30.0 } else { 300.0 }
        } else {
            500.0
        };
        let mut energies: Vec<f64> = configs.iter().map(|c| f(c, en)).collect();
        energies.sort_by(f64::total_cmp);
        let median = energies[energies.len() / 2];
        for gpus in [&["H100", "B200"][..], &["H100"], &["B200"]] {
            let gpu_q = gpus.join(",");
            for budget in [None, Some(median)] {
                let uri = match budget {
                    None => format!("/v1/{domain}/best?task={task}&gpu_model={gpu_q}"),
                    Some(b) => {
                        format!("/v1/{domain}/best?task={task}&gpu_model={gpu_q}&energy_budget={b}")
                    }
                };
                let doc = ok(&app.get(&uri).await);
                let want = browser_best(
                    &configs,
                    gpus,
                    lat,
                    en,
                    deadline,
                    budget.unwrap_or(f64::INFINITY),
                );
                assert_eq!(runs(&doc, field), want, "{uri}");
                assert!(!want.is_empty() || budget.is_some(), "{uri}");
            }
        }
        // One frontier per model, models in file order (the first configuration of each).
        let doc = ok(&app
            .get(&format!("/v1/{domain}/pareto?task={task}&per=model_id"))
            .await);
        let mut models: Vec<&str> = Vec::new();
        for c in &configs {
            let m = c["model_id"].as_str().unwrap();
            if !models.contains(&m) {
                models.push(m);
            }
        }
        let mut want = Vec::new();
        for m in &models {
            let mine: Vec<&Value> = configs.iter().filter(|c| c["model_id"] == *m).collect();
            want.extend(browser_pareto(&mine, lat, en));
        }
        assert_eq!(runs(&doc, field), want, "{task}");
        // The whole task's frontier.
        let doc = ok(&app.get(&format!("/v1/{domain}/pareto?task={task}")).await);
        let all: Vec<&Value> = configs.iter().collect();
        assert_eq!(runs(&doc, field), browser_pareto(&all, lat, en), "{task}");
    }
}

#[tokio::test]
async fn every_format_and_every_refusal() {
    let app = TestApp::sample().await;
    for path in ["pareto?task=gpqa&per=model_id", "best?task=gpqa"] {
        let json = ok(&app.get(&format!("/v1/llm/{path}")).await);
        let count = json["count"].as_u64().unwrap() as usize;
        assert!(count > 5);
        let csv = app
            .get(&format!(
                "/v1/llm/{path}&format=csv&fields=model_id,median_itl_ms"
            ))
            .await;
        assert_eq!(csv.status, 200);
        let text = csv.text();
        assert_eq!(text.lines().next(), Some("run_id,model_id,median_itl_ms"));
        assert_eq!(text.lines().count(), count + 1);
        assert_eq!(csv.headers["x-total-count"], count.to_string().as_str());
        let nd = app.get(&format!("/v1/llm/{path}&format=ndjson")).await;
        let rows: Vec<Value> = nd
            .text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), count);
        assert_eq!(rows[0], json["runs"][0]);
        for (format, magic) in [
            ("arrow", &b"\xff\xff\xff\xff"[..]),
            ("parquet", &b"PAR1"[..]),
        ] {
            let r = app.get(&format!("/v1/llm/{path}&format={format}")).await;
            assert_eq!(r.status, 200);
            assert!(r.body.starts_with(magic), "{format}");
        }
    }
    let cases = [
        ("/v1/llm/pareto?x=nope", 400, "unknown_field", "x"),
        ("/v1/llm/pareto?y=model_id", 400, "invalid_parameter", "y"),
        ("/v1/llm/pareto?per=nope", 400, "unknown_field", "per"),
        (
            "/v1/llm/pareto?deadline=3",
            400,
            "unknown_parameter",
            "deadline",
        ),
        (
            "/v1/llm/best?deadline=-1",
            400,
            "invalid_parameter",
            "deadline",
        ),
        (
            "/v1/llm/best?deadline=soon",
            400,
            "invalid_parameter",
            "deadline",
        ),
        (
            "/v1/llm/best?deadline=1,2",
            400,
            "invalid_parameter",
            "deadline",
        ),
        (
            "/v1/llm/best?energy_budget=inf",
            400,
            "invalid_parameter",
            "energy_budget",
        ),
        (
            "/v1/llm/best?latency=task",
            400,
            "invalid_parameter",
            "latency",
        ),
        (
            "/v1/diffusion/best?energy=energy_per_token_joules",
            400,
            "unknown_field",
            "energy",
        ),
        (
            "/v1/llm/best?batch_size=8",
            400,
            "unknown_parameter",
            "batch_size",
        ),
        ("/v1/gpu/best", 404, "unknown_domain", ""),
    ];
    for (uri, status, slug, parameter) in cases {
        let p = app.get(uri).await.problem(status, slug);
        if !parameter.is_empty() {
            assert_eq!(p["parameter"], parameter, "{uri}");
        }
    }
    // A mistyped filter value still answers, with its hint.
    let doc = ok(&app.get("/v1/llm/best?task=gpqa&gpu_model=h100").await);
    assert_eq!(doc["count"], 0);
    assert!(
        doc["warnings"][0]
            .as_str()
            .unwrap()
            .contains("did you mean 'H100'")
    );
}
