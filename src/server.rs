//! The server: the front ends that share the HTTP listener, put together. HTTP's router
//! (`http`: the REST API, the explorer, the documents) with the Model Context Protocol mounted
//! on it (`mcp`, feature `mcp`), served until a shutdown.
//!
//! Layer: above `http` and `mcp`, below `config`.

use std::net::SocketAddr;

use axum::Router;

use crate::http::{self, AppState};

/// The whole service as a router.
pub fn app(state: AppState) -> Router {
    #[cfg(feature = "mcp")]
    let mounted = match &state.http.mcp {
        Some(options) => crate::mcp::routes(&state, options),
        None => Router::new(),
    };
    #[cfg(not(feature = "mcp"))]
    let mounted = Router::new();
    http::router(state, mounted)
}

/// Serve `app(state)` on `addr` until Ctrl-C / SIGTERM.
pub async fn serve(
    state: AppState,
    addr: SocketAddr,
    on_bound: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let app = app(state.clone());
    http::serve(state, app, addr, on_bound).await
}

/// Serve `app(state)` on `listener` until `shutdown` completes (`http::serve_until`).
pub async fn serve_until(
    state: AppState,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = app(state.clone());
    http::serve_until(state, app, listener, shutdown).await
}
