//! Tool answers kept, as the REST API keeps its answers: a tool is read-only and idempotent and
//! the snapshot never changes, so the result of a `tools/call` is a function of the snapshot, the
//! protocol version and the call (name and arguments). The JSON-RPC result rmcp wrote is kept in
//! the answer cache (its budget, its counts) without the request's id, and a repeated call is
//! answered with the request's id put back, without going through rmcp or the tool again. Only
//! successful results are kept. The checks come first: this layer is inside the token check, and
//! it checks `Host` and `Origin` against the allowed hosts itself before answering from the
//! cache (rmcp checks them again on the way to a tool).

use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use serde_json::{Map, Value};

use super::direct;
use super::server::McpServer;

use crate::http::error::AppError;
use crate::http::state::AppState;
use crate::service::machinery::Piece;

/// What the layer needs: the state (cache, snapshot, metrics, bounds), the allowed hosts, and
/// the tools' server for the calls answered directly (`direct`).
#[derive(Clone)]
pub(super) struct Keep {
    pub(super) state: AppState,
    pub(super) hosts: std::sync::Arc<Vec<String>>,
    pub(super) server: McpServer,
}

/// The start of every JSON-RPC answer rmcp writes, up to the id.
const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
/// The end of a successful tool result (no `_meta` after it).
const OK_END: &[u8] = b"\"isError\":false}}";

pub(super) async fn layer(State(keep): State<Keep>, req: Request, next: Next) -> Response {
    if let Err(refusal) = check_host(req.headers(), &keep.hosts) {
        return refusal;
    }
    if req.method() != axum::http::Method::POST {
        return next.run(req).await;
    }
    let started = Instant::now();
    let (parts, body) = req.into_parts();
    let limit = keep.state.http.guard.max_body_bytes;
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return AppError::PayloadTooLarge { limit }.into_response();
    };
    let plain = keep.state.http.plain;
    // Nothing is keyed, looked up or joined to be kept when the answer cache keeps nothing.
    let kept = plain.on(Piece::McpCache) && keep.state.cache.enabled();
    let mut call = tool_call(
        &parts.headers,
        &bytes,
        keep.state.service.snapshot().generation,
        kept,
    );
    if let Some(call) = &mut call {
        if let Some(key) = &call.key
            && let Some(tail) = keep.state.cache.get_keyed(key)
        {
            keep.state
                .metrics
                .tool_call(&call.tool, "ok", started.elapsed());
            return answer(&call.id, vec![tail]);
        }
        if plain.on(Piece::McpDirect)
            // The arguments are read once, by the tool (rmcp's path reads the body again).
            && let Some(tail) = keep
                .server
                .direct(&call.tool, std::mem::take(&mut call.arguments))
                .await
        {
            if let Some(key) = call.key.take() {
                let whole: Vec<u8> = tail.concat();
                keep.state
                    .cache
                    .put_keyed(key, "application/json", whole.into());
            }
            return answer(&call.id, tail);
        }
    }
    let resp = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    let Some((id, key)) = call.and_then(|c| Some((c.id, c.key?))) else {
        return resp;
    };
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if resp.status() != StatusCode::OK || !json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return AppError::Internal("the tool's answer could not be read".into()).into_response();
    };
    let mut head = HEAD.to_vec();
    head.extend_from_slice(id.as_bytes());
    if bytes.starts_with(&head) && bytes.ends_with(OK_END) {
        keep.state
            .cache
            .put_keyed(key, "application/json", bytes.slice(head.len()..));
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// A plain `tools/call` request (`direct::plain`): its id as JSON, the tool's name and
/// arguments, and the key of its answer when answers are kept.
struct ToolCall {
    id: String,
    tool: String,
    arguments: Map<String, Value>,
    key: Option<String>,
}

fn tool_call(headers: &HeaderMap, body: &[u8], generation: u64, kept: bool) -> Option<ToolCall> {
    let mut v: Value = serde_json::from_slice(body).ok()?;
    let m = v.as_object_mut()?;
    if !direct::plain(headers, m) {
        return None;
    }
    let id = m.get("id")?.to_string();
    let params = m.get_mut("params")?;
    let version = headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // Made only when an answer may be kept: the call as sent, name and arguments.
    let key = kept.then(|| format!("{generation}|mcp|{version}|{params}"));
    let params = params.as_object_mut()?;
    let tool = params.get("name")?.as_str()?.to_string();
    let arguments = match params.remove("arguments") {
        Some(Value::Object(arguments)) => arguments,
        _ => Map::new(),
    };
    Some(ToolCall {
        id,
        tool,
        arguments,
        key,
    })
}

/// The JSON-RPC answer of the call `id` whose result (after the id) is `tail`, in pieces sent
/// one after the other: none of them is copied into one body.
fn answer(id: &str, tail: Vec<Bytes>) -> Response {
    let mut start = BytesMut::with_capacity(HEAD.len() + id.len());
    start.extend_from_slice(HEAD);
    start.extend_from_slice(id.as_bytes());
    let mut parts = Vec::with_capacity(tail.len() + 1);
    parts.push(start.freeze());
    parts.extend(tail);
    crate::http::answer::pieces("application/json", None, parts)
}

/// The check against DNS rebinding: `Host` names an allowed host (an entry without a port allows
/// any port), and `Origin`, when sent, is of one.
fn check_host(headers: &HeaderMap, hosts: &[String]) -> Result<(), Response> {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !allowed(host, hosts) {
        return Err(forbidden(format!(
            "/mcp does not answer for the host '{host}' (a check against DNS rebinding); the server names its hosts with --mcp-allowed-host"
        )));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let authority = origin
            .split_once("://")
            .map(|(_, rest)| rest.trim_end_matches('/'))
            .unwrap_or("");
        if !allowed(authority, hosts) {
            return Err(forbidden(format!(
                "/mcp does not answer pages of the origin '{origin}' (a check against DNS rebinding)"
            )));
        }
    }
    Ok(())
}

/// Whether `authority` (`host[:port]`) is one of `hosts`.
pub(super) fn allowed(authority: &str, hosts: &[String]) -> bool {
    let authority = authority.to_ascii_lowercase();
    let name = if let Some(rest) = authority.strip_prefix('[') {
        // [v6]:port
        rest.split_once(']').map_or("", |(h, _)| h)
    } else {
        authority
            .rsplit_once(':')
            .map_or(authority.as_str(), |(h, _)| h)
    };
    !authority.is_empty()
        && hosts.iter().any(|h| {
            let h = h.to_ascii_lowercase();
            let bare = h.trim_start_matches('[').trim_end_matches(']');
            h == authority || bare == name
        })
}

fn forbidden(detail: String) -> Response {
    AppError::HostNotAllowed(detail).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_ports() {
        let hosts: Vec<String> = [
            "localhost",
            "127.0.0.1",
            "::1",
            "[::1]",
            "data.example.org:8443",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for ok in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:8080",
            "LOCALHOST:80",
            "data.example.org:8443",
        ] {
            assert!(allowed(ok, &hosts), "{ok}");
        }
        for no in [
            "",
            "evil.example.com",
            "evil.example.com:8080",
            "data.example.org",
            "data.example.org:80",
            "localhost.evil.com",
        ] {
            assert!(!allowed(no, &hosts), "{no}");
        }
    }
}
