//! The service's own work on every request, as one layer: the request is counted
//! (`metrics::record`), admitted or refused (`guard`), and its answer sent in its coding with its
//! validators, or from the kept answers before its handler runs (`transport`).
//!
//! One layer with one boxed future for the three: each of axum's `from_fn` layers boxes its future
//! and its next service and clones every service below it for each request (three of them cost
//! every cached answer CPU).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::response::Response;
use tower::{BoxError, Layer, Service};

use super::state::AppState;
use super::{guard, metrics, transport};

/// Counts, guards and transports each request (see the module header).
#[derive(Clone)]
pub struct FrontLayer(pub AppState);

impl<S> Layer<S> for FrontLayer {
    type Service = Front<S>;

    fn layer(&self, inner: S) -> Front<S> {
        Front {
            state: self.0.clone(),
            inner,
        }
    }
}

/// The service of [`FrontLayer`].
#[derive(Clone)]
pub struct Front<S> {
    state: AppState,
    inner: S,
}

impl<S, B> Service<Request> for Front<S>
where
    S: Service<Request, Response = axum::http::Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // The service made ready answers this request; its clone waits for the next (tower's
        // rule for a service moved into a future).
        let clone = self.inner.clone();
        let mut ready = std::mem::replace(&mut self.inner, clone);
        let state = self.state.clone();
        Box::pin(async move {
            let answer = move |req| {
                let inner = ready.call(req);
                async move {
                    match inner.await {
                        Ok(resp) => resp.map(Body::new),
                        Err(never) => match never {},
                    }
                }
            };
            let resp = metrics::record(&state, req, |req| {
                guard::guard(&state, req, |req| transport::transport(&state, req, answer))
            })
            .await;
            Ok(resp)
        })
    }
}
