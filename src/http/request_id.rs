//! Each request's id, `x-request-id`: the one the client (or a proxy in front) sent, else a new
//! UUID. It is set on the request, where the trace span and the handlers read it, and on the
//! answer when the answer has none of its own.
//!
//! One layer with a future of its own: tower-http's pair of layers (one to set, one to
//! propagate) made a `String` for each UUID, an extension the service never reads, and a copy of
//! the header on each side; this layer makes the id's two header values and nothing else.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::http::{HeaderName, HeaderValue, Request, Response};
use tower::{Layer, Service};

/// The header that carries the id.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Gives each request an id and its answer the same id.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestIdLayer;

impl<S> Layer<S> for RequestIdLayer {
    type Service = RequestId<S>;

    fn layer(&self, inner: S) -> RequestId<S> {
        RequestId { inner }
    }
}

/// The service of [`RequestIdLayer`].
#[derive(Debug, Clone)]
pub struct RequestId<S> {
    inner: S,
}

impl<S, B, R> Service<Request<B>> for RequestId<S>
where
    S: Service<Request<B>, Response = Response<R>>,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = Tagged<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let id = match req.headers().get(&REQUEST_ID) {
            Some(given) => given.clone(),
            None => {
                let id = new_id();
                req.headers_mut().insert(REQUEST_ID, id.0);
                id.1
            }
        };
        Tagged {
            inner: self.inner.call(req),
            id: Some(id),
        }
    }
}

/// A new random (version 4) UUID, as two header values (one for the request, one for the
/// answer): made from the same 36 bytes on the stack, each is one allocation.
fn new_id() -> (HeaderValue, HeaderValue) {
    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    let text = uuid::Uuid::new_v4()
        .hyphenated()
        .encode_lower(&mut text)
        .as_bytes();
    let value = || HeaderValue::from_bytes(text).expect("a UUID is ASCII");
    (value(), value())
}

pin_project_lite::pin_project! {
    /// The answer of the inner service, given the request's id.
    pub struct Tagged<F> {
        #[pin]
        inner: F,
        id: Option<HeaderValue>,
    }
}

impl<F, R, E> Future for Tagged<F>
where
    F: Future<Output = Result<Response<R>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut resp = ready!(this.inner.poll(cx))?;
        if let Some(id) = this.id.take() {
            resp.headers_mut().entry(REQUEST_ID).or_insert(id);
        }
        Poll::Ready(Ok(resp))
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use tower::ServiceExt;

    use super::*;

    /// Echoes the request's id in the answer's body; answers with an id of its own when asked to.
    async fn echo(req: Request<String>) -> Result<Response<String>, Infallible> {
        let seen = req.headers()[&REQUEST_ID].to_str().unwrap().to_string();
        let mut resp = Response::new(seen);
        if req.body() == "own" {
            resp.headers_mut()
                .insert(REQUEST_ID, HeaderValue::from_static("the-handler's"));
        }
        Ok(resp)
    }

    async fn call(given: Option<&str>, body: &str) -> Response<String> {
        let mut req = Request::new(body.to_string());
        if let Some(id) = given {
            req.headers_mut()
                .insert(REQUEST_ID, HeaderValue::from_str(id).unwrap());
        }
        RequestIdLayer
            .layer(tower::service_fn(echo))
            .oneshot(req)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_request_without_an_id_gets_a_new_uuid_seen_inside_and_on_the_answer() {
        let a = call(None, "").await;
        let id = a.headers()[&REQUEST_ID].to_str().unwrap();
        assert_eq!(id, a.body(), "the service saw the id the answer carries");
        let parsed = uuid::Uuid::parse_str(id).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(
            id,
            parsed.hyphenated().to_string(),
            "lower-case, hyphenated"
        );
        let b = call(None, "").await;
        assert_ne!(b.headers()[&REQUEST_ID], a.headers()[&REQUEST_ID]);
    }

    #[tokio::test]
    async fn a_given_id_is_kept_and_an_answer_s_own_id_is_not_replaced() {
        let a = call(Some("from-the-proxy"), "").await;
        assert_eq!(a.body(), "from-the-proxy");
        assert_eq!(a.headers()[&REQUEST_ID], "from-the-proxy");
        assert_eq!(a.headers().get_all(&REQUEST_ID).iter().count(), 1);
        let b = call(Some("from-the-proxy"), "own").await;
        assert_eq!(b.headers()[&REQUEST_ID], "the-handler's");
        assert_eq!(b.headers().get_all(&REQUEST_ID).iter().count(), 1);
    }
}
