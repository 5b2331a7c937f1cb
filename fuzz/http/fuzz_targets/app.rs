//! The router over data/sample, built once per fuzzing process, and one request through it: the
//! answer must not be a 5xx, and a 4xx must be a problem+json document.
//!
//! What an execution pays for is the answer to the request: the router is built once, and the
//! service's caches are on as in production, but a successful query over data/sample's one LLM run
//! with raw files answered every one of its inter-token latencies (a large JSON answer), its whole
//! raw file or its timeline, and most executions went there. The fuzzed copy of data/sample keeps
//! that run's first requests and timeline samples only (`small_sample`): every endpoint answers as
//! before, with a far smaller answer.

use std::sync::OnceLock;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use mlenergy_server::http::{AppState, Limits};
use mlenergy_server::server::app;
use mlenergy_server::service::Service;
use tower::ServiceExt;

pub struct App {
    rt: tokio::runtime::Runtime,
    router: Router,
    /// A run of each domain with raw files: (llm, diffusion).
    pub runs: (String, String),
}

fn the_app() -> &'static App {
    static APP: OnceLock<App> = OnceLock::new();
    APP.get_or_init(|| build(mlenergy_server::service::ServiceOptions::default()))
}

/// The router over the small copy of data/sample, its service built from `options`.
#[allow(dead_code)] // each target uses one of the two ways in
pub fn build(options: mlenergy_server::service::ServiceOptions) -> App {
    {
        // The server's worker stacks, which a client's SQL is bounded against.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_stack_size(mlenergy_server::engine::sql::WORKER_STACK_BYTES)
            .enable_all()
            .build()
            .unwrap();
        let sample = small_sample(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/sample"),
        );
        let router = rt.block_on(async {
            let dataset = mlenergy_server::service::open::load_compiled_dir(&sample)
                .await
                .expect("data/sample loads");
            let catalog = mlenergy_server::store::catalog::Catalog::open("sqlite::memory:")
                .await
                .unwrap();
            let limits = Limits {
                max_rows: 100_000,
                stream_bytes: Limits::STREAM_BYTES,
            };
            app(AppState::new(
                std::sync::Arc::new(Service::with_options(dataset, catalog, options)),
                limits,
                8 << 20,
            ))
        });
        let mut app = App {
            rt,
            router,
            runs: (String::new(), String::new()),
        };
        let first = |app: &App, uri: &str| -> String {
            let (_, body) = app.send(Request::get(uri).body(Body::empty()).unwrap());
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            v["runs"][0]["run_id"].as_str().unwrap().to_string()
        };
        app.runs = (
            first(&app, "/v1/llm/runs?stability=all&limit=1&fields=run_id,results_path&sort=-results_path"),
            first(&app, "/v1/diffusion/runs?limit=1&fields=run_id,results_path&sort=-results_path"),
        );
        app
    }
}

/// A copy of `sample` (in the temporary directory, one per process) whose raw results files keep
/// their first requests and timeline samples.
fn small_sample(sample: &std::path::Path) -> std::path::PathBuf {
    let out = std::env::temp_dir().join(format!("mlenergy-fuzz-sample-{}", std::process::id()));
    copy_dir(sample, &out);
    for entry in walk(&out) {
        if entry.file_name().is_some_and(|n| n == "results.json") {
            let text = std::fs::read(&entry).unwrap();
            let mut doc: serde_json::Value = serde_json::from_slice(&text).unwrap();
            if let Some(results) = doc.get_mut("results").and_then(|r| r.as_array_mut()) {
                results.truncate(24);
            }
            if let Some(timeline) = doc.get_mut("timeline") {
                shorten_series(timeline);
            }
            std::fs::write(&entry, serde_json::to_vec(&doc).unwrap()).unwrap();
        }
    }
    out
}

/// Every array of `[time, value]` samples under `v` cut to its first 200.
fn shorten_series(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => m.values_mut().for_each(shorten_series),
        serde_json::Value::Array(a) if a.first().is_some_and(|x| x.is_array()) => a.truncate(200),
        _ => {}
    }
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

impl App {
    /// The answer to `req`, handled on a worker thread of the runtime as in the server (not on
    /// the fuzzer's thread, whose stack is another size).
    pub fn send(&self, req: Request<Body>) -> (StatusCode, Vec<u8>) {
        let router = self.router.clone();
        let handled = self.rt.spawn(async move {
            let resp = router.oneshot(req).await.unwrap();
            let status = resp.status();
            let problem = resp
                .headers()
                .get("content-type")
                .is_some_and(|v| v.as_bytes() == b"application/problem+json");
            let body = resp.into_body().collect().await.unwrap().to_bytes().to_vec();
            if status.is_client_error() {
                assert!(problem, "a {status} that is not problem+json: {}", String::from_utf8_lossy(&body));
            }
            (status, body)
        });
        match self.rt.block_on(handled) {
            Ok(answer) => answer,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
}

/// `path` with `{llm}` and `{diffusion}` replaced by a run of that domain with raw files.
pub fn with_runs(path: &str) -> String {
    let app = the_app();
    path.replace("{llm}", &app.runs.0)
        .replace("{diffusion}", &app.runs.1)
}

/// Send `req`; panics on a 5xx, or a 4xx that is not problem+json.
pub fn check(req: Request<Body>) {
    let (method, uri) = (req.method().clone(), req.uri().clone());
    let (status, body) = the_app().send(req);
    assert!(
        !status.is_server_error(),
        "{method} {uri}: {status} {}",
        String::from_utf8_lossy(&body)
    );
}
