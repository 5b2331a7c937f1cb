//! How answers travel, for every GET of the service (run by the front layer, `front`): the content
//! coding negotiated from `Accept-Encoding` (answers of the answer cache, a POST's among them, and
//! the leaderboard's files sent from bytes compressed once, anything else compressed as it streams
//! by tower-http), a strong entity tag with `If-None-Match` → 304, `Cache-Control` and `Vary`.
//!
//! An answer of the snapshot (every GET but health, jobs and the cache's or datasets' state) is
//! fixed by the snapshot's content, the server's version and settings, and the normalised request
//! (path, query pairs, `Accept`). Its entity tag is a digest of those, the same in every process
//! that serves the same data, so a revalidation is answered before any work is done. Files with a
//! tag of their own (the leaderboard's: a digest of their bytes) are checked against it.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::answer::{CachedAnswer, Kept};
use super::state::AppState;
use crate::service::Snapshot;
use crate::service::coding::{Coding, Effort};
use crate::service::machinery::Piece;

/// The id of the snapshot an answer is from (`/v1/datasets`' `snapshot`).
pub const SNAPSHOT_ID: axum::http::HeaderName =
    axum::http::HeaderName::from_static("x-snapshot-id");

/// The snapshot an answer is from, citable: `revision="…", commit="…", content="…"` (the
/// revision it is served as, its hub commit, the digest of its content; empty when it has none).
pub const SNAPSHOT: axum::http::HeaderName = axum::http::HeaderName::from_static("x-snapshot");

/// `Server-Timing`: on the answer whose request loaded a revision, the load's duration.
pub const SERVER_TIMING: axum::http::HeaderName =
    axum::http::HeaderName::from_static("server-timing");

const FORWARDED_PROTO: axum::http::HeaderName =
    axum::http::HeaderName::from_static("x-forwarded-proto");

/// The coding chosen for a request, for the layers inside `transport`. As a handler's argument:
/// that coding, or, for a request that did not pass through `transport`, the one its
/// `Accept-Encoding` asks for (read without copying the request's headers).
#[derive(Debug, Clone, Copy)]
pub struct Chosen(pub Coding);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Chosen {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<Chosen>()
            .copied()
            .unwrap_or_else(|| Chosen(choose_coding(&parts.headers))))
    }
}

/// How a path's answers may be cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Fixed by the snapshot and the request: an entity tag, `max-age`.
    Snapshot,
    /// State that changes while the snapshot is served: `no-store`.
    Volatile,
}

fn kind(path: &str) -> Kind {
    let volatile = matches!(
        path,
        "/healthz" | "/readyz" | "/metrics" | "/v1/cache" | "/v1/datasets"
    ) || path.starts_with("/v1/jobs/");
    if volatile {
        Kind::Volatile
    } else {
        Kind::Snapshot
    }
}

/// `x-snapshot-id` and `x-snapshot` for `snapshot`'s answers, made once per snapshot on each
/// thread (a header value's clone shares its bytes; these are on every answer).
fn snapshot_headers(snapshot: &Snapshot) -> (HeaderValue, HeaderValue) {
    thread_local! {
        static MADE: std::cell::RefCell<Option<(u64, HeaderValue, HeaderValue)>> =
            const { std::cell::RefCell::new(None) };
    }
    MADE.with_borrow_mut(|made| match made {
        Some((generation, id, named)) if *generation == snapshot.generation => {
            (id.clone(), named.clone())
        }
        _ => {
            let id =
                HeaderValue::from_str(crate::service::catalog::snapshot_id(&snapshot.content_id))
                    .expect("hex digits");
            let who = snapshot.identity();
            let named = HeaderValue::from_str(&format!(
                "revision=\"{}\", commit=\"{}\", content=\"{}\"",
                who.revision.as_deref().unwrap_or(""),
                who.commit.as_deref().unwrap_or(""),
                who.content
            ))
            .expect("a revision's name, hex digits");
            *made = Some((snapshot.generation, id.clone(), named.clone()));
            (id, named)
        }
    })
}

/// The request's path and query with its revision pinned to `pin`: the permalink of its answer.
pub fn pinned_path(uri: &axum::http::Uri, pin: &str) -> String {
    let mut query: Vec<&str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty() && *p != "revision" && !p.starts_with("revision="))
        .collect();
    let pinned = format!("revision={pin}");
    query.push(&pinned);
    format!("{}?{}", uri.path(), query.join("&"))
}

/// `Link: <path?query>; rel="canonical"`: the request with its revision pinned to `pin`.
fn canonical(uri: &axum::http::Uri, pin: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!("<{}>; rel=\"canonical\"", pinned_path(uri, pin))).ok()
}

/// The stem of an answer's entity tag, and its key in the kept answers: `r-` and the digest of
/// everything an answer of the snapshot depends on, hex.
fn answer_tag(state: &AppState, content_id: &str, req: &Request) -> Stem {
    let mut h = Sha256::new();
    h.update(state.salt.as_bytes());
    h.update([0]);
    h.update(content_id.as_bytes());
    h.update([0]);
    h.update(req.uri().path().as_bytes());
    h.update([0]);
    // The query as decoded pairs in order: `%2C` and `,` are the same request.
    for (k, v) in url::form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes()) {
        h.update((k.len() as u64).to_le_bytes());
        h.update(k.as_bytes());
        h.update((v.len() as u64).to_le_bytes());
        h.update(v.as_bytes());
    }
    h.update([0]);
    for v in req.headers().get_all(header::ACCEPT) {
        h.update(v.as_bytes());
        h.update([b',']);
    }
    // The origin the explorer's pages name in their snippets.
    h.update([0]);
    for name in [header::HOST, FORWARDED_PROTO] {
        if let Some(v) = req.headers().get(&name) {
            h.update(v.as_bytes());
        }
        h.update([0]);
    }
    let mut text = [0u8; 34];
    text[..2].copy_from_slice(b"r-");
    hex::encode_to_slice(&h.finalize()[..16], &mut text[2..]).expect("two digits a byte");
    Stem(text)
}

/// An answer's tag stem (`r-` and 32 hex digits), on the stack: made for every request.
struct Stem([u8; 34]);

impl std::ops::Deref for Stem {
    type Target = str;

    fn deref(&self) -> &str {
        std::str::from_utf8(&self.0).expect("ASCII")
    }
}

/// An entity tag without `W/`, quotes and a coding suffix (and the `-q` of a quick form sent
/// until the final one is made): what two representations of one answer share.
fn tag_stem(tag: &str) -> &str {
    let t = tag.trim();
    let t = t.strip_prefix("W/").unwrap_or(t).trim_matches('"');
    let t = t.strip_suffix("-q").unwrap_or(t);
    for c in Coding::COMPRESSED {
        if let Some(stem) = t.strip_suffix(c.etag_suffix()) {
            return stem;
        }
    }
    t
}

/// Whether the `If-None-Match` values name `tag` (weak comparison, any coding of it) or are `*`.
fn none_match<'a>(values: impl IntoIterator<Item = &'a HeaderValue>, tag: &str) -> bool {
    let stem = tag_stem(tag);
    values
        .into_iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim() == "*" || tag_stem(t) == stem)
}

/// The `Cache-Control` of an answer of the snapshot.
fn cache_control(state: &AppState, pinned: bool) -> HeaderValue {
    if pinned {
        IMMUTABLE
    } else {
        max_age(state.http.max_age)
    }
}

/// The `Cache-Control` of what never changes: a pinned snapshot's answers, the frontend's
/// hashed assets.
pub const IMMUTABLE: HeaderValue = HeaderValue::from_static("public, max-age=31536000, immutable");

/// `Cache-Control: public, max-age=<seconds>`, written on the stack (this is on every answer).
pub fn max_age(seconds: u32) -> HeaderValue {
    const HEAD: &[u8] = b"public, max-age=";
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(seconds).as_bytes();
    let mut text = [0u8; HEAD.len() + 10];
    text[..HEAD.len()].copy_from_slice(HEAD);
    text[HEAD.len()..][..digits.len()].copy_from_slice(digits);
    HeaderValue::from_bytes(&text[..HEAD.len() + digits.len()]).expect("ASCII")
}

/// A header's value made of `pieces` (an entity tag from its stem, coding and quotes), joined on
/// the stack when they fit; `None` when they do not make a valid value.
pub fn joined(pieces: &[&str]) -> Option<HeaderValue> {
    let mut text = [0u8; 128];
    let mut len = 0;
    for piece in pieces {
        let end = len + piece.len();
        if end > text.len() {
            return HeaderValue::from_str(&pieces.concat()).ok();
        }
        text[len..end].copy_from_slice(piece.as_bytes());
        len = end;
    }
    HeaderValue::from_bytes(&text[..len]).ok()
}

/// The entity tag of an answer whose tag stem is `stem`, sent in `coding`.
fn answer_etag(stem: &str, coding: Coding) -> Option<HeaderValue> {
    joined(&["\"", stem, coding.etag_suffix(), "\""])
}

/// `resp` as a 304: no body, the validators and caching headers kept (moved, not copied).
fn not_modified(resp: Response) -> Response {
    let (mut parts, _) = resp.into_parts();
    let mut out = StatusCode::NOT_MODIFIED.into_response();
    let h = out.headers_mut();
    h.reserve(KEPT_BY_304.len());
    for name in KEPT_BY_304 {
        if let header::Entry::Occupied(e) = parts.headers.entry(name) {
            let (name, values) = e.remove_entry_mult();
            for v in values {
                h.append(&name, v);
            }
        }
    }
    out
}

/// The headers a 304 keeps of the answer it stands for.
const KEPT_BY_304: [header::HeaderName; 5] = [
    header::ETAG,
    header::CACHE_CONTROL,
    header::VARY,
    header::CONTENT_LOCATION,
    SNAPSHOT_ID,
];

/// How a request's answer travels (see the module header), `next` making it: choose the coding,
/// answer a revalidation of an unchanged answer with 304 before any work, send an answer of the
/// answer cache from its kept compressed form, and put the entity tag, `Cache-Control` and `Vary`
/// on answers of the snapshot.
pub async fn transport<F: Future<Output = Response>>(
    state: &AppState,
    mut req: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    let coding = choose_coding(req.headers());
    let keep_coded = state.http.plain.on(Piece::Precompressed);
    // Every answer made inside: an answer of the answer cache put in its compressed form.
    let next = async |req| {
        let mut resp = next(req).await;
        precompressed(&mut resp, coding, keep_coded).await;
        resp
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return next(req).await;
    }
    // The layers inside see exactly the chosen coding (tower-http's compression among them).
    req.headers_mut().insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static(coding.token()),
    );
    req.extensions_mut().insert(Chosen(coding));
    let volatile = kind(req.uri().path()) == Kind::Volatile;
    // The revision asked for (state that changes is of the served one, and takes none).
    // A query without the word is not parsed; a malformed revision is the handler's to refuse.
    let revision = req
        .uri()
        .query()
        .filter(|q| !volatile && q.contains("revision"))
        .and_then(|q| super::state::Revision::of_query(Some(q)).ok()?.revision);
    let (snapshot, loaded) = match &revision {
        None => (state.service.snapshot(), None),
        Some(r) => match state.service.snapshot_loaded(Some(r)).await {
            Ok(loaded) => loaded,
            Err(_) => {
                // A revision that cannot be answered from: the handler refuses it, uncached.
                let mut resp = next(req).await;
                resp.headers_mut()
                    .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                return resp;
            }
        },
    };
    let (snapshot_id, named) = snapshot_headers(&snapshot);
    if volatile {
        let mut resp = next(req).await;
        let h = resp.headers_mut();
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        h.insert(SNAPSHOT_ID, snapshot_id);
        return resp;
    }
    // Answers for a commit never change: asked by it, or served pinned to it.
    let pinned = match &revision {
        None => snapshot.source.pinned(),
        Some(r) => r.len() == 40 && snapshot.commit().is_some_and(|c| c.eq_ignore_ascii_case(r)),
    };
    let stem = answer_tag(state, &snapshot.content_id, &req);
    let conditional = req.headers().contains_key(header::IF_NONE_MATCH);
    if conditional && none_match(req.headers().get_all(header::IF_NONE_MATCH), &stem) {
        let mut resp = StatusCode::NOT_MODIFIED.into_response();
        let h = resp.headers_mut();
        if let Some(v) = answer_etag(&stem, coding) {
            h.insert(header::ETAG, v);
        }
        h.insert(header::CACHE_CONTROL, cache_control(state, pinned));
        h.insert(
            header::VARY,
            HeaderValue::from_static("accept, accept-encoding"),
        );
        h.insert(SNAPSHOT_ID, snapshot_id);
        return resp;
    }
    let get = req.method() == Method::GET;
    if get && let Some(kept) = state.kept.get(&stem) {
        state.cache.count_hit();
        return from_kept(&kept, coding, &stem, keep_coded).await;
    }
    // Taken off the request (nothing inside reads them) for an answer that has a tag of its own.
    let mut validators = Vec::new();
    if conditional
        && let header::Entry::Occupied(e) = req.headers_mut().entry(header::IF_NONE_MATCH)
    {
        validators.extend(e.remove_entry_mult().1);
    }
    // The permalink, made only for an answer made now (a kept one has it among its headers).
    let link = canonical(req.uri(), snapshot.pin());
    drop(snapshot);
    let mut resp = next(req).await;
    let ok = resp.status() == StatusCode::OK;
    let h = resp.headers_mut();
    h.insert(SNAPSHOT_ID, snapshot_id);
    h.insert(SNAPSHOT, named);
    // The request that loaded its revision says how long the load took.
    if let Some(took) = loaded
        && let Ok(v) = HeaderValue::from_str(&format!(
            "snapshot-load;dur={:.1};desc=\"revision loaded\"",
            took.as_secs_f64() * 1000.0
        ))
    {
        h.insert(SERVER_TIMING, v);
    }
    if !ok {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        return resp;
    }
    if !h.contains_key(header::ETAG) {
        let sent = h
            .get(header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .and_then(Coding::from_token)
            .unwrap_or(Coding::Identity);
        if let Some(v) = answer_etag(&stem, sent) {
            h.insert(header::ETAG, v);
        }
        h.insert(
            header::VARY,
            HeaderValue::from_static("accept, accept-encoding"),
        );
    }
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, cache_control(state, pinned));
    }
    if let Some(link) = link {
        h.append(header::LINK, link);
    }
    if get
        && state.kept.enabled()
        && let Some(CachedAnswer(answer)) = resp.extensions().get::<CachedAnswer>()
        && answer.sent.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        let mut headers = resp.headers().clone();
        for name in [
            header::CONTENT_ENCODING,
            header::CONTENT_LENGTH,
            header::ETAG,
        ] {
            headers.remove(name);
        }
        state.kept.keep(
            stem.to_string(),
            Kept {
                answer: answer.clone(),
                headers,
            },
        );
    }
    // A tag of the answer's own (a file's digest) is checked now that it is known.
    if !validators.is_empty()
        && let Some(tag) = resp
            .headers()
            .get(header::ETAG)
            .and_then(|v| v.to_str().ok())
        && none_match(&validators, tag)
    {
        return not_modified(resp);
    }
    resp
}

/// An answer's body in `coding`: its kept compressed form, made off the runtime the first time
/// (made anew each time, as the kept form was made, when `keep` is off: `--plain precompressed`).
async fn compressed(e: &Arc<super::answer::Encoded>, coding: Coding, keep: bool) -> bytes::Bytes {
    if !keep {
        let e = Arc::clone(e);
        return tokio::task::spawn_blocking(move || {
            crate::service::coding::compress(&e.body, coding, Effort::Quick)
        })
        .await
        .expect("compression does not panic");
    }
    match e.variants.made(coding) {
        Some(b) => b,
        None => {
            let e = Arc::clone(e);
            tokio::task::spawn_blocking(move || e.variants.get(&e.body, coding, Effort::Quick))
                .await
                .expect("compression does not panic")
        }
    }
}

/// A kept response in `coding`: the answer's body in that coding (made once, as
/// `precompressed` makes it) with the kept headers and the coding's.
async fn from_kept(kept: &Kept, coding: Coding, stem: &str, keep: bool) -> Response {
    let e = &kept.answer;
    let (body, sent) = if coding == Coding::Identity || e.body.len() < MIN_COMPRESS {
        (e.body.clone(), Coding::Identity)
    } else {
        (compressed(e, coding, keep).await, coding)
    };
    let len = body.len();
    let mut resp = Response::new(Body::from(body));
    let h = resp.headers_mut();
    *h = kept.headers.clone();
    if sent != Coding::Identity {
        h.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(sent.token()),
        );
    }
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    if let Some(v) = answer_etag(stem, sent) {
        h.insert(header::ETAG, v);
    }
    resp
}

/// Answers smaller than this are sent as they are (a compressed form would save next to nothing).
const MIN_COMPRESS: usize = 256;

/// An answer of the answer cache in `coding`, from its kept compressed form (made on the first
/// request for that coding); tower-http's compression, inside `transport`, passes these by.
async fn precompressed(resp: &mut Response, coding: Coding, keep: bool) {
    if coding == Coding::Identity || resp.headers().contains_key(header::CONTENT_ENCODING) {
        return;
    }
    // Left on the response: `transport` keeps it for the next request of the same answer.
    let Some(CachedAnswer(e)) = resp.extensions().get::<CachedAnswer>().cloned() else {
        return;
    };
    if e.body.len() < MIN_COMPRESS {
        return;
    }
    let body = compressed(&e, coding, keep).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_ENCODING,
        HeaderValue::from_static(coding.token()),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    *resp.body_mut() = Body::from(body);
}

/// When tower-http's layer compresses a response (one not already compressed): anything of
/// 256 bytes or more (or of a size not known in advance) but formats that are compressed already
/// (Parquet, PNG and the like), event streams, answers whose handler set their entity tag
/// (sent in the coding it chose) and answers of the answer cache (sent from their kept
/// compressed form by `transport`). SVG charts are text and are compressed.
#[derive(Debug, Clone, Copy)]
pub struct WorthCompressing;

impl tower_http::compression::Predicate for WorthCompressing {
    fn should_compress<B: axum::body::HttpBody>(&self, response: &axum::http::Response<B>) -> bool {
        let hint = response.body().size_hint();
        let len = hint.exact().or_else(|| {
            response
                .headers()
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
        });
        if len.is_some_and(|n| n < MIN_COMPRESS as u64) {
            return false;
        }
        // A handler that tags its answer (a file's digest) has chosen its coding already.
        if response.headers().contains_key(header::ETAG)
            || response.extensions().get::<CachedAnswer>().is_some()
        {
            return false;
        }
        let ct = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let compressed_already = ct.starts_with("application/vnd.apache.parquet")
            || (ct.starts_with("image/") && !ct.starts_with("image/svg+xml"))
            || ct.starts_with("font/woff")
            || ct.starts_with("video/")
            || ct.starts_with("audio/")
            || ct.starts_with("application/zip")
            || ct.starts_with("application/gzip")
            || ct.starts_with("text/event-stream");
        !compressed_already
    }
}

/// The coding to send for `Accept-Encoding`: the compressed coding the client rates highest
/// (ties: br, zstd, gzip), `*` standing for any coding it does not name; identity when it names
/// none of ours, rates them all 0, or sends no header.
pub fn choose_coding(headers: &HeaderMap) -> Coding {
    // Each coding's first rating counts; the header's values are read in place (this runs for
    // every request).
    let mut named: [Option<f32>; 4] = [None; 4];
    let mut star: Option<f32> = None;
    let items = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','));
    for item in items {
        let mut parts = item.split(';');
        let token = parts.next().unwrap_or("").trim();
        let mut q = 1.0f32;
        for p in parts {
            if let Some((k, v)) = p.split_once('=')
                && k.trim().eq_ignore_ascii_case("q")
            {
                q = v.trim().parse().unwrap_or(0.0);
            }
        }
        if token == "*" {
            star = Some(q);
        } else if let Some(c) = Coding::from_token(token) {
            named[c as usize].get_or_insert(q);
        }
    }
    let rate = |c: Coding| named[c as usize].or(star).unwrap_or(0.0);
    let mut best = (Coding::Identity, 0.0f32);
    for c in Coding::COMPRESSED {
        let q = rate(c);
        if q > best.1 {
            best = (c, q);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_values_are_the_pieces_end_to_end_on_the_stack_or_not() {
        let stem = "r-0123456789abcdef0123456789abcdef";
        assert_eq!(
            joined(&["\"", stem, Coding::Br.etag_suffix(), "\""]).unwrap(),
            "\"r-0123456789abcdef0123456789abcdef-br\""
        );
        let long = "x".repeat(200);
        assert_eq!(
            joined(&["\"", &long, "\""]).unwrap(),
            format!("\"{long}\"").as_str()
        );
        assert_eq!(joined(&[]).unwrap(), "");
        assert!(joined(&["a", "\n"]).is_none(), "not a valid value");
        assert_eq!(max_age(0), "public, max-age=0");
        assert_eq!(max_age(u32::MAX), "public, max-age=4294967295");
    }

    fn pick(v: &str) -> Coding {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, v.parse().unwrap());
        choose_coding(&h)
    }

    #[test]
    fn codings_by_rating() {
        assert_eq!(choose_coding(&HeaderMap::new()), Coding::Identity);
        assert_eq!(pick("gzip, deflate, br, zstd"), Coding::Br);
        assert_eq!(pick("gzip"), Coding::Gzip);
        assert_eq!(pick("gzip;q=1.0, zstd;q=0.5"), Coding::Gzip);
        assert_eq!(pick("br;q=0, *"), Coding::Zstd);
        assert_eq!(pick("*;q=0"), Coding::Identity);
        assert_eq!(pick("identity"), Coding::Identity);
        assert_eq!(pick("deflate"), Coding::Identity);
        assert_eq!(pick("GZIP;Q=0.3"), Coding::Gzip);
        assert_eq!(pick(" X-Gzip ;q=0.2"), Coding::Gzip);
        // A coding's first rating counts; values on several lines are read as one list.
        assert_eq!(pick("gzip;q=0.1, br;q=0.5, gzip;q=1"), Coding::Br);
        let mut two = HeaderMap::new();
        two.append(header::ACCEPT_ENCODING, "zstd;q=0.4".parse().unwrap());
        two.append(header::ACCEPT_ENCODING, "gzip;q=0.9, zstd".parse().unwrap());
        assert_eq!(choose_coding(&two), Coding::Gzip);
    }
}
