//! A fake Hugging Face hub: an axum server on port 0 that implements the paths hf-hub and the
//! service use (`/api/datasets/{repo}/revision/{rev}` and `/datasets/{repo}/resolve/{rev}/{path}`
//! with Range support), serving data/sample as the dataset, with per-file faults: gated 401/403,
//! 404, 500, a slow body, a truncated body, a wrong checksum, a paced body; it counts the GETs of
//! each file. Used by the hub suite (in process) and the fleet suite (two server processes).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as AxPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use sha2::Digest;

use super::sample_dir;

pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
pub const REPO: &str = "ml-energy/benchmark-v3";

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    Status(u16),
    /// Headers, half the body, then a stall longer than the client's timeout.
    Slow,
    /// Content-Length of the whole file, half the body, then the connection ends.
    Truncated,
    /// An X-Linked-Etag that is not the content's SHA-256.
    BadChecksum,
    /// The whole body, in eight pieces with this pause before each (a download that takes a
    /// while: to be joined, or cut off by killing its replica).
    Paced(Duration),
}

#[derive(Default)]
struct HubState {
    files: HashMap<String, Vec<u8>>,
    /// Token the hub requires (None: public).
    token: Option<String>,
    faults: HashMap<String, Fault>,
    /// GET requests per resolve path.
    gets: HashMap<String, usize>,
    /// When set, every resolve answers 302 to this storage host, as the real hub does for LFS
    /// files.
    redirect_to: Option<String>,
    /// GETs the storage host received: (path, the Authorization header it carried).
    storage_gets: Vec<(String, Option<String>)>,
}

type Shared = Arc<Mutex<HubState>>;

#[allow(clippy::result_large_err)]
fn authorized(s: &HubState, headers: &HeaderMap) -> Result<(), Response> {
    let Some(want) = &s.token else {
        return Ok(());
    };
    let got = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let (status, msg) = match got {
        None => (
            StatusCode::UNAUTHORIZED,
            "Access to dataset is restricted. You must be authenticated to access it.",
        ),
        Some(t) if t != want => (
            StatusCode::FORBIDDEN,
            "Access to dataset is restricted and you are not in the authorized list.",
        ),
        Some(_) => return Ok(()),
    };
    let mut r = (status, format!("{{\"error\":\"{msg}\"}}")).into_response();
    r.headers_mut()
        .insert("x-error-code", HeaderValue::from_static("GatedRepo"));
    Err(r)
}

async fn revision(
    State(s): State<Shared>,
    AxPath((_org, _name, _rev)): AxPath<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let s = s.lock().unwrap();
    if let Err(r) = authorized(&s, &headers) {
        return r;
    }
    axum::Json(serde_json::json!({"sha": COMMIT, "lastModified": "2026-03-05T17:42:01.000Z", "siblings": []}))
        .into_response()
}

async fn resolve(
    State(shared): State<Shared>,
    AxPath((_org, _name, rev, path)): AxPath<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let (body, fault) = {
        let mut s = shared.lock().unwrap();
        *s.gets.entry(path.clone()).or_default() += 1;
        if let Err(r) = authorized(&s, &headers) {
            return r;
        }
        if rev != COMMIT && rev != "main" {
            return (StatusCode::NOT_FOUND, "revision not found").into_response();
        }
        let fault = s.faults.get(&path).copied();
        if let Some(Fault::Status(code)) = fault {
            let mut r = (StatusCode::from_u16(code).unwrap(), "fault").into_response();
            if code == 404 {
                r.headers_mut()
                    .insert("x-error-code", HeaderValue::from_static("EntryNotFound"));
            }
            return r;
        }
        match s.files.get(&path) {
            Some(b) => (b.clone(), fault),
            None => return (StatusCode::NOT_FOUND, "entry not found").into_response(),
        }
    };
    if let Some(storage) = shared.lock().unwrap().redirect_to.clone() {
        let sha = hex::encode(sha2::Sha256::digest(&body));
        let mut h = HeaderMap::new();
        h.insert(
            "location",
            HeaderValue::from_str(&format!("{storage}/{path}")).unwrap(),
        );
        h.insert(
            "x-linked-etag",
            HeaderValue::from_str(&format!("\"{sha}\"")).unwrap(),
        );
        h.insert("x-linked-size", HeaderValue::from(body.len()));
        return (StatusCode::FOUND, h).into_response();
    }
    let sha = hex::encode(sha2::Sha256::digest(&body));
    let linked = if fault == Some(Fault::BadChecksum) {
        "f".repeat(64)
    } else {
        sha.clone()
    };
    let size = body.len();
    let range = headers
        .get("range")
        .and_then(|v| v.to_str().ok())
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split_once('-'))
        .map(|(a, b)| {
            let a: usize = a.parse().unwrap_or(0);
            let b: usize = b.parse().unwrap_or(size - 1).min(size - 1);
            (a, b)
        });
    let mut h = HeaderMap::new();
    h.insert("x-repo-commit", HeaderValue::from_static(COMMIT));
    h.insert(
        "etag",
        HeaderValue::from_str(&format!("\"{sha}\"")).unwrap(),
    );
    h.insert(
        "x-linked-etag",
        HeaderValue::from_str(&format!("\"{linked}\"")).unwrap(),
    );
    h.insert("x-linked-size", HeaderValue::from(size));
    if let Some((a, b)) = range {
        h.insert(
            "content-range",
            HeaderValue::from_str(&format!("bytes {a}-{b}/{size}")).unwrap(),
        );
        return (StatusCode::PARTIAL_CONTENT, h, body[a..=b].to_vec()).into_response();
    }
    match fault {
        Some(Fault::Paced(pause)) => {
            let pieces: Vec<Vec<u8>> = body
                .chunks(size.div_ceil(8).max(1))
                .map(<[u8]>::to_vec)
                .collect();
            let stream = futures::stream::iter(pieces).then(move |p| async move {
                tokio::time::sleep(pause).await;
                Ok::<_, std::io::Error>(p)
            });
            h.insert("content-length", HeaderValue::from(size));
            (StatusCode::OK, h, Body::from_stream(stream)).into_response()
        }
        Some(Fault::Slow) | Some(Fault::Truncated) => {
            let half = body[..size / 2].to_vec();
            let stall = fault == Some(Fault::Slow);
            let stream = futures::stream::once(async move { Ok::<_, std::io::Error>(half) }).chain(
                futures::stream::once(async move {
                    if stall {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                    }
                    Err(std::io::Error::other("connection dropped"))
                }),
            );
            h.insert("content-length", HeaderValue::from(size));
            (StatusCode::OK, h, Body::from_stream(stream)).into_response()
        }
        _ => (StatusCode::OK, h, body).into_response(),
    }
}

/// The storage host a redirecting hub sends clients to: serves the hub's files and records what
/// each GET carried.
async fn storage(
    State(shared): State<Shared>,
    AxPath(path): AxPath<String>,
    headers: HeaderMap,
) -> Response {
    let mut s = shared.lock().unwrap();
    let auth = headers
        .get("authorization")
        .map(|v| v.to_str().unwrap_or("?").to_string());
    s.storage_gets.push((path.clone(), auth));
    match s.files.get(&path) {
        Some(b) => (StatusCode::OK, b.clone()).into_response(),
        None => (StatusCode::NOT_FOUND, "no such object").into_response(),
    }
}

pub struct FakeHub {
    pub url: String,
    state: Shared,
}

impl FakeHub {
    /// data/sample as the dataset: both summaries and every file under llm/ and diffusion/ (not
    /// its histograms: a source without them).
    pub async fn start() -> FakeHub {
        Self::start_dir(&sample_dir(), false).await
    }

    /// The compiled directory `root` as the dataset: both summaries, every raw results file, and
    /// its histograms file if `histograms`.
    pub async fn start_dir(root: &std::path::Path, histograms: bool) -> FakeHub {
        let mut files = HashMap::new();
        for e in walkdir::WalkDir::new(root).into_iter().flatten() {
            if e.file_type().is_file() {
                let rel = e
                    .path()
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                if rel.starts_with("runs/")
                    || rel.ends_with("results.json")
                    || (histograms && rel.starts_with("histograms/"))
                {
                    files.insert(rel, std::fs::read(e.path()).unwrap());
                }
            }
        }
        let state: Shared = Arc::new(Mutex::new(HubState {
            files,
            ..Default::default()
        }));
        let router = Router::new()
            .route(
                "/api/datasets/{org}/{name}/revision/{rev}",
                axum::routing::get(revision),
            )
            .route(
                "/datasets/{org}/{name}/resolve/{rev}/{*path}",
                axum::routing::get(resolve),
            )
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        FakeHub { url, state }
    }

    pub fn gets(&self, path: &str) -> usize {
        self.state
            .lock()
            .unwrap()
            .gets
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    pub fn fault(&self, path: &str, f: Option<Fault>) {
        let mut s = self.state.lock().unwrap();
        match f {
            Some(f) => s.faults.insert(path.to_string(), f),
            None => s.faults.remove(path),
        };
    }

    pub fn gate(&self, token: Option<&str>) {
        self.state.lock().unwrap().token = token.map(String::from);
    }

    /// Replace (or add) a file of the dataset.
    pub fn put(&self, path: &str, bytes: Vec<u8>) {
        self.state
            .lock()
            .unwrap()
            .files
            .insert(path.to_string(), bytes);
    }

    /// Resolve requests per path, every path.
    pub fn all_gets(&self) -> HashMap<String, usize> {
        self.state.lock().unwrap().gets.clone()
    }

    /// Start a storage host on another port and redirect every resolve to it.
    pub async fn redirect_to_storage(&self) {
        let router = Router::new()
            .route("/{*path}", axum::routing::get(storage))
            .with_state(self.state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        self.state.lock().unwrap().redirect_to = Some(url);
    }

    pub fn storage_gets(&self) -> Vec<(String, Option<String>)> {
        self.state.lock().unwrap().storage_gets.clone()
    }
}
