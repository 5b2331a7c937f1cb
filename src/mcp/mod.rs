//! The Model Context Protocol at `/mcp` (feature `mcp`): the service's questions as typed,
//! read-only tools for AI assistants, served with the official Rust SDK (rmcp) over its
//! Streamable HTTP transport, stateless (no session: any replica answers any request) and with
//! plain JSON answers.
//!
//! A tool is a thin call of a question: its arguments are that question's parameters as
//! `service::ask` declares them (`schema`), read by the same grammar as a REST query, and the
//! question is asked of the service's door directly (sharing its answer cache with REST; a
//! costly question takes one of the costly routes' places), or of its catalog. The JSON answer
//! is the tool's structured content, beside a short text table (`text`). A refusal is a tool
//! error carrying the problem's slug, detail, parameter and allowed values. Tool calls are also
//! counted by tool name.
//!
//! Access: read-only always; a bearer token when `MLENERGY_MCP_TOKEN` is set (or the admin token,
//! when it is the only one set); the `Host` and `Origin` headers checked against DNS rebinding
//! (rmcp's check: loopback names by default, more with `--mcp-allowed-host`).

mod cache;
mod catalog;
mod direct;
mod schema;
mod server;
mod text;

pub mod reference;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::http::error::AppError;
use crate::http::state::{AppState, McpOptions};

/// The path the protocol is served at.
pub const PATH: &str = "/mcp";

/// Host names every server accepts (the loopback ones; rmcp matches them with any port).
const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "::1", "[::1]"];

/// The `/mcp` route: rmcp's Streamable HTTP service behind the token check.
pub fn routes(state: &AppState, options: &McpOptions) -> Router<AppState> {
    let hosts: Vec<String> = LOOPBACK
        .iter()
        .map(|h| h.to_string())
        .chain(options.allowed_hosts.iter().cloned())
        .collect();
    // Browsers send Origin; a page on another site must not reach a local server. The origins
    // allowed are the allowed hosts' (any scheme's default or given port).
    let origins: Vec<String> = hosts
        .iter()
        .flat_map(|h| {
            let h = if h.contains(':') && !h.starts_with('[') {
                format!("[{h}]")
            } else {
                h.clone()
            };
            [format!("http://{h}:*"), format!("https://{h}:*")]
        })
        .collect();
    // JSON answers (a tool sends nothing before its result), bodies bounded as every route's.
    let hosts_for_cache = hosts.clone();
    let mut config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_max_request_body_bytes(state.http.guard.max_body_bytes);
    config.legacy_session_mode = false;
    config.allowed_hosts = hosts;
    config.allowed_origins = origins;
    let tools = catalog::shared();
    let listed = std::sync::Arc::new(server::McpServer::listing(&tools));
    let server = server::McpServer {
        door: state.door.clone(),
        tools: tools.clone(),
        listed,
        metrics: state.metrics.clone(),
    };
    let each = server.clone();
    // Shared, not cloned for each request as a route's service is: rmcp's configuration holds
    // the lists of hosts and origins.
    let service = std::sync::Arc::new(StreamableHttpService::new(
        move || Ok(each.clone()),
        std::sync::Arc::new(NeverSessionManager::default()),
        config,
    ));
    let rmcp = axum::routing::any(move |req: Request| async move { service.handle(req).await });
    let keep = cache::Keep {
        state: state.clone(),
        hosts: std::sync::Arc::new(hosts_for_cache),
        server,
    };
    // Inside out: rmcp; tool answers kept (after the Host and Origin check); the token.
    Router::new()
        .route(PATH, rmcp)
        .layer(axum::middleware::from_fn_with_state(keep, cache::layer))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            require_token,
        ))
}

/// Refuse a request without the configured token (401 with `WWW-Authenticate: Bearer`).
async fn require_token(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(token) = state.http.mcp.as_ref().and_then(|m| m.token.as_deref()) else {
        return next.run(req).await;
    };
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if crate::http::guard::same(given.as_bytes(), token.as_bytes()) {
        return next.run(req).await;
    }
    let mut resp = AppError::Unauthorized(
        "/mcp needs its token: Authorization: Bearer <MLENERGY_MCP_TOKEN>".into(),
    )
    .into_response();
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Bearer realm=\"mcp\""),
    );
    resp
}
