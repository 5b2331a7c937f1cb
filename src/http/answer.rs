//! Answers as HTTP responses: the service's encoded answers (kept in its answer cache, by URI
//! for the routes not yet answered at the door), and the bodies that are sent in pieces or
//! streamed while they are encoded.

use std::sync::Arc;

use axum::http::{HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use super::error::AppError;
use crate::service::Snapshot;
pub use crate::service::ask::Encoded;
pub use crate::service::ask::door::{AnswerCache, AnswerKey, answer_cache, keep};
use crate::service::ask::{Reply, SentBody};

/// Responses of the answer cache by entity-tag stem (`transport`): a GET whose answer was sent
/// twice before is answered from the kept answer and the headers the layers inside
/// `transport` gave it, without routing it further (no handler, no parameter parsing, no cache
/// key). The bodies are the answer cache's own (shared); the map is weighed by them and bounded
/// like it.
#[derive(Clone)]
pub struct KeptResponses(moka::sync::Cache<String, Arc<Kept>>);

/// A kept response: the answer, and its headers but the coding's (`Content-Encoding`,
/// `Content-Length`, `ETag`).
pub struct Kept {
    pub(crate) answer: Arc<Encoded>,
    pub(crate) headers: axum::http::HeaderMap,
}

impl KeptResponses {
    /// At most `bytes` of answers (none when 0: every request goes to its handler).
    pub fn new(bytes: u64) -> Self {
        KeptResponses(
            moka::sync::Cache::builder()
                .max_capacity(bytes)
                .weigher(|k: &String, v: &Arc<Kept>| {
                    u32::try_from(k.len() + v.answer.body.len() + 64 * v.headers.len())
                        .unwrap_or(u32::MAX)
                })
                .build(),
        )
    }

    pub(crate) fn enabled(&self) -> bool {
        self.0.policy().max_capacity() != Some(0)
    }

    pub(crate) fn get(&self, stem: &str) -> Option<Arc<Kept>> {
        self.0.get(stem)
    }

    pub(crate) fn keep(&self, stem: String, kept: Kept) {
        self.0.insert(stem, Arc::new(kept));
    }
}

/// A response extension: the answer came from `Encoded`, so `transport` sends its kept
/// compressed form rather than compressing it again.
#[derive(Clone)]
pub struct CachedAnswer(pub Arc<Encoded>);

fn cache_key(snapshot: &Snapshot, uri: &Uri, representation: &str) -> AnswerKey {
    // The URI's parts as it has them (the same distinctions as its text), without writing it out.
    AnswerKey::of(&[
        &snapshot.generation.to_le_bytes(),
        representation.as_bytes(),
        uri.scheme_str().unwrap_or("").as_bytes(),
        uri.authority().map_or("", |a| a.as_str()).as_bytes(),
        uri.path_and_query().map_or("", |pq| pq.as_str()).as_bytes(),
    ])
}

/// Answer from the cache, or compute, cache and answer (by the request URI, for the front ends
/// that keep answers of their own making). Errors are not cached.
pub fn cached_as(
    cache: &AnswerCache,
    snapshot: &Snapshot,
    uri: &Uri,
    representation: &str,
    compute: impl FnOnce() -> Result<Encoded, AppError>,
) -> Result<Arc<Encoded>, AppError> {
    let key = cache_key(snapshot, uri, representation);
    if let Some(hit) = cache.get(&key) {
        return Ok(hit);
    }
    Ok(keep(cache, key, compute()?))
}

/// The HTTP response for the door's answer: whole, in pieces, or streamed while it is written.
pub fn reply(reply: Reply) -> Response {
    let sent = match reply {
        Reply::Whole(e) => return respond(&e),
        Reply::Sent(sent) => sent,
    };
    let resp = match sent.body {
        SentBody::Pieces(parts) => pieces(sent.content_type, sent.total, parts),
        SentBody::Written(write) => streamed(sent.content_type, sent.total, write),
    };
    with_warnings(resp, &sent.warnings)
}

/// The HTTP response for an encoded answer.
pub fn respond(e: &Arc<Encoded>) -> Response {
    let mut resp = answer(e.body.clone().into_response(), e.content_type, e.total);
    resp.extensions_mut().insert(CachedAnswer(e.clone()));
    resp = with_warnings(resp, &e.warnings);
    if let Some(next) = &e.next
        && let Ok(v) = HeaderValue::from_str(&format!("<{next}>; rel=\"next\""))
    {
        resp.headers_mut().insert(header::LINK, v);
    }
    resp
}

/// `resp` with a `Warning: 299 - "<text>"` header per hint (RFC 9111 retired the header for
/// caches; clients and proxies pass it on). Non-ASCII characters of the text are written as
/// `\u{..}` escapes, quotes and backslashes escaped.
pub fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let mut text = String::with_capacity(w.len() + 12);
        text.push_str("299 - \"");
        for c in w.chars() {
            match c {
                '"' | '\\' => {
                    text.push('\\');
                    text.push(c);
                }
                ' '..='~' => text.push(c),
                other => text.push_str(&format!("\\u{{{:x}}}", other as u32)),
            }
        }
        text.push('"');
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

/// `resp` with the content type and, when known, the row count (`x-total-count`) of an answer.
fn answer(mut resp: Response, content_type: &'static str, total: Option<usize>) -> Response {
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(total) = total {
        h.insert("x-total-count", HeaderValue::from(total));
    }
    resp
}

/// An answer already in pieces (`Bytes` that share memory held elsewhere), sent one after the
/// other, with its length.
pub fn pieces(content_type: &'static str, total: Option<usize>, pieces: Vec<Bytes>) -> Response {
    let len: usize = pieces.iter().map(Bytes::len).sum();
    let body = futures::stream::iter(pieces.into_iter().map(Ok::<_, std::convert::Infallible>));
    let mut resp = answer(
        axum::body::Body::from_stream(body).into_response(),
        content_type,
        total,
    );
    resp.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    resp
}

/// Bytes gathered before they go to the client, in a streamed answer.
const STREAM_CHUNK: usize = 1 << 20;

/// An answer too large to hold or cache: `write` produces the body on the blocking pool while it
/// is sent, in chunks of about 1 MB. A failure part way ends the body early (the client sees a
/// cut response, and the error is logged); a client that goes away stops `write`.
pub fn streamed(
    content_type: &'static str,
    total: Option<usize>,
    write: impl FnOnce(&mut (dyn std::io::Write + Send)) -> Result<(), String> + Send + 'static,
) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    tokio::task::spawn_blocking(move || {
        let mut out = ChannelWriter {
            tx,
            buf: Vec::with_capacity(STREAM_CHUNK),
        };
        let written = write(&mut out)
            .and_then(|()| std::io::Write::flush(&mut out).map_err(|e| e.to_string()));
        if let Err(e) = written {
            tracing::error!(error = %e, "streamed answer cut short");
            let _ = out.tx.blocking_send(Err(std::io::Error::other(e)));
        }
    });
    // Fused: a body may be polled again after its end (the compression layer does).
    let body = futures::StreamExt::fuse(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    }));
    answer(
        axum::body::Body::from_stream(body).into_response(),
        content_type,
        total,
    )
}

/// A writer that sends what it is given to a response body, a chunk at a time.
struct ChannelWriter {
    tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    buf: Vec<u8>,
}

impl ChannelWriter {
    fn send(&mut self) -> std::io::Result<()> {
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(STREAM_CHUNK));
        self.tx
            .blocking_send(Ok(chunk.into()))
            .map_err(|_| std::io::ErrorKind::BrokenPipe.into())
    }
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= STREAM_CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.send()
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    /// A streamed body is everything written, in order, with the answer's headers; a failure
    /// part way cuts the body with an error.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streamed_answers() {
        let want: Vec<u8> = (0..3_500_000u32).map(|i| (i % 251) as u8).collect();
        let sent = want.clone();
        let resp = streamed("application/octet-stream", Some(7), move |out| {
            for piece in sent.chunks(300_001) {
                out.write_all(piece).map_err(|e| e.to_string())?;
            }
            Ok(())
        });
        assert_eq!(resp.headers()["x-total-count"], "7");
        assert_eq!(
            resp.headers()[header::CONTENT_TYPE],
            "application/octet-stream"
        );
        let got = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(got.len(), want.len());
        assert!(got == want);

        let resp = streamed("text/csv", None, |out| {
            out.write_all(&[b'x'; 3 << 20]).map_err(|e| e.to_string())?;
            Err("disk on fire".into())
        });
        assert!(resp.headers().get("x-total-count").is_none());
        assert!(resp.into_body().collect().await.is_err());
    }
}
