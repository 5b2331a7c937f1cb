//! What a new user is told: a filter value that matches no run gets a hint, the ITL summary's
//! histogram is an object, `/v1/cache` says what is cached where, and a prefetch of a local
//! dataset says why it has nothing to fetch. All on real answers over data/sample.

use std::sync::Arc;

use mlenergy_server::http::{AppState, Limits};
use mlenergy_server::server::app;
use mlenergy_server::service::Service;
use mlenergy_server::service::open::{SourceOptions, open_dataset};

use crate::common::{TestApp, sample_dir};

const RUN: &str = "video-chat~Qwen--Qwen3-VL-30B-A3B-Instruct~H100~g2~b8~r1";

fn warnings(r: &crate::common::Reply) -> Vec<String> {
    r.headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_filter_value_that_matches_no_run_gets_a_hint() {
    let app = TestApp::sample().await;
    // Exact semantics stay: nothing matches; the answer says why and what was probably meant.
    let r = app
        .get("/v1/llm/runs?gpu=h100&task=gpqaa&fields=run_id")
        .await;
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_eq!(body["total"], 0);
    assert_eq!(
        body["warnings"],
        serde_json::json!([
            "task 'gpqaa' matches no run; did you mean 'gpqa'?",
            "gpu 'h100' matches no run; did you mean 'H100'?"
        ])
    );
    assert_eq!(
        warnings(&r),
        [
            "299 - \"task 'gpqaa' matches no run; did you mean 'gpqa'?\"",
            "299 - \"gpu 'h100' matches no run; did you mean 'H100'?\""
        ]
    );
    // Every format carries the header, a cached answer too; a value far from any gets no guess.
    for _ in 0..2 {
        let r = app.get("/v1/llm/runs?task=no-such-task&format=csv").await;
        assert_eq!(r.status, 200);
        assert_eq!(
            warnings(&r),
            ["299 - \"task 'no-such-task' matches no run\""]
        );
    }
    let r = app.get("/v1/diffusion/groups?model=flux&by=task").await;
    assert_eq!(r.json()["warnings"][0], "model 'flux' matches no run");
    let r = app.get("/v1/llm/itl?task=video-chatt").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), serde_json::json!([]));
    assert_eq!(
        warnings(&r),
        ["299 - \"task 'video-chatt' matches no run; did you mean 'video-chat'?\""]
    );
    // Values that match, and an empty value (which matches nothing by definition), get none.
    let r = app
        .get("/v1/llm/runs?gpu=H100&task=gpqa&model_id=&fields=run_id")
        .await;
    assert!(r.json().get("warnings").is_none());
    assert!(warnings(&r).is_empty());
    // Non-ASCII text is escaped in the header and kept in the body.
    let r = app.get("/v1/llm/runs?task=gpq%C3%A4&fields=run_id").await;
    assert_eq!(
        r.json()["warnings"][0],
        "task 'gpqä' matches no run; did you mean 'gpqa'?"
    );
    assert_eq!(
        warnings(&r),
        ["299 - \"task 'gpq\\u{e4}' matches no run; did you mean 'gpqa'?\""]
    );
}

#[tokio::test]
async fn the_itl_summary_histogram_is_an_object() {
    let app = TestApp::sample().await;
    let r = app
        .get(&format!("/v1/llm/runs/{RUN}/itl?summary=true"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let row = &r.json()[0];
    let h = &row["histogram"];
    let edges = h["edges"].as_array().unwrap();
    let counts = h["counts"].as_array().unwrap();
    assert_eq!((edges.len(), counts.len()), (51, 50));
    let total: u64 = counts.iter().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(total, row["count"].as_u64().unwrap());
    assert_eq!(edges[50].as_f64(), row["max_s"].as_f64());
    // CSV holds the same object as JSON text; Arrow marks the column as JSON.
    let csv = app
        .get(&format!("/v1/llm/runs/{RUN}/itl?summary=true&format=csv"))
        .await
        .text();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let col = header.iter().position(|h| h == "histogram").unwrap();
    let record = reader.records().next().unwrap().unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&record[col]).unwrap();
    assert_eq!(&parsed, h);
    let arrow = app
        .get(&format!("/v1/llm/runs/{RUN}/itl?summary=true&format=arrow"))
        .await;
    let reader =
        arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(arrow.body), None).unwrap();
    let schema = reader.schema();
    let field = schema.field_with_name("histogram").unwrap();
    assert_eq!(
        field
            .metadata()
            .get("ARROW:extension:name")
            .map(String::as_str),
        Some("arrow.json")
    );
}

/// The sample served as `cargo run` serves it, with derived data persisted under `cache`.
async fn served_with_cache(cache: &std::path::Path) -> TestApp {
    let opts = SourceOptions {
        hub: Default::default(),
        cache: cache.display().to_string(),
        catalog: None,
        max_bytes: 1 << 30,
        lease_ttl: std::time::Duration::from_secs(30),
    };
    let (snapshot, catalog) = open_dataset(sample_dir().to_str().unwrap(), &opts)
        .await
        .unwrap();
    let state = AppState::new(
        Arc::new(Service::new(snapshot, catalog)),
        Limits {
            max_rows: 1000,
            stream_bytes: Limits::STREAM_BYTES,
        },
        1 << 20,
    );
    TestApp { router: app(state) }
}

#[tokio::test]
async fn the_cache_says_what_is_cached_where() {
    let tmp = tempfile::tempdir().unwrap();
    let app = served_with_cache(tmp.path()).await;
    assert_eq!(
        app.get(&format!("/v1/llm/runs/{RUN}/itl?summary=true"))
            .await
            .status,
        200
    );
    let c = app.get("/v1/cache").await.json();
    assert_eq!(c["enabled"], false);
    assert_eq!(c["location"], serde_json::Value::Null);
    let raw = c["raw_files"].as_str().unwrap();
    assert!(
        raw.starts_with("read in place from ") && raw.contains("data/sample"),
        "{raw}"
    );
    assert_eq!(
        c["derived_location"],
        format!("{}/derived/v3", tmp.path().display())
    );
}

#[tokio::test]
async fn a_prefetch_of_local_raw_files_says_why_it_has_nothing_to_fetch() {
    let app = TestApp::sample().await;
    let r = app
        .request("POST", "/v1/llm/prefetch?task=video-chat", &[])
        .await;
    assert_eq!(r.status, 202);
    let job = r.json();
    let note = job["note"].as_str().unwrap();
    assert!(
        note.contains("raw files are local") && note.contains("read in place"),
        "{note}"
    );
    let location = r.headers["location"].to_str().unwrap().to_string();
    let again = app.get(&location).await.json();
    assert_eq!(again["note"], job["note"]);

    let r = app.request("POST", "/v1/llm/prefetch?task=gpqa", &[]).await;
    let job = r.json();
    assert_eq!(job["files_total"], 0);
    assert!(
        job["note"]
            .as_str()
            .unwrap()
            .contains("none of the matched runs has one"),
        "{job}"
    );
}
