//! Overload and abuse protection with real headers: 414 and 431 for oversized requests, 503 with
//! Retry-After when the requests in flight (all, or the costly ones) are at their bound while the
//! probes still answer, 504 past the request time limit, and the admin token on prefetch.

use std::time::Duration;

use mlenergy_server::engine::sql::SqlLimits;
use mlenergy_server::http::state::GuardOptions;
use mlenergy_server::http::{HttpOptions, Limits};

use crate::common::TestApp;

const SLOW_SQL: &str = "/v1/sql?q=SELECT+count(*)+FROM+generate_series(1,+100000000000)+a";

fn limits() -> Limits {
    Limits {
        max_rows: 100_000,
        stream_bytes: Limits::STREAM_BYTES,
    }
}

async fn app(guard: GuardOptions, sql_timeout: Duration) -> TestApp {
    TestApp::configured(
        limits(),
        HttpOptions {
            guard,
            ..HttpOptions::default()
        },
        move |s| {
            s.sql_limits = SqlLimits {
                timeout: sql_timeout,
                ..SqlLimits::default()
            };
            s.sql_concurrency = 4;
            s.sql_queue = 16;
        },
    )
    .await
}

#[tokio::test]
async fn oversized_requests_are_refused() {
    let app = TestApp::sample().await;
    let long = format!("/v1/llm/runs?task={}", "g".repeat(9000));
    let p = app.get(&long).await.problem(414, "uri_too_long");
    assert!(p["detail"].as_str().unwrap().contains("8192 bytes"));
    let big = "x".repeat(40_000);
    let p = app
        .get_with("/v1/llm/runs?limit=1", &[("x-big", &big)])
        .await
        .problem(431, "headers_too_large");
    assert!(p["detail"].as_str().unwrap().contains("32768 bytes"));
    // Just under the bounds: answered.
    assert_eq!(
        app.get(&format!("/v1/llm/runs?task={}", "g".repeat(7000)))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn excess_requests_are_shed_and_probes_still_answer() {
    let app = app(
        GuardOptions {
            max_costly_in_flight: 1,
            ..GuardOptions::default()
        },
        Duration::from_millis(1500),
    )
    .await;
    let (slow, shed, cheap, probe) = tokio::join!(
        app.get(SLOW_SQL),
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            app.get("/v1/llm/charts/pareto.svg?task=gpqa").await
        },
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            app.get("/v1/llm/runs?limit=1").await
        },
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            app.get("/readyz").await
        }
    );
    slow.problem(422, "query_limit");
    let p = shed.problem(503, "busy");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("raw-derived data, SQL, fits or charts")
    );
    assert_eq!(shed.headers["retry-after"], "1");
    assert_eq!(cheap.status, 200, "a cheap route is not held back");
    assert_eq!(probe.status, 200);
    // The place is given back.
    assert_eq!(
        app.get("/v1/llm/charts/pareto.svg?task=gpqa").await.status,
        200
    );

    let app = self::app(
        GuardOptions {
            max_in_flight: 1,
            ..GuardOptions::default()
        },
        Duration::from_millis(1500),
    )
    .await;
    let (slow, shed, probe, reload) = tokio::join!(
        app.get(SLOW_SQL),
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            app.get("/v1/llm/runs?limit=1").await
        },
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            app.get("/healthz").await
        },
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            app.request("POST", "/v1/admin/reload", &[]).await
        }
    );
    // A reload is how an operator gets out of trouble: never shed. It reached its handler (this
    // app has no source to read again), not a 503.
    reload.problem(422, "reload_failed");
    slow.problem(422, "query_limit");
    let p = shed.problem(503, "busy");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("1 requests are in flight")
    );
    assert_eq!(probe.status, 200);
    assert_eq!(app.get("/v1/llm/runs?limit=1").await.status, 200);
}

#[tokio::test]
async fn a_request_over_its_time_limit_is_stopped() {
    let app = app(
        GuardOptions {
            request_timeout: Duration::from_millis(300),
            ..GuardOptions::default()
        },
        Duration::from_secs(5),
    )
    .await;
    let started = std::time::Instant::now();
    let p = app.get(SLOW_SQL).await.problem(504, "request_timeout");
    assert!(p["detail"].as_str().unwrap().contains("300ms"));
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "stopped, not waited out"
    );
    // The SQL gate's place was given back with the dropped query.
    assert_eq!(app.get("/v1/sql?q=SELECT+1").await.status, 200);
}

/// Prefetch and eviction, the costly and the mutating admin actions: refused without the token
/// when one is set, and beyond loopback without one.
#[tokio::test]
async fn admin_actions_need_the_admin_token() {
    let local = TestApp::sample().await;
    let run = local.get("/v1/llm/runs?limit=1&fields=run_id").await.json()["runs"][0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let evict = format!("/v1/llm/runs/{run}/cache");
    let actions = [
        ("POST", "/v1/llm/prefetch?task=video-chat", 202),
        ("DELETE", evict.as_str(), 200),
    ];
    let with_token = app(
        GuardOptions {
            admin_token: Some("s3cr3t".into()),
            loopback: false,
            ..GuardOptions::default()
        },
        Duration::from_secs(5),
    )
    .await;
    let open_beyond_loopback = app(
        GuardOptions {
            admin_token: None,
            loopback: false,
            ..GuardOptions::default()
        },
        Duration::from_secs(5),
    )
    .await;
    for (method, uri, status) in actions {
        let r = with_token.request(method, uri, &[]).await;
        r.problem(401, "unauthorized");
        assert_eq!(r.headers["www-authenticate"], "Bearer");
        with_token
            .request(method, uri, &[("authorization", "Bearer wrong")])
            .await
            .problem(401, "unauthorized");
        let ok = with_token
            .request(method, uri, &[("authorization", "Bearer s3cr3t")])
            .await;
        assert_eq!(ok.status, status, "{method} {uri}: {}", ok.text());

        let p = open_beyond_loopback
            .request(method, uri, &[])
            .await
            .problem(403, "admin_forbidden");
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains("MLENERGY_ADMIN_TOKEN")
        );
        // On loopback without a token (the default), as before.
        assert_eq!(local.request(method, uri, &[]).await.status, status);
    }
}

/// A GET of `uri` from `peer` (the connection's address, as the server sees it).
async fn get_from(
    app: &TestApp,
    uri: &str,
    peer: &str,
    headers: &[(&str, &str)],
) -> crate::common::Reply {
    use tower::ServiceExt;
    let mut req = axum::http::Request::get(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut req = req.body(axum::body::Body::empty()).unwrap();
    req.extensions_mut().insert(axum::extract::ConnectInfo(
        peer.parse::<std::net::SocketAddr>().unwrap(),
    ));
    let resp = app.router.clone().oneshot(req).await.unwrap();
    let (parts, body) = resp.into_parts();
    use http_body_util::BodyExt;
    crate::common::Reply {
        status: parts.status,
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes().to_vec(),
    }
}

/// Per-client rates: a burst, then 429 with Retry-After for that client only; other clients and
/// the probes are not held up; behind a proxy the client is the header's last address.
#[tokio::test]
async fn each_client_ip_has_its_rate() {
    use mlenergy_server::http::state::RateLimit;
    let limit = RateLimit {
        per_second: 0.5,
        burst: 3,
    };
    let direct = app(
        GuardOptions {
            rate_per_ip: Some(limit),
            ..GuardOptions::default()
        },
        Duration::from_secs(5),
    )
    .await;
    let uri = "/v1/llm/runs?limit=1&fields=run_id";
    for _ in 0..3 {
        assert_eq!(
            get_from(&direct, uri, "10.0.0.1:4000", &[]).await.status,
            200
        );
    }
    let r = get_from(&direct, uri, "10.0.0.1:4001", &[]).await;
    let p = r.problem(429, "rate_limited");
    assert!(p["detail"].as_str().unwrap().contains("10.0.0.1"), "{p}");
    // One request is earned back every 2 s.
    assert_eq!(r.headers["retry-after"], "2");
    assert_eq!(
        get_from(&direct, uri, "10.0.0.2:4000", &[]).await.status,
        200
    );
    assert_eq!(
        get_from(&direct, "/healthz", "10.0.0.1:4000", &[])
            .await
            .status,
        200
    );
    let m = get_from(&direct, "/metrics", "10.0.0.1:4000", &[])
        .await
        .text();
    assert!(
        m.contains("mlenergy_http_requests_rate_limited_total 1\n"),
        "{m}"
    );

    let proxied = app(
        GuardOptions {
            rate_per_ip: Some(limit),
            client_ip_header: Some(axum::http::HeaderName::from_static("x-forwarded-for")),
            ..GuardOptions::default()
        },
        Duration::from_secs(5),
    )
    .await;
    // All through one proxy: counted by the address the proxy appended, not the peer's.
    let from = |ip: &'static str| [("x-forwarded-for", ip)];
    for _ in 0..3 {
        let r = get_from(
            &proxied,
            uri,
            "10.9.9.9:80",
            &from("203.0.113.7, 198.51.100.4"),
        )
        .await;
        assert_eq!(r.status, 200);
    }
    get_from(&proxied, uri, "10.9.9.9:80", &from("6.6.6.6, 198.51.100.4"))
        .await
        .problem(429, "rate_limited");
    assert_eq!(
        get_from(&proxied, uri, "10.9.9.9:80", &from("198.51.100.5"))
            .await
            .status,
        200
    );
}

/// Issue 29 item 3: every body is bounded by `--max-body-bytes` (2 MiB by default) before it is
/// read, but the ITL mixture fit's, by `--max-samples-body-bytes`; past its bound a request is 413
/// problem+json naming the bound.
#[tokio::test]
async fn bodies_over_their_routes_limit_are_413_naming_it() {
    let app = app(
        GuardOptions {
            max_body_bytes: 1000,
            max_samples_body_bytes: 5000,
            ..GuardOptions::default()
        },
        Duration::from_secs(5),
    )
    .await;
    let long_sql = format!("SELECT 1 AS x {}", " ".repeat(2000));
    refused_over(&app, "/v1/sql", "text/plain", &long_sql, 1000).await;
    let numbers = |n: usize| (0..n).map(|i| (i % 9 + 1).to_string()).collect::<Vec<_>>();
    let fit = format!(
        r#"{{"batch": [{}], "y": [{}]}}"#,
        numbers(600).join(","),
        numbers(600).join(",")
    );
    refused_over(
        &app,
        "/v1/models/logistic/fit",
        "application/json",
        &fit,
        1000,
    )
    .await;
    // The samples route takes more: 3 KB is read (and fitted), 6 KB is not.
    let samples = |n: usize| {
        let v: Vec<String> = (0..n).map(|i| format!("0.0{}", 10 + i % 80)).collect();
        format!(r#"{{"samples": [{}], "seed": 1}}"#, v.join(","))
    };
    let small = samples(500);
    assert!((1000..5000).contains(&small.len()), "{}", small.len());
    let r = app
        .post("/v1/models/itl-mixture/fit", "application/json", &small)
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let large = samples(1000);
    refused_over(
        &app,
        "/v1/models/itl-mixture/fit",
        "application/json",
        &large,
        5000,
    )
    .await;
    // A short SQL body is still read.
    let r = app.post("/v1/sql", "text/plain", "SELECT 1 AS x").await;
    assert_eq!(r.status, 200, "{}", r.text());

    // The default: 2 MiB for an SQL text.
    let app = TestApp::sample().await;
    let long_sql = format!("SELECT 1 {}", " ".repeat(3 << 20));
    refused_over(&app, "/v1/sql", "text/plain", &long_sql, 2 << 20).await;
}

/// `body` (longer than `limit`) posted to `uri` is 413 naming `limit`.
async fn refused_over(app: &TestApp, uri: &str, content_type: &str, body: &str, limit: usize) {
    assert!(body.len() > limit);
    let p = app
        .post(uri, content_type, body)
        .await
        .problem(413, "payload_too_large");
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("limit of {limit} bytes")),
        "{uri}: {p}"
    );
}
