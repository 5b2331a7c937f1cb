//! Predictions (`/v1/{domain}/predict`) and their held-out figures (`/predict/quality`) over
//! data/sample: the figures as measured (the conformance suite recomputes them with numpy from the
//! method as documented), a sweep that gives back its measurement, and every bad input refused.

use serde_json::Value;

use crate::common::TestApp;

fn row<'a>(
    rows: &'a Value,
    field: &str,
    method: &str,
    scope: &str,
    value: Option<&str>,
) -> &'a Value {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["field"] == field
                && r["method"] == method
                && r["scope"] == scope
                && r["value"].as_str() == value
        })
        .unwrap_or_else(|| panic!("no row {field} {method} {scope} {value:?}"))
}

fn close(got: &Value, want: f64, tol: f64) {
    let g = got
        .as_f64()
        .unwrap_or_else(|| panic!("{got} is not a number"));
    assert!((g - want).abs() <= tol, "{g} is not {want} ± {tol}");
}

#[tokio::test]
async fn held_out_figures_of_the_embedded_snapshot() {
    let app = TestApp::sample().await;
    let rows = app.get("/v1/llm/predict/quality").await.json();
    // The regression, each run predicted without its model: 838 stable runs of 34 models.
    let r = row(&rows, "energy_per_token_joules", "regression", "all", None);
    assert_eq!(
        (r["runs"].as_u64(), r["models"].as_u64()),
        (Some(838), Some(34))
    );
    close(&r["median_rel_error"], 0.1709, 5e-4);
    close(&r["p90_rel_error"], 0.5278, 5e-4);
    close(&r["coverage80"], 0.7995, 5e-4);
    close(&r["coverage95"], 0.9439, 5e-4);
    // A run predicted from the rest of its model's sweep, between two measured batch sizes.
    let s = row(
        &rows,
        "energy_per_token_joules",
        "sweep_interpolated",
        "all",
        None,
    );
    assert_eq!(s["runs"], 610);
    close(&s["median_rel_error"], 0.0327, 5e-4);
    // EcoLogits' published formula on the same runs: no interval.
    let e = row(&rows, "energy_per_token_joules", "ecologits", "all", None);
    close(&e["median_rel_error"], 0.5419, 5e-4);
    close(&e["p90_rel_error"], 0.9442, 5e-4);
    assert!(e["coverage80"].is_null());
    // Per GPU model and per task.
    let h = row(
        &rows,
        "avg_power_watts",
        "regression",
        "gpu_model",
        Some("H100"),
    );
    assert_eq!(h["runs"], 405);
    let g = row(&rows, "median_itl_ms", "regression", "task", Some("gpqa"));
    assert_eq!(g["runs"], 187);
    // Diffusion: every run, 12 models.
    let d = app.get("/v1/diffusion/predict/quality").await.json();
    let r = row(
        &d,
        "energy_per_generation_joules",
        "regression",
        "all",
        None,
    );
    assert_eq!(
        (r["runs"].as_u64(), r["models"].as_u64()),
        (Some(1020), Some(12))
    );
}

#[tokio::test]
async fn a_measured_configuration_comes_back_from_its_sweep() {
    let app = TestApp::sample().await;
    let rows = app
        .get("/v1/llm/predict?model_id=Qwen/Qwen3-8B&task=gpqa&gpu_model=H100&num_gpus=1&max_num_seqs=8,24")
        .await
        .json();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let m = &rows[0];
    assert_eq!(m["method"], "sweep_interpolated");
    assert_eq!(m["measured_run_id"], "gpqa~Qwen--Qwen3-8B~H100~g1~b8~r1");
    assert_eq!(m["architecture"], "Dense Transformer");
    let (p, measured) = (
        m["energy_per_token_joules"].as_f64().unwrap(),
        m["measured_energy_per_token_joules"].as_f64().unwrap(),
    );
    assert!((p / measured - 1.0).abs() < 1e-12, "{p} vs {measured}");
    let (lo80, hi80) = (
        m["energy_per_token_joules_lo80"].as_f64().unwrap(),
        m["energy_per_token_joules_hi80"].as_f64().unwrap(),
    );
    let (lo95, hi95) = (
        m["energy_per_token_joules_lo95"].as_f64().unwrap(),
        m["energy_per_token_joules_hi95"].as_f64().unwrap(),
    );
    assert!(lo95 < lo80 && lo80 < p && p < hi80 && hi80 < hi95);
    // The interval is symmetric in log space.
    assert!(((p / lo80) / (hi80 / p) - 1.0).abs() < 1e-9);
    // Batch 24 was not run: interpolated between 16 and 32, no measured run.
    let u = &rows[1];
    assert_eq!(u["max_num_seqs"], 24);
    assert!(u["measured_run_id"].is_null());
    assert!(u["measured_energy_per_token_joules"].is_null());
    // A model given by its parameters: the regression, every default listed in the row.
    let n = app
        .get("/v1/llm/predict?model_id=me/mine&total_params_billions=20&activated_params_billions=3&task=gpqa&gpu_model=B200&num_gpus=1&max_num_seqs=64&format=json")
        .await
        .json();
    let n = &n[0];
    assert_eq!(n["method"], "regression");
    assert_eq!(n["architecture"], "MoE");
    assert_eq!(n["weight_precision"], "bfloat16");
    // Defaults: the model's measured tasks, GPUs, counts and batch sizes.
    let all = app
        .get("/v1/llm/predict?model_id=Qwen/Qwen3-8B")
        .await
        .json();
    assert!(all.as_array().unwrap().len() > 10);
    // Five formats.
    let csv = app
        .get("/v1/diffusion/predict?total_params_billions=2&task=text-to-image&gpu_model=H100&num_gpus=1&batch_size=1,2&format=csv")
        .await;
    assert_eq!(csv.status, 200);
    let text = csv.text();
    assert!(text.starts_with("model_id,total_params_billions,activated_params_billions,task,gpu_model,weight_precision,num_gpus,batch_size,method,energy_per_generation_joules,"));
    assert_eq!(text.lines().count(), 3);
}

#[tokio::test]
async fn bad_predictions_are_refused_naming_the_parameter() {
    let app = TestApp::sample().await;
    for (query, parameter, needle) in [
        ("task=gpqa", "total_params_billions", "give a model_id"),
        (
            "model_id=nobody/none",
            "total_params_billions",
            "not in the snapshot",
        ),
        (
            "model_id=Qwen/Qwen3-8B&gpu_model=H200",
            "gpu_model",
            "did you mean 'B200'",
        ),
        (
            "model_id=Qwen/Qwen3-8B&task=gpqq",
            "task",
            "did you mean 'gpqa'",
        ),
        (
            "total_params_billions=0",
            "total_params_billions",
            "greater than 0",
        ),
        (
            "total_params_billions=-3",
            "total_params_billions",
            "greater than 0",
        ),
        (
            "total_params_billions=5&activated_params_billions=6",
            "activated_params_billions",
            "more than",
        ),
        (
            "total_params_billions=5&weight_precision=int3",
            "weight_precision",
            "bfloat16",
        ),
        (
            "total_params_billions=5&architecture=RNN",
            "architecture",
            "MoE",
        ),
        (
            "model_id=Qwen/Qwen3-8B&num_gpus=0",
            "num_gpus",
            "greater than 0",
        ),
        (
            "model_id=Qwen/Qwen3-8B&max_num_seqs=x",
            "max_num_seqs",
            "number",
        ),
        (
            "model_id=Qwen/Qwen3-8B&batch_size=8",
            "batch_size",
            "max_num_seqs",
        ),
    ] {
        let p = app.get(&format!("/v1/llm/predict?{query}")).await.problem(
            400,
            if parameter == "batch_size" {
                "unknown_parameter"
            } else {
                "invalid_parameter"
            },
        );
        assert_eq!(p["parameter"], parameter, "{query}");
        assert!(
            p["detail"].as_str().unwrap().contains(needle),
            "{query}: {p}"
        );
    }
    // 10 batch sizes × 500 GPU counts × 2 GPU models × the model's tasks: over the limit.
    let counts: Vec<String> = (1..=500).map(|n| n.to_string()).collect();
    let p = app
        .get(&format!(
            "/v1/llm/predict?model_id=Qwen/Qwen3-8B&max_num_seqs=1,2,3,4,5,6,7,8,9,10&gpu_model=H100,B200&num_gpus={}",
            counts.join(",")
        ))
        .await
        .problem(400, "invalid_parameter");
    assert!(
        p["detail"].as_str().unwrap().contains("at most 10000"),
        "{p}"
    );
}

/// The measured run of one configuration: (energy per token, output throughput).
async fn measured(app: &TestApp, query: &str) -> (f64, f64) {
    let r = app
        .get(&format!(
            "/v1/llm/runs?{query}&fields=energy_per_token_joules,output_throughput_tokens_per_sec"
        ))
        .await
        .json();
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{query}");
    (
        runs[0]["energy_per_token_joules"].as_f64().unwrap(),
        runs[0]["output_throughput_tokens_per_sec"]
            .as_f64()
            .unwrap(),
    )
}

#[tokio::test]
async fn plans_worked_by_hand_from_measured_runs() {
    let app = TestApp::sample().await;
    // 1. 5,000 output tokens a second of chat on one B200 at batch 256, in France, at 0.20 a kWh.
    let (e, thr) = measured(
        &app,
        "model_id=Qwen/Qwen3-8B&task=lm-arena-chat&gpu_model=B200&num_gpus=1&max_num_seqs=256",
    )
    .await;
    let plan = app
        .get("/v1/llm/plan?model_id=Qwen/Qwen3-8B&task=lm-arena-chat&gpu_model=B200&num_gpus=1&max_num_seqs=256&output_tokens_per_s=5000&median_itl_ms_max=30&grid=FRA&price_per_kwh=0.2")
        .await
        .json();
    let rows = plan["configurations"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(
        r["measured_run_id"],
        "lm-arena-chat~Qwen--Qwen3-8B~B200~g1~b256~r2"
    );
    let replicas = (5000.0 / thr).ceil();
    assert_eq!(r["replicas"].as_f64(), Some(replicas));
    assert_eq!(r["gpus"].as_f64(), Some(replicas));
    let kwh = e * 5000.0 * 86_400.0 / 3.6e6;
    close(&r["kwh_per_day"], kwh, kwh * 1e-12);
    // France's yearly average, pinned: 44.18 gCO2e/kWh.
    assert_eq!(plan["grid"]["gco2_per_kwh"], 44.18);
    close(&r["kg_co2e_per_day"], kwh * 44.18 / 1000.0, 1e-12);
    close(&r["cost_per_day"], kwh * 0.2, 1e-12);
    close(&r["kwh_per_million_tokens"], e / 3.6, 1e-15);
    assert!(
        plan["assumptions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a.as_str().unwrap().starts_with("pue 1: GPU energy only"))
    );
    // 2. 2 million requests a day of 600 tokens on H100s, batch 64, with PUE 1.2 and a given grid.
    let (e, thr) = measured(
        &app,
        "model_id=Qwen/Qwen3-8B&task=gpqa&gpu_model=H100&num_gpus=1&max_num_seqs=64",
    )
    .await;
    let plan = app
        .get("/v1/llm/plan?model_id=Qwen/Qwen3-8B&task=gpqa&gpu_model=H100&num_gpus=1&max_num_seqs=64&requests_per_day=2000000&output_length=600&pue=1.2&gco2_per_kwh=400&p90_itl_ms_max=40")
        .await
        .json();
    let r = &plan["configurations"][0];
    let tokens = 2e6 * 600.0 / 86_400.0;
    assert_eq!(r["replicas"].as_f64(), Some((tokens / thr).ceil()));
    let kwh = e * tokens * 86_400.0 / 3.6e6 * 1.2;
    close(&r["kwh_per_day"], kwh, kwh * 1e-12);
    close(&r["kg_co2e_per_day"], kwh * 0.4, kwh * 1e-12);
    assert!(r["kwh_per_day_lo80"].as_f64().unwrap() < kwh);
    assert!(r["kwh_per_day_hi95"].as_f64().unwrap() > r["kwh_per_day_hi80"].as_f64().unwrap());
    // A target nobody meets: 200, no configuration, and why.
    let none = app
        .get("/v1/llm/plan?model_id=Qwen/Qwen3-8B&output_tokens_per_s=100&median_itl_ms_max=0.01")
        .await;
    assert_eq!(none.status, 200);
    let none = none.json();
    assert_eq!(none["configurations"].as_array().unwrap().len(), 0);
    assert!(
        none["reason"]
            .as_str()
            .unwrap()
            .contains("no configuration meets")
    );
    // Every configuration considered, cheapest first.
    let all = app
        .get("/v1/llm/plan?model_id=Qwen/Qwen3-8B&task=gpqa&output_tokens_per_s=1000&format=csv")
        .await
        .text();
    let kwh: Vec<f64> = all
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(13).unwrap().parse().unwrap())
        .collect();
    assert!(kwh.len() > 50 && kwh.windows(2).all(|w| w[0] <= w[1]));
}

#[tokio::test]
async fn bad_plans_are_refused_naming_the_parameter() {
    let app = TestApp::sample().await;
    let base = "/v1/llm/plan?model_id=Qwen/Qwen3-8B";
    for (query, parameter, needle) in [
        ("", "output_tokens_per_s", "the workload is needed"),
        (
            "&requests_per_day=10",
            "output_length",
            "needs output_length",
        ),
        (
            "&output_tokens_per_s=10&requests_per_day=5&output_length=3",
            "output_tokens_per_s",
            "once",
        ),
        (
            "&output_tokens_per_s=0",
            "output_tokens_per_s",
            "greater than 0",
        ),
        ("&output_tokens_per_s=10&grid=XX", "grid", "alpha-3"),
        (
            "&output_tokens_per_s=10&grid=FRA&gco2_per_kwh=5",
            "grid",
            "not both",
        ),
        (
            "&output_tokens_per_s=10&gco2_per_kwh=-1",
            "gco2_per_kwh",
            "0 or more",
        ),
        ("&output_tokens_per_s=10&pue=0.8", "pue", "at least 1"),
        (
            "&output_tokens_per_s=10&gpu_model=A100",
            "gpu_model",
            "not in the snapshot",
        ),
    ] {
        let p = app
            .get(&format!("{base}{query}"))
            .await
            .problem(400, "invalid_parameter");
        assert_eq!(p["parameter"], parameter, "{query}");
        assert!(
            p["detail"].as_str().unwrap().contains(needle),
            "{query}: {p}"
        );
    }
    // The grid codes are listed when one is not known; a few values pinned.
    let p = app
        .get(&format!("{base}&output_tokens_per_s=10&grid=Atlantis"))
        .await
        .problem(400, "invalid_parameter");
    assert!(p["allowed"].as_array().unwrap().iter().any(|c| c == "USA"));
    use mlenergy_server::engine::models::plan::grid_intensity;
    assert_eq!(grid_intensity("USA"), Some(("USA".into(), 383.55)));
    assert_eq!(grid_intensity("fra"), Some(("FRA".into(), 44.18)));
    assert_eq!(grid_intensity("WORLD"), Some(("WORLD".into(), 472.94)));
    assert_eq!(grid_intensity("DEU"), Some(("DEU".into(), 342.06)));
}

#[tokio::test]
async fn a_plan_drawn() {
    let app = TestApp::sample().await;
    let svg = app
        .get("/v1/llm/charts/plan.svg?model_id=Qwen/Qwen3-8B&task=lm-arena-chat&output_tokens_per_s=5000&median_itl_ms_max=30")
        .await;
    assert_eq!(svg.status, 200);
    assert_eq!(svg.content_type(), "image/svg+xml");
    let text = svg.text();
    // The chosen configuration is the plan's first row.
    let plan = app
        .get("/v1/llm/plan?model_id=Qwen/Qwen3-8B&task=lm-arena-chat&output_tokens_per_s=5000&median_itl_ms_max=30")
        .await
        .json();
    let best = &plan["configurations"][0];
    let chosen = format!("chosen: {} × {} GPU", best["replicas"], best["num_gpus"]);
    assert!(text.contains(&chosen), "{chosen} not in the chart");
    assert!(text.contains(&format!("at batch {}", best["max_num_seqs"])));
    assert!(text.contains("kWh a day") && text.contains("GPUs needed (log2 scale)"));
    // Nothing meets the target: the chart says why.
    let empty = app
        .get("/v1/llm/charts/plan.svg?model_id=Qwen/Qwen3-8B&output_tokens_per_s=100&median_itl_ms_max=0.01")
        .await;
    assert_eq!(empty.status, 200);
    assert!(
        empty
            .text()
            .contains("no configuration meets the latency target")
    );
    // The plan's parameters, refused as the plan refuses them; no format.
    let p = app
        .get("/v1/llm/charts/plan.svg?model_id=Qwen/Qwen3-8B&output_tokens_per_s=10&format=csv")
        .await
        .problem(400, "unknown_parameter");
    assert_eq!(p["parameter"], "format");
}
