//! How answers travel, on real answers with real headers: entity tags and 304s, Cache-Control and
//! Vary, every content coding (decoded and compared with the identity body) for cached, streamed
//! and leaderboard answers, and CORS preflight and simple requests.

use std::io::Read;

use mlenergy_server::http::{HttpOptions, Limits};

use crate::common::{Reply, TestApp};

/// The one LLM run of data/sample with a raw file, as run filters.
const RAW_RUN: &str = "task=video-chat&model_id=Qwen/Qwen3-VL-30B-A3B-Instruct&gpu_model=H100&num_gpus=2&max_num_seqs=8";

/// A header's value; the values of a repeated header joined with ", ".
fn header(r: &Reply, name: &str) -> String {
    let values: Vec<&str> = r
        .headers
        .get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert!(!values.is_empty(), "no {name} header: {:?}", r.headers);
    values.join(", ")
}

fn decode(r: &Reply) -> Vec<u8> {
    let mut out = Vec::new();
    match r
        .headers
        .get("content-encoding")
        .map(|v| v.to_str().unwrap())
    {
        None => out = r.body.clone(),
        Some("gzip") => {
            flate2::read::GzDecoder::new(&r.body[..])
                .read_to_end(&mut out)
                .unwrap();
        }
        Some("br") => brotli::BrotliDecompress(&mut &r.body[..], &mut out).unwrap(),
        Some("zstd") => out = zstd::decode_all(&r.body[..]).unwrap(),
        Some(other) => panic!("unexpected coding {other}"),
    }
    out
}

/// `r` is a 200 sent in the identity coding.
fn assert_plain(r: &Reply, what: &str) {
    assert_eq!(
        r.status,
        200,
        "{what}: {}",
        String::from_utf8_lossy(&r.body)
    );
    assert!(r.headers.get("content-encoding").is_none(), "{what}");
}

/// `r` is a 200 sent in `coding`, smaller than the identity body `plain` and decoding to it.
fn assert_coded(r: &Reply, coding: &str, plain: &[u8], what: &str) {
    assert_eq!(r.status, 200, "{what}");
    assert_eq!(header(r, "content-encoding"), coding, "{what}");
    assert!(r.body.len() < plain.len(), "{what}: {coding} is smaller");
    assert!(decode(r) == plain, "{what}: {coding} decodes to the body");
}

/// Every coding of `uri` decodes to the identity body; each has its own entity tag, and a tag of
/// any of them revalidates the others. Returns the identity body.
async fn every_coding(app: &TestApp, uri: &str) -> Vec<u8> {
    let plain = app.get(uri).await;
    assert_plain(&plain, uri);
    let plain_tag = header(&plain, "etag");
    let mut tags = vec![plain_tag.clone()];
    for (coding, asked) in [
        ("gzip", "gzip"),
        ("br", "br"),
        ("zstd", "zstd"),
        ("br", "gzip, deflate, br, zstd"),
        ("gzip", "gzip;q=1, br;q=0.5"),
    ] {
        let r = app.get_with(uri, &[("accept-encoding", asked)]).await;
        assert_coded(&r, coding, &plain.body, &format!("{uri} {asked}"));
        assert!(header(&r, "vary").contains("accept-encoding"));
        let tag = header(&r, "etag");
        assert_ne!(tag, plain_tag);
        tags.push(tag.clone());
        // The same coding asked again: the same bytes (kept, or compressed the same way).
        let again = app.get_with(uri, &[("accept-encoding", asked)]).await;
        assert!(decode(&again) == plain.body);
        // Any representation's tag revalidates.
        let nm = app
            .get_with(
                uri,
                &[("accept-encoding", asked), ("if-none-match", &plain_tag)],
            )
            .await;
        assert_eq!(nm.status, 304, "{uri}");
        assert!(nm.body.is_empty());
        assert_eq!(header(&nm, "etag"), tag);
    }
    tags.sort();
    tags.dedup();
    assert_eq!(tags.len(), 4, "one tag per representation: {tags:?}");
    plain.body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entity_tags_and_revalidation() {
    let app = TestApp::sample().await;
    let uri = "/v1/llm/runs?task=gpqa&limit=50";
    let r = app.get(uri).await;
    let tag = header(&r, "etag");
    assert!(tag.starts_with("\"r-") && tag.ends_with('"'), "{tag}");
    assert_eq!(header(&r, "cache-control"), "public, max-age=60");
    // Accept and Accept-Encoding choose the representation (CORS adds its own names).
    assert!(header(&r, "vary").starts_with("accept, accept-encoding"));

    // If-None-Match with it: 304, no body, the validators again; a list and W/ forms match too.
    for inm in [
        tag.clone(),
        format!("\"x\", {tag}"),
        format!("W/{tag}"),
        "*".to_string(),
    ] {
        let nm = app.get_with(uri, &[("if-none-match", &inm)]).await;
        assert_eq!(nm.status, 304, "{inm}");
        assert!(nm.body.is_empty());
        assert_eq!(header(&nm, "etag"), tag);
        assert_eq!(header(&nm, "cache-control"), "public, max-age=60");
    }
    // Another tag: the full answer.
    let other = app.get_with(uri, &[("if-none-match", "\"r-0000\"")]).await;
    assert_eq!(other.status, 200);
    assert!(other.body == r.body);

    // The tag is the snapshot's and the request's: the same from a restarted server, the same
    // for the same query written differently, another for another query or representation.
    let restarted = TestApp::sample().await;
    assert_eq!(header(&restarted.get(uri).await, "etag"), tag);
    let same = app.get("/v1/llm/runs?task=%67pqa&limit=50").await;
    assert_eq!(header(&same, "etag"), tag);
    let other_query = app.get("/v1/llm/runs?task=gpqa&limit=51").await;
    assert_ne!(header(&other_query, "etag"), tag);
    let csv = app.get_with(uri, &[("accept", "text/csv")]).await;
    assert_eq!(csv.content_type(), "text/csv; charset=utf-8");
    assert_ne!(header(&csv, "etag"), tag);
    let nm_csv = app
        .get_with(uri, &[("accept", "text/csv"), ("if-none-match", &tag)])
        .await;
    assert_eq!(
        nm_csv.status, 200,
        "a JSON tag does not revalidate the CSV answer"
    );

    // HEAD: the same headers, no body.
    let head = app.request("HEAD", uri, &[]).await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(header(&head, "etag"), tag);

    // Errors and state are not cached.
    let bad = app.get("/v1/llm/runs?color=blue").await;
    assert_eq!(bad.status, 400);
    assert_eq!(header(&bad, "cache-control"), "no-store");
    assert!(bad.headers.get("etag").is_none());
    for state in ["/readyz", "/healthz", "/v1/cache", "/v1/datasets"] {
        let r = app.get(state).await;
        assert_eq!(r.status, 200, "{state}");
        assert_eq!(header(&r, "cache-control"), "no-store", "{state}");
        assert!(r.headers.get("etag").is_none(), "{state}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_coding_of_cached_answers() {
    let app = TestApp::sample().await;
    let body = every_coding(&app, "/v1/llm/runs?limit=100").await;
    assert!(serde_json::from_slice::<serde_json::Value>(&body).is_ok());
    every_coding(
        &app,
        "/v1/diffusion/groups?by=model_id&agg=mean(batch_latency_s)",
    )
    .await;
    every_coding(&app, "/v1/llm/runs?limit=100&format=csv").await;
    every_coding(&app, "/openapi.json").await;
    // A small answer is sent as it is.
    let small = app
        .get_with("/healthz", &[("accept-encoding", "gzip")])
        .await;
    assert_eq!(small.body, br#"{"status":"ok"}"#);
    assert!(small.headers.get("content-encoding").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_coding_of_streamed_answers() {
    // Any answer estimated at a byte or more is streamed: compressed as it streams.
    let app = TestApp::with_limits(Limits {
        max_rows: 100_000,
        stream_bytes: 1,
    })
    .await;
    let uri = format!("/v1/llm/itl?{RAW_RUN}&format=csv");
    let r = app.get(&uri).await;
    assert!(r.headers.get("content-length").is_none(), "streamed");
    let body = every_coding(&app, &uri).await;
    assert!(body.len() > 100_000, "{} bytes", body.len());
    // The raw file, streamed as stored.
    let id = app
        .get(&format!("/v1/llm/runs?{RAW_RUN}&fields=run_id"))
        .await
        .json()["runs"][0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let raw = every_coding(&app, &format!("/v1/llm/runs/{id}/raw/results.json")).await;
    assert_eq!(raw[0], b'{');
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaderboard_files_travel_the_same_way() {
    let app = TestApp::sample().await;
    for uri in [
        "/leaderboard/data/index.json",
        "/leaderboard/data/tasks/gpqa.json",
        "/data/models/Qwen__Qwen3-8B__gpqa.json",
    ] {
        every_coding(&app, uri).await;
        let r = app.get(uri).await;
        let tag = header(&r, "etag");
        assert!(tag.starts_with("\"lb-"), "a digest of the file: {tag}");
        assert_eq!(header(&r, "cache-control"), "public, max-age=60");
        let nm = app.get_with(uri, &[("if-none-match", &tag)]).await;
        assert_eq!(nm.status, 304);
        assert!(nm.body.is_empty());
        // The file's tag named on the second of two lines, among others: still a 304, with the
        // answer's validators and caching headers, and nothing of its representation.
        let nm = app
            .get_with(
                uri,
                &[
                    ("if-none-match", "\"lb-0000\""),
                    ("if-none-match", &format!("\"r-1111\", {tag}")),
                ],
            )
            .await;
        assert_eq!(nm.status, 304, "{uri}");
        assert_eq!(header(&nm, "etag"), tag);
        assert_eq!(header(&nm, "cache-control"), "public, max-age=60");
        assert_eq!(header(&nm, "x-snapshot-id"), header(&r, "x-snapshot-id"));
        assert_eq!(header(&nm, "x-snapshot-id").len(), 16);
        assert!(nm.headers.get("content-type").is_none());
        assert!(nm.headers.get("content-length").is_none_or(|v| v == "0"));
        // Other tags only: the file itself.
        let other = app
            .get_with(uri, &[("if-none-match", "\"lb-0000\", \"r-1111\"")])
            .await;
        assert_eq!(other.status, 200);
        assert_eq!(other.body, r.body);
    }
    // The same file under both prefixes has the same tag.
    let a = app.get("/leaderboard/data/tasks/gpqa.json").await;
    let b = app.get("/data/tasks/gpqa.json").await;
    assert_eq!(header(&a, "etag"), header(&b, "etag"));
}

#[tokio::test]
async fn configured_max_age() {
    let app = TestApp::with(
        Limits {
            max_rows: 100,
            stream_bytes: Limits::STREAM_BYTES,
        },
        HttpOptions {
            max_age: 3600,
            ..Default::default()
        },
    )
    .await;
    let r = app.get("/v1/llm/fields").await;
    assert_eq!(header(&r, "cache-control"), "public, max-age=3600");
}

#[tokio::test]
async fn cors_from_any_origin_by_default() {
    let app = TestApp::sample().await;
    // A simple request: readable from any origin, with the headers a client reads exposed.
    let r = app
        .get_with("/v1/llm/runs?limit=2", &[("origin", "https://example.org")])
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(header(&r, "access-control-allow-origin"), "*");
    let exposed = header(&r, "access-control-expose-headers").to_ascii_lowercase();
    for h in ["etag", "link", "x-total-count", "warning"] {
        assert!(exposed.contains(h), "{exposed}");
    }
    // The same answer for every origin: it varies with the coding it is sent in, not the origin
    // (a shared cache keeps one copy).
    let vary: Vec<_> = r
        .headers
        .get_all("vary")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(vary, ["accept, accept-encoding"]);
    // A preflight (a conditional GET from a page sends If-None-Match).
    let p = app
        .request(
            "OPTIONS",
            "/leaderboard/data/index.json",
            &[
                ("origin", "https://example.org"),
                ("access-control-request-method", "GET"),
                ("access-control-request-headers", "if-none-match"),
            ],
        )
        .await;
    assert_eq!(p.status, 200);
    assert_eq!(header(&p, "access-control-allow-origin"), "*");
    assert!(header(&p, "access-control-allow-methods").contains("GET"));
    assert!(
        header(&p, "access-control-allow-headers")
            .to_ascii_lowercase()
            .contains("if-none-match")
    );
    assert_eq!(header(&p, "access-control-max-age"), "86400");
    assert!(p.headers.get("vary").is_none(), "{:?}", p.headers);
    // Errors are readable too (a page can show the problem).
    let e = app
        .get_with("/v1/llm/runs?nope=1", &[("origin", "https://example.org")])
        .await;
    assert_eq!(e.status, 400);
    assert_eq!(header(&e, "access-control-allow-origin"), "*");
}

#[tokio::test]
async fn cors_from_configured_origins() {
    let app = TestApp::with(
        Limits {
            max_rows: 100,
            stream_bytes: Limits::STREAM_BYTES,
        },
        HttpOptions {
            cors_origins: vec!["https://ml.energy".into(), "http://localhost:5173".into()],
            ..Default::default()
        },
    )
    .await;
    let ok = app
        .get_with(
            "/leaderboard/data/index.json",
            &[("origin", "https://ml.energy")],
        )
        .await;
    assert_eq!(
        header(&ok, "access-control-allow-origin"),
        "https://ml.energy"
    );
    assert!(header(&ok, "vary").to_ascii_lowercase().contains("origin"));
    let dev = app
        .request(
            "OPTIONS",
            "/v1/llm/runs",
            &[
                ("origin", "http://localhost:5173"),
                ("access-control-request-method", "GET"),
            ],
        )
        .await;
    assert_eq!(
        header(&dev, "access-control-allow-origin"),
        "http://localhost:5173"
    );
    let other = app
        .get_with(
            "/leaderboard/data/index.json",
            &[("origin", "https://evil.example")],
        )
        .await;
    assert_eq!(
        other.status, 200,
        "served; the browser keeps it from the page"
    );
    assert!(other.headers.get("access-control-allow-origin").is_none());
}

/// The headers of a reply but those of the request's own (id, date).
fn answer_headers(r: &crate::common::Reply) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = r
        .headers
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "x-request-id" | "date"))
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_asked_again_is_the_same_response_in_every_coding() {
    let app = TestApp::sample().await;
    let metrics = |text: &str, kind: &str| {
        crate::common::counter(
            text,
            &format!("mlenergy_http_answers_total{{kind=\"{kind}\"}}"),
        )
    };
    for uri in [
        "/v1/llm/runs?task=gpqa&gpu_model=B200&sort=energy_per_token_joules&limit=50",
        "/v1/diffusion/groups?by=model_id&agg=mean(batch_latency_s)",
        "/v1/llm/best?task=gpqa",
        "/explore/llm?task=gpqa",
    ] {
        for coding in ["identity", "gzip", "br", "zstd"] {
            let accept = if uri.starts_with("/explore") {
                "text/html"
            } else {
                "application/json"
            };
            let ask = [
                ("accept-encoding", coding),
                ("accept", accept),
                ("origin", "https://example.org"),
            ];
            let first = app.get_with(uri, &ask).await;
            let before = app.get("/metrics").await.text();
            let again = app.get_with(uri, &ask).await;
            let after = app.get("/metrics").await.text();
            assert_eq!(again.status, 200, "{uri} {coding}");
            assert_eq!(again.body, first.body, "{uri} {coding}");
            assert_eq!(
                answer_headers(&again),
                answer_headers(&first),
                "{uri} {coding}"
            );
            // Given from the cache, not computed again.
            assert_eq!(
                metrics(&after, "computed"),
                metrics(&before, "computed"),
                "{uri}"
            );
            assert_eq!(
                metrics(&after, "cache"),
                metrics(&before, "cache") + 1,
                "{uri}"
            );
            // Sent twice, its response is kept and given before routing: the same again.
            let kept = app.get_with(uri, &ask).await;
            assert_eq!(kept.body, first.body, "{uri} {coding}");
            assert_eq!(
                answer_headers(&kept),
                answer_headers(&first),
                "{uri} {coding}"
            );
            // And revalidated with its tag.
            let tag = again.headers["etag"].to_str().unwrap();
            let revalidated = app
                .get_with(uri, &[ask[0], ask[1], ("if-none-match", tag)])
                .await;
            assert_eq!(revalidated.status, 304, "{uri} {coding}");
        }
    }
    // A page names the origin it was asked at: another Host is another answer.
    let a = app
        .get_with(
            "/explore/llm",
            &[("accept", "text/html"), ("host", "a.example")],
        )
        .await;
    let b = app
        .get_with(
            "/explore/llm",
            &[("accept", "text/html"), ("host", "b.example")],
        )
        .await;
    assert!(a.text().contains("curl 'http://a.example/v1/llm/runs"));
    assert!(b.text().contains("curl 'http://b.example/v1/llm/runs"));
    assert_ne!(a.headers["etag"], b.headers["etag"]);
}

/// A POST's answer (SQL in the body) travels in the coding asked for, as a GET's does: sent from
/// the answer's compressed form, which decodes to the identity body.
#[tokio::test]
async fn every_coding_of_posted_answers() {
    let app = TestApp::sample().await;
    let sql = r#"{"sql": "SELECT run_id, model_id, energy_per_token_joules FROM llm_runs ORDER BY run_id LIMIT 40"}"#;
    let send = async |coding: Option<&'static str>| {
        let mut headers = vec![("content-type", "application/json")];
        if let Some(c) = coding {
            headers.push(("accept-encoding", c));
        }
        app.send("POST", "/v1/sql", &headers, axum::body::Body::from(sql))
            .await
    };
    let plain = send(None).await;
    assert_plain(&plain, "POST /v1/sql");
    assert!(plain.body.len() > 1000);
    for coding in ["gzip", "br", "zstd"] {
        let r = send(Some(coding)).await;
        assert_coded(&r, coding, &plain.body, "POST /v1/sql");
        assert_eq!(header(&r, "content-length"), r.body.len().to_string());
    }
}
