//! Charts as SVG, drawn at the service's door (`service::ask::charts`): the Pareto frontier
//! (`/v1/{domain}/charts/pareto.svg`), a batch sweep with its fitted logistic curves
//! (`/v1/{domain}/charts/sweep.svg`), a run's power or temperature timeline per GPU with the
//! total (`/v1/{domain}/runs/{run_id}/timeline.svg`), the histogram of a run's smoothed
//! inter-token latencies (`/v1/llm/runs/{run_id}/itl.svg`), a deployment plan's energy a day
//! against the GPUs each configuration needs (`/v1/llm/charts/plan.svg`) and a run's rating
//! badge (`/v1/{domain}/runs/{run_id}/rating.svg`). The same parameters as the data they draw
//! (but `format` and `fields`), the same caching.

use axum::extract::{OriginalUri, RawQuery, State};
use axum::http::Uri;
use axum::response::Response;

use super::answer::reply;
use super::error::AppError;
use super::state::{ApiPath, AppState, parse_domain};
use crate::service::ask::{self as ask, Question, Request};

/// A chart asked over HTTP: the domain and parameters checked, the door's SVG sent (a chart has
/// one representation: no negotiation).
async fn draw(
    state: &AppState,
    question: Question,
    domain: &str,
    run_id: Option<String>,
    uri: &Uri,
    query: Option<&str>,
) -> Result<Response, AppError> {
    let domain = parse_domain(domain)?;
    let req = Request::parse(question, domain, run_id, query, uri.path().to_string())?;
    Ok(reply(state.door.ask(&req).await?))
}

/// The Pareto frontier drawn: per `per` group its frontier runs joined by a line (latency
/// ascending), the other filtered runs as grey points behind.
#[utoipa::path(
    get,
    path = "/v1/{domain}/charts/pareto.svg",
    tag = "charts",
    params(("domain" = crate::engine::Domain, Path, description = "llm or diffusion")),
    responses((status = 200, description = "An 800 × 500 SVG chart", content_type = "image/svg+xml", body = String),
        super::problems::ChartProblems,
    ),
    extensions(("x-query" = json!("pareto_chart"))),
)]
pub async fn pareto_chart(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    draw(
        &state,
        ask::PARETO_CHART,
        &domain,
        None,
        &uri,
        query.as_deref(),
    )
    .await
}

/// A batch sweep drawn: per (model, task, GPU, GPU count) group, every run's `y` at its batch
/// size (log2 axis), and the logistic curve fitted to the per-batch medians (the fits of
/// `/fits/logistic`) when the group has two batch sizes or more.
#[utoipa::path(
    get,
    path = "/v1/{domain}/charts/sweep.svg",
    tag = "charts",
    params(("domain" = crate::engine::Domain, Path, description = "llm or diffusion")),
    responses((status = 200, description = "An 800 × 500 SVG chart", content_type = "image/svg+xml", body = String),
        super::problems::ChartProblems,
    ),
    extensions(("x-query" = json!("sweep_chart"))),
)]
pub async fn sweep_chart(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    draw(
        &state,
        ask::SWEEP_CHART,
        &domain,
        None,
        &uri,
        query.as_deref(),
    )
    .await
}

/// A run's timeline drawn: the metric per GPU, and for power their total.
#[utoipa::path(
    get,
    path = "/v1/{domain}/runs/{run_id}/timeline.svg",
    tag = "charts",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
        ("run_id" = String, Path, description = "Run id"),
    ),
    responses((status = 200, description = "An 800 × 500 SVG chart", content_type = "image/svg+xml", body = String),
        super::problems::RawChartProblems,
    ),
    extensions(("x-query" = json!("timeline_chart"))),
)]
pub async fn timeline_chart(
    State(state): State<AppState>,
    ApiPath((domain, run_id)): ApiPath<(String, String)>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    let run = Some(run_id);
    draw(
        &state,
        ask::TIMELINE_CHART,
        &domain,
        run,
        &uri,
        query.as_deref(),
    )
    .await
}

/// The histogram of a run's smoothed inter-token latencies (50 bins), with its median and p99.
#[utoipa::path(
    get,
    path = "/v1/llm/runs/{run_id}/itl.svg",
    tag = "charts",
    params(("run_id" = String, Path, description = "Run id")),
    responses((status = 200, description = "An 800 × 500 SVG chart", content_type = "image/svg+xml", body = String),
        super::problems::RawChartProblems,
    ),
    extensions(("x-query" = json!("itl_chart"))),
)]
pub async fn itl_chart(
    State(state): State<AppState>,
    ApiPath(run_id): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    let run = Some(run_id);
    draw(&state, ask::ITL_CHART, "llm", run, &uri, query.as_deref()).await
}

/// A deployment plan drawn: for each configuration that meets the workload's latency target (the
/// parameters of `/v1/llm/plan`), its energy a day (kWh) against the GPUs it needs (log2 axis),
/// a series per GPU model, and the chosen one (least energy a day) marked.
#[utoipa::path(
    get,
    path = "/v1/llm/charts/plan.svg",
    tag = "charts",
    responses((status = 200, description = "An 800 × 500 SVG chart", content_type = "image/svg+xml", body = String),
        super::problems::ChartProblems,
    ),
    extensions(("x-query" = json!("plan_chart"))),
)]
pub async fn plan_chart(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    draw(&state, ask::PLAN_CHART, "llm", None, &uri, query.as_deref()).await
}

/// A run's energy rating as a badge (260 × 100): its stars, its group (task, and for LLM runs the
/// size class), its energy, and the range the bands divide (see the run field `energy_rating`).
#[utoipa::path(
    get,
    path = "/v1/{domain}/runs/{run_id}/rating.svg",
    tag = "charts",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
        ("run_id" = String, Path, description = "Run id"),
    ),
    responses((status = 200, description = "A 260 × 100 SVG badge", content_type = "image/svg+xml", body = String),
        super::problems::ChartProblems,
    ),
    extensions(("x-query" = json!("rating_chart"))),
)]
pub async fn rating_badge(
    State(state): State<AppState>,
    ApiPath((domain, run_id)): ApiPath<(String, String)>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    let run = Some(run_id);
    draw(
        &state,
        ask::RATING_CHART,
        &domain,
        run,
        &uri,
        query.as_deref(),
    )
    .await
}
