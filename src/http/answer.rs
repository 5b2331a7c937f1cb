//! Answers as HTTP responses: encoded answers and the response cache (a snapshot never changes,
//! so an encoded answer is valid for as long as its snapshot is served), and the bodies that are
//! sent in pieces or streamed while they are encoded.

use std::sync::Arc;

use axum::http::{HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use super::error::AppError;
use super::negotiate::Format;
use crate::service::Snapshot;
use crate::service::coding::Variants;

/// The key of an answer: the first 128 bits of the keyed BLAKE3 digest of what it is the answer to
/// (the snapshot's generation, the representation and the request URI; or an MCP call's text).
/// Fixed-size, so that the cache's map hashes and compares 16 bytes, not a URI of hundreds: under
/// a stream of distinct requests the map evicts without pause and rebuilds its table each time a
/// tenth of it is tombstones, hashing every key again (with the text as key, that and the key
/// comparisons were a large part of a fresh REST query's CPU). The digest's key is drawn when the
/// process starts, so the keys are uniform and no client can choose texts whose keys collide or
/// share the bits the map indexes by; the map hashes a key to its own bits (`KeyBits`). Two texts
/// share a key with probability 2⁻¹²⁸.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct AnswerKey(u128);

/// The key of the answer keys' digest: 256 random bits (two version 4 UUIDs' 244) per process.
static DIGEST_KEY: std::sync::LazyLock<[u8; 32]> = std::sync::LazyLock::new(|| {
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    key
});

impl AnswerKey {
    /// The key of `parts`, each length-prefixed (no two lists of parts make the same input).
    fn of(parts: &[&[u8]]) -> AnswerKey {
        let mut h = blake3::Hasher::new_keyed(&DIGEST_KEY);
        for part in parts {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part);
        }
        let digest = h.finalize();
        let mut first = [0u8; 16];
        first.copy_from_slice(&digest.as_bytes()[..16]);
        AnswerKey(u128::from_le_bytes(first))
    }

    /// The key of a text of the caller's making (`mcp`).
    #[cfg(feature = "mcp")]
    pub(crate) fn of_text(text: &str) -> AnswerKey {
        AnswerKey::of(&[b"keyed", text.as_bytes()])
    }
}

impl std::hash::Hash for AnswerKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.0 as u64 ^ (self.0 >> 64) as u64);
    }
}

/// The answer cache's hasher: an `AnswerKey` is already a secret-keyed digest, so its bits are
/// its hash.
#[derive(Clone, Copy, Default)]
pub(crate) struct KeyBits;

impl std::hash::BuildHasher for KeyBits {
    type Hasher = KeyBitsHasher;

    fn build_hasher(&self) -> KeyBitsHasher {
        KeyBitsHasher(0)
    }
}

pub(crate) struct KeyBitsHasher(u64);

impl std::hash::Hasher for KeyBitsHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u64(&mut self, bits: u64) {
        self.0 ^= bits;
    }

    /// Not reached by `AnswerKey`; any other input is folded in byte by byte (FNV-1a's step).
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Encoded answers by (snapshot, format, request URI), weighed by bytes, with how many answers
/// it gave and how many had to be computed (`/metrics`).
#[derive(Clone)]
pub struct AnswerCache {
    entries: moka::sync::Cache<AnswerKey, Arc<Encoded>, KeyBits>,
    /// Answers given from the cache, answers computed: shared by the clones.
    counts: Arc<[std::sync::atomic::AtomicU64; 2]>,
    /// Whether it may hold anything (a cache of no bytes is neither asked nor given answers).
    enabled: bool,
}

impl AnswerCache {
    fn get(&self, key: &AnswerKey) -> Option<Arc<Encoded>> {
        if !self.enabled {
            return None;
        }
        let hit = self.entries.get(key);
        if hit.is_some() {
            self.counts[0].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        hit
    }

    /// An answer kept under a key of the caller's making (`mcp`: a tool call's result by the
    /// snapshot, protocol version and call), counted with the others.
    #[cfg(feature = "mcp")]
    pub(crate) fn get_keyed(&self, key: &str) -> Option<Bytes> {
        self.get(&AnswerKey::of_text(key)).map(|e| e.body.clone())
    }

    /// Keep `body` under `key` (see `get_keyed`).
    #[cfg(feature = "mcp")]
    pub(crate) fn put_keyed(&self, key: String, content_type: &'static str, body: Bytes) {
        self.counts[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if !self.enabled {
            return;
        }
        self.entries.insert(
            AnswerKey::of_text(&key),
            Arc::new(Encoded {
                content_type,
                body,
                total: None,
                next: None,
                warnings: Vec::new(),
                variants: Default::default(),
                sent: Default::default(),
            }),
        );
    }

    /// Count an answer given from the cache before its handler (`transport`'s kept responses).
    pub(crate) fn count_hit(&self) {
        self.counts[0].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Answers given from the cache, and answers computed (and offered to it), since start.
    pub fn counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.counts[0].load(Relaxed), self.counts[1].load(Relaxed))
    }
}

/// Responses of the answer cache by entity-tag stem (`transport`): a GET whose answer was sent
/// twice before is answered from the kept answer and the headers the layers inside
/// `transport` gave it, without routing it further (no handler, no parameter parsing, no cache
/// key). The bodies are the answer cache's own (shared); the map is weighed by them and bounded
/// like it.
#[derive(Clone)]
pub struct KeptResponses(moka::sync::Cache<String, Arc<Kept>>);

/// A kept response: the answer, and its headers but the coding's (`Content-Encoding`,
/// `Content-Length`, `ETag`), and its body sealed in a memory file to be sent from (`sendfile`),
/// when it is large enough.
pub struct Kept {
    pub(crate) answer: Arc<Encoded>,
    pub(crate) headers: axum::http::HeaderMap,
    pub(crate) sealed: Option<Arc<super::sendfile::Sealed>>,
}

impl KeptResponses {
    /// At most `bytes` of answers (none when 0: every request goes to its handler).
    pub fn new(bytes: u64) -> Self {
        KeptResponses(
            moka::sync::Cache::builder()
                .max_capacity(bytes)
                .weigher(|k: &String, v: &Arc<Kept>| {
                    let sealed = v.sealed.as_ref().map_or(0, |s| s.bytes());
                    u32::try_from(k.len() + v.answer.body.len() + sealed + 64 * v.headers.len())
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

/// An answer cache of at most `bytes`.
pub fn answer_cache(bytes: u64) -> AnswerCache {
    let entries = moka::sync::Cache::builder()
        .max_capacity(bytes)
        // The compressed forms are made after the entry is weighed: counted at half the body
        // (three codings of JSON, each much smaller than it).
        .weigher(|_: &AnswerKey, v: &Arc<Encoded>| {
            u32::try_from(16 + v.body.len() * 3 / 2 + v.next.as_ref().map_or(0, String::len))
                .unwrap_or(u32::MAX)
        })
        .build_with_hasher(KeyBits);
    AnswerCache {
        entries,
        counts: Default::default(),
        enabled: bytes > 0,
    }
}

/// An encoded answer with the paging facts that go into headers.
#[derive(Debug)]
pub struct Encoded {
    pub content_type: &'static str,
    pub body: Bytes,
    /// Matching rows before paging (`X-Total-Count`).
    pub total: Option<usize>,
    /// The next page (`Link: <…>; rel="next"`).
    pub next: Option<String>,
    /// Hints about the request (a filter value that matches no run), one `Warning` header each.
    pub warnings: Vec<String>,
    /// The body compressed in each coding a client asked for, made once (`transport`).
    pub variants: Variants,
    /// Whether the answer was sent before: `transport` keeps its response the second time it is
    /// sent (a fresh query's answer, most of a dashboard's, is seldom asked for again, and keeping
    /// each one cost an insertion in a second cache).
    pub sent: std::sync::atomic::AtomicBool,
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

/// The cached answer for a request, if any: endpoints whose inputs are costly to gather (raw
/// files) check this before gathering them.
pub fn lookup(
    cache: &AnswerCache,
    snapshot: &Snapshot,
    uri: &Uri,
    format: Format,
) -> Option<Response> {
    lookup_as(cache, snapshot, uri, format.name())
}

/// `lookup` for a representation other than the five formats (`svg`).
pub fn lookup_as(
    cache: &AnswerCache,
    snapshot: &Snapshot,
    uri: &Uri,
    representation: &str,
) -> Option<Response> {
    cache
        .get(&cache_key(snapshot, uri, representation))
        .map(|e| respond(&e))
}

/// Answer from the cache, or compute, cache and answer. Errors are not cached.
pub fn cached(
    cache: &AnswerCache,
    snapshot: &Snapshot,
    uri: &Uri,
    format: Format,
    compute: impl FnOnce() -> Result<Encoded, AppError>,
) -> Result<Arc<Encoded>, AppError> {
    cached_as(cache, snapshot, uri, format.name(), compute)
}

/// `cached` for a representation other than the five formats (`svg`).
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

/// `lookup` for an answer computed after an await (`cached` takes a closure): the cached answer,
/// or the key to `keep` the computed one under (the key made once).
pub(crate) fn lookup_or_key(
    cache: &AnswerCache,
    snapshot: &Snapshot,
    uri: &Uri,
    format: Format,
) -> Result<Response, AnswerKey> {
    let key = cache_key(snapshot, uri, format.name());
    cache.get(&key).map(|e| respond(&e)).ok_or(key)
}

/// Keep an answer computed after a lookup missed (no second lookup), and answer with it.
pub(crate) fn keep(cache: &AnswerCache, key: AnswerKey, mut encoded: Encoded) -> Arc<Encoded> {
    cache.counts[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if !cache.enabled {
        return Arc::new(encoded);
    }
    // Kept in an allocation of its own length: an encoder's buffer is reserved by estimate and
    // grows by doubling, and a body made from it keeps all of it.
    encoded.body = Bytes::copy_from_slice(&encoded.body);
    let encoded = Arc::new(encoded);
    cache.entries.insert(key, encoded.clone());
    encoded
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

    /// An answer's key is fixed by its parts, in order and each whole: moving bytes from one part
    /// to the next, swapping parts, or a part more or less is another key.
    #[test]
    fn answer_keys_tell_their_parts_apart() {
        let key = AnswerKey::of(&[b"7", b"json", b"/v1/llm/runs?task=gpqa"]);
        assert_eq!(
            key,
            AnswerKey::of(&[b"7", b"json", b"/v1/llm/runs?task=gpqa"])
        );
        for other in [
            AnswerKey::of(&[b"8", b"json", b"/v1/llm/runs?task=gpqa"]),
            AnswerKey::of(&[b"7", b"csv", b"/v1/llm/runs?task=gpqa"]),
            AnswerKey::of(&[b"7", b"json", b"/v1/llm/runs?task=gpq"]),
            AnswerKey::of(&[b"7", b"jso", b"n/v1/llm/runs?task=gpqa"]),
            AnswerKey::of(&[b"json", b"7", b"/v1/llm/runs?task=gpqa"]),
            AnswerKey::of(&[b"7", b"json", b"/v1/llm/runs?task=gpqa", b""]),
            AnswerKey::of(&[b"7json/v1/llm/runs?task=gpqa"]),
        ] {
            assert_ne!(key, other);
        }
    }

    /// A cache of some bytes keeps an answer; a cache of none neither keeps nor finds one, and
    /// counts each answer computed.
    #[test]
    fn a_cache_of_no_bytes_keeps_nothing() {
        let encoded = || Encoded {
            content_type: "application/json",
            body: Bytes::from_static(b"[1]"),
            total: None,
            next: None,
            warnings: Vec::new(),
            variants: Default::default(),
            sent: Default::default(),
        };
        let key = AnswerKey::of(&[b"test"]);
        let some = answer_cache(1 << 20);
        keep(&some, key, encoded());
        assert_eq!(
            some.get(&key).map(|e| e.body.clone()),
            Some(Bytes::from_static(b"[1]"))
        );
        assert_eq!(some.counts(), (1, 1));
        let none = answer_cache(0);
        for _ in 0..2 {
            keep(&none, key, encoded());
            assert!(none.get(&key).is_none());
        }
        none.entries.run_pending_tasks();
        assert_eq!((none.entries.entry_count(), none.counts()), (0, (0, 2)));
    }

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

/// A frame answered as rows (JSON: a bare array of row objects; the other formats as they
/// encode frames), made by `make` only when the answer is not cached.
pub fn frame_rows<F: std::borrow::Borrow<crate::engine::frame::Frame>>(
    cache: &AnswerCache,
    snapshot: &Snapshot,
    uri: &Uri,
    format: Format,
    warnings: Vec<String>,
    make: impl FnOnce() -> Result<F, AppError>,
) -> Result<Response, AppError> {
    let e = cached(cache, snapshot, uri, format, || {
        let made = make()?;
        let frame = made.borrow();
        let body =
            super::encode::encode_frame(frame, format, &|_| true, super::encode::json_array)?;
        Ok(Encoded {
            content_type: format.content_type(),
            body: body.into(),
            total: Some(frame.num_rows()),
            next: None,
            warnings,
            variants: Default::default(),
            sent: Default::default(),
        })
    })?;
    Ok(respond(&e))
}
