//! Predictions for configurations nobody measured (`/v1/{domain}/predict`), the predictor's
//! held-out figures (`/v1/{domain}/predict/quality`) and deployment plans (`/v1/llm/plan`):
//! questions of the service's door (`service::ask::predict`).

use axum::response::Response;

use super::error::AppError;
use super::state::Asked;
use crate::service::ask::Question;

/// Predicted energy, power, latency and throughput of configurations, with intervals.
///
/// The model is one of the snapshot's (`model_id`: its parameters, architecture and precision are
/// the runs'), or any model given by its parameters (`total_params_billions`,
/// `activated_params_billions`, `architecture`, `weight_precision`, named as the run fields).
/// One row per (task, GPU model, GPU count, batch size) asked: the inputs, `method` (a measured
/// sweep of the model interpolated or extended in batch size, else the regression over every
/// model), each predicted field under its run-field name with `<field>_lo80`, `_hi80`, `_lo95`
/// and `_hi95` (split-conformal intervals from held-out residuals of the same method), and
/// `measured_run_id` with `measured_<field>` where the snapshot has a run of that configuration.
/// `/predict/quality` says how good each method is.
#[utoipa::path(
    get,
    path = "/v1/{domain}/predict",
    tag = "models",
    params(("domain" = crate::engine::Domain, Path, description = "llm or diffusion")),
    responses(
        (status = 200, description = "One row per configuration: inputs, method, predicted fields with intervals, the measured run where there is one",
            content(
                (Vec<serde_json::Value> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("predict"))),
)]
pub async fn predict(asked: Asked) -> Result<Response, AppError> {
    asked.ask(Question::Predict).await
}

/// The predictor's held-out figures: per field and method (`regression`: each run predicted
/// without its model; `sweep_interpolated` / `sweep_extended`: each run predicted from the rest
/// of its model's sweep; `ecologits`: EcoLogits' published formula, LLM energy per token only), over
/// all runs, per GPU model and per task: runs, models, the median and 90th-percentile relative
/// error, and the share of runs inside their 80% and 95% intervals when those are calibrated
/// without the run's model.
#[utoipa::path(
    get,
    path = "/v1/{domain}/predict/quality",
    tag = "models",
    params(("domain" = crate::engine::Domain, Path, description = "llm or diffusion")),
    responses(
        (status = 200, description = "field, method, scope, value, runs, models, median_rel_error, p90_rel_error, coverage80, coverage95",
            content(
                (Vec<serde_json::Value> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("predict_quality"))),
)]
pub async fn quality(asked: Asked) -> Result<Response, AppError> {
    asked.ask(Question::PredictQuality).await
}

/// A deployment plan for an LLM workload.
///
/// The workload (`output_tokens_per_s`, or `requests_per_day` × `output_length`) and a latency
/// target (`median_itl_ms_max`, `p90_itl_ms_max`) for a model (`model_id` or its parameters, as
/// `/predict` takes them), over the GPU models, GPU counts and batch sizes allowed: every
/// configuration whose predicted (or measured) ITL meets the target, least energy a day first.
/// Each row: the configuration, `method` and `measured_run_id`, the ITLs, the tokens a second one
/// replica serves, `replicas` and `gpus` needed, `power_watts` drawn, `kwh_per_day` with its 80%
/// and 95% bounds, `kwh_per_million_tokens`, and with a grid (`grid` code or `gco2_per_kwh`) and a
/// `price_per_kwh`, `kg_co2e_per_day` and `cost_per_day`. JSON is an object with the workload, the
/// grid and its source, every assumption made, the configurations, and when none meets the target,
/// `reason` (200, an empty list); the other formats carry the rows.
#[utoipa::path(
    get,
    path = "/v1/llm/plan",
    tag = "models",
    responses(
        (status = 200, description = "The configurations that meet the workload, least energy a day first, with the assumptions made",
            content(
                (serde_json::Value = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::QueryProblems,
    ),
    extensions(("x-query" = json!("plan"))),
)]
pub async fn plan_llm(asked: Asked) -> Result<Response, AppError> {
    asked.ask(Question::Plan).await
}
