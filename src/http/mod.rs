//! The HTTP front end (axum): extract, call, answer. A question of the service's door is one call
//! (`state::Asked`: the domain and parameters read by `service::ask`'s grammar, the representation
//! negotiated, the door's encoded answer sent); the other handlers still parse (`prepare`), call
//! the service and encode. Every refusal is a problem+json document (`error`). `router(state,
//! mounted)` builds the router apart from `serve()`, so tests can drive it in-process; every route
//! is registered through utoipa, and the document is completed from the questions' declarations
//! (`openapi`).
//!
//! Layer: below `server` (which mounts MCP on its router), `mcp` and `config`; it may import
//! `service` and everything below it.

pub mod answer;
pub mod charts;
pub mod connections;
pub mod derived;
pub mod error;
pub mod explore;
pub mod fits;
pub mod front;
pub mod frontier;
pub mod groups;
pub mod guard;
pub mod info;
pub mod leaderboard;
pub mod measurements;
pub mod metrics;
pub mod mirror;
pub mod models;
pub mod negotiate;
pub mod openapi;
pub mod predict;
pub mod prefetch;
pub mod problems;
pub mod provenance;
pub mod raw_file;
pub mod reference;
pub mod request_id;
pub mod request_metrics;
pub mod runs;
pub mod sql;
pub mod state;
pub mod timeline;
pub mod transport;
pub mod ui;

use std::net::SocketAddr;

use axum::Router;
use axum::http::{HeaderName, Request, Uri};
use axum::response::{IntoResponse, Response};
use tower_http::LatencyUnit;
use tower_http::compression::CompressionLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::SwaggerUi;

pub use self::error::AppError;
use self::request_id::{REQUEST_ID, RequestIdLayer};
pub use self::state::{AppState, HttpOptions, Limits};

/// The OpenAPI document and the API routes, from the same annotations. Every route reads a body
/// of at most `guard.max_body_bytes` but the ITL mixture fit, whose samples may take
/// `guard.max_samples_body_bytes`.
fn api(guard: &state::GuardOptions) -> (Router<AppState>, utoipa::openapi::OpenApi) {
    use axum::extract::DefaultBodyLimit;
    let samples = guard.max_samples_body_bytes;
    let bulk = OpenApiRouter::new()
        .routes(routes!(models::mixture_fit))
        .layer(DefaultBodyLimit::max(samples))
        .layer(axum::Extension(state::BodyLimit(samples)));
    let (router, doc) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(measurements::list_runs))
        .routes(routes!(measurements::get_run))
        .routes(routes!(measurements::fields))
        .routes(routes!(measurements::repeat_stats))
        .routes(routes!(measurements::compare))
        .routes(routes!(measurements::list_table))
        .routes(routes!(runs::list_runs))
        .routes(routes!(runs::get_run))
        .routes(routes!(groups::groups))
        .routes(routes!(provenance::statistics))
        .routes(routes!(provenance::changes))
        .routes(routes!(provenance::croissant))
        .routes(routes!(provenance::summary_file))
        .routes(routes!(derived::run_output_lengths))
        .routes(routes!(derived::output_lengths))
        .routes(routes!(derived::run_itl))
        .routes(routes!(derived::itl))
        .routes(routes!(raw_file::raw_file))
        .routes(routes!(timeline::run_timeline_handler))
        .routes(routes!(timeline::timelines))
        .routes(routes!(explore::home))
        .routes(routes!(info::fields))
        .routes(routes!(prefetch::prefetch))
        .routes(routes!(prefetch::get_job))
        .routes(routes!(prefetch::evict))
        .routes(routes!(info::cache))
        .routes(routes!(info::datasets))
        .routes(routes!(info::healthz))
        .routes(routes!(info::readyz))
        .routes(routes!(metrics::metrics))
        .routes(routes!(info::reload))
        .routes(routes!(frontier::pareto))
        .routes(routes!(frontier::best))
        .routes(routes!(sql::sql_get, sql::sql_post))
        .routes(routes!(sql::sql_tables))
        .routes(routes!(sql::sql_functions))
        .routes(routes!(charts::pareto_chart))
        .routes(routes!(charts::sweep_chart))
        .routes(routes!(charts::timeline_chart))
        .routes(routes!(charts::itl_chart))
        .routes(routes!(charts::plan_chart))
        .routes(routes!(charts::rating_badge))
        .routes(routes!(fits::logistic_fits))
        .routes(routes!(fits::run_itl_mixture))
        .routes(routes!(fits::itl_mixtures))
        .routes(routes!(predict::predict))
        .routes(routes!(predict::quality))
        .routes(routes!(predict::plan_llm))
        .routes(routes!(models::logistic_fit))
        .routes(routes!(models::logistic_eval))
        .merge(bulk)
        .routes(routes!(models::mixture_sample))
        .routes(routes!(leaderboard::index))
        .routes(routes!(leaderboard::task))
        .routes(routes!(leaderboard::model))
        .routes(routes!(leaderboard::bare_index))
        .routes(routes!(leaderboard::bare_task))
        .routes(routes!(leaderboard::bare_model))
        .split_for_parts();
    (router, doc)
}

/// The OpenAPI document as served at `/openapi.json` and committed in `openapi/openapi.json`.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    let mut doc = api_annotations();
    openapi::complete(&mut doc);
    doc
}

/// The document as the handlers' annotations make it, before `openapi::complete` fills in the
/// parameters from the declarations (each operation still names its question as `x-query`).
fn api_annotations() -> utoipa::openapi::OpenApi {
    api(&state::GuardOptions::default()).1
}

async fn not_found(uri: Uri) -> Response {
    AppError::NoRoute(uri.path().to_string()).into_response()
}

async fn method_not_allowed() -> Response {
    AppError::MethodNotAllowed.into_response()
}

/// The REST API, the documents and pages served beside it and the front ends `mounted` on the
/// same listener (`crate::server` mounts MCP), under the service's layers.
pub fn router(state: AppState, mounted: Router<AppState>) -> Router {
    let (api, mut doc) = api(&state.http.guard);
    openapi::complete(&mut doc);
    let body_limit = state.http.guard.max_body_bytes;
    let trace = TraceLayer::new_for_http().make_span_with(|req: &Request<_>| {
        let id = req.headers().get(&REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("-");
        tracing::info_span!("request", method = %req.method(), uri = %req.uri(), request_id = %id)
    })
    .on_response(DefaultOnResponse::new().level(tracing::Level::INFO).latency_unit(LatencyUnit::Micros));
    let cors = cors(&state.http.cors_origins);
    let ui = ui::routes(state.http.leaderboard_ui.as_ref());
    let mirror = mirror::routes(state.http.mirror.is_some());
    let app = api
        .merge(SwaggerUi::new("/docs").url("/openapi.json", doc))
        .merge(ui)
        .merge(mirror)
        .merge(mounted)
        .merge(explore::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        // The service's own layers, outermost first, as one stack: `Router::layer` wraps every
        // route in a boxed service once per call, and a request clones, runs and drops each box
        // (one per layer when every layer was a call of its own, which cost a cached answer CPU).
        .layer(
            tower::ServiceBuilder::new()
                .layer(RequestIdLayer)
                .layer(trace)
                .layer(cors)
                // Counted, admitted (or refused) by the guard, and sent in its coding with its
                // validators; cached answers in their kept compressed form, anything else
                // compressed as it streams.
                .layer(front::FrontLayer(state.clone()))
                .layer(
                    CompressionLayer::new()
                        .gzip(true)
                        .br(true)
                        .zstd(true)
                        .compress_when(transport::WorthCompressing),
                )
                // Every body is bounded before it is read (the ITL mixture fit's route sets its
                // own, larger bound inside this one); the extension lets a refusal name the bound.
                .layer(axum::Extension(state::BodyLimit(body_limit)))
                .layer(axum::extract::DefaultBodyLimit::max(body_limit)),
        )
        .with_state(state);
    app
}

/// Cross-origin reads: GET and HEAD (and the model POSTs) from `origins`, or from any origin
/// when none is named (a public read-only data API); the headers a client reads exposed.
fn cors(origins: &[String]) -> CorsLayer {
    use axum::http::{Method, header};
    // With a list, the answer names the origin it allows, so it varies with the request's
    // `Origin` (and a preflight's with its method and headers); with any origin it is the same
    // for all of them, and a `Vary` would only split a shared cache's copies by origin.
    let cors = if origins.is_empty() {
        CorsLayer::new().allow_origin(AllowOrigin::any()).vary([])
    } else {
        CorsLayer::new().allow_origin(AllowOrigin::list(
            origins.iter().filter_map(|o| o.parse().ok()),
        ))
    };
    cors.allow_methods([Method::GET, Method::HEAD, Method::POST])
        .allow_headers([header::ACCEPT, header::CONTENT_TYPE, header::IF_NONE_MATCH])
        .expose_headers([
            header::ETAG,
            header::LINK,
            header::WARNING,
            header::LOCATION,
            header::RETRY_AFTER,
            HeaderName::from_static("x-total-count"),
            transport::SNAPSHOT_ID,
            transport::SNAPSHOT,
            transport::SERVER_TIMING,
            REQUEST_ID,
        ])
        .max_age(std::time::Duration::from_secs(86400))
}

/// How long a shutdown waits for background work (derived data being persisted) to finish.
const BACKGROUND_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Serve `app` on `addr` until Ctrl-C / SIGTERM.
pub async fn serve(
    state: AppState,
    app: Router,
    addr: SocketAddr,
    on_bound: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    on_bound(listener.local_addr()?);
    reload_on_hangup(state.clone());
    if let Some(every) = state.http.watch {
        watch_source(state.clone(), every);
    }
    serve_until(state, app, listener, shutdown_signal()).await
}

/// Serve `app` on `listener` until `shutdown` completes and the requests in flight are
/// answered, then let background work finish (for up to `BACKGROUND_GRACE`).
pub async fn serve_until(
    state: AppState,
    app: Router,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let background = state.service.background().clone();
    // The leaderboard's site is made and compressed off the request path, yielding to requests;
    // its files that need raw reads are made now if so configured (else on first request).
    let stop = tokio_util::sync::CancellationToken::new();
    state.service.start_background(stop.clone());
    // The frontend's text files are compressed at the most effort once, off the request path.
    if let Some(site) = &state.http.leaderboard_ui {
        site.refine_all();
    }
    // Shutdown: /readyz turns 503 at once, requests are still answered for the drain delay
    // (a load balancer sees the 503 and stops sending), then the listener closes and the
    // requests in flight finish.
    let draining = state.draining.clone();
    let delay = state.http.drain_delay;
    let shutdown = async move {
        shutdown.await;
        draining.store(true, std::sync::atomic::Ordering::SeqCst);
        if !delay.is_zero() {
            tracing::info!(delay = ?delay, "draining: /readyz answers 503");
            tokio::time::sleep(delay).await;
        }
    };
    // Each request carries its peer's address, the client a rate limit counts (unless a proxy
    // header names it).
    let (options, stats) = (state.http.connections, state.connections.clone());
    connections::serve(listener, app, options, stats, shutdown).await;
    let served = Ok(());
    stop.cancel();
    background.close();
    if !background.is_empty() {
        tracing::info!(
            tasks = background.len(),
            "waiting for derived data to be persisted"
        );
        if tokio::time::timeout(BACKGROUND_GRACE, background.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                tasks = background.len(),
                "stopping with derived data still being persisted (it is read again from the raw file next time)"
            );
        }
    }
    served
}

/// `--watch`: read the source again every `every` and serve it when its content changed (a new
/// hub commit, a directory rewritten); a failure is logged and kept for `/v1/datasets`, and the
/// served snapshot stays.
fn watch_source(state: AppState, every: std::time::Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            match state.service.reload_if_changed().await {
                Ok(Some(s)) => tracing::info!(
                    snapshot = %crate::service::catalog::snapshot_id(&s.content_id),
                    llm_runs = s.llm.len(),
                    diffusion_runs = s.diffusion.len(),
                    "the source changed: reloaded"
                ),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "watching the source: reload failed"),
            }
        }
    });
}

/// SIGHUP reads the dataset again, as `POST /v1/admin/reload` does.
fn reload_on_hangup(state: AppState) {
    #[cfg(unix)]
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hup) = signal(SignalKind::hangup()) else {
            return;
        };
        while hup.recv().await.is_some() {
            match state.service.reload().await {
                Ok(s) => tracing::info!(
                    snapshot = %crate::service::catalog::snapshot_id(&s.content_id),
                    llm_runs = s.llm.len(),
                    diffusion_runs = s.diffusion.len(),
                    "reloaded on SIGHUP"
                ),
                Err(e) => tracing::warn!(error = %e, "reload on SIGHUP failed"),
            }
        }
    });
    #[cfg(not(unix))]
    let _ = state;
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}
