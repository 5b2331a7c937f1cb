//! Overload and abuse protection (the outermost layer but tracing): a request's target and headers
//! are bounded (414, 431), requests in flight are bounded, with the excess shed at once (503 with
//! Retry-After) rather than queued, and every request has a time limit to its answer's head (504).
//! The costly work (raw-derived data, SQL, fits, charts) is bounded at the service's door, for
//! every front end (`service::ask::places`): a costly route's handler takes a place there. All as
//! problem+json. With `--rate-limit-per-ip`, each client IP has a rate with bursts (429 with
//! Retry-After beyond it). Admin actions (prefetch) need the bearer token when one is configured, and are
//! refused when none is and the server listens beyond loopback. Its bounds (`GuardOptions`) and
//! counts (`InFlight`) are part of the state (`state`).

use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::Request;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};

use super::error::AppError;
use super::state::AppState;

/// A place taken in a count, given back when dropped.
pub struct Taken<'a>(&'a AtomicUsize);

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn take(count: &AtomicUsize, max: usize) -> Option<Taken<'_>> {
    if count.fetch_add(1, Ordering::AcqRel) >= max {
        count.fetch_sub(1, Ordering::AcqRel);
        None
    } else {
        Some(Taken(count))
    }
}

/// The guard (see the module header), run by `metrics::record` inside its count (`front`); `next`
/// answers an admitted request.
pub async fn guard<F: Future<Output = Response>>(
    state: &AppState,
    req: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    let o = &state.http.guard;
    let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if target > o.max_uri_bytes {
        return AppError::UriTooLong {
            limit: o.max_uri_bytes,
        }
        .into_response();
    }
    let header_bytes: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum();
    if header_bytes > o.max_header_bytes {
        return AppError::HeadersTooLarge {
            limit: o.max_header_bytes,
        }
        .into_response();
    }
    // Probes are never shed: an overloaded replica is still alive, and says whether it is ready.
    if matches!(req.uri().path(), "/healthz" | "/readyz" | "/metrics") {
        return next(req).await;
    }
    if let (Some(limit), Some(client)) = (o.rate_per_ip, client_ip(&req, o))
        && let Err(wait) = state.rates.take(client, limit)
    {
        return AppError::RateLimited {
            detail: format!(
                "{client} is over its rate of {} requests per second (bursts of {}); try again in {wait} s",
                limit.per_second, limit.burst
            ),
            retry_after: wait,
        }
        .into_response();
    }
    // A reload is how an operator gets out of trouble: never shed (it is an admin action, behind
    // the token beyond loopback), though still under the time limit.
    if req.uri().path() == "/v1/admin/reload" {
        return within(o.request_timeout, next(req)).await;
    }
    let in_flight = state.in_flight.clone();
    let Some(_all) = take(&in_flight.all, o.max_in_flight) else {
        in_flight.shed_all.fetch_add(1, Ordering::Relaxed);
        return shed(format!(
            "{} requests are in flight, the most this server takes at once; try again shortly",
            o.max_in_flight
        ));
    };
    within(o.request_timeout, next(req)).await
}

/// The answer, or 504 when it takes longer than `limit` (the work is dropped).
async fn within(limit: std::time::Duration, answer: impl Future<Output = Response>) -> Response {
    match tokio::time::timeout(limit, answer).await {
        Ok(resp) => resp,
        Err(_) => AppError::RequestTimeout { limit }.into_response(),
    }
}

/// The client a request is counted for: the last address of the configured header (the one the
/// reverse proxy saw), else the connection's peer; none when neither is known.
fn client_ip(req: &Request, o: &super::state::GuardOptions) -> Option<std::net::IpAddr> {
    if let Some(name) = &o.client_ip_header {
        return req
            .headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .last()
            .and_then(|a| a.trim().parse().ok());
    }
    req.extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip())
}

fn shed(detail: String) -> Response {
    AppError::Busy {
        detail,
        retry_after: 1,
    }
    .into_response()
}

/// Refuse an admin action unless it is allowed: with a configured token, the request must carry
/// it as `Authorization: Bearer <token>`; without one, only a server on loopback takes it.
pub fn require_admin(state: &AppState, headers: &HeaderMap) -> Result<(), AppError> {
    let o = &state.http.guard;
    match &o.admin_token {
        Some(token) => {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            if same(given.as_bytes(), token.as_bytes()) {
                Ok(())
            } else {
                Err(AppError::Unauthorized(
                    "this action needs the admin token: Authorization: Bearer <MLENERGY_ADMIN_TOKEN>".into(),
                ))
            }
        }
        None if o.loopback => Ok(()),
        None => Err(AppError::AdminForbidden(
            "admin actions are off: the server listens beyond loopback and MLENERGY_ADMIN_TOKEN is not set".into(),
        )),
    }
}

/// Equal bytes, compared in time that does not depend on where they differ.
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_compared_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }
}
