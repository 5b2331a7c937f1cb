//! The leaderboard's frontend (`--leaderboard-ui DIR`) at `/leaderboard/`, beside its data at
//! `/leaderboard/data/`, so one process is a whole leaderboard. Files are sent from memory in the
//! coding the client prefers (compressed once), with a strong entity tag of their bytes (the
//! transport layer answers a revalidation with 304). A path with no file and no extension is a
//! client route: it gets `index.html`. Content-hashed assets are immutable; the page is
//! revalidated on every load; anything else has the service's max-age.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{Redirect, Response};
use axum::routing::get;

use super::error::AppError;
use super::leaderboard::file_response;
use super::state::AppState;
use super::transport::{Chosen, IMMUTABLE, max_age};
use crate::service::coding::Coding;
use crate::service::static_site::{Freshness, StaticFile, StaticSite};

/// The routes of the frontend's files (none when no site is configured).
pub fn routes(site: Option<&Arc<StaticSite>>) -> Router<AppState> {
    if site.is_none() {
        return Router::new();
    }
    Router::new()
        .route(
            "/leaderboard",
            get(|| async { Redirect::permanent("/leaderboard/") }),
        )
        .route("/leaderboard/", get(root))
        .route("/leaderboard/{*path}", get(file))
}

fn site(state: &AppState) -> Result<&Arc<StaticSite>, AppError> {
    state
        .http
        .leaderboard_ui
        .as_ref()
        .ok_or_else(|| AppError::NoRoute("/leaderboard/".into()))
}

async fn root(State(state): State<AppState>, Chosen(coding): Chosen) -> Result<Response, AppError> {
    let site = site(&state)?;
    Ok(respond(&state, site.index(), coding))
}

async fn file(
    State(state): State<AppState>,
    Path(path): Path<String>,
    Chosen(coding): Chosen,
) -> Result<Response, AppError> {
    let site = site(&state)?;
    if let Some(f) = site.file(&path) {
        return Ok(respond(&state, f, coding));
    }
    // The data's own paths never fall back to the page (an unknown data file is an error the
    // frontend must see); nor does a missing asset (a name with an extension).
    let last = path.rsplit('/').next().unwrap_or(&path);
    if path == "data" || path.starts_with("data/") || last.contains('.') {
        return Err(AppError::NoRoute(format!("/leaderboard/{path}")));
    }
    Ok(respond(&state, site.index(), coding))
}

fn respond(state: &AppState, f: &StaticFile, coding: Coding) -> Response {
    let (body, coding, done) = f.body(coding);
    // A type the site's reader made from a file's name; one it could not send is left out.
    let content_type = HeaderValue::from_str(&f.content_type).ok();
    let mut resp = file_response(body, coding, done, content_type, &f.etag);
    let h = resp.headers_mut();
    let cache = match f.freshness {
        Freshness::Immutable => IMMUTABLE,
        Freshness::Revalidate => HeaderValue::from_static("no-cache"),
        Freshness::MaxAge => max_age(state.http.max_age),
    };
    h.insert(header::CACHE_CONTROL, cache);
    resp
}
