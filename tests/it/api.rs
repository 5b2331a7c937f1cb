//! In-process tests of the run, group and catalog endpoints on the embedded dataset, with values
//! taken from the public run tables.

use crate::common::TestApp;
use serde_json::{Value, json};

fn run_ids(v: &Value) -> Vec<String> {
    crate::common::run_ids_in(v, "runs")
}

#[tokio::test]
async fn lists_filter_with_toolkit_semantics() {
    let app = TestApp::sample().await;
    let r = app.get("/v1/llm/runs?task=gpqa&gpu_model=B200&max_num_seqs_min=64&sort=energy_per_token_joules&limit=50").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.content_type(), "application/json");
    let v = r.json();
    assert_eq!(v["total"], 61);
    assert_eq!(v["count"], 50);
    assert_eq!(r.headers["x-total-count"], "61");
    let first = &v["runs"][0];
    assert_eq!(
        first["run_id"],
        "gpqa~openai--gpt-oss-20b~B200~g1~b4096~r21"
    );
    assert_eq!(
        first["energy_per_token_joules"],
        json!(0.028446538525400376)
    );
    for run in v["runs"].as_array().unwrap() {
        assert_eq!(run["task"], "gpqa");
        assert_eq!(run["gpu_model"], "B200");
        assert!(run["max_num_seqs"].as_i64().unwrap() >= 64);
    }
    let e: Vec<f64> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["energy_per_token_joules"].as_f64().unwrap())
        .collect();
    assert!(e.windows(2).all(|w| w[0] <= w[1]), "sorted ascending");

    // OR within a filter (repeated or comma-separated), AND across filters.
    let a = app
        .get("/v1/llm/runs?task=gpqa,lm-arena-chat&fields=task")
        .await
        .json();
    let b = app
        .get("/v1/llm/runs?task=gpqa&task=lm-arena-chat&fields=task")
        .await
        .json();
    assert_eq!(a["total"], 515);
    assert_eq!(run_ids(&a), run_ids(&b));
    assert_eq!(
        app.get("/v1/llm/runs?num_gpus_min=2&num_gpus_max=4")
            .await
            .json()["total"],
        301
    );
    assert_eq!(
        app.get("/v1/llm/runs?architecture=MoE&precision=fp8")
            .await
            .json()["total"],
        160
    );
    assert_eq!(
        app.get("/v1/diffusion/runs?batch_size=2,4").await.json()["total"],
        401
    );
    assert_eq!(
        app.get("/v1/diffusion/runs?batch_min=16").await.json()["total"],
        223
    );
    // Numeric equality is numeric, as in Python (16 == 16.0).
    assert_eq!(
        app.get("/v1/llm/runs?max_num_seqs=16.0").await.json()["total"],
        app.get("/v1/llm/runs?max_num_seqs=16").await.json()["total"]
    );
    // Empty results are a 200 with no runs.
    let none = app.get("/v1/llm/runs?task=nonexistent").await.json();
    assert_eq!(
        (
            none["total"].as_i64(),
            none["runs"].as_array().unwrap().len()
        ),
        (Some(0), 0)
    );
    // Stability: the sample holds stable runs only.
    assert_eq!(
        app.get("/v1/llm/runs?stability=unstable").await.json()["total"],
        0
    );
    assert_eq!(
        app.get("/v1/llm/runs?stability=all").await.json()["total"],
        838
    );
}

#[tokio::test]
async fn old_filter_names_are_aliases() {
    let app = TestApp::sample().await;
    let new = app
        .get("/v1/llm/runs?model_id=openai/gpt-oss-20b&gpu_model=H100&max_num_seqs=96")
        .await
        .json();
    let old = app
        .get("/v1/llm/runs?model=openai/gpt-oss-20b&gpu=H100&batch=96")
        .await
        .json();
    assert_eq!(run_ids(&new), run_ids(&old));
    // The published data has two runs here that differ only in num_request_repeats.
    assert_eq!(
        run_ids(&new),
        [
            "gpqa~openai--gpt-oss-20b~H100~g1~b96~r1",
            "gpqa~openai--gpt-oss-20b~H100~g1~b96~r2"
        ]
    );
    let d_new = app
        .get("/v1/diffusion/runs?batch_size=8&gpu_model=B200")
        .await
        .json();
    let d_old = app.get("/v1/diffusion/runs?batch=8&gpu=B200").await.json();
    assert_eq!(run_ids(&d_new), run_ids(&d_old));
}

#[tokio::test]
async fn default_order_is_the_toolkits_with_run_id_tiebreak() {
    let app = TestApp::sample().await;
    let v = app
        .get("/v1/llm/runs?fields=task,model_id,gpu_model,num_gpus,max_num_seqs")
        .await
        .json();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 838);
    let key = |r: &Value| {
        (
            r["task"].as_str().unwrap().to_string(),
            r["model_id"].as_str().unwrap().to_string(),
            r["gpu_model"].as_str().unwrap().to_string(),
            r["num_gpus"].as_i64().unwrap(),
            r["max_num_seqs"].as_i64().unwrap(),
            r["run_id"].as_str().unwrap().to_string(),
        )
    };
    assert!(runs.windows(2).all(|w| key(&w[0]) < key(&w[1])));
    assert_eq!(runs[0]["run_id"], "gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1");
}

#[tokio::test]
async fn sort_desc_multi_key_paging_and_projection() {
    let app = TestApp::sample().await;
    let all = app.get("/v1/diffusion/runs?sort=-batch_size,energy_per_generation_joules&fields=batch_size,energy_per_generation_joules").await.json();
    let runs = all["runs"].as_array().unwrap();
    assert_eq!(
        runs[0].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["run_id", "batch_size", "energy_per_generation_joules"]
    );
    for w in runs.windows(2) {
        let (b0, b1) = (
            w[0]["batch_size"].as_i64().unwrap(),
            w[1]["batch_size"].as_i64().unwrap(),
        );
        assert!(
            b0 > b1
                || (b0 == b1
                    && w[0]["energy_per_generation_joules"].as_f64()
                        <= w[1]["energy_per_generation_joules"].as_f64())
        );
    }
    // Pages concatenate to the whole list, and the next link leads on.
    let mut ids = Vec::new();
    let mut next = Some("/v1/diffusion/runs?sort=-batch_size,energy_per_generation_joules&fields=batch_size,energy_per_generation_joules&limit=400".to_string());
    let mut pages = 0;
    while let Some(url) = next {
        let r = app.get(&url).await;
        let v = r.json();
        ids.extend(run_ids(&v));
        next = v["next"].as_str().map(String::from);
        if let Some(n) = &next {
            assert_eq!(r.headers["link"], format!("<{n}>; rel=\"next\""));
        }
        pages += 1;
    }
    assert_eq!(pages, 3);
    assert_eq!(ids, run_ids(&all));
    let page = app
        .get("/v1/diffusion/runs?limit=5&offset=1018")
        .await
        .json();
    assert_eq!(
        (page["count"].as_i64(), page["next"].is_null()),
        (Some(2), true)
    );
}

#[tokio::test]
async fn one_run_by_id_has_every_field() {
    let app = TestApp::sample().await;
    let r = app
        .get("/v1/llm/runs/gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1")
        .await;
    assert_eq!(r.status, 200);
    let v = r.json();
    let obj = v.as_object().unwrap();
    // run_id, the 37 published fields and the derived energy_rating.
    assert_eq!(obj.len(), 39);
    assert_eq!(obj.keys().next().unwrap(), "run_id");
    assert_eq!(v["energy_per_token_joules"], json!(1.3662634337367148));
    assert_eq!(v["avg_batch_size"], json!(7.997300215982722));
    assert_eq!(v["seed"], Value::Null);
    assert_eq!(v["is_stable"], true);
    assert_eq!(v["unstable_reason"], "");
    let d = app.get("/v1/diffusion/runs/text-to-image~Efficient-Large-Model--SANA1.5_1.6B_1024px_diffusers~B200~g1~b1~1024x1024~s20~u1~r1").await.json();
    assert_eq!(d.as_object().unwrap().len(), 25);
    assert_eq!(d["energy_per_generation_joules"], json!(341.98237500339746));
    let p = app
        .get("/v1/llm/runs/gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1?fields=avg_power_watts")
        .await
        .json();
    assert_eq!(
        p,
        json!({"run_id": "gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1", "avg_power_watts": 319.7883095908309})
    );
    // Every listed id resolves to the same run.
    let list = app.get("/v1/llm/runs?task=video-chat&limit=5").await.json();
    for run in list["runs"].as_array().unwrap() {
        let one = app
            .get(&format!("/v1/llm/runs/{}", run["run_id"].as_str().unwrap()))
            .await
            .json();
        assert_eq!(&one, run);
    }
}

#[tokio::test]
async fn run_ids_are_unique_and_url_safe() {
    let app = TestApp::sample().await;
    for domain in ["llm", "diffusion"] {
        let url = if domain == "llm" {
            "/v1/llm/runs?fields=run_id&stability=all"
        } else {
            "/v1/diffusion/runs?fields=run_id"
        };
        let v = app.get(url).await.json();
        let ids = run_ids(&v);
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        assert!(ids.iter().all(|id| {
            id.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
        }));
    }
}

#[tokio::test]
async fn groups_have_toolkit_key_shapes_and_exact_aggregates() {
    let app = TestApp::sample().await;
    let v = app.get("/v1/llm/groups?by=task").await.json();
    let keys: Vec<(Value, i64)> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["key"].clone(), g["count"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        keys,
        [
            (json!("gpqa"), 187),
            (json!("image-chat"), 173),
            (json!("lm-arena-chat"), 328),
            (json!("sourcegraph-fim"), 50),
            (json!("video-chat"), 100)
        ]
    );
    let two = app
        .get("/v1/llm/groups?by=task,gpu_model&task=gpqa")
        .await
        .json();
    assert_eq!(two["groups"][0]["key"], json!(["gpqa", "B200"]));
    assert_eq!(two["groups"][0]["count"], 106);
    let none = app.get("/v1/diffusion/groups").await.json();
    assert_eq!(none["groups"], json!([{"key": [], "count": 1020}]));

    // numpy: mean 5.087021218309923, median 1.3030533240973625, sum 254.35106091549616.
    let s = app
        .get("/v1/llm/groups?by=task&task=sourcegraph-fim&agg=mean(energy_per_token_joules),median(energy_per_token_joules),sum(energy_per_token_joules),min(max_num_seqs),max(max_num_seqs),count(mean_itl_ms)")
        .await
        .json();
    let g = &s["groups"][0];
    assert_eq!(g["mean_energy_per_token_joules"], json!(5.087021218309923));
    assert_eq!(
        g["median_energy_per_token_joules"],
        json!(1.3030533240973625)
    );
    assert_eq!(g["sum_energy_per_token_joules"], json!(254.35106091549616));
    assert_eq!(g["count_mean_itl_ms"], 0);
    assert!(g["min_max_num_seqs"].is_i64() && g["max_num_seqs"].is_null());

    // argmin carries the whole winning run; mean over a null-only field is null.
    let a = app.get("/v1/llm/groups?by=gpu_model&task=gpqa&max_num_seqs_min=64&agg=argmin(energy_per_token_joules),mean(mean_itl_ms)").await.json();
    let b200 = a["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == "B200")
        .unwrap();
    assert_eq!(
        b200["argmin_energy_per_token_joules"]["run_id"],
        "gpqa~openai--gpt-oss-20b~B200~g1~b4096~r21"
    );
    assert_eq!(
        b200["argmin_energy_per_token_joules"]
            .as_object()
            .unwrap()
            .len(),
        39
    );
    assert_eq!(b200["mean_mean_itl_ms"], Value::Null);

    // A bare function applies to every numeric field.
    let all = app.get("/v1/diffusion/groups?by=task&agg=max").await.json();
    let g0 = all["groups"][0].as_object().unwrap();
    assert!(
        g0.contains_key("max_batch_latency_s")
            && g0.contains_key("max_num_frames")
            && !g0.contains_key("max_task")
    );
}

#[tokio::test]
async fn fields_and_datasets_describe_what_is_loaded() {
    let app = TestApp::sample().await;
    let f = app.get("/v1/llm/fields").await.json();
    let fields = f["fields"].as_array().unwrap();
    // run_id, the 37 published fields and the derived energy_rating.
    assert_eq!(fields.len(), 39);
    assert_eq!(fields[0]["name"], "run_id");
    let ept = fields
        .iter()
        .find(|x| x["name"] == "energy_per_token_joules")
        .unwrap();
    assert_eq!(
        (ept["type"].as_str(), ept["unit"].as_str()),
        (Some("double"), Some("J/token"))
    );
    let wp = fields
        .iter()
        .find(|x| x["name"] == "weight_precision")
        .unwrap();
    assert_eq!(wp["filters"], json!(["precision"]));
    let mns = fields.iter().find(|x| x["name"] == "max_num_seqs").unwrap();
    assert_eq!(
        mns["filters"],
        json!([
            "max_num_seqs",
            "max_num_seqs_min",
            "max_num_seqs_max",
            "batch",
            "batch_min",
            "batch_max"
        ])
    );
    assert_eq!(
        app.get("/v1/diffusion/fields").await.json()["fields"]
            .as_array()
            .unwrap()
            .len(),
        25
    );

    let d = app.get("/v1/datasets").await.json();
    let ds = d["datasets"].as_array().unwrap();
    assert_eq!(ds[0]["domain"], "llm");
    assert_eq!(
        (
            ds[0]["rows"].as_i64(),
            ds[0]["stable_rows"].as_i64(),
            ds[0]["unstable_rows"].as_i64()
        ),
        (Some(838), Some(838), Some(0))
    );
    assert_eq!(ds[1]["rows"], 1020);
    assert!(ds[0]["source"].as_str().unwrap().starts_with("local:"));
    assert!(ds[0]["loaded_at"].as_str().unwrap().ends_with('Z'));

    assert_eq!(app.get("/healthz").await.json(), json!({"status": "ok"}));
    assert_eq!(
        app.get("/readyz").await.json(),
        json!({"status": "ready", "llm_runs": 838, "diffusion_runs": 1020, "leaderboard": {
            "files": 70, "last_updated": "2026-02-16",
            "histograms": {"files": 50, "ready": 50, "pending": 0, "without": []},
            // No start-up task in-process: files are compressed on first request.
            "compressed": false
        }})
    );
}

#[tokio::test]
async fn docs_and_openapi_are_served() {
    let app = TestApp::sample().await;
    let spec = app.get("/openapi.json").await;
    assert_eq!(spec.status, 200);
    let spec = spec.json();
    assert_eq!(spec["openapi"], "3.1.0");
    for path in [
        "/v1/{domain}/runs",
        "/v1/{domain}/runs/{run_id}",
        "/v1/{domain}/groups",
        "/v1/{domain}/fields",
        "/v1/datasets",
        "/healthz",
        "/readyz",
    ] {
        assert!(spec["paths"][path]["get"].is_object(), "{path} documented");
    }
    let props = &spec["components"]["schemas"]["LlmRun"]["properties"];
    assert_eq!(props.as_object().unwrap().len(), 39);
    let docs = app.get("/docs/").await;
    assert_eq!(docs.status, 200);
    assert!(docs.text().contains("swagger"));
}

/// After the shutdown signal and the last answer, serving ends only once background work (the
/// persisting of derived data) has finished.
#[tokio::test]
async fn a_shutdown_waits_for_background_work() {
    use std::sync::atomic::{AtomicBool, Ordering};

    let dataset = mlenergy_server::service::open::load_compiled_dir(&crate::common::sample_dir())
        .await
        .unwrap();
    let catalog = mlenergy_server::store::catalog::Catalog::open("sqlite::memory:")
        .await
        .unwrap();
    let state = mlenergy_server::http::AppState::new(
        std::sync::Arc::new(mlenergy_server::service::Service::new(dataset, catalog)),
        mlenergy_server::http::Limits {
            max_rows: 100,
            stream_bytes: 1 << 20,
        },
        1 << 20,
    );
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    state.service.background().spawn_blocking(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        flag.store(true, Ordering::SeqCst);
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    mlenergy_server::server::serve_until(state, listener, async {})
        .await
        .unwrap();
    assert!(done.load(Ordering::SeqCst));
}

/// A shutdown turns /readyz into 503 at once, keeps answering for the drain delay, then closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_flips_when_a_shutdown_starts() {
    let dataset = mlenergy_server::service::open::load_compiled_dir(&crate::common::sample_dir())
        .await
        .unwrap();
    let catalog = mlenergy_server::store::catalog::Catalog::open("sqlite::memory:")
        .await
        .unwrap();
    let state = mlenergy_server::http::AppState::new(
        std::sync::Arc::new(mlenergy_server::service::Service::new(dataset, catalog)),
        mlenergy_server::http::Limits {
            max_rows: 100,
            stream_bytes: 1 << 20,
        },
        1 << 20,
    )
    .with_http(mlenergy_server::http::HttpOptions {
        drain_delay: std::time::Duration::from_millis(1500),
        ..Default::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(mlenergy_server::server::serve_until(
        state,
        listener,
        async move {
            let _ = stopped.await;
        },
    ));
    let client = reqwest::Client::new();
    let ready = client.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let body: Value = serde_json::from_slice(&ready.bytes().await.unwrap()).unwrap();
    assert_eq!(body["status"], "ready");
    stop.send(()).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // Draining: still answering, readiness says no.
    let draining = client.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(draining.status(), 503);
    assert_eq!(draining.headers()["cache-control"], "no-store");
    let body: Value = serde_json::from_slice(&draining.bytes().await.unwrap()).unwrap();
    assert_eq!(body["status"], "draining");
    let healthy = client.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(healthy.status(), 200);
    // Then it stops.
    tokio::time::timeout(std::time::Duration::from_secs(10), server)
        .await
        .expect("the server stops after the drain delay")
        .unwrap()
        .unwrap();
    assert!(
        reqwest::Client::new()
            .get(format!("{base}/readyz"))
            .send()
            .await
            .is_err()
    );
}
