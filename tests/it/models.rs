//! The fitted-model endpoints on real answers: the dataset fits (values, formats, caching) and the
//! model endpoints' refusals of bad input, each a problem+json naming what is wrong.

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use tower::ServiceExt;

use crate::common::{Reply, TestApp};

async fn post(app: &TestApp, path: &str, body: Body) -> Reply {
    let req = Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    let resp = app.router.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

async fn post_json(app: &TestApp, path: &str, body: &str) -> Reply {
    post(app, path, Body::from(body.to_string())).await
}

#[tokio::test]
async fn sweep_fits_of_the_dataset() {
    let app = TestApp::sample().await;
    let uri = "/v1/llm/fits/logistic?model_id=Qwen/Qwen3-14B&gpu=B200&task=gpqa&y=avg_power_watts,median_itl_ms&predict=96,8";
    let r = app.get(uri).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let rows = r.json();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let power = &rows[0];
    assert_eq!(power["y"], "avg_power_watts");
    assert_eq!(power["model_id"], "Qwen/Qwen3-14B");
    assert_eq!(
        power["batch_sizes"],
        serde_json::json!([8, 16, 32, 64, 128])
    );
    assert_eq!(power["n"], 5);
    assert_eq!(power["degenerate"], false);
    assert!(power["r2"].as_f64().unwrap() > 0.9);
    // A prediction at a measured batch size is the curve there, near the measured median.
    let at8 = power["pred_8"].as_f64().unwrap();
    let l = power["L"].as_f64().unwrap();
    let (x0, k, b0) = (
        power["x0"].as_f64().unwrap(),
        power["k"].as_f64().unwrap(),
        power["b0"].as_f64().unwrap(),
    );
    assert_eq!(at8, b0 + l / (1.0 + (-k * (3.0 - x0)).exp()));
    assert!(power["pred_96"].as_f64().unwrap() > at8);
    assert_eq!(rows[1]["y"], "median_itl_ms");
    // Every format; the same fits.
    let csv = app.get(&format!("{uri}&format=csv")).await.text();
    assert!(csv.starts_with("model_id,task,gpu_model,num_gpus,y,L,x0,k,b0,n,batch_sizes,mse,r2,max_rel_residual,degenerate,pred_96,pred_8\n"), "{csv}");
    assert_eq!(csv.lines().count(), 3);
    for format in ["ndjson", "arrow", "parquet"] {
        assert_eq!(app.get(&format!("{uri}&format={format}")).await.status, 200);
    }
    // One batch size: the toolkit's degenerate fit, flagged, not an error.
    let r = app
        .get("/v1/diffusion/fits/logistic?batch_size=1&y=avg_power_watts&by=model_id")
        .await;
    let rows = r.json();
    let first = &rows[0];
    assert_eq!(
        (first["n"].as_i64(), first["degenerate"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(first["L"], 0.0);
}

#[tokio::test]
async fn bad_sweep_parameters_are_named() {
    let app = TestApp::sample().await;
    let p = app
        .get("/v1/llm/fits/logistic?y=task")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "y");
    assert!(
        p["allowed"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("avg_power_watts"))
    );
    let p = app
        .get("/v1/llm/fits/logistic?y=watts")
        .await
        .problem(400, "unknown_field");
    assert_eq!(p["parameter"], "y");
    let p = app
        .get("/v1/llm/fits/logistic?predict=0")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "predict");
    let p = app
        .get("/v1/llm/fits/logistic?predict=-8")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "predict");
    let run = "video-chat~Qwen--Qwen3-VL-30B-A3B-Instruct~H100~g2~b8~r1";
    let p = app
        .get(&format!("/v1/llm/runs/{run}/itl-mixture?max_samples=0"))
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "max_samples");
    app.get("/v1/llm/fits/itl-mixture?task=gpqa")
        .await
        .problem(404, "raw_unavailable");
}

#[tokio::test]
async fn the_mixture_of_a_run() {
    let app = TestApp::sample().await;
    let run = "video-chat~Qwen--Qwen3-VL-30B-A3B-Instruct~H100~g2~b8~r1";
    let a = app
        .get(&format!("/v1/llm/runs/{run}/itl-mixture"))
        .await
        .json();
    let row = &a[0];
    assert_eq!(row["run_id"], run);
    assert_eq!(
        (row["n"].as_i64(), row["n_samples"].as_i64()),
        (Some(2048), Some(117_446))
    );
    let pi = row["pi_steady"].as_f64().unwrap() + row["pi_stall"].as_f64().unwrap();
    assert!((pi - 1.0).abs() < 1e-12);
    // Seeded: the same seed gives the same fit, another seed another subsample.
    let again = app
        .get(&format!(
            "/v1/llm/runs/{run}/itl-mixture?seed=0&max_samples=2048"
        ))
        .await
        .json();
    assert_eq!(again, a);
    let other = app
        .get(&format!("/v1/llm/runs/{run}/itl-mixture?seed=5"))
        .await
        .json();
    assert_ne!(other[0]["loc"], serde_json::Value::Null);
    assert_ne!(other, a);
    // The largest seed the document allows, and one past it.
    let top = app
        .get(&format!(
            "/v1/llm/runs/{run}/itl-mixture?seed=9007199254740991&max_samples=64"
        ))
        .await;
    assert_eq!(top.status, 200);
    let past = app
        .get(&format!(
            "/v1/llm/runs/{run}/itl-mixture?seed=9007199254740992"
        ))
        .await;
    assert_eq!(past.status, 400);
    assert_eq!(past.json()["parameter"], "seed");
    let all = app
        .get(&format!("/v1/llm/runs/{run}/itl-mixture?max_samples=all"))
        .await
        .json();
    assert_eq!(all[0]["n"], 117_446);
    let many = app
        .get("/v1/llm/fits/itl-mixture?task=video-chat&model=Qwen/Qwen3-VL-30B-A3B-Instruct&gpu=H100&num_gpus=2&batch=8")
        .await
        .json();
    assert_eq!(many.as_array().unwrap().len(), 1);
    assert_eq!(many[0], a[0]);
    let none = app
        .get("/v1/llm/fits/itl-mixture?task=no-such&format=csv")
        .await;
    assert_eq!(none.status, 200);
    assert!(
        none.text()
            .starts_with("run_id,task,model_id,num_gpus,max_num_seqs,loc,")
    );
}

#[tokio::test]
async fn model_bodies_are_checked() {
    let app = TestApp::sample().await;
    let fit = "/v1/models/logistic/fit";
    let cases = [
        (fit, r#"{"y": [1, 2]}"#, "x"),
        (fit, r#"{"x": [], "y": []}"#, "x"),
        (fit, r#"{"x": [1, 2, 3], "y": [1, 2]}"#, "y"),
        (fit, r#"{"batch": [8, 0], "y": [1, 2]}"#, "batch"),
        (fit, r#"{"x": [1, 2], "batch": [2, 4], "y": [1, 2]}"#, "x"),
        (
            "/v1/models/logistic/eval",
            r#"{"L": 1, "x0": 0, "k": 1, "b0": 0}"#,
            "x",
        ),
        (
            "/v1/models/itl-mixture/fit",
            r#"{"samples": [0.01], "max_samples": 0}"#,
            "max_samples",
        ),
        (
            "/v1/models/itl-mixture/sample",
            r#"{"loc": 0, "pi_steady": 1, "sigma_steady": 0.1, "scale_steady": 0.01, "pi_stall": 0, "sigma_stall": 0.1, "n_replicas": 3}"#,
            "scale_stall",
        ),
        (
            "/v1/models/itl-mixture/sample",
            r#"{"loc": 0, "pi_steady": 1, "sigma_steady": 0.1, "scale_steady": 0.01, "pi_stall": 0, "sigma_stall": 0.1, "scale_stall": 0.02, "n_replicas": 0}"#,
            "n_replicas",
        ),
        (
            "/v1/models/itl-mixture/sample",
            r#"{"loc": 0, "pi_steady": 1, "sigma_steady": 0.1, "scale_steady": 0.01, "pi_stall": 0, "sigma_stall": 0.1, "scale_stall": 0.02, "n_replicas": 2, "colour": 1}"#,
            "colour",
        ),
    ];
    for (path, body, field) in cases {
        let r = post_json(&app, path, body).await;
        let p = r.problem(400, "invalid_body");
        assert_eq!(p["parameter"], field, "{body}: {p}");
    }
    // Not JSON, a number out of range (no NaN or infinity in JSON), an unknown member.
    for body in [
        "{",
        r#"{"x": [1e999], "y": [1]}"#,
        r#"{"x": [1], "y": [1], "z": 2}"#,
    ] {
        let p = post_json(&app, fit, body)
            .await
            .problem(400, "invalid_body");
        assert!(!p["detail"].as_str().unwrap().is_empty());
    }
    // A query parameter is refused as everywhere else.
    post_json(
        &app,
        "/v1/models/logistic/fit?verbose=1",
        r#"{"x": [1], "y": [1]}"#,
    )
    .await
    .problem(400, "unknown_parameter");
    // More than ten million numbers.
    let mut big = String::from(r#"{"samples": ["#);
    big.push_str(&"1,".repeat(10_000_000));
    big.push_str("1]}");
    let p = post(&app, "/v1/models/itl-mixture/fit", Body::from(big))
        .await
        .problem(400, "invalid_body");
    assert_eq!(p["parameter"], "samples");
    // A body over the limit: 413, whatever it holds.
    let chunks = futures::stream::iter(
        (0..270).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; 1 << 20]))),
    );
    post(
        &app,
        "/v1/models/itl-mixture/fit",
        Body::from_stream(chunks),
    )
    .await
    .problem(413, "payload_too_large");
    // And a good one, for contrast.
    let r = post_json(
        &app,
        fit,
        r#"{"batch": [8, 16, 32, 64], "y": [1, 2, 4, 5]}"#,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["n"], 4);
}
