//! Predictions for configurations nobody measured (`/v1/{domain}/predict`) and the predictor's
//! held-out figures (`/v1/{domain}/predict/quality`), from the snapshot's predictor
//! (`engine::models::predict`, fitted on first use per snapshot).

use std::collections::BTreeSet;

use axum::extract::{OriginalUri, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::answer::{Encoded, cached, frame_rows, respond};
use super::error::AppError;
use super::state::{ApiPath, AppState, Prepared, prepare};
use crate::engine::Domain;
use crate::engine::frame::{ColumnData, Frame, FrameColumn, Value};
use crate::engine::models::plan::{
    PlanRow, Workload, grid_codes, grid_intensity, grid_source, plan,
};
use crate::engine::models::predict::{Config, Predictor, quality_frame};
use crate::service::ask::{Params, Question, suggestion};
use crate::service::encode;

/// `frame` as rows, made on a cache miss.
fn answer(
    state: &AppState,
    p: &Prepared,
    uri: &axum::http::Uri,
    frame: impl FnOnce() -> Result<Frame, AppError>,
) -> Result<Response, AppError> {
    frame_rows(&state.cache, &p.snapshot, uri, p.format, Vec::new(), frame)
}

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
pub async fn predict(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let p = prepare(
        &state,
        &domain,
        Question::Predict,
        query.as_deref(),
        &headers,
    )?;
    let predictor = p.snapshot.predictor(p.domain);
    let configs = configurations(&p.params, p.domain, &predictor, false)?;
    answer(&state, &p, &uri, || {
        Ok(prediction_frame(&predictor, &p, &configs))
    })
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
pub async fn quality(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let p = prepare(
        &state,
        &domain,
        Question::PredictQuality,
        query.as_deref(),
        &headers,
    )?;
    let predictor = p.snapshot.predictor(p.domain);
    answer(&state, &p, &uri, || Ok(quality_frame(&predictor.quality())))
}

fn invalid(parameter: &str, detail: String, allowed: Option<Vec<String>>) -> AppError {
    AppError::InvalidParameter {
        parameter: parameter.into(),
        detail,
        allowed,
    }
}

/// One value of `param` among `known` (the predictor's levels), or 400 with a suggestion.
fn known_value(param: &str, value: &str, known: &[String]) -> Result<String, AppError> {
    if known.iter().any(|k| k == value) {
        return Ok(value.to_string());
    }
    let names: Vec<&str> = known.iter().map(String::as_str).collect();
    let hint = suggestion(value, &names)
        .map(|s| format!("; did you mean '{s}'?"))
        .unwrap_or_default();
    Err(invalid(
        param,
        format!("{param} '{value}' is not in the snapshot's runs{hint}"),
        Some(known.to_vec()),
    ))
}

/// The configurations the request asks for, validated; a plan's defaults (`plan`) are wider: GPU
/// counts 1, 2, 4, 8 and every batch size of the snapshot.
pub(super) fn configurations(
    params: &Params,
    domain: Domain,
    predictor: &Predictor,
    plan: bool,
) -> Result<Vec<Config>, AppError> {
    let spec = predictor.spec;
    let model_id = params.single_value("model_id")?.map(str::to_string);
    let known = model_id.as_deref().and_then(|m| predictor.model_config(m));
    let total = params.positive("total_params_billions")?;
    let active = params.positive("activated_params_billions")?;
    let (total, active) = match (known, total) {
        (_, Some(t)) => (t, active.unwrap_or(t)),
        (Some(k), None) => (
            k.total_params_billions,
            active.unwrap_or(k.activated_params_billions),
        ),
        (None, None) => {
            let detail = match &model_id {
                Some(m) => format!(
                    "model '{m}' is not in the snapshot: give its total_params_billions (and activated_params_billions, weight_precision{})",
                    if domain == Domain::Llm {
                        ", architecture"
                    } else {
                        ""
                    }
                ),
                None => {
                    "give a model_id of the snapshot, or a model's total_params_billions".into()
                }
            };
            let models = predictor.models().into_iter().map(str::to_string).collect();
            return Err(invalid("total_params_billions", detail, Some(models)));
        }
    };
    if active > total {
        return Err(invalid(
            "activated_params_billions",
            format!(
                "activated_params_billions ({active}) is more than total_params_billions ({total})"
            ),
            None,
        ));
    }
    // Categorical inputs other than task and GPU: given, else the model's, else the default.
    let mut fixed = Vec::new();
    for (i, name) in spec.categories.iter().enumerate().skip(2) {
        let levels = predictor.levels(name).unwrap_or_default();
        let given = params.single_value(name)?;
        let value = match (given, known) {
            (Some(v), _) => known_value(name, v, levels)?,
            (None, Some(k)) => k.categories[i].clone(),
            (None, None) => match *name {
                "architecture" if active < total => "MoE".to_string(),
                "architecture" => "Dense Transformer".to_string(),
                _ => "bfloat16".to_string(),
            },
        };
        fixed.push(value);
    }
    let model_runs = |pick: &dyn Fn(&Config) -> String| -> BTreeSet<String> {
        model_id
            .as_deref()
            .map(|m| predictor.measured_configs(m).map(pick).collect())
            .unwrap_or_default()
    };
    let list = |param: &str, default: Vec<String>| -> Result<Vec<String>, AppError> {
        let levels = predictor.levels(param).unwrap_or_default();
        match params.items(param)? {
            Some(items) if !items.is_empty() => items
                .iter()
                .map(|v| known_value(param, v, levels))
                .collect(),
            _ => Ok(default),
        }
    };
    let tasks = {
        let measured = model_runs(&|c| c.categories[0].clone());
        let default = if measured.is_empty() {
            predictor.levels("task").unwrap_or_default().to_vec()
        } else {
            measured.into_iter().collect()
        };
        list("task", default)?
    };
    let gpus = list(
        "gpu_model",
        predictor.levels("gpu_model").unwrap_or_default().to_vec(),
    )?;
    let counts = match params.positives("num_gpus")? {
        Some(v) if !v.is_empty() => v,
        _ => {
            let measured: BTreeSet<u64> = model_id
                .as_deref()
                .filter(|_| !plan)
                .map(|m| {
                    predictor
                        .measured_configs(m)
                        .map(|c| c.num_gpus as u64)
                        .collect()
                })
                .unwrap_or_default();
            if measured.is_empty() {
                vec![1.0, 2.0, 4.0, 8.0]
            } else {
                measured.into_iter().map(|n| n as f64).collect()
            }
        }
    };
    let batches = match params.positives(spec.batch)? {
        Some(v) if !v.is_empty() => v,
        _ => {
            let measured: BTreeSet<u64> = if plan {
                predictor.batch_sizes().iter().map(|&b| b as u64).collect()
            } else {
                model_id
                    .as_deref()
                    .map(|m| {
                        predictor
                            .measured_configs(m)
                            .map(|c| c.batch as u64)
                            .collect()
                    })
                    .unwrap_or_default()
            };
            if measured.is_empty() {
                match domain {
                    Domain::Llm => vec![8.0, 16.0, 32.0, 64.0, 128.0, 256.0],
                    Domain::Diffusion => vec![1.0, 2.0, 4.0, 8.0, 16.0],
                }
            } else {
                measured.into_iter().map(|n| n as f64).collect()
            }
        }
    };
    let n = tasks.len() * gpus.len() * counts.len() * batches.len();
    if n > MAX_CONFIGURATIONS {
        return Err(invalid(
            spec.batch,
            format!("{n} configurations asked for; at most {MAX_CONFIGURATIONS} in one request"),
            None,
        ));
    }
    let mut out = Vec::with_capacity(n);
    for task in &tasks {
        for gpu in &gpus {
            for &g in &counts {
                for &b in &batches {
                    let mut categories = vec![task.clone(), gpu.clone()];
                    categories.extend(fixed.iter().cloned());
                    out.push(Config {
                        model_id: model_id.clone(),
                        total_params_billions: total,
                        activated_params_billions: active,
                        categories,
                        num_gpus: g,
                        batch: b,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Configurations one request may ask for.
const MAX_CONFIGURATIONS: usize = 10_000;

fn prediction_frame(predictor: &Predictor, p: &Prepared, configs: &[Config]) -> Frame {
    let spec = predictor.spec;
    let table = p.snapshot.table(p.domain);
    let str_col = |name: &str, f: &dyn Fn(&Config) -> Option<String>| FrameColumn {
        name: name.to_string(),
        data: ColumnData::Str(configs.iter().map(|c| f(c).map(Into::into)).collect()),
    };
    let float_col = |name: String, v: Vec<Option<f64>>| FrameColumn {
        name,
        data: ColumnData::Float(v),
    };
    let mut columns = vec![str_col("model_id", &|c| c.model_id.clone())];
    columns.push(float_col(
        "total_params_billions".into(),
        configs
            .iter()
            .map(|c| Some(c.total_params_billions))
            .collect(),
    ));
    columns.push(float_col(
        "activated_params_billions".into(),
        configs
            .iter()
            .map(|c| Some(c.activated_params_billions))
            .collect(),
    ));
    for (i, name) in spec.categories.iter().enumerate() {
        columns.push(str_col(name, &|c| Some(c.categories[i].clone())));
    }
    for (name, pick) in [("num_gpus", 0usize), (spec.batch, 1)] {
        columns.push(FrameColumn {
            name: name.to_string(),
            data: ColumnData::Int(
                configs
                    .iter()
                    .map(|c| Some(if pick == 0 { c.num_gpus } else { c.batch } as i64))
                    .collect(),
            ),
        });
    }
    let estimates: Vec<Vec<Option<_>>> = (0..spec.targets.len())
        .map(|t| configs.iter().map(|c| predictor.predict(t, c)).collect())
        .collect();
    // Every field of a configuration is predicted by the same method: the first field's says it.
    columns.push(FrameColumn {
        name: "method".into(),
        data: ColumnData::Str(
            estimates[0]
                .iter()
                .map(|e| e.as_ref().map(|e| e.method.as_str().into()))
                .collect(),
        ),
    });
    let finite = |x: f64| x.is_finite().then_some(x);
    for (t, target) in spec.targets.iter().enumerate() {
        let e = &estimates[t];
        columns.push(float_col(
            target.to_string(),
            e.iter().map(|e| e.as_ref().map(|e| e.value)).collect(),
        ));
        for (k, level) in ["80", "95"].iter().enumerate() {
            columns.push(float_col(
                format!("{target}_lo{level}"),
                e.iter()
                    .map(|e| e.as_ref().and_then(|e| finite(e.lo[k])))
                    .collect(),
            ));
            columns.push(float_col(
                format!("{target}_hi{level}"),
                e.iter()
                    .map(|e| e.as_ref().and_then(|e| finite(e.hi[k])))
                    .collect(),
            ));
        }
    }
    let measured: Vec<Option<usize>> = configs.iter().map(|c| predictor.measured_run(c)).collect();
    columns.push(str_col("measured_run_id", &|c| {
        predictor
            .measured_run(c)
            .map(|r| table.run_id(r).to_string())
    }));
    for target in spec.targets {
        let col = table.field_index(target).map(|i| table.column(i));
        columns.push(float_col(
            format!("measured_{target}"),
            measured
                .iter()
                .map(|r| {
                    let v = col?.get((*r)?);
                    match v {
                        Value::Null => None,
                        v => v.as_f64(),
                    }
                })
                .collect(),
        ));
    }
    Frame { columns }
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
pub async fn plan_llm(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let p = prepare(&state, "llm", Question::Plan, query.as_deref(), &headers)?;
    let predictor = p.snapshot.predictor(Domain::Llm);
    let candidates = configurations(&p.params, Domain::Llm, &predictor, true)?;
    let (workload, mut assumptions, grid) = workload(&p.params)?;
    let (rows, reason) = plan(&predictor, &candidates, &workload);
    assumptions.push(format!(
        "{} configurations considered: every combination of the tasks, GPU models, GPU counts and batch sizes asked for (or their defaults)",
        candidates.len()
    ));
    let frame = plan_frame(&p, &rows);
    if p.format != super::negotiate::Format::Json {
        return answer(&state, &p, &uri, || Ok(frame));
    }
    let e = cached(&state.cache, &p.snapshot, &uri, p.format, || {
        let mut body = Vec::new();
        encode::json_array(&mut body, &frame);
        let configurations: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| AppError::Internal(e.to_string()))?;
        let doc = serde_json::json!({
            "workload": {
                "output_tokens_per_s": workload.tokens_per_s,
                "median_itl_ms_max": workload.median_itl_ms_max,
                "p90_itl_ms_max": workload.p90_itl_ms_max,
                "pue": workload.pue,
                "gco2_per_kwh": workload.gco2_per_kwh,
                "price_per_kwh": workload.price_per_kwh,
            },
            "grid": grid,
            "assumptions": assumptions,
            "configurations": configurations,
            "reason": reason,
        });
        Ok(Encoded {
            content_type: p.format.content_type(),
            body: serde_json::to_vec(&doc)
                .map_err(|e| AppError::Internal(e.to_string()))?
                .into(),
            total: Some(frame.num_rows()),
            next: None,
            warnings: Vec::new(),
            variants: Default::default(),
            sent: Default::default(),
        })
    })?;
    Ok(respond(&e))
}

/// The workload, latency target, PUE, grid and price asked for, with the assumptions they imply.
pub(super) fn workload(
    params: &Params,
) -> Result<(Workload, Vec<String>, serde_json::Value), AppError> {
    let mut assumptions = vec![
        "energy a day is the workload's output tokens times the energy per token of the configuration's measured or predicted operating point (its batch size kept full): a replica's idle time and the prefill of requests beyond the benchmark's are not counted".to_string(),
        "replicas: the workload's tokens a second over one replica's output throughput at that operating point, rounded up".to_string(),
        "latency: the predicted (or measured) ITL of the configuration against the target; the interval of a prediction is not applied to the target".to_string(),
    ];
    let tokens = match (
        params.positive("output_tokens_per_s")?,
        params.positive("requests_per_day")?,
        params.positive("output_length")?,
    ) {
        (Some(t), None, None) => t,
        (None, Some(r), Some(l)) => {
            assumptions.push(format!(
                "{r} requests a day of {l} output tokens, spread evenly over the day: {} output tokens a second",
                r * l / 86_400.0
            ));
            r * l / 86_400.0
        }
        (None, Some(_), None) => {
            return Err(invalid(
                "output_length",
                "requests_per_day needs output_length (output tokens per request)".into(),
                None,
            ));
        }
        (None, None, Some(_)) => {
            return Err(invalid(
                "requests_per_day",
                "output_length needs requests_per_day".into(),
                None,
            ));
        }
        (Some(_), _, _) => {
            return Err(invalid(
                "output_tokens_per_s",
                "give the workload once: output_tokens_per_s, or requests_per_day with output_length".into(),
                None,
            ));
        }
        (None, None, None) => {
            return Err(invalid(
                "output_tokens_per_s",
                "the workload is needed: output_tokens_per_s, or requests_per_day with output_length".into(),
                Some(vec!["output_tokens_per_s".into(), "requests_per_day".into()]),
            ));
        }
    };
    let median_itl_ms_max = params.positive("median_itl_ms_max")?;
    let p90_itl_ms_max = params.positive("p90_itl_ms_max")?;
    if median_itl_ms_max.is_none() && p90_itl_ms_max.is_none() {
        assumptions.push("no latency target given: every configuration is listed".into());
    }
    let pue = match params.single_value("pue")? {
        None => {
            assumptions.push("pue 1: GPU energy only (no cooling, CPU, memory or network)".into());
            1.0
        }
        Some(_) => {
            let v = params.positive("pue")?.unwrap_or(1.0);
            if v < 1.0 {
                return Err(invalid("pue", format!("pue is at least 1, got {v}"), None));
            }
            v
        }
    };
    let non_negative = |key: &str| -> Result<Option<f64>, AppError> {
        let Some(v) = params.single_value(key)? else {
            return Ok(None);
        };
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            _ => Err(invalid(
                key,
                format!("{key} must be a number of 0 or more, got '{v}'"),
                None,
            )),
        }
    };
    let explicit = non_negative("gco2_per_kwh")?;
    let code = params.single_value("grid")?;
    let (gco2_per_kwh, grid) = match (code, explicit) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "grid",
                "give grid or gco2_per_kwh, not both".into(),
                None,
            ));
        }
        (Some(code), None) => {
            let Some((code, g)) = grid_intensity(code) else {
                let codes: Vec<String> = grid_codes().into_iter().map(|c| c.0).collect();
                return Err(invalid(
                    "grid",
                    format!(
                        "grid '{code}' is not in the embedded data: give an ISO 3166-1 alpha-3 country code (USA, FRA, DEU, ...) or an Ember region (WORLD, EU, ...), or gco2_per_kwh"
                    ),
                    Some(codes),
                ));
            };
            let (source, via, licence) = grid_source();
            assumptions.push(format!("grid {code}: {g} gCO2e/kWh, a yearly average of electricity generation ({source}; {via}; {licence})"));
            (
                Some(g),
                serde_json::json!({"code": code, "gco2_per_kwh": g, "source": source, "via": via, "licence": licence}),
            )
        }
        (None, Some(g)) => (
            Some(g),
            serde_json::json!({"gco2_per_kwh": g, "source": "given"}),
        ),
        (None, None) => (None, serde_json::Value::Null),
    };
    Ok((
        Workload {
            tokens_per_s: tokens,
            median_itl_ms_max,
            p90_itl_ms_max,
            pue,
            gco2_per_kwh,
            price_per_kwh: non_negative("price_per_kwh")?,
        },
        assumptions,
        grid,
    ))
}

fn plan_frame(p: &Prepared, rows: &[PlanRow]) -> Frame {
    let table = p.snapshot.table(Domain::Llm);
    let s = |name: &str, f: &dyn Fn(&PlanRow) -> Option<String>| FrameColumn {
        name: name.into(),
        data: ColumnData::Str(rows.iter().map(|r| f(r).map(Into::into)).collect()),
    };
    let fl = |name: &str, f: &dyn Fn(&PlanRow) -> Option<f64>| FrameColumn {
        name: name.into(),
        data: ColumnData::Float(rows.iter().map(f).collect()),
    };
    let int = |name: &str, f: &dyn Fn(&PlanRow) -> i64| FrameColumn {
        name: name.into(),
        data: ColumnData::Int(rows.iter().map(|r| Some(f(r))).collect()),
    };
    Frame {
        columns: vec![
            s("model_id", &|r| r.config.model_id.clone()),
            s("task", &|r| Some(r.config.categories[0].clone())),
            s("gpu_model", &|r| Some(r.config.categories[1].clone())),
            int("num_gpus", &|r| r.config.num_gpus as i64),
            int("max_num_seqs", &|r| r.config.batch as i64),
            s("method", &|r| Some(r.method.as_str().into())),
            s("measured_run_id", &|r| {
                r.measured_run.map(|i| table.run_id(i).to_string())
            }),
            fl("median_itl_ms", &|r| Some(r.median_itl_ms)),
            fl("p90_itl_ms", &|r| r.p90_itl_ms),
            fl("output_tokens_per_s_per_replica", &|r| {
                Some(r.tokens_per_s_per_replica)
            }),
            int("replicas", &|r| r.replicas as i64),
            int("gpus", &|r| r.gpus as i64),
            fl("power_watts", &|r| Some(r.power_watts)),
            fl("kwh_per_day", &|r| Some(r.kwh_per_day)),
            fl("kwh_per_day_lo80", &|r| {
                r.kwh_per_day_lo[0]
                    .is_finite()
                    .then_some(r.kwh_per_day_lo[0])
            }),
            fl("kwh_per_day_hi80", &|r| {
                r.kwh_per_day_hi[0]
                    .is_finite()
                    .then_some(r.kwh_per_day_hi[0])
            }),
            fl("kwh_per_day_lo95", &|r| {
                r.kwh_per_day_lo[1]
                    .is_finite()
                    .then_some(r.kwh_per_day_lo[1])
            }),
            fl("kwh_per_day_hi95", &|r| {
                r.kwh_per_day_hi[1]
                    .is_finite()
                    .then_some(r.kwh_per_day_hi[1])
            }),
            fl("kwh_per_million_tokens", &|r| {
                Some(r.kwh_per_million_tokens)
            }),
            fl("kg_co2e_per_day", &|r| r.kg_co2e_per_day),
            fl("cost_per_day", &|r| r.cost_per_day),
        ],
    }
}
