//! /mcp in-process (feature `mcp`): the protocol's handshake and listings, a tool's answer
//! against the REST answer to the same question, refusals as tool errors, the token, the check
//! against DNS rebinding, the switch, and the tool metrics. (tests/conformance/test_mcp.py
//! drives the real binary with the official Python SDK; tests/mcp/conformance.sh runs the
//! protocol's conformance suite.)

use mlenergy_server::http::HttpOptions;
use mlenergy_server::http::state::McpOptions;
use serde_json::{Value, json};

use crate::common::{Reply, TestApp, counter};

const LOCAL: (&str, &str) = ("host", "localhost:8080");

async fn app(options: McpOptions) -> TestApp {
    let http = HttpOptions {
        mcp: Some(options),
        ..HttpOptions::default()
    };
    TestApp::with_http(http).await
}

/// One JSON-RPC request to /mcp (protocol 2025-11-25, stateless) with `headers`.
async fn rpc(app: &TestApp, method: &str, params: Value, headers: &[(&str, &str)]) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut h = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    h.extend_from_slice(headers);
    app.send("POST", "/mcp", &h, axum::body::Body::from(body))
        .await
}

async fn result(app: &TestApp, method: &str, params: Value) -> Value {
    let r = rpc(app, method, params, &[LOCAL]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert!(v.get("error").is_none(), "{v}");
    v["result"].clone()
}

async fn call(app: &TestApp, tool: &str, arguments: Value) -> Value {
    result(
        app,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
    .await
}

#[tokio::test]
async fn initialize_and_list() {
    let app = app(McpOptions::default()).await;
    let init = result(
        &app,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(init["serverInfo"]["name"], "mlenergy-server");
    for cap in ["tools", "resources", "prompts", "completions"] {
        assert!(init["capabilities"].get(cap).is_some(), "{init}");
    }
    let tools = result(&app, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "describe_dataset",
            "find_runs",
            "get_run",
            "group_runs",
            "best_configuration",
            "pareto_frontier",
            "column_statistics",
            "dataset_changes",
            "fit_batch_sweep",
            "run_itl_summary",
            "run_timeline_summary",
            "query_sql",
            "compare_measurements",
            "repeat_stats",
            "chart",
        ]
    );
    for t in tools["tools"].as_array().unwrap() {
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
        assert_eq!(t["annotations"]["idempotentHint"], true, "{t}");
        assert_eq!(t["inputSchema"]["type"], "object");
        assert_eq!(t["outputSchema"]["type"], "object");
    }
    // The input schema is the parameter catalog's: filters, the domain's own, field names.
    let find = &tools["tools"][1]["inputSchema"]["properties"];
    for p in [
        "domain",
        "task",
        "num_gpus_min",
        "max_num_seqs",
        "batch_size",
        "sort",
        "limit",
        "fields",
    ] {
        assert!(find.get(p).is_some(), "{p} missing from {find}");
    }
    assert!(find.get("format").is_none() && find.get("gpu").is_none());
    let resources = result(&app, "resources/list", json!({})).await;
    assert_eq!(resources["resources"].as_array().unwrap().len(), 3);
    let prompts = result(&app, "prompts/list", json!({})).await;
    assert_eq!(
        prompts["prompts"][0]["name"],
        "energy_optimal_configuration"
    );
}

#[tokio::test]
async fn a_tool_answers_what_the_rest_api_answers() {
    let app = app(McpOptions::default()).await;
    let rest = app
        .get("/v1/llm/runs?task=gpqa&gpu_model=B200&sort=energy_per_token_joules&limit=50")
        .await
        .json();
    let tool = call(
        &app,
        "find_runs",
        json!({"task": "gpqa", "gpu_model": "B200", "sort": ["energy_per_token_joules"], "limit": 50}),
    )
    .await;
    assert_eq!(tool["isError"], false);
    assert_eq!(tool["structuredContent"], rest);
    assert_eq!(rest["count"], 50);
    let text = tool["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("| run_id | domain | task |"), "{text}");
    assert!(text.contains("(10 of 106 rows shown"), "{text}");

    let rest = app
        .get("/v1/diffusion/best?task=text-to-image&deadline=10")
        .await
        .json();
    let tool = call(
        &app,
        "best_configuration",
        json!({"domain": "diffusion", "task": "text-to-image", "deadline": 10}),
    )
    .await;
    assert_eq!(tool["structuredContent"], rest);

    let rest = app
        .get("/v1/llm/fits/logistic?task=gpqa&model_id=Qwen/Qwen3-14B&y=avg_power_watts&predict=48")
        .await
        .json();
    let tool = call(
        &app,
        "fit_batch_sweep",
        json!({"task": "gpqa", "model_id": "Qwen/Qwen3-14B", "y": ["avg_power_watts"], "predict": [48]}),
    )
    .await;
    assert_eq!(tool["structuredContent"]["fits"], rest);
    assert_eq!(tool["structuredContent"]["count"], 2);
}

#[tokio::test]
async fn refusals_are_tool_errors_naming_the_parameter() {
    let app = app(McpOptions::default()).await;
    let r = call(&app, "find_runs", json!({"taks": "gpqa"})).await;
    assert_eq!(r["isError"], true);
    assert_eq!(r["structuredContent"]["slug"], "invalid_argument");
    assert_eq!(r["structuredContent"]["parameter"], "taks");
    assert!(
        r["structuredContent"]["allowed"]
            .as_array()
            .unwrap()
            .contains(&json!("task"))
    );
    // The REST parser's refusal: the field, and the fields allowed.
    let r = call(&app, "find_runs", json!({"fields": ["energy"]})).await;
    assert_eq!(r["isError"], true);
    assert_eq!(r["structuredContent"]["slug"], "unknown_field");
    assert_eq!(r["structuredContent"]["parameter"], "fields");
    let detail = r["structuredContent"]["detail"].as_str().unwrap();
    assert!(detail.contains("energy_per_token_joules"), "{detail}");
    // A value of no run: the did-you-mean hint, as an error.
    let r = call(&app, "find_runs", json!({"task": "gpqq"})).await;
    assert_eq!(r["isError"], true);
    assert_eq!(r["structuredContent"]["slug"], "no_match");
    assert_eq!(r["structuredContent"]["parameter"], "task");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did you mean 'gpqa'")
    );
    // A field of the other domain, for this domain.
    let r = call(
        &app,
        "find_runs",
        json!({"domain": "diffusion", "max_num_seqs": 8}),
    )
    .await;
    assert_eq!(r["isError"], true);
    assert_eq!(r["structuredContent"]["parameter"], "max_num_seqs");
    let r = call(&app, "get_run", json!({})).await;
    assert_eq!(r["structuredContent"]["parameter"], "run_id");
    let r = call(&app, "chart", json!({"kind": "pie"})).await;
    assert_eq!(r["structuredContent"]["parameter"], "kind");
    // An unknown tool is a protocol error.
    let r = rpc(
        &app,
        "tools/call",
        json!({"name": "drop_table", "arguments": {}}),
        &[LOCAL],
    )
    .await;
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("find_runs")
    );
}

#[tokio::test]
async fn sql_rows_are_cut_and_say_so() {
    let app = app(McpOptions::default()).await;
    let r = call(
        &app,
        "query_sql",
        json!({"sql": "select run_id from llm_runs where task = $1 order by run_id", "params": ["gpqa"], "max_rows": 5}),
    )
    .await;
    let s = &r["structuredContent"];
    assert_eq!(s["count"], 5);
    assert_eq!(s["total_rows"], 187);
    assert_eq!(s["truncated"], true);
    assert_eq!(s["rows"].as_array().unwrap().len(), 5);
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Rows cut: 187 answered, 5 kept")
    );
    let r = call(&app, "query_sql", json!({"sql": "drop table llm_runs"})).await;
    assert_eq!(r["isError"], true);
}

#[tokio::test]
async fn the_token_and_the_host_are_checked() {
    let app = app(McpOptions {
        token: Some("s3cret".into()),
        allowed_hosts: vec!["data.example.org".into()],
    })
    .await;
    let list = |headers: Vec<(&'static str, &'static str)>| {
        let app = &app;
        async move { rpc(app, "tools/list", json!({}), &headers).await }
    };
    let r = list(vec![LOCAL]).await;
    assert_eq!(r.status, 401);
    assert!(
        r.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    assert_eq!(
        list(vec![LOCAL, ("authorization", "Bearer nope")])
            .await
            .status,
        401
    );
    let ok = ("authorization", "Bearer s3cret");
    assert_eq!(list(vec![LOCAL, ok]).await.status, 200);
    // DNS rebinding: a name that is not ours, or a page of another origin.
    let r = list(vec![("host", "evil.example.com"), ok]).await;
    assert!(r.status.is_client_error(), "{}", r.status);
    let r = list(vec![LOCAL, ok, ("origin", "http://evil.example.com")]).await;
    assert!(r.status.is_client_error(), "{}", r.status);
    assert_eq!(
        list(vec![("host", "data.example.org"), ok]).await.status,
        200
    );
    assert_eq!(
        list(vec![
            ("host", "data.example.org"),
            ok,
            ("origin", "https://data.example.org")
        ])
        .await
        .status,
        200
    );
}

#[tokio::test]
async fn off_means_no_route_and_calls_are_counted() {
    let off = TestApp::sample().await;
    let r = rpc(&off, "tools/list", json!({}), &[LOCAL]).await;
    assert_eq!(r.status, 404);
    let app = app(McpOptions::default()).await;
    call(&app, "find_runs", json!({"limit": 1})).await;
    call(&app, "find_runs", json!({"taks": 1})).await;
    let metrics = app.get("/metrics").await.text();
    assert!(
        metrics.contains("mlenergy_mcp_tool_calls_total{tool=\"find_runs\",outcome=\"ok\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("mlenergy_mcp_tool_calls_total{tool=\"find_runs\",outcome=\"refused\"} 1")
    );
    // The tool's question was asked at the service's door, counted there as a REST one is.
    assert!(
        metrics.contains("mlenergy_questions_total{question=\"list\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_repeated_call_is_answered_from_the_cache_with_its_own_id() {
    let app = app(McpOptions::default()).await;
    let body = |id: &str| {
        json!({"jsonrpc": "2.0", "id": serde_json::from_str::<Value>(id).unwrap(), "method": "tools/call",
               "params": {"name": "group_runs", "arguments": {"by": ["task"], "agg": ["count"]}}})
        .to_string()
    };
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
        LOCAL,
    ];
    let answers = |m: &str| -> (u64, u64) {
        let n = |kind: &str| {
            counter(
                m,
                &format!("mlenergy_http_answers_total{{kind=\"{kind}\"}}"),
            )
        };
        (n("cache"), n("computed"))
    };
    let first = app
        .send("POST", "/mcp", &headers, axum::body::Body::from(body("7")))
        .await;
    let before = answers(&app.get("/metrics").await.text());
    let second = app
        .send(
            "POST",
            "/mcp",
            &headers,
            axum::body::Body::from(body("\"call-8\"")),
        )
        .await;
    let after = answers(&app.get("/metrics").await.text());
    assert_eq!(first.status, 200);
    assert_eq!(second.status, 200);
    let (a, b) = (first.json(), second.json());
    assert_eq!(a["id"], 7);
    assert_eq!(b["id"], "call-8");
    assert_eq!(a["result"], b["result"]);
    assert_eq!(a["result"]["structuredContent"]["count"], 5);
    // The second was given from the cache: one hit, nothing computed (neither the tool's REST
    // request nor the tool's answer).
    assert_eq!(after.0, before.0 + 1, "{before:?} {after:?}");
    assert_eq!(after.1, before.1);
    // An error is not kept: asked twice, computed twice.
    let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "find_runs", "arguments": {"taks": 1}}})
    .to_string();
    for _ in 0..2 {
        let r = app
            .send(
                "POST",
                "/mcp",
                &headers,
                axum::body::Body::from(bad.clone()),
            )
            .await;
        assert_eq!(r.json()["result"]["isError"], true);
    }
    let metrics = app.get("/metrics").await.text();
    assert!(
        metrics.contains("mlenergy_mcp_tool_calls_total{tool=\"find_runs\",outcome=\"refused\"} 2")
    );
    assert!(
        metrics.contains("mlenergy_mcp_tool_calls_total{tool=\"group_runs\",outcome=\"ok\"} 2")
    );
}

/// A costly question asked by a tool at the service's door takes a costly place as its REST
/// route does: with none to take, the fit is refused as busy, as GET /fits/logistic is, and a
/// cheap question is answered.
#[tokio::test]
async fn a_tools_costly_question_takes_a_costly_place() {
    let mut http = HttpOptions {
        mcp: Some(McpOptions::default()),
        ..HttpOptions::default()
    };
    http.guard.max_costly_in_flight = 0;
    let app = TestApp::with_http(http).await;
    let rest = app.get("/v1/llm/fits/logistic?task=gpqa").await;
    rest.problem(503, "busy");
    let r = call(&app, "fit_batch_sweep", json!({"task": "gpqa"})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["slug"], "busy");
    assert_eq!(r["structuredContent"]["status"], 503);
    let r = call(&app, "find_runs", json!({"task": "gpqa", "limit": 1})).await;
    assert_eq!(r["isError"], false, "{r}");
}

/// A call answered before, by the direct path or from the kept results, is still checked as rmcp
/// checks it: asked again without accepting event streams, or with an unknown protocol version,
/// it is refused as the first such call is.
#[tokio::test]
async fn a_call_answered_before_is_checked_again() {
    let app = app(McpOptions::default()).await;
    let params = json!({"name": "find_runs", "arguments": {"task": "gpqa", "limit": 2}});
    for _ in 0..2 {
        let r = rpc(&app, "tools/call", params.clone(), &[LOCAL]).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["result"]["structuredContent"]["count"], 2);
    }
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
    let only_json = app
        .send(
            "POST",
            "/mcp",
            &[
                LOCAL,
                ("content-type", "application/json"),
                ("accept", "application/json"),
                ("mcp-protocol-version", "2025-11-25"),
            ],
            axum::body::Body::from(body.clone()),
        )
        .await;
    assert_eq!(only_json.status, 406, "{}", only_json.text());
    let unknown = app
        .send(
            "POST",
            "/mcp",
            &[
                LOCAL,
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "1999-01-01"),
            ],
            axum::body::Body::from(body),
        )
        .await;
    assert_eq!(unknown.status, 400, "{}", unknown.text());
}
