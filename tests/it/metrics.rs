//! `GET /metrics`: the Prometheus text format, with the requests counted by route template,
//! method and status, their latency, the snapshot served and the SQL outcomes, after real requests.

use crate::common::TestApp;

fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(series)
                .map(|v| v.trim().parse::<f64>().unwrap())
        })
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

#[tokio::test]
async fn requests_snapshot_and_sql_are_counted() {
    let app = TestApp::sample().await;
    for _ in 0..3 {
        assert_eq!(app.get("/v1/llm/runs?limit=1").await.status, 200);
    }
    assert_eq!(app.get("/v1/diffusion/runs?limit=1").await.status, 200);
    assert_eq!(app.get("/v1/llm/runs?bogus=1").await.status, 400);
    assert_eq!(app.get("/nowhere").await.status, 404);
    assert_eq!(app.get("/v1/sql?q=SELECT+1").await.status, 200);
    assert_eq!(app.get("/v1/sql?q=DROP+TABLE+llm_runs").await.status, 400);

    let r = app.get("/metrics").await;
    assert_eq!(r.status, 200);
    assert!(r.content_type().starts_with("application/openmetrics-text"));
    assert_eq!(r.headers["cache-control"], "no-store");
    let text = r.text();
    assert!(text.trim_end().ends_with("# EOF"));
    // One route template for both domains, apart by status.
    assert_eq!(
        value(
            &text,
            r#"mlenergy_http_requests_total{route="/v1/{domain}/runs",method="GET",status="200"}"#
        ),
        4.0
    );
    assert_eq!(
        value(
            &text,
            r#"mlenergy_http_requests_total{route="/v1/{domain}/runs",method="GET",status="400"}"#
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            r#"mlenergy_http_requests_total{route="unmatched",method="GET",status="404"}"#
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            r#"mlenergy_http_request_duration_seconds_count{route="/v1/{domain}/runs"}"#
        ),
        5.0
    );
    assert!(
        value(
            &text,
            r#"mlenergy_http_response_body_bytes_total{route="/v1/{domain}/runs"}"#
        ) > 1000.0
    );
    assert_eq!(value(&text, r#"mlenergy_runs{domain="llm"}"#), 838.0);
    assert_eq!(value(&text, r#"mlenergy_runs{domain="diffusion"}"#), 1020.0);
    let id = app.get("/v1/datasets").await.json()["snapshot"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.lines()
            .any(|l| l.starts_with("mlenergy_snapshot_info{")
                && l.contains(&format!("snapshot=\"{id}\""))
                && l.ends_with(" 1")),
        "{text}"
    );
    assert_eq!(value(&text, "mlenergy_sql_queries_total"), 2.0);
    assert_eq!(
        value(&text, r#"mlenergy_sql_not_answered{kind="refused"}"#),
        1.0
    );
    assert_eq!(
        value(&text, r#"mlenergy_sql_not_answered{kind="time_limit"}"#),
        0.0
    );
    assert_eq!(
        value(&text, "mlenergy_http_requests_shed_costly_total"),
        0.0
    );
    // Three list answers computed (llm, diffusion, SELECT 1), the llm one then twice from the cache.
    assert_eq!(
        value(&text, r#"mlenergy_http_answers_total{kind="computed"}"#),
        3.0
    );
    assert_eq!(
        value(&text, r#"mlenergy_http_answers_total{kind="cache"}"#),
        2.0
    );
    // The scrape itself is in flight while it is written.
    assert_eq!(value(&text, "mlenergy_http_requests_in_flight"), 1.0);
}
