//! `GET /metrics` in the Prometheus (OpenMetrics) text format, with prometheus-client: requests
//! by route template, method and status; latency to the answer's head by route; body bytes sent
//! (where the length is known); requests in flight and shed; and, read at each scrape, the raw
//! cache's hits, misses, bytes fetched, evictions and failures, the SQL queries and their limit
//! hits, and the snapshot served (an info metric and its rows).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use super::request_metrics::{DomainLabel, FromLabel, KindLabel, QuestionLabel, SnapshotLabels};
use super::state::AppState;
use crate::engine::Domain;

/// Count a request answered by `next` (the guard and what it admits, in `front`: the outermost of
/// the service's own work, so shed and refused requests count too).
pub async fn record<F: Future<Output = Response>>(
    state: &AppState,
    req: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    // The template and method are read before the request moves on (the template is shared, not
    // copied: a clone of an `Arc`).
    let route = req.extensions().get::<MatchedPath>().cloned();
    let method = req.method().clone();
    let m = &state.metrics;
    m.start();
    let started = Instant::now();
    let resp = next(req).await;
    let known = axum::body::HttpBody::size_hint(resp.body())
        .exact()
        .or_else(|| {
            resp.headers()
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
        });
    m.finish(
        route.as_ref().map_or("unmatched", MatchedPath::as_str),
        method.as_str(),
        resp.status().as_u16(),
        started.elapsed(),
        known,
    );
    resp
}

/// The metrics, in the Prometheus text format.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "health",
    responses((status = 200, description = "OpenMetrics text", content_type = "application/openmetrics-text", body = String))
)]
pub async fn metrics(State(state): State<AppState>) -> Response {
    let mut r = Registry::default();
    state.metrics.register_into(&mut r);
    guard(&mut r, &state);
    connections(&mut r, &state);
    answers(&mut r, &state);
    derived(&mut r, &state);
    snapshot(&mut r, &state);
    sql(&mut r, &state);
    let mut text = String::new();
    if prometheus_client::encoding::text::encode(&mut text, &r).is_err() {
        return super::error::AppError::Internal("encoding the metrics".into()).into_response();
    }
    let mut resp = text.into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    resp
}

/// Requests shed by the guard's bounds and refused by the rate limit.
fn guard(r: &mut Registry, state: &AppState) {
    let shed = (state.in_flight.shed_all(), state.door.costly_refused());
    r.register(
        "mlenergy_http_requests_shed_all",
        "Requests shed because the requests in flight were at --max-in-flight",
        ConstCounter::new(shed.0),
    );
    r.register(
        "mlenergy_http_requests_shed_costly",
        "Requests shed because the costly requests in flight were at --max-costly-in-flight",
        ConstCounter::new(shed.1),
    );
    r.register(
        "mlenergy_http_requests_rate_limited",
        "Requests refused because their client was over --rate-limit-per-ip",
        ConstCounter::new(
            state
                .rates
                .limited
                .load(std::sync::atomic::Ordering::Relaxed),
        ),
    );
}

/// The listener's connections: open, accepted, closed and why; CPU turns given up.
fn connections(r: &mut Registry, state: &AppState) {
    let conns = &state.connections;
    let open = Gauge::<i64>::default();
    open.set(i64::try_from(conns.open.load(Relaxed)).unwrap_or(i64::MAX));
    r.register(
        "mlenergy_http_connections_open",
        "HTTP connections open now (at most --max-connections)",
        open,
    );
    let closed = Family::<KindLabel, Counter>::default();
    for (kind, n) in [
        ("refused", &conns.refused),
        ("header_timeout", &conns.header_timeouts),
        ("idle", &conns.idle_closed),
    ] {
        closed
            .get_or_create(&KindLabel {
                kind: kind.to_string(),
            })
            .inc_by(n.load(Relaxed));
    }
    r.register(
        "mlenergy_http_connections_accepted",
        "HTTP connections accepted and served",
        ConstCounter::new(conns.accepted.load(Relaxed)),
    );
    r.register(
        "mlenergy_http_connections_closed",
        "HTTP connections the server closed: refused at --max-connections (answered 503), headers not sent within --header-read-timeout, no request within --keep-alive-timeout",
        closed,
    );

    r.register(
        "mlenergy_http_cpu_turns_ended",
        "Times a worker thread gave its core up (sched_yield) after sending an answer, its --cpu-turn over",
        ConstCounter::new(conns.cpu_turns_ended.load(Relaxed)),
    );
}

/// Questions answered at the door, and answers given from the answer cache or computed.
fn answers(r: &mut Registry, state: &AppState) {
    let questions = Family::<QuestionLabel, Counter>::default();
    for (name, n) in state.door.asked() {
        questions
            .get_or_create(&QuestionLabel {
                question: name.to_string(),
            })
            .inc_by(n);
    }
    r.register(
        "mlenergy_questions",
        "Questions answered at the service's door (from the answer cache or computed), whichever front end asked: REST, MCP or the explorer",
        questions,
    );

    let (hits, computed) = state.cache.counts();
    let answers = Family::<KindLabel, Counter>::default();
    for (kind, n) in [("cache", hits), ("computed", computed)] {
        answers
            .get_or_create(&KindLabel {
                kind: kind.to_string(),
            })
            .inc_by(n);
    }
    r.register(
        "mlenergy_http_answers",
        "Encoded answers given from the response cache, or computed (streamed ones are not counted)",
        answers,
    );
}

/// Runs' derived data written to the derived store and loaded into memory.
fn derived(r: &mut Registry, state: &AppState) {
    let persisted = state.service.persist_stats();
    r.register(
        "mlenergy_derived_persisted",
        "Runs' derived data (ITLs, output lengths, timelines) written to the derived store",
        ConstCounter::new(persisted.written),
    );
    r.register(
        "mlenergy_derived_persist_failures",
        "Runs' derived data that could not be written (read from the raw file again next time)",
        ConstCounter::new(persisted.failed),
    );
    r.register(
        "mlenergy_derived_persist_seconds",
        "Time spent writing derived data, off the request path",
        ConstCounter::new(persisted.seconds),
    );
    let loads = Family::<FromLabel, Counter>::default();
    for (from, n) in [("persisted", persisted.loaded), ("raw", persisted.parsed)] {
        loads
            .get_or_create(&FromLabel {
                from: from.to_string(),
            })
            .inc_by(n);
    }
    r.register(
        "mlenergy_derived_loads",
        "Runs' derived data loaded into memory: from the persisted copy (this replica's or another's) or read from the raw file",
        loads,
    );
}

/// The snapshot served, its runs, and its remote source's raw cache.
fn snapshot(r: &mut Registry, state: &AppState) {
    let snapshot = state.service.snapshot();
    r.register(
        "mlenergy_snapshot",
        "The snapshot served",
        Info::new(SnapshotLabels {
            snapshot: crate::service::catalog::snapshot_id(&snapshot.content_id).to_string(),
            source: snapshot.source.location.clone(),
            revision: snapshot.source.revision.clone().unwrap_or_default(),
        }),
    );
    let runs = Family::<DomainLabel, Gauge>::default();
    for d in Domain::ALL {
        runs.get_or_create(&DomainLabel {
            domain: d.as_str().to_string(),
        })
        .set(snapshot.table(d).len() as i64);
    }
    r.register("mlenergy_runs", "Runs loaded, by domain", runs);

    if let Some(remote) = snapshot.source.remote.as_ref() {
        let s = remote.stats();
        for (name, help, v) in [
            (
                "mlenergy_raw_cache_hits",
                "Raw files found in the cache",
                s.hits.load(Relaxed),
            ),
            (
                "mlenergy_raw_cache_misses",
                "Raw files fetched from the source",
                s.misses.load(Relaxed),
            ),
            (
                "mlenergy_raw_cache_fetched_bytes",
                "Bytes fetched from the source",
                s.bytes_fetched.load(Relaxed),
            ),
            (
                "mlenergy_raw_cache_failures",
                "Fetches that failed",
                s.failures.load(Relaxed),
            ),
        ] {
            r.register(name, help, ConstCounter::new(v));
        }
        r.register(
            "mlenergy_raw_cache_single_flight_waits",
            "Requests for a raw file that joined a download already under way instead of starting one",
            ConstCounter::new(s.single_flight_waits.load(Relaxed)),
        );
        r.register(
            "mlenergy_raw_cache_lease_waits",
            "Downloads that found another replica fetching the same file (its lease in the shared catalog) and waited for it",
            ConstCounter::new(s.lease_waits.load(Relaxed)),
        );
        let by_kind = Family::<KindLabel, Counter>::default();
        for (i, kind) in crate::store::fetch::FetchError::KINDS.iter().enumerate() {
            by_kind
                .get_or_create(&KindLabel {
                    kind: kind.to_string(),
                })
                .inc_by(s.failures_by_kind[i].load(Relaxed));
        }
        r.register(
            "mlenergy_raw_cache_fetch_errors",
            "Failed fetches from the source (hub or object store), by kind",
            by_kind,
        );
        r.register(
            "mlenergy_raw_cache_evictions",
            "Files evicted from the cache to stay under --cache-max-bytes",
            ConstCounter::new(remote.bound().evictions()),
        );
    }
}

/// SQL queries, those not answered and why, and the prepared statements kept.
fn sql(r: &mut Registry, state: &AppState) {
    let sql = state.service.sql_stats();
    r.register(
        "mlenergy_sql_queries",
        "SQL queries asked",
        ConstCounter::new(sql.queries),
    );
    let outcomes = Family::<KindLabel, Gauge>::default();
    for (kind, v) in [
        ("refused", sql.refused),
        ("invalid", sql.invalid),
        ("time_limit", sql.timeouts),
        ("memory_limit", sql.memory),
        ("row_cap", sql.rows),
        ("busy", sql.busy),
    ] {
        outcomes
            .get_or_create(&KindLabel { kind: kind.into() })
            .set(v as i64);
    }
    r.register(
        "mlenergy_sql_not_answered",
        "SQL queries not answered, by why (refused, invalid, a limit, busy); a running total",
        outcomes,
    );
    let plans = Family::<KindLabel, Counter>::default();
    for (kind, n) in [
        ("hit", sql.plan_hits),
        ("miss", sql.plan_misses),
        ("eviction", sql.plan_evictions),
    ] {
        plans
            .get_or_create(&KindLabel { kind: kind.into() })
            .inc_by(n);
    }
    r.register(
        "mlenergy_sql_plan_cache",
        "Prepared SQL statements: queries whose statement was planned before (hit) or for them (miss), and statements dropped to stay in the cache's bound (eviction)",
        plans,
    );
}
