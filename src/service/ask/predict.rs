//! The predictor's questions: predictions for configurations nobody measured, the predictor's
//! held-out figures, and deployment plans for an LLM workload, from the snapshot's predictor
//! (`engine::models::predict`, fitted on first use per snapshot). The defaults of a prediction
//! (the model's measured grid, else the snapshot's) and a plan's workload are decided here.

use std::collections::BTreeSet;

use crate::engine::frame::{ColumnData, Frame, FrameColumn, Value};
use crate::engine::models::plan::{
    PlanRow, Workload, grid_codes, grid_intensity, grid_source, plan,
};
use crate::engine::models::predict::{Config, Predictor, quality_frame};
use crate::engine::{Domain, RunTable};
use crate::service::encode;
use crate::service::{ServiceError, Snapshot};

use super::answer::{Answer, Nullable, Rows, Shape};
use super::declare::Question;
use super::format::Format;
use super::grammar::{Params, suggestion};
use super::request::Request;

/// The answer to a question of the predictor; `None` when the question is of something else.
pub(super) fn answer(req: &Request, snapshot: &Snapshot) -> Option<Result<Answer, ServiceError>> {
    Some(match req.question {
        Question::Predict => predict(req, snapshot),
        Question::PredictQuality => {
            let predictor = snapshot.predictor(req.domain);
            Ok(rows(quality_frame(&predictor.quality())))
        }
        Question::Plan => plan_llm(req, snapshot),
        _ => return None,
    })
}

/// A frame answered as rows (JSON: an array of row objects), every column nullable.
fn rows(frame: Frame) -> Answer {
    Answer {
        shape: Shape::Array,
        nullable: Nullable::All,
        total: Some(frame.num_rows()),
        next: None,
        warnings: Vec::new(),
        rows: Rows::Frame(frame),
    }
}

fn predict(req: &Request, snapshot: &Snapshot) -> Result<Answer, ServiceError> {
    let predictor = snapshot.predictor(req.domain);
    let configs = configurations(&req.params, req.domain, &predictor, false)?;
    let table = snapshot.table(req.domain);
    Ok(rows(prediction_frame(&predictor, table, &configs)))
}

/// A plan: its rows, and in JSON the workload, the grid, the assumptions made and the reason
/// none met the target, around them.
fn plan_llm(req: &Request, snapshot: &Snapshot) -> Result<Answer, ServiceError> {
    let predictor = snapshot.predictor(Domain::Llm);
    let candidates = configurations(&req.params, Domain::Llm, &predictor, true)?;
    let (workload, mut assumptions, grid) = workload(&req.params)?;
    let (rows_planned, reason) = plan(&predictor, &candidates, &workload);
    assumptions.push(format!(
        "{} configurations considered: every combination of the tasks, GPU models, GPU counts and batch sizes asked for (or their defaults)",
        candidates.len()
    ));
    let frame = plan_frame(snapshot.table(Domain::Llm), &rows_planned);
    let mut answer = rows(frame);
    if req.format == Format::Json {
        let Rows::Frame(frame) = &answer.rows else {
            unreachable!("rows() answers a frame")
        };
        let mut body = Vec::new();
        encode::json_array(&mut body, frame);
        let configurations: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| ServiceError::Internal(e.to_string()))?;
        answer.shape = Shape::Document(serde_json::json!({
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
        }));
    }
    Ok(answer)
}

fn invalid(parameter: &str, detail: String, allowed: Option<Vec<String>>) -> ServiceError {
    ServiceError::InvalidParameter {
        parameter: parameter.into(),
        detail,
        allowed,
    }
}

/// One value of `param` among `known` (the predictor's levels), or 400 with a suggestion.
fn known_value(param: &str, value: &str, known: &[String]) -> Result<String, ServiceError> {
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
pub fn configurations(
    params: &Params,
    domain: Domain,
    predictor: &Predictor,
    plan: bool,
) -> Result<Vec<Config>, ServiceError> {
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
    let list = |param: &str, default: Vec<String>| -> Result<Vec<String>, ServiceError> {
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
    let counts = gpu_counts(params, model_id.as_deref(), predictor, plan)?;
    let batches = batch_sizes(params, domain, model_id.as_deref(), predictor, plan)?;
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

/// The GPU counts asked for; by default the model's measured ones (for a prediction), else
/// 1, 2, 4 and 8.
fn gpu_counts(
    params: &Params,
    model_id: Option<&str>,
    predictor: &Predictor,
    plan: bool,
) -> Result<Vec<f64>, ServiceError> {
    if let Some(v) = params.positives("num_gpus")?.filter(|v| !v.is_empty()) {
        return Ok(v);
    }
    let measured: BTreeSet<u64> = model_id
        .filter(|_| !plan)
        .map(|m| {
            predictor
                .measured_configs(m)
                .map(|c| c.num_gpus as u64)
                .collect()
        })
        .unwrap_or_default();
    Ok(if measured.is_empty() {
        vec![1.0, 2.0, 4.0, 8.0]
    } else {
        measured.into_iter().map(|n| n as f64).collect()
    })
}

/// The batch sizes asked for; by default the model's measured ones (a prediction) or every batch
/// size of the snapshot (a plan), else the domain's common ones.
fn batch_sizes(
    params: &Params,
    domain: Domain,
    model_id: Option<&str>,
    predictor: &Predictor,
    plan: bool,
) -> Result<Vec<f64>, ServiceError> {
    if let Some(v) = params
        .positives(predictor.spec.batch)?
        .filter(|v| !v.is_empty())
    {
        return Ok(v);
    }
    let measured: BTreeSet<u64> = if plan {
        predictor.batch_sizes().iter().map(|&b| b as u64).collect()
    } else {
        model_id
            .map(|m| {
                predictor
                    .measured_configs(m)
                    .map(|c| c.batch as u64)
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(if measured.is_empty() {
        match domain {
            Domain::Llm => vec![8.0, 16.0, 32.0, 64.0, 128.0, 256.0],
            Domain::Diffusion => vec![1.0, 2.0, 4.0, 8.0, 16.0],
        }
    } else {
        measured.into_iter().map(|n| n as f64).collect()
    })
}

/// Configurations one request may ask for.
const MAX_CONFIGURATIONS: usize = 10_000;

fn prediction_frame(predictor: &Predictor, table: &RunTable, configs: &[Config]) -> Frame {
    let spec = predictor.spec;
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

/// The workload, latency target, PUE, grid and price asked for, with the assumptions they imply.
pub fn workload(
    params: &Params,
) -> Result<(Workload, Vec<String>, serde_json::Value), ServiceError> {
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
    let (gco2_per_kwh, grid) = grid(params, &mut assumptions)?;
    Ok((
        Workload {
            tokens_per_s: tokens,
            median_itl_ms_max,
            p90_itl_ms_max,
            pue,
            gco2_per_kwh,
            price_per_kwh: non_negative(params, "price_per_kwh")?,
        },
        assumptions,
        grid,
    ))
}

/// A number of 0 or more named by `key`, if given.
fn non_negative(params: &Params, key: &str) -> Result<Option<f64>, ServiceError> {
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
}

/// The grid's carbon intensity asked for (`grid`, a code of the embedded data, or
/// `gco2_per_kwh`), and the grid as the plan states it; the assumption it implies is added.
fn grid(
    params: &Params,
    assumptions: &mut Vec<String>,
) -> Result<(Option<f64>, serde_json::Value), ServiceError> {
    let explicit = non_negative(params, "gco2_per_kwh")?;
    let code = params.single_value("grid")?;
    Ok(match (code, explicit) {
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
    })
}

fn plan_frame(table: &RunTable, rows: &[PlanRow]) -> Frame {
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
