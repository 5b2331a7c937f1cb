//! Speed machinery is speed alone: with each piece switched off (`--plain`, `service::machinery`)
//! the same requests answer the same.

use mlenergy_server::http::HttpOptions;
use mlenergy_server::http::state::McpOptions;
use mlenergy_server::service::machinery::{Piece, Plain};
use serde_json::{Value, json};

use crate::common::{Reply, TestApp};

async fn app(plain: &[Piece]) -> TestApp {
    let http = HttpOptions {
        mcp: Some(McpOptions::default()),
        plain: Plain::of(plain),
        ..HttpOptions::default()
    };
    TestApp::with_http(http).await
}

/// A `tools/call` of `tool` with `arguments` and the id `id`, protocol `version`.
async fn call(app: &TestApp, id: Value, tool: &str, arguments: Value, version: &str) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
    .to_string();
    let headers = [
        ("host", "localhost:8080"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", version),
    ];
    app.send("POST", "/mcp", &headers, axum::body::Body::from(body))
        .await
}

/// Calls of every tool the door answers, and calls the direct path leaves to rmcp: a filter that
/// matches nothing, a refusal, an unknown tool, a tool of another kind.
fn calls() -> Vec<(&'static str, Value)> {
    vec![
        (
            "find_runs",
            json!({"task": "gpqa", "gpu_model": "B200", "sort": ["energy_per_token_joules"], "limit": 50}),
        ),
        ("find_runs", json!({"domain": "diffusion"})),
        ("find_runs", json!({"task": "gpqq"})),
        ("find_runs", json!({"limit": -3})),
        (
            "group_runs",
            json!({"by": ["task", "gpu_model"], "agg": ["mean(energy_per_token_joules)"]}),
        ),
        ("group_runs", json!({"by": ["task"], "task": "gpqq"})),
        (
            "group_runs",
            json!({"by": ["gpu_model"], "task": "gpqa", "agg": ["argmin(energy_per_token_joules)", "mean(mean_itl_ms)"]}),
        ),
        (
            "group_runs",
            json!({"by": ["task"], "agg": ["argmax(output_throughput_tokens_per_sec)"]}),
        ),
        ("best_configuration", json!({"task": "gpqa"})),
        (
            "pareto_frontier",
            json!({"task": "gpqa", "per": "gpu_model"}),
        ),
        (
            "fit_batch_sweep",
            json!({"task": "gpqa", "model_id": "Qwen/Qwen3-14B"}),
        ),
        ("no_such_tool", json!({})),
        (
            "get_run",
            json!({"run_id": "gpqa~openai--gpt-oss-20b~B200~g1~b4096~r21"}),
        ),
    ]
}

/// The MCP pieces (the direct path and the tool-result cache): every call, twice (once computed,
/// once perhaps kept), answers the same status and the same JSON as through rmcp alone, for the
/// protocol versions before the standard headers and after them.
#[tokio::test]
async fn mcp_tool_calls_answer_the_same_with_and_without_the_mcp_pieces() {
    let machinery = app(&[]).await;
    let plain = app(&[Piece::McpDirect, Piece::McpCache]).await;
    let mut direct = 0;
    for version in ["2025-11-25", "2025-06-18"] {
        for (n, (tool, arguments)) in calls().into_iter().enumerate() {
            for id in [json!(n), json!(format!("call-{n}"))] {
                let want = call(&plain, id.clone(), tool, arguments.clone(), version).await;
                let got = call(&machinery, id.clone(), tool, arguments.clone(), version).await;
                let what = format!("{tool} {arguments} ({version}, id {id})");
                assert_eq!(got.status, want.status, "{what}");
                assert_eq!(
                    got.headers.get("content-type"),
                    want.headers.get("content-type"),
                    "{what}"
                );
                let (g, w): (Value, Value) = (got.json(), want.json());
                assert_eq!(g, w, "{what}");
                assert_eq!(g["id"], id, "{what}");
                if g["result"]["isError"] == false && g["result"]["structuredContent"].is_object() {
                    direct += 1;
                }
            }
        }
    }
    assert!(direct >= 20, "only {direct} calls answered with rows");
}

/// The direct path writes the door's answer as the structured content: exactly the REST answer's
/// bytes, which the client reads as the same JSON as rmcp's.
#[tokio::test]
async fn the_direct_path_s_structured_content_is_the_rest_answer() {
    let app = app(&[Piece::McpCache]).await;
    let rest = app
        .get("/v1/llm/runs?task=gpqa&gpu_model=B200&sort=energy_per_token_joules&limit=50")
        .await;
    let mcp = call(
        &app,
        json!(7),
        "find_runs",
        json!({"task": "gpqa", "gpu_model": "B200", "sort": ["energy_per_token_joules"], "limit": 50}),
        "2025-11-25",
    )
    .await;
    let body = mcp.text();
    let start = body.find("\"structuredContent\":").unwrap() + "\"structuredContent\":".len();
    let end = body.rfind(",\"isError\":false}}").unwrap();
    assert_eq!(&body[start..end], rest.text().trim_end());
    let v = mcp.json();
    assert_eq!(v["result"]["structuredContent"]["total"], 106);
    assert_eq!(
        v["result"]["structuredContent"]["runs"]
            .as_array()
            .unwrap()
            .len(),
        50
    );
}

/// The HTTP pieces (the cells of the run table, kept compressed forms, kept whole responses),
/// each switched off and all of them: every request, asked three times (computed, kept, answered
/// from what was kept) in each coding, answers the same status, headers and bytes, compressed
/// bytes included.
#[tokio::test]
async fn http_answers_are_the_same_bytes_with_and_without_each_piece() {
    const URIS: &[&str] = &[
        "/v1/llm/runs?task=gpqa&gpu_model=B200&sort=energy_per_token_joules&limit=50",
        "/v1/llm/runs?fields=run_id,energy_per_token_joules&limit=20&offset=3",
        "/v1/diffusion/runs?format=csv",
        "/v1/llm/runs/gpqa~openai--gpt-oss-20b~B200~g1~b4096~r21",
        "/v1/llm/groups?by=task&agg=count",
        "/v1/llm/pareto?task=gpqa",
        "/leaderboard/data/tasks/gpqa.json",
    ];
    let machinery = app(&[]).await;
    let mut plains = Vec::new();
    for piece in [Piece::Cells, Piece::Precompressed, Piece::Kept] {
        plains.push((format!("{piece:?}"), app(&[piece]).await));
    }
    plains.push((
        "all".into(),
        app(&[Piece::Cells, Piece::Precompressed, Piece::Kept]).await,
    ));
    for uri in URIS {
        for coding in ["identity", "gzip", "br", "zstd"] {
            let headers = [("accept-encoding", coding)];
            let mut want = Vec::new();
            for _ in 0..3 {
                want.push(
                    machinery
                        .send("GET", uri, &headers, axum::body::Body::empty())
                        .await,
                );
            }
            assert_eq!(want[0].status, 200, "{uri}");
            for (name, plain) in &plains {
                for w in &want {
                    let got = plain
                        .send("GET", uri, &headers, axum::body::Body::empty())
                        .await;
                    let what = format!("{uri} ({coding}) without {name}");
                    assert_eq!(got.status, w.status, "{what}");
                    assert!(got.body == w.body, "{what}: the bytes differ");
                    for h in [
                        "content-type",
                        "content-encoding",
                        "etag",
                        "x-total-count",
                        "link",
                    ] {
                        assert_eq!(got.headers.get(h), w.headers.get(h), "{what}: {h}");
                    }
                }
            }
        }
    }
}
