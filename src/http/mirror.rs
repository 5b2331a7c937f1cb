//! `/hub`: the served dataset as a Hugging Face Hub repository (`--hub-mirror`), the part of the
//! hub's protocol huggingface_hub uses to download a dataset's files, so the unmodified toolkit
//! (`HF_ENDPOINT=http://server/hub`) loads through this server:
//!
//! - `HEAD`/`GET /hub/datasets/{org}/{name}/resolve/{revision}/{path}`: the file, with the headers
//!   `hf_hub_download` reads (`X-Repo-Commit`, `ETag` = its SHA-256, `Content-Length`) and byte
//!   ranges (a resumed download);
//! - `GET /hub/api/datasets/{org}/{name}[/revision/{revision}]`: the repository at a revision (its
//!   commit `sha` and files), what `snapshot_download` resolves first;
//! - `GET /hub/api/datasets/{org}/{name}/tree/{revision}[/{path}]`: the files with their sizes
//!   (`recursive` or not), what `snapshot_download` lists.
//!
//! Refusals are the hub's: 404 with `X-Error-Code` `RepoNotFound`, `RevisionNotFound` or
//! `EntryNotFound` (huggingface_hub raises `RepositoryNotFoundError`, `RevisionNotFoundError`,
//! `EntryNotFoundError`), 401 for a missing or wrong token; the body is our problem+json. Read-only;
//! with `MLENERGY_MIRROR_TOKEN` set every request needs it as a bearer token (what a user's
//! `HF_TOKEN` sends), otherwise only a server on loopback serves it. The upstream hub token is never
//! passed on. Not in the OpenAPI document: it is the hub's protocol, not ours.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;

use super::error::AppError;
use super::state::{AppState, MirrorOptions};
use crate::service::Snapshot;
use crate::service::mirror::{Listed, MirrorError, MirrorRepo};

/// The routes (none when the mirror is off).
pub fn routes(enabled: bool) -> Router<AppState> {
    if !enabled {
        return Router::new();
    }
    Router::new()
        .route(
            "/hub/datasets/{org}/{name}/resolve/{revision}/{*path}",
            get(resolve),
        )
        .route("/hub/api/datasets/{org}/{name}", get(info_main))
        .route(
            "/hub/api/datasets/{org}/{name}/revision/{*revision}",
            get(info),
        )
        .route(
            "/hub/api/datasets/{org}/{name}/tree/{revision}",
            get(tree_root),
        )
        .route(
            "/hub/api/datasets/{org}/{name}/tree/{revision}/{*path}",
            get(tree),
        )
}

/// The token check: a configured token must come as `Authorization: Bearer`; without one, only a
/// server on loopback answers.
fn allow(state: &AppState, headers: &HeaderMap) -> Result<MirrorOptions, Response> {
    let Some(options) = state.http.mirror.clone() else {
        return Err(AppError::NoRoute("/hub".into()).into_response());
    };
    match &options.token {
        Some(token) => {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            match given {
                Some(g) if super::guard::same(g.as_bytes(), token.as_bytes()) => Ok(options),
                // The hub's answer to a wrong token (huggingface_hub reports it as such).
                Some(_) => Err(unauthorized(
                    None,
                    "Invalid credentials in Authorization header",
                    "the mirror token is wrong: Authorization: Bearer <MLENERGY_MIRROR_TOKEN> (HF_TOKEN in the client)",
                )),
                // The hub's answer to a gated repository without a token: huggingface_hub raises
                // GatedRepoError, which the toolkit explains (set HF_TOKEN).
                None => Err(unauthorized(
                    Some("GatedRepo"),
                    "Access to this dataset is restricted: this mirror needs its token as HF_TOKEN",
                    "this mirror needs its token: set HF_TOKEN to MLENERGY_MIRROR_TOKEN in the client",
                )),
            }
        }
        None if state.http.guard.loopback => Ok(options),
        None => Err(AppError::AdminForbidden(
            "the hub mirror listens beyond loopback without MLENERGY_MIRROR_TOKEN, so it is off"
                .into(),
        )
        .into_response()),
    }
}

fn unauthorized(code: Option<&'static str>, hub_message: &'static str, detail: &str) -> Response {
    let mut r = AppError::Unauthorized(detail.into()).into_response();
    let h = r.headers_mut();
    h.insert("x-error-message", HeaderValue::from_static(hub_message));
    if let Some(code) = code {
        h.insert("x-error-code", HeaderValue::from_static(code));
    }
    r
}

fn refused(e: MirrorError) -> Response {
    let not_found = |code, parameter, detail: String| AppError::HubNotFound {
        code,
        parameter,
        detail,
    };
    match e {
        MirrorError::UnknownRepo { .. } => not_found("RepoNotFound", "repo", e.to_string()),
        MirrorError::UnknownRevision { .. } => {
            not_found("RevisionNotFound", "revision", e.to_string())
        }
        MirrorError::NotFound(d) => not_found("EntryNotFound", "path", d),
        MirrorError::Fetch(f) => AppError::fetch("-", f),
        MirrorError::Internal(d) => AppError::Internal(d),
    }
    .into_response()
}

/// The checks every mirror request starts with (the token, then the repository and revision
/// asked for), and the snapshot it is answered from with the repository it is served as.
async fn open_repo(
    state: &AppState,
    headers: &HeaderMap,
    repo: &str,
    revision: &str,
) -> Result<(Arc<Snapshot>, MirrorRepo), Response> {
    let options = allow(state, headers)?;
    let snapshot = state.service.snapshot();
    let served = MirrorRepo::of(&snapshot, &options.repo);
    match served.check(repo, revision) {
        Ok(()) => Ok((snapshot, served)),
        // Another revision of the repository: one held, or loaded now.
        Err(e @ MirrorError::UnknownRevision { .. }) => {
            let other = match crate::service::ask::check_revision(revision) {
                Ok(r) => state.service.snapshot_at(Some(r)).await.ok(),
                Err(_) => None,
            };
            let Some(other) = other else {
                return Err(refused(e));
            };
            let held = MirrorRepo::of(&other, &options.repo);
            held.check(repo, revision).map_err(refused)?;
            Ok((other, held))
        }
        Err(e) => Err(refused(e)),
    }
}

async fn resolve(
    State(state): State<AppState>,
    Path((org, name, revision, path)): Path<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let (snapshot, repo) =
        match open_repo(&state, &headers, &format!("{org}/{name}"), &revision).await {
            Ok(x) => x,
            Err(r) => return r,
        };
    let file = match state.service.mirror_file(&snapshot, &path).await {
        Ok(f) => f,
        Err(e) => return refused(e),
    };
    let len = file.len;
    let range = match headers.get(header::RANGE).map(|v| byte_range(v, len)) {
        None => None,
        Some(Ok(r)) => r,
        Some(Err(())) => {
            let mut r = StatusCode::RANGE_NOT_SATISFIABLE.into_response();
            r.headers_mut().insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&format!("bytes */{len}")).expect("ascii"),
            );
            return r;
        }
    };
    file_response(file, range, &repo.commit)
}

/// A mirrored file's answer: the whole file, or the one `range` asked for (206), with its length,
/// its digest as the ETag and the repository's commit.
fn file_response(
    file: crate::service::mirror::MirrorFile,
    range: Option<(u64, u64)>,
    commit: &str,
) -> Response {
    let len = file.len;
    let stream = file.opened.into_stream();
    let (status, body, sent) = match range {
        Some((start, end)) => {
            let sent = end - start + 1;
            (
                StatusCode::PARTIAL_CONTENT,
                Body::from_stream(slice(stream, start, sent)),
                sent,
            )
        }
        None => (StatusCode::OK, Body::from_stream(stream), len),
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(sent));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Some((start, end)) = range {
        h.insert(
            header::CONTENT_RANGE,
            HeaderValue::from_str(&format!("bytes {start}-{end}/{len}")).expect("ascii"),
        );
    }
    if let Ok(v) = HeaderValue::from_str(&format!("\"{}\"", file.sha256)) {
        h.insert(header::ETAG, v);
    }
    h.insert("x-repo-commit", HeaderValue::from_str(commit).expect("hex"));
    resp
}

/// The one range of a `Range: bytes=...` header, inclusive (`Ok(None)`: a header we do not take,
/// answered whole as the HTTP spec allows; `Err`: a range outside the file, 416).
fn byte_range(v: &HeaderValue, len: u64) -> Result<Option<(u64, u64)>, ()> {
    let Some(spec) = v
        .to_str()
        .ok()
        .and_then(|s| s.trim().strip_prefix("bytes="))
    else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((a, b)) = spec.split_once('-') else {
        return Ok(None);
    };
    let (a, b) = (a.trim(), b.trim());
    let parse = |s: &str| s.parse::<u64>().map_err(|_| ());
    let (start, end) = match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ok(None),
        // The last b bytes.
        (true, false) => {
            let n = parse(b)?.min(len);
            if n == 0 {
                return Err(());
            }
            (len - n, len - 1)
        }
        (false, true) => (parse(a)?, len.saturating_sub(1)),
        (false, false) => (parse(a)?, parse(b)?.min(len.saturating_sub(1))),
    };
    if start >= len || start > end {
        return Err(());
    }
    Ok(Some((start, end)))
}

/// `n` bytes of `stream` from byte `skip`.
fn slice(
    stream: futures::stream::BoxStream<'static, std::io::Result<bytes::Bytes>>,
    skip: u64,
    n: u64,
) -> impl futures::Stream<Item = std::io::Result<bytes::Bytes>> + Send + 'static {
    let end = skip + n;
    stream
        .scan(0u64, move |pos, chunk| {
            if *pos >= end {
                return futures::future::ready(None);
            }
            let out = chunk.map(|chunk| {
                let (from, to) = (*pos, *pos + chunk.len() as u64);
                *pos = to;
                let a = skip.saturating_sub(from).min(chunk.len() as u64) as usize;
                let b = end.min(to).saturating_sub(from) as usize;
                if a >= b {
                    bytes::Bytes::new()
                } else {
                    chunk.slice(a..b)
                }
            });
            futures::future::ready(Some(out))
        })
        .filter(|c| futures::future::ready(!matches!(c, Ok(b) if b.is_empty())))
}

async fn info_main(
    State(state): State<AppState>,
    Path((org, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    repo_info(state, org, name, "main".into(), headers).await
}

async fn info(
    State(state): State<AppState>,
    Path((org, name, revision)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    repo_info(state, org, name, revision, headers).await
}

/// `GET /api/datasets/{repo}/revision/{revision}`: the repository at the revision, its commit and
/// its files (`siblings`), in the hub's shape (`DatasetInfo`).
async fn repo_info(
    state: AppState,
    org: String,
    name: String,
    revision: String,
    headers: HeaderMap,
) -> Response {
    let (snapshot, repo) =
        match open_repo(&state, &headers, &format!("{org}/{name}"), &revision).await {
            Ok(x) => x,
            Err(r) => return r,
        };
    let files = match state.service.mirror_list(&snapshot, "").await {
        Ok(f) => f,
        Err(e) => return refused(e),
    };
    let modified = humantime::format_rfc3339_millis(snapshot.loaded_at).to_string();
    let body = serde_json::json!({
        "_id": repo.commit,
        "id": repo.id,
        "author": repo.id.split('/').next(),
        "sha": repo.commit,
        "lastModified": modified,
        "private": false,
        "gated": false,
        "disabled": false,
        "downloads": 0,
        "likes": 0,
        "tags": [],
        "siblings": files.iter().map(|f| serde_json::json!({"rfilename": f.path})).collect::<Vec<_>>(),
    });
    json(&body, &repo)
}

async fn tree_root(
    State(state): State<AppState>,
    Path((org, name, revision)): Path<(String, String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    tree_listing(state, org, name, revision, String::new(), query, headers).await
}

async fn tree(
    State(state): State<AppState>,
    Path((org, name, revision, path)): Path<(String, String, String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    tree_listing(state, org, name, revision, path, query, headers).await
}

/// `GET /api/datasets/{repo}/tree/{revision}[/{path}]`: the entries under `path`, its files and
/// folders (`recursive=true`: every file below and every folder on the way), in the hub's
/// shape (`type`, `path`, `size`, `oid` for files).
async fn tree_listing(
    state: AppState,
    org: String,
    name: String,
    revision: String,
    path: String,
    query: Option<String>,
    headers: HeaderMap,
) -> Response {
    let (snapshot, repo) =
        match open_repo(&state, &headers, &format!("{org}/{name}"), &revision).await {
            Ok(x) => x,
            Err(r) => return r,
        };
    let mut recursive = false;
    for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match k.as_ref() {
            "recursive" => match v.as_ref() {
                "true" | "1" | "True" => recursive = true,
                "false" | "0" | "False" => recursive = false,
                other => {
                    return AppError::InvalidParameter {
                        parameter: "recursive".into(),
                        detail: format!("'{other}' is not a boolean"),
                        allowed: Some(vec!["true".into(), "false".into()]),
                    }
                    .into_response();
                }
            },
            // What the hub takes besides: details of each entry and paging; answered whole.
            "expand" | "cursor" | "limit" => {}
            other => {
                return AppError::UnknownParameter {
                    parameter: other.to_string(),
                    allowed: vec![
                        "recursive".into(),
                        "expand".into(),
                        "cursor".into(),
                        "limit".into(),
                    ],
                }
                .into_response();
            }
        }
    }
    let prefix = path.trim_matches('/').to_string();
    let files = match state.service.mirror_list(&snapshot, &prefix).await {
        Ok(f) => f,
        Err(e) => return refused(e),
    };
    let entries = tree_entries(&files, &prefix, recursive);
    if entries.is_empty() && !prefix.is_empty() {
        return refused(MirrorError::NotFound(format!(
            "no folder '{prefix}' in this repository"
        )));
    }
    json(&serde_json::Value::Array(entries), &repo)
}

/// The listing of `prefix`: its direct files and folders, or (`recursive`) every file under it
/// and every folder on the way, folders first at each level as the hub lists them.
fn tree_entries(files: &[Listed], prefix: &str, recursive: bool) -> Vec<serde_json::Value> {
    let base = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix}/")
    };
    let mut folders = BTreeSet::new();
    let mut out_files = Vec::new();
    for f in files {
        let Some(rest) = f.path.strip_prefix(&base) else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        let depth = if recursive {
            parts.len() - 1
        } else {
            1.min(parts.len() - 1)
        };
        for d in 1..=depth {
            folders.insert(format!("{base}{}", parts[..d].join("/")));
        }
        if recursive || parts.len() == 1 {
            out_files.push(serde_json::json!({
                "type": "file",
                "path": f.path,
                "size": f.size,
                "oid": blob_id(&f.path, f.size),
            }));
        }
    }
    let mut out: Vec<serde_json::Value> = folders
        .into_iter()
        .map(|p| serde_json::json!({"type": "directory", "path": p, "oid": blob_id(&p, 0)}))
        .collect();
    out.extend(out_files);
    out
}

/// A stable 40-hex id of an entry (the hub's git object id; ours names the path and size).
fn blob_id(path: &str, size: u64) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(format!("{path}\0{size}")))[..40].to_string()
}

fn json(body: &serde_json::Value, repo: &MirrorRepo) -> Response {
    let mut resp = (StatusCode::OK, serde_json::to_vec(body).unwrap_or_default()).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(
        "x-repo-commit",
        HeaderValue::from_str(&repo.commit).expect("hex"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ranges() {
        let r = |s: &str, len| byte_range(&HeaderValue::from_str(s).unwrap(), len);
        assert_eq!(r("bytes=0-9", 100), Ok(Some((0, 9))));
        assert_eq!(r("bytes=90-", 100), Ok(Some((90, 99))));
        assert_eq!(r("bytes=-10", 100), Ok(Some((90, 99))));
        assert_eq!(r("bytes=50-1000", 100), Ok(Some((50, 99))));
        assert_eq!(r("bytes=100-", 100), Err(()));
        assert_eq!(r("bytes=9-3", 100), Err(()));
        assert_eq!(r("bytes=0-1,5-6", 100), Ok(None));
        assert_eq!(r("items=0-1", 100), Ok(None));
    }

    #[tokio::test]
    async fn slices_cross_chunks() {
        let chunks: Vec<std::io::Result<bytes::Bytes>> = vec![
            Ok(bytes::Bytes::from_static(b"abcd")),
            Ok(bytes::Bytes::from_static(b"efgh")),
            Ok(bytes::Bytes::from_static(b"ijkl")),
        ];
        let s = futures::stream::iter(chunks).boxed();
        let got: Vec<u8> = slice(s, 3, 6)
            .map(|c| c.unwrap().to_vec())
            .collect::<Vec<_>>()
            .await
            .concat();
        assert_eq!(got, b"defghi");
    }

    #[test]
    fn trees() {
        let files = vec![
            Listed {
                path: "README.md".into(),
                size: 5,
            },
            Listed {
                path: "runs/llm.parquet".into(),
                size: 10,
            },
            Listed {
                path: "llm/h100/a/results.json".into(),
                size: 3,
            },
        ];
        let paths = |v: Vec<serde_json::Value>| {
            v.iter()
                .map(|e| {
                    format!(
                        "{}:{}",
                        e["type"].as_str().unwrap(),
                        e["path"].as_str().unwrap()
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            paths(tree_entries(&files, "", false)),
            ["directory:llm", "directory:runs", "file:README.md"]
        );
        assert_eq!(
            paths(tree_entries(&files, "", true)),
            [
                "directory:llm",
                "directory:llm/h100",
                "directory:llm/h100/a",
                "directory:runs",
                "file:README.md",
                "file:runs/llm.parquet",
                "file:llm/h100/a/results.json"
            ]
        );
        assert_eq!(
            paths(tree_entries(&files, "llm/h100", false)),
            ["directory:llm/h100/a"]
        );
        assert_eq!(
            paths(tree_entries(&files, "runs", true)),
            ["file:runs/llm.parquet"]
        );
    }
}
