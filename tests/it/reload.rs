//! Live reload: the dataset read again from its directory and swapped in; answers of the old
//! snapshot until the swap, of the new one after (snapshot id, ETags); a source that fails to
//! load leaves the served snapshot, and /v1/datasets says why.

use std::path::PathBuf;
use std::sync::Arc;

use mlenergy_server::http::{HttpOptions, Limits};
use mlenergy_server::service::reload::Reloader;

use crate::common::{TestApp, copy_sample};

#[tokio::test]
async fn reload_swaps_the_snapshot_and_keeps_it_when_the_source_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().join("data");
    copy_sample(&root);
    let opened = root.clone();
    let app = TestApp::configured(
        Limits {
            max_rows: 100_000,
            stream_bytes: Limits::STREAM_BYTES,
        },
        HttpOptions::default(),
        move |s| {
            s.reloader = Reloader::new(Arc::new(move || {
                let root = opened.clone();
                Box::pin(async move {
                    mlenergy_server::service::open::load_compiled_dir(&root)
                        .await
                        .map_err(|e| e.to_string())
                })
            }));
        },
    )
    .await;
    let before = app.get("/v1/llm/runs?limit=1").await;
    assert_eq!(before.json()["total"], 838);
    let id0 = before.headers["x-snapshot-id"]
        .to_str()
        .unwrap()
        .to_string();
    let tag0 = before.headers["etag"].to_str().unwrap().to_string();
    assert_eq!(
        app.get("/v1/datasets").await.json()["snapshot"],
        id0.as_str()
    );

    // New data on disk: the gpqa runs only. Served only once reloaded.
    let gpqa = app.get("/v1/llm/runs?task=gpqa&format=parquet").await;
    assert_eq!(gpqa.status, 200);
    let n_gpqa = gpqa.headers["x-total-count"]
        .to_str()
        .unwrap()
        .parse::<u64>()
        .unwrap();
    // A prepared SQL statement over the old snapshot (POST: no kept answer).
    async fn count(app: &TestApp) -> serde_json::Value {
        let body = r#"{"sql": "SELECT count(*) AS n FROM llm_runs WHERE task = 'lm-arena-chat'"}"#;
        app.post("/v1/sql", "application/json", body).await.json()["rows"][0]["n"].clone()
    }
    assert_eq!(count(&app).await, 328);
    assert_eq!(count(&app).await, 328);
    std::fs::write(root.join("runs/llm.parquet"), &gpqa.body).unwrap();
    assert_eq!(app.get("/v1/llm/runs?limit=1").await.json()["total"], 838);

    let r = app.request("POST", "/v1/admin/reload", &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let reloaded = r.json();
    assert_eq!(reloaded["llm_runs"], n_gpqa);
    assert_eq!(reloaded["diffusion_runs"], 1020);
    let after = app.get("/v1/llm/runs?limit=1").await;
    assert_eq!(after.json()["total"], n_gpqa);
    // The statement's plan read the old tables: dropped with them, planned again.
    assert_eq!(count(&app).await, 0);
    let id1 = after.headers["x-snapshot-id"].to_str().unwrap().to_string();
    assert_ne!(id1, id0);
    assert_eq!(reloaded["snapshot"], id1.as_str());
    // The old entity tag no longer matches: the answer is the new one.
    let revalidated = app
        .get_with("/v1/llm/runs?limit=1", &[("if-none-match", &tag0)])
        .await;
    assert_eq!(revalidated.status, 200);
    let datasets = app.get("/v1/datasets").await.json();
    assert_eq!(datasets["last_reload"]["snapshot"], id1.as_str());
    assert_eq!(datasets["last_reload"]["error"], serde_json::Value::Null);

    // A broken source: the served snapshot stays, and says why.
    std::fs::write(root.join("runs/llm.parquet"), b"not a parquet file").unwrap();
    let p = app
        .request("POST", "/v1/admin/reload", &[])
        .await
        .problem(422, "reload_failed");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("the served dataset is kept"),
        "{p}"
    );
    let still = app.get("/v1/llm/runs?limit=1").await;
    assert_eq!(still.json()["total"], n_gpqa);
    assert_eq!(still.headers["x-snapshot-id"].to_str().unwrap(), id1);
    let datasets = app.get("/v1/datasets").await.json();
    assert_eq!(datasets["last_reload"]["snapshot"], id1.as_str());
    let error = datasets["last_reload"]["error"].as_str().unwrap();
    assert!(error.contains("the served dataset is kept"), "{error}");

    // A file caught between its truncation and its new content is no table of no runs.
    std::fs::write(root.join("runs/llm.parquet"), b"").unwrap();
    let p = app
        .request("POST", "/v1/admin/reload", &[])
        .await
        .problem(422, "reload_failed");
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains("llm.parquet is empty (0 bytes), not a parquet file"),
        "{detail}"
    );
    assert_eq!(
        app.get("/v1/llm/runs?limit=1").await.json()["total"],
        n_gpqa
    );
}

#[tokio::test]
async fn reload_needs_the_admin_token_and_a_source() {
    let app = TestApp::sample().await;
    // No source to read again (an app built in-process without one).
    app.request("POST", "/v1/admin/reload", &[])
        .await
        .problem(422, "reload_failed");
    let guarded = TestApp::with(
        Limits {
            max_rows: 100_000,
            stream_bytes: Limits::STREAM_BYTES,
        },
        HttpOptions {
            guard: mlenergy_server::http::state::GuardOptions {
                admin_token: Some("t0ken".into()),
                ..Default::default()
            },
            ..HttpOptions::default()
        },
    )
    .await;
    guarded
        .request("POST", "/v1/admin/reload", &[])
        .await
        .problem(401, "unauthorized");
}
