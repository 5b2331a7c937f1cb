//! Shared request state: the service, limits, and the encoded-response cache.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::AppError;
use super::respond::Encoded;
use crate::engine::Domain;
use crate::service::Service;

/// Limits applied to every request.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest `limit` a run list accepts.
    pub max_rows: usize,
    /// Long answers (ITLs, output lengths) estimated at this many bytes or more are streamed
    /// rather than held and cached: a filter over many runs reaches gigabytes. Smaller ones (a
    /// single run's ITLs) are cached whole, so a repeated answer is sent without encoding it again.
    pub stream_bytes: usize,
}

impl Limits {
    /// `stream_bytes` unless configured otherwise.
    pub const STREAM_BYTES: usize = 64 << 20;
}

/// State shared by all handlers.
#[derive(Clone)]
pub struct AppState {
    /// What requests are answered from: the snapshot, derived data, prefetch jobs.
    pub service: Arc<Service>,
    pub limits: Limits,
    /// Encoded responses by (snapshot, path, query, format). Snapshots are immutable, so an entry
    /// never goes stale; a reload changes the snapshot part of the key.
    pub cache: moka::sync::Cache<String, Arc<Encoded>>,
}

impl AppState {
    pub fn new(service: Arc<Service>, limits: Limits, cache_bytes: u64) -> Self {
        let cache = moka::sync::Cache::builder()
            .max_capacity(cache_bytes)
            .weigher(|k: &String, v: &Arc<Encoded>| {
                u32::try_from(k.len() + v.body.len() + v.next.as_ref().map_or(0, String::len))
                    .unwrap_or(u32::MAX)
            })
            .build();
        AppState {
            service,
            limits,
            cache,
        }
    }
}

/// `Path<T>` whose rejection is a problem+json 400 instead of axum's plain text.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(v)| ApiPath(v))
            .map_err(|e| AppError::InvalidParameter {
                parameter: "path".into(),
                detail: e.body_text(),
                allowed: None,
            })
    }
}

/// The domain path segment, or 404 naming the allowed domains.
pub fn parse_domain(s: &str) -> Result<Domain, AppError> {
    Domain::parse(s).ok_or_else(|| AppError::UnknownDomain(s.to_string()))
}
