//! Encoded answers and the response cache: a snapshot never changes, so an encoded answer is
//! valid for as long as its snapshot is served.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use super::error::AppError;
use super::negotiate::{Format, negotiate};
use super::params::{Endpoint, Params};
use super::state::{AppState, parse_domain};
use crate::engine::{Dataset, Domain};

/// What every data endpoint starts from: the domain, its checked parameters, the representation
/// and the snapshot to answer from.
pub struct Prepared {
    pub domain: Domain,
    pub params: Params,
    pub format: Format,
    pub snapshot: Arc<Dataset>,
}

impl Prepared {
    /// The rows of the request's domain that its run filters select, in default order.
    pub fn filtered_rows(&self) -> Result<Vec<usize>, AppError> {
        let q = self.params.run_filters(self.domain)?;
        Ok(self
            .snapshot
            .table(self.domain)
            .filter_rows(&q.filters, q.stability)?)
    }
}

pub fn prepare(
    state: &AppState,
    domain: &str,
    endpoint: Endpoint,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Result<Prepared, AppError> {
    let domain = parse_domain(domain)?;
    let params = Params::parse(domain, endpoint, query)?;
    let format = negotiate(
        params.format()?,
        headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()),
    )?;
    Ok(Prepared {
        domain,
        params,
        format,
        snapshot: state.engine.snapshot(),
    })
}

/// An encoded answer with the paging facts that go into headers.
#[derive(Debug, Clone)]
pub struct Encoded {
    pub content_type: &'static str,
    pub body: Bytes,
    /// Matching rows before paging (`X-Total-Count`).
    pub total: Option<usize>,
    /// The next page (`Link: <…>; rel="next"`).
    pub next: Option<String>,
}

fn cache_key(snapshot: &Dataset, uri: &Uri, format: Format) -> String {
    format!("{}|{}|{}", snapshot.generation, format.name(), uri)
}

/// The cached answer for a request, if any: endpoints whose inputs are costly to gather (raw
/// files) check this before gathering them.
pub fn lookup(state: &AppState, snapshot: &Dataset, uri: &Uri, format: Format) -> Option<Response> {
    state
        .cache
        .get(&cache_key(snapshot, uri, format))
        .map(|e| respond(&e))
}

/// Answer from the cache, or compute, cache and answer. Errors are not cached.
pub fn cached(
    state: &AppState,
    snapshot: &Dataset,
    uri: &Uri,
    format: Format,
    compute: impl FnOnce() -> Result<Encoded, AppError>,
) -> Result<Arc<Encoded>, AppError> {
    let key = cache_key(snapshot, uri, format);
    if let Some(hit) = state.cache.get(&key) {
        return Ok(hit);
    }
    let encoded = Arc::new(compute()?);
    state.cache.insert(key, encoded.clone());
    Ok(encoded)
}

/// The HTTP response for an encoded answer.
pub fn respond(e: &Encoded) -> Response {
    let mut resp = e.body.clone().into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(e.content_type),
    );
    if let Some(total) = e.total {
        h.insert("x-total-count", HeaderValue::from(total));
    }
    if let Some(next) = &e.next
        && let Ok(v) = HeaderValue::from_str(&format!("<{next}>; rel=\"next\""))
    {
        h.insert(header::LINK, v);
    }
    resp
}
