//! The request metrics (`metrics` counts into them and renders them): requests by route
//! template, method and status, latency to the answer's head, body bytes, requests in flight.
//! Part of the state; it imports nothing of the HTTP layer.

use std::collections::HashSet;
use std::sync::{LazyLock, RwLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabel {
    route: &'static str,
}

/// The route templates counted so far, each kept once for the life of the process: a label of a
/// request costs a lookup, not an allocation. The router's templates are a fixed set (requests
/// that match none count as `unmatched`), so the set stays as small as the router.
static ROUTES: LazyLock<RwLock<HashSet<&'static str>>> = LazyLock::new(RwLock::default);

fn route_label(route: &str) -> &'static str {
    if let Some(kept) = ROUTES.read().unwrap_or_else(|e| e.into_inner()).get(route) {
        return kept;
    }
    let mut routes = ROUTES.write().unwrap_or_else(|e| e.into_inner());
    if let Some(kept) = routes.get(route) {
        return kept;
    }
    let kept: &'static str = Box::leak(route.into());
    routes.insert(kept);
    kept
}

/// A method's label: its name for the methods of RFC 9110 and PATCH, `other` for any other
/// (a client names its method freely; the families stay bounded).
fn method_label(method: &str) -> &'static str {
    const KNOWN: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ];
    KNOWN.into_iter().find(|m| *m == method).unwrap_or("other")
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct KindLabel {
    pub(super) kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct QuestionLabel {
    pub(super) question: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct FromLabel {
    pub(super) from: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct DomainLabel {
    pub(super) domain: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct SnapshotLabels {
    pub(super) snapshot: String,
    pub(super) source: String,
    pub(super) revision: String,
}

fn latency_histogram() -> Histogram {
    // 50 µs to ~26 s.
    Histogram::new(exponential_buckets(0.00005, 2.0, 20))
}

/// The request metrics, counted by the `record` middleware.
#[derive(Debug)]
pub struct Metrics {
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabel, Histogram, fn() -> Histogram>,
    bytes: Family<RouteLabel, Counter>,
    in_flight: Gauge,
    /// MCP tool calls by tool and outcome (ok, refused, failed), and their time.
    tool_calls: Family<ToolLabels, Counter>,
    tool_latency: Family<ToolLabel, Histogram, fn() -> Histogram>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            bytes: Family::default(),
            in_flight: Gauge::default(),
            tool_calls: Family::default(),
            tool_latency: Family::new_with_constructor(latency_histogram),
        }
    }
}

impl Metrics {
    /// A request begins.
    pub fn start(&self) {
        self.in_flight.inc();
    }

    /// A request's answer head is ready: count it.
    pub fn finish(
        &self,
        route: &str,
        method: &str,
        status: u16,
        elapsed: Duration,
        body_bytes: Option<u64>,
    ) {
        self.in_flight.dec();
        let route = route_label(route);
        let method = method_label(method);
        let label = RouteLabel { route };
        self.latency
            .get_or_create(&label)
            .observe(elapsed.as_secs_f64());
        if let Some(n) = body_bytes {
            self.bytes.get_or_create(&label).inc_by(n);
        }
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method,
                status,
            })
            .inc();
    }

    /// An MCP tool call has been answered: count it by tool name and outcome.
    pub fn tool_call(&self, tool: &str, outcome: &str, elapsed: Duration) {
        self.tool_calls
            .get_or_create(&ToolLabels {
                tool: tool.to_string(),
                outcome: outcome.to_string(),
            })
            .inc();
        self.tool_latency
            .get_or_create(&ToolLabel {
                tool: tool.to_string(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Register the request metrics in `r` (a scrape's registry).
    pub fn register_into(&self, r: &mut Registry) {
        r.register(
            "mlenergy_http_requests",
            "Requests answered, by route template, method and status",
            self.requests.clone(),
        );
        r.register(
            "mlenergy_http_request_duration_seconds",
            "Time to an answer's head, by route template",
            self.latency.clone(),
        );
        r.register(
            "mlenergy_http_response_body_bytes",
            "Body bytes sent where the length was known in advance, by route template",
            self.bytes.clone(),
        );
        r.register(
            "mlenergy_http_requests_in_flight",
            "Requests being answered now",
            self.in_flight.clone(),
        );
        r.register(
            "mlenergy_mcp_tool_calls",
            "MCP tool calls answered, by tool and outcome (ok, refused, failed)",
            self.tool_calls.clone(),
        );
        r.register(
            "mlenergy_mcp_tool_call_duration_seconds",
            "Time to an MCP tool's answer, by tool",
            self.tool_latency.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_is_kept_once_and_methods_beyond_the_known_ones_count_as_other() {
        let first = route_label("/v1/{domain}/runs");
        let again = route_label(&String::from("/v1/{domain}/runs"));
        assert_eq!(first, "/v1/{domain}/runs");
        assert!(std::ptr::eq(first, again), "the same kept text");
        assert_ne!(route_label("/v1/{domain}/groups"), first);
        assert_eq!(method_label("GET"), "GET");
        assert_eq!(method_label("PATCH"), "PATCH");
        assert_eq!(method_label("BREW"), "other");
        assert_eq!(method_label("get"), "other", "methods are case-sensitive");
    }
}
