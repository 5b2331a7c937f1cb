//! Every refusal is an RFC 9457 problem naming the parameter and what is allowed; no input
//! produces a 5xx.

use crate::common::TestApp;
use serde_json::json;

#[tokio::test]
async fn unknown_parameter_lists_the_endpoints_parameters() {
    let app = TestApp::sample().await;
    let p = app
        .get("/v1/llm/runs?colour=red")
        .await
        .problem(400, "unknown_parameter");
    assert_eq!(p["parameter"], "colour");
    let allowed = p["allowed"].as_array().unwrap();
    assert!(
        allowed.contains(&json!("task"))
            && allowed.contains(&json!("stability"))
            && allowed.contains(&json!("sort"))
    );
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("unknown query parameter 'colour'")
    );
    // stability and architecture are LLM-only; batch_size is diffusion-only; sort is list-only.
    for (url, param) in [
        ("/v1/diffusion/runs?stability=all", "stability"),
        ("/v1/diffusion/runs?architecture=MoE", "architecture"),
        ("/v1/llm/runs?batch_size=8", "batch_size"),
        ("/v1/llm/groups?sort=task", "sort"),
        ("/v1/llm/runs/x?task=gpqa", "task"),
    ] {
        let p = app.get(url).await.problem(400, "unknown_parameter");
        assert_eq!(p["parameter"], param, "{url}");
    }
}

#[tokio::test]
async fn bad_values_name_the_parameter() {
    let app = TestApp::sample().await;
    let p = app
        .get("/v1/llm/runs?num_gpus_min=two")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "num_gpus_min");
    assert_eq!(
        p["detail"],
        "parameter 'num_gpus_min' must be a number, got 'two'"
    );
    let p = app
        .get("/v1/llm/runs?batch_max=inf")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "batch_max");
    let p = app
        .get("/v1/llm/runs?max_num_seqs=64&max_num_seqs_max=128")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "max_num_seqs");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("cannot be combined with 'max_num_seqs_max'")
    );
    let p = app
        .get("/v1/diffusion/runs?batch=1&batch_min=1")
        .await
        .problem(400, "invalid_parameter");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("'batch' (exact values) cannot be combined with 'batch_min'")
    );
    let p = app
        .get("/v1/llm/runs?stability=maybe")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["allowed"], json!(["stable", "unstable", "all"]));
    let p = app
        .get("/v1/llm/runs?limit=-1")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "limit");
    let p = app
        .get("/v1/llm/runs?offset=1&offset=2")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["detail"], "parameter 'offset' takes a single value");
    let p = app
        .get("/v1/llm/runs?num_gpus_min=1&num_gpus_min=2")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "num_gpus_min");
}

#[tokio::test]
async fn row_cap_is_enforced() {
    let app = TestApp::with_limits(mlenergy_server::http::Limits {
        max_rows: 100,
        stream_bytes: mlenergy_server::http::Limits::STREAM_BYTES,
    })
    .await;
    let p = app
        .get("/v1/llm/runs?limit=101")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(
        p["detail"],
        "limit 101 is above the maximum of 100 rows per response"
    );
}

#[tokio::test]
async fn unknown_fields_in_fields_sort_by_and_agg() {
    let app = TestApp::sample().await;
    for (url, param, field) in [
        ("/v1/llm/runs?fields=task,energy", "fields", "energy"),
        ("/v1/llm/runs?sort=-speed", "sort", "speed"),
        ("/v1/diffusion/groups?by=max_num_seqs", "by", "max_num_seqs"),
        ("/v1/llm/groups?agg=mean(watts)", "agg", "watts"),
        (
            "/v1/llm/runs/gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1?fields=nope",
            "fields",
            "nope",
        ),
    ] {
        let p = app.get(url).await.problem(400, "unknown_field");
        assert_eq!(p["parameter"], param, "{url}");
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains(&format!("unknown field '{field}'")),
            "{url}"
        );
        assert!(p["allowed"].as_array().unwrap().contains(&json!("run_id")));
    }
    let p = app
        .get("/v1/llm/groups?agg=median(task)")
        .await
        .problem(400, "invalid_parameter");
    assert!(
        p["allowed"]
            .as_array()
            .unwrap()
            .contains(&json!("energy_per_token_joules"))
    );
    assert!(!p["allowed"].as_array().unwrap().contains(&json!("task")));
    let p = app
        .get("/v1/llm/groups?agg=average(avg_power_watts)")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(
        p["allowed"],
        json!([
            "count", "min", "max", "mean", "median", "sum", "argmin", "argmax"
        ])
    );
    let p = app
        .get("/v1/llm/groups?agg=mean(avg_power_watts")
        .await
        .problem(400, "invalid_parameter");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .starts_with("cannot read aggregate")
    );
}

#[tokio::test]
async fn unknown_domain_run_route_and_method() {
    let app = TestApp::sample().await;
    let p = app
        .get("/v1/images/runs")
        .await
        .problem(404, "unknown_domain");
    assert_eq!(
        (p["parameter"].as_str(), p["allowed"].clone()),
        (Some("domain"), json!(["llm", "diffusion"]))
    );
    app.get("/v1/images/groups")
        .await
        .problem(404, "unknown_domain");
    app.get("/v1/images/fields")
        .await
        .problem(404, "unknown_domain");
    app.get("/v1/images/runs/x")
        .await
        .problem(404, "unknown_domain");
    let p = app
        .get("/v1/llm/runs/no-such-run")
        .await
        .problem(404, "unknown_run");
    assert_eq!(
        p["detail"],
        "no llm run has the id 'no-such-run'; list the ids with GET /v1/llm/runs?fields=run_id"
    );
    // A diffusion id is not an LLM id.
    app.get("/v1/llm/runs/text-to-image~Efficient-Large-Model--SANA1.5_1.6B_1024px_diffusers~B200~g1~b1~1024x1024~s20~u1~r1")
        .await
        .problem(404, "unknown_run");
    app.get("/v2/anything").await.problem(404, "not_found");
    app.request("POST", "/v1/llm/runs", &[])
        .await
        .problem(405, "method_not_allowed");
}

#[tokio::test]
async fn unsupported_representations_are_406() {
    let app = TestApp::sample().await;
    let p = app
        .get("/v1/llm/runs?format=xlsx")
        .await
        .problem(406, "not_acceptable");
    assert_eq!(p["parameter"], "format");
    assert_eq!(
        p["allowed"],
        json!(["json", "csv", "ndjson", "arrow", "parquet"])
    );
    let p = app
        .get_with("/v1/llm/groups", &[("accept", "application/xml")])
        .await
        .problem(406, "not_acceptable");
    assert_eq!(p["parameter"], "Accept");
    assert!(
        p["allowed"]
            .as_array()
            .unwrap()
            .contains(&json!("text/csv"))
    );
    app.get_with(
        "/v1/llm/runs/gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1",
        &[("accept", "image/png")],
    )
    .await
    .problem(406, "not_acceptable");
}

#[tokio::test]
async fn no_input_produces_a_server_error() {
    let app = TestApp::sample().await;
    let values = [
        "",
        "-",
        ",",
        ",,",
        "%",
        "%ZZ",
        "%00",
        "1e309",
        "-0",
        "NaN",
        "nan",
        "9999999999999999999999",
        "()",
        "mean(",
        "-task",
        "+",
        "\u{1F600}",
        "a%2Cb",
    ];
    let params = [
        "task",
        "num_gpus",
        "num_gpus_min",
        "max_num_seqs_max",
        "batch",
        "sort",
        "limit",
        "offset",
        "fields",
        "format",
        "stability",
        "by",
        "agg",
    ];
    for endpoint in [
        "/v1/llm/runs",
        "/v1/diffusion/runs",
        "/v1/llm/groups",
        "/v1/diffusion/groups",
    ] {
        for p in params {
            for v in values {
                let v = v.replace(' ', "%20");
                let url = format!("{endpoint}?{p}={v}");
                let Ok(uri) = url.parse::<axum::http::Uri>() else {
                    continue;
                };
                let r = app.get(&uri.to_string()).await;
                assert!(r.status.as_u16() < 500, "{url} -> {}", r.status);
                if r.status.as_u16() >= 400 {
                    assert_eq!(r.content_type(), "application/problem+json", "{url}");
                }
            }
        }
    }
    for id in ["%FF", "..", "a%2Fb", "~", "%00"] {
        let r = app.get(&format!("/v1/llm/runs/{id}")).await;
        assert!(
            matches!(r.status.as_u16(), 400 | 404),
            "{id} -> {}",
            r.status
        );
        assert_eq!(r.content_type(), "application/problem+json");
    }
}

#[tokio::test]
async fn raw_data_of_runs_without_raw_files_is_404() {
    let app = TestApp::sample().await;
    let p = app
        .get("/v1/llm/runs/gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1/output-lengths")
        .await
        .problem(404, "raw_unavailable");
    assert_eq!(
        p["detail"],
        "no raw results for run 'gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1': this dataset has no results.json for it (results_path is null)"
    );
    app.get("/v1/llm/runs/gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1/itl")
        .await
        .problem(404, "raw_unavailable");
    app.get("/v1/llm/itl?task=gpqa")
        .await
        .problem(404, "raw_unavailable");
    // No matching runs: an empty answer, not an error.
    let empty = app.get("/v1/llm/output-lengths?task=nonexistent").await;
    assert_eq!(
        (empty.status.as_u16(), empty.text()),
        (200, "[]".to_string())
    );
    app.get("/v1/llm/runs/nope/output-lengths")
        .await
        .problem(404, "unknown_run");
    app.get("/v1/diffusion/output-lengths")
        .await
        .problem(404, "not_found");
}

/// Issue 29 item 4: an aggregate list with an empty item (`agg=`, `agg=count,`) and a field list
/// with an item of white space alone (such as U+0085) are refused naming the parameter and what it
/// takes, not read as absent. An empty field item is skipped, as the document says: `by=` is still
/// "no fields" (one group).
#[tokio::test]
async fn blank_list_items_are_refused() {
    let app = TestApp::sample().await;
    for (query, parameter, allowed) in [
        ("agg=", "agg", "mean"),
        ("agg=count,", "agg", "mean"),
        ("agg=count,,mean", "agg", "mean"),
        ("by=%C2%85", "by", "task"),
        ("by=%20", "by", "task"),
        ("by=task,%20", "by", "task"),
    ] {
        let p = app
            .get(&format!("/v1/llm/groups?{query}"))
            .await
            .problem(400, "invalid_parameter");
        assert_eq!(p["parameter"], parameter, "{query}: {p}");
        let allowed_values: Vec<&str> = p["allowed"]
            .as_array()
            .unwrap_or_else(|| panic!("{query}: {p}"))
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert!(allowed_values.contains(&allowed), "{query}: {p}");
        assert!(p["detail"].as_str().unwrap().contains("empty item"), "{p}");
    }
    app.get("/v1/llm/fits/logistic?by=%C2%85")
        .await
        .problem(400, "invalid_parameter");
    let p = app
        .get("/v1/llm/runs?fields=run_id,%C2%85")
        .await
        .problem(400, "invalid_parameter");
    assert_eq!(p["parameter"], "fields");
    let r = app.get("/v1/llm/groups?by=&agg=count").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["groups"].as_array().unwrap().len(), 1);
    let r = app
        .get("/v1/llm/groups?by=task,,gpu_model,&agg=count")
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["by"], serde_json::json!(["task", "gpu_model"]));
}
