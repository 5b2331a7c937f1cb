//! The leaderboard's client logic as endpoints (docs/leaderboard.md §4): `GET
//! /v1/{domain}/pareto` (the runs on the Pareto frontier of a latency and an energy field) and
//! `GET /v1/{domain}/best` (the energy-optimal run per model under a deadline and a budget), in
//! every format. Ties go to the first run in the leaderboard's file order, as in the browser.

use axum::response::Response;

use super::error::AppError;
use super::state::Asked;
use crate::service::ask::Question;

/// The Pareto frontier of the filtered runs.
///
/// A run is on the frontier when no other run (of its `per` group) has both a strictly lower
/// `x` and a strictly lower `y`, as the leaderboard's charts draw it: equal points are all kept,
/// and so is a run another beats in one field while tying it in the other. Runs whose x or y is
/// null are left out (`without_value`). Groups come in the order of their first run in the
/// leaderboard's file order, each by x, then y.
#[utoipa::path(
    get,
    path = "/v1/{domain}/pareto",
    tag = "runs",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
    ),
    responses(
        (status = 200, description = "The runs on the frontier. JSON has an envelope; CSV, NDJSON, Arrow and Parquet carry the rows only, with `X-Total-Count`.",
            headers(("X-Total-Count" = usize, description = "Runs on the frontier(s)")),
            content(
                (super::openapi::ParetoAnswer = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("pareto"))),
)]
pub async fn pareto(asked: Asked) -> Result<Response, AppError> {
    asked.ask(Question::Pareto).await
}

/// The energy-optimal run per model under a latency deadline and an energy budget.
///
/// As the leaderboard's table chooses: among the filtered runs whose latency is at most
/// `deadline` and whose energy is at most `energy_budget`, the one with the least energy per
/// `per` group (default model_id), the first in the leaderboard's file order on an exact tie;
/// the chosen runs ascending by energy. With one task filtered and no `deadline`, the
/// leaderboard's default deadline for that task applies (500 ms ITL; 30 s text-to-image; 300 s
/// text-to-video); the JSON envelope states the deadline used.
#[utoipa::path(
    get,
    path = "/v1/{domain}/best",
    tag = "runs",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
    ),
    responses(
        (status = 200, description = "The chosen runs, ascending by energy. JSON has an envelope stating the deadline and budget applied; CSV, NDJSON, Arrow and Parquet carry the rows only, with `X-Total-Count`.",
            headers(("X-Total-Count" = usize, description = "Runs chosen")),
            content(
                (super::openapi::BestAnswer = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("best"))),
)]
pub async fn best(asked: Asked) -> Result<Response, AppError> {
    asked.ask(Question::Best).await
}
