//! Fitted models over the dataset (docs/toolkit.md §12): logistic fits of batch sweeps of the
//! filtered runs (`/v1/{domain}/fits/logistic`), and the ITL mixture of one run or of each
//! filtered run (`/v1/llm/runs/{run_id}/itl-mixture`, `/v1/llm/fits/itl-mixture`). Fits are
//! answered at the service's door (`service::ask::fits`), and cached and persisted by the service
//! (`service::fits`).

use axum::response::Response;

use super::error::AppError;
use super::state::Asked;
use crate::service::ask::{self as ask, Question};

/// Logistic fits of batch sweeps.
///
/// The runs are filtered as `/runs` filters them and grouped by `by` (default model_id, task,
/// gpu_model, num_gpus). In each group, for each field `y`, x is log2 of each batch size (at least
/// 1) and y the median of the field over the runs of that batch size; the toolkit's
/// `LogisticModel.fit` (a 40 × 60 grid of x0 and k, least squares of the baseline and amplitude at
/// each point) gives `L`, `x0`, `k`, `b0`. One row per (group, field) with the number of batch
/// sizes fitted, the fit's mse, R² and largest relative residual (read R² before trusting a
/// prediction), `degenerate` when there was nothing to search (one batch size, or a constant
/// field), and a `pred_<batch>` column per batch size in `predict`.
#[utoipa::path(
    get,
    path = "/v1/{domain}/fits/logistic",
    tag = "models",
    params(("domain" = crate::engine::Domain, Path, description = "llm or diffusion")),
    responses(
        (status = 200, description = "One row per (group, field): the by fields, y, L, x0, k, b0, n, batch_sizes, mse, r2, max_rel_residual, degenerate, pred_<batch>...",
            content(
                (Vec<super::openapi::LogisticFitRow> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("sweep"))),
)]
pub async fn logistic_fits(asked: Asked) -> Result<Response, AppError> {
    asked.ask(Question::Sweep).await
}

/// The ITL mixture of one LLM run.
///
/// The toolkit's `ITLMixtureModel.fit` of the run's smoothed ITL samples (the `itl` endpoint's),
/// at most `max_samples` of them drawn at random without replacement (seeded by `seed`; the
/// random stream is not numpy's, the distribution of the draw is the same), or all of them with
/// `max_samples=all`. One row: the run's keys, loc, pi_steady, sigma_steady, scale_steady,
/// pi_stall, sigma_stall, scale_stall, the mixture's mean (s) and variance (s²), the samples
/// fitted (`n`) and held (`n_samples`).
#[utoipa::path(
    get,
    path = "/v1/llm/runs/{run_id}/itl-mixture",
    tag = "models",
    params(("run_id" = String, Path, description = "Run id")),
    responses(
        (status = 200, description = "One row: run_id, task, model_id, num_gpus, max_num_seqs, the seven parameters, mean_s, variance_s2, n, n_samples",
            content(
                (Vec<super::openapi::ItlMixtureRow> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::RawProblems,
    ),
    extensions(("x-query" = json!("itl_mixture_one"))),
)]
pub async fn run_itl_mixture(asked: Asked) -> Result<Response, AppError> {
    asked.ask(ask::ITL_MIXTURE_ONE).await
}

/// ITL mixtures of the filtered LLM runs, one row per run in the default order. Any run without
/// usable raw results fails the request, naming it.
#[utoipa::path(
    get,
    path = "/v1/llm/fits/itl-mixture",
    tag = "models",
    responses(
        (status = 200, description = "One row per run, as /v1/llm/runs/{run_id}/itl-mixture",
            content(
                (Vec<super::openapi::ItlMixtureRow> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::RawProblems,
    ),
    extensions(("x-query" = json!("itl_mixture_many"))),
)]
pub async fn itl_mixtures(asked: Asked) -> Result<Response, AppError> {
    asked.ask(ask::ITL_MIXTURE_MANY).await
}
