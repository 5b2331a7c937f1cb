//! The models on data of the caller's own (docs/toolkit.md §12): a logistic model fitted to
//! (x, y) or evaluated at points, an ITL mixture fitted to samples or sampled. The requests are
//! JSON bodies in the toolkit's `to_dict` shape (a mixture's parameters also with the `itl_mix_`
//! prefix, as `from_dict` reads them); each is checked here, member by member, and answered as
//! JSON. The door asks them on a place for costly work (`Door::model`).

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::engine::models::itl_mixture::{self, ItlMixtureModel};
use crate::engine::models::{LogisticModel, logistic::batch_x};
use crate::service::ServiceError;

/// The most numbers one array of a body may hold.
pub const MAX_VALUES: usize = 10_000_000;

/// The largest seed or count a body takes: the largest integer a JSON number holds exactly.
pub const MAX_INTEGER: u64 = (1 << 53) - 1;

/// A question about a model of the caller's own data.
pub enum ModelRequest {
    LogisticFit(LogisticFitRequest),
    LogisticEval(LogisticEvalRequest),
    MixtureFit(MixtureFitRequest),
    /// A body of the mixture's parameters, replicas, draws and seed (read by `sample_request`:
    /// a parameter may be named two ways, which `serde` alone does not check).
    MixtureSample(Map<String, Value>),
}

/// Data to fit a logistic model to.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogisticFitRequest {
    /// x values (typically log2 of batch sizes); or give `batch`.
    #[serde(default, deserialize_with = "present")]
    x: Option<Vec<f64>>,
    /// Batch sizes (each > 0), turned into x = log2(max(int(batch), 1)).
    #[serde(default, deserialize_with = "present")]
    batch: Option<Vec<f64>>,
    /// One y per x.
    y: Vec<f64>,
}

/// A logistic model and where to evaluate it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogisticEvalRequest {
    #[serde(rename = "L")]
    l: f64,
    x0: f64,
    k: f64,
    b0: f64,
    /// Points (typically log2 of batch sizes); or give `batch`.
    #[serde(default, deserialize_with = "present")]
    x: Option<Vec<f64>>,
    /// Batch sizes, evaluated at log2(max(int(batch), 1)).
    #[serde(default, deserialize_with = "present")]
    batch: Option<Vec<f64>>,
}

/// Samples to fit an ITL mixture to.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixtureFitRequest {
    /// ITL samples in seconds; only finite positive ones are fitted, as in the toolkit.
    samples: Vec<f64>,
    /// Fit at most this many, drawn at random without replacement (null or absent: all).
    #[serde(default, deserialize_with = "optional_count")]
    max_samples: Option<u64>,
    /// Seed of that draw (default 0). The stream is not numpy's; the distribution is the same.
    #[serde(default, deserialize_with = "optional_count")]
    seed: Option<u64>,
}

impl ModelRequest {
    /// The answer, computed on the blocking pool (a fit or a million draws is seconds of CPU).
    pub(super) async fn answer(self) -> Result<Value, ServiceError> {
        let work = self.checked()?;
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| ServiceError::Internal(format!("model task: {e}")))
    }

    /// The request checked, as the work that answers it.
    fn checked(self) -> Result<Box<dyn FnOnce() -> Value + Send>, ServiceError> {
        Ok(match self {
            ModelRequest::LogisticFit(req) => {
                let x = x_of(req.x, req.batch)?;
                numbers("y", &req.y, false)?;
                if x.len() != req.y.len() {
                    return Err(invalid(
                        "y",
                        format!("{} x values but {} y values", x.len(), req.y.len()),
                    ));
                }
                Box::new(move || logistic_fit(&x, &req.y))
            }
            ModelRequest::LogisticEval(req) => {
                let (m, x) = eval_request(req)?;
                Box::new(move || {
                    json!({
                        "values": x.iter().map(|&v| num(m.eval_x(v))).collect::<Vec<_>>(),
                        "derivatives": x.iter().map(|&v| num(m.deriv_wrt_x(v))).collect::<Vec<_>>(),
                    })
                })
            }
            ModelRequest::MixtureFit(req) => {
                let (max_samples, seed) = mixture_fit_request(&req)?;
                Box::new(move || mixture_fit(&req.samples, max_samples, seed))
            }
            ModelRequest::MixtureSample(body) => {
                let (m, n_replicas, draws, seed) = sample_request(&body)?;
                Box::new(move || {
                    let mut rng = itl_mixture::rng(seed);
                    let draws: Vec<Value> = (0..draws)
                        .map(|_| num(m.sample_avg(n_replicas, &mut rng)))
                        .collect();
                    json!({ "draws": draws })
                })
            }
        })
    }
}

/// A member that may be absent but, when present, is not null.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<f64>>, D::Error> {
    Vec::<f64>::deserialize(d).map(Some)
}

/// A non-negative integer of a JSON value, written `5` or `5.0` (JSON does not tell them apart),
/// at most `MAX_INTEGER`.
fn integer(v: &Value) -> Option<u64> {
    match v.as_u64() {
        Some(n) => Some(n),
        None => v
            .as_f64()
            .filter(|x| x.fract() == 0.0 && *x >= 0.0 && *x <= MAX_INTEGER as f64)
            .map(|x| x as u64),
    }
    .filter(|n| *n <= MAX_INTEGER)
}

/// An optional non-negative integer member (null: absent).
fn optional_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(v) => integer(&v).map(Some).ok_or_else(|| {
            serde::de::Error::custom(format!("{v} is not an integer from 0 to {MAX_INTEGER}"))
        }),
    }
}

fn invalid(field: &str, detail: impl Into<String>) -> ServiceError {
    ServiceError::InvalidBody {
        field: Some(field.into()),
        detail: detail.into(),
    }
}

/// A list of numbers checked to be finite and at most `MAX_VALUES` long.
fn numbers(field: &str, v: &[f64], allow_empty: bool) -> Result<(), ServiceError> {
    if v.len() > MAX_VALUES {
        return Err(invalid(
            field,
            format!("'{field}' holds {} numbers; at most {MAX_VALUES}", v.len()),
        ));
    }
    if !allow_empty && v.is_empty() {
        return Err(invalid(field, format!("'{field}' is empty")));
    }
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(invalid(
            field,
            format!("'{field}'[{i}] is not a finite number"),
        ));
    }
    Ok(())
}

/// x given directly, or as batch sizes (each > 0) turned into log2.
fn x_of(x: Option<Vec<f64>>, batch: Option<Vec<f64>>) -> Result<Vec<f64>, ServiceError> {
    match (x, batch) {
        (Some(x), None) => {
            numbers("x", &x, false)?;
            Ok(x)
        }
        (None, Some(b)) => {
            numbers("batch", &b, false)?;
            if let Some(i) = b.iter().position(|v| *v <= 0.0) {
                return Err(invalid("batch", format!("'batch'[{i}] is not positive")));
            }
            Ok(b.iter().map(|&v| batch_x(v)).collect())
        }
        (Some(_), Some(_)) => Err(invalid("x", "give 'x' or 'batch', not both")),
        (None, None) => Err(invalid("x", "give 'x' (e.g. log2 batch sizes) or 'batch'")),
    }
}

/// A finite number, or null.
fn num(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

/// The toolkit's `LogisticModel.fit` of (x, y): the parameters and the fit's quality.
fn logistic_fit(x: &[f64], y: &[f64]) -> Value {
    let (m, q) = LogisticModel::fit_with_quality(x, y);
    json!({
        "L": num(m.l), "x0": num(m.x0), "k": num(m.k), "b0": num(m.b0),
        "mse": num(q.mse), "r2": num(q.r2), "max_rel_residual": num(q.max_rel_residual),
        "n": x.len(), "degenerate": q.degenerate,
    })
}

/// An evaluation's model, checked finite, and its points.
fn eval_request(req: LogisticEvalRequest) -> Result<(LogisticModel, Vec<f64>), ServiceError> {
    for (name, v) in [("L", req.l), ("x0", req.x0), ("k", req.k), ("b0", req.b0)] {
        if !v.is_finite() {
            return Err(invalid(name, format!("'{name}' is not a finite number")));
        }
    }
    // Batches are evaluated as the toolkit's eval does: truncated and at least 1.
    let x: Vec<f64> = match (req.x, req.batch) {
        (None, Some(b)) => {
            numbers("batch", &b, true)?;
            b.iter().map(|&v| batch_x(v)).collect()
        }
        (Some(x), None) => {
            numbers("x", &x, true)?;
            x
        }
        (x, b) => x_of(x, b)?,
    };
    let m = LogisticModel {
        l: req.l,
        x0: req.x0,
        k: req.k,
        b0: req.b0,
    };
    Ok((m, x))
}

/// A mixture fit's `max_samples` (at least 1, or all) and seed, the samples checked in number.
fn mixture_fit_request(req: &MixtureFitRequest) -> Result<(Option<usize>, u64), ServiceError> {
    if req.samples.len() > MAX_VALUES {
        return Err(invalid(
            "samples",
            format!(
                "'samples' holds {} numbers; at most {MAX_VALUES}",
                req.samples.len()
            ),
        ));
    }
    if req.max_samples == Some(0) {
        return Err(invalid(
            "max_samples",
            "'max_samples' must be at least 1 (or null for all)",
        ));
    }
    Ok((req.max_samples.map(|m| m as usize), req.seed.unwrap_or(0)))
}

/// The toolkit's `ITLMixtureModel.fit` of `samples`: the seven parameters, the mixture's mean and
/// variance, and how many samples were fitted.
fn mixture_fit(samples: &[f64], max_samples: Option<usize>, seed: u64) -> Value {
    let usable = samples
        .iter()
        .filter(|v| v.is_finite() && **v > 0.0)
        .count();
    let n = max_samples.map_or(usable, |m| usable.min(m));
    let m = ItlMixtureModel::fit(samples, max_samples, seed);
    let (mean, var) = m.mean_var();
    let mut out: Map<String, Value> = itl_mixture::PARAMETERS
        .iter()
        .zip(m.parameters())
        .map(|(k, v)| (k.to_string(), num(v)))
        .collect();
    out.insert("mean_s".into(), num(mean));
    out.insert("variance_s2".into(), num(var));
    out.insert("n".into(), json!(n));
    Value::Object(out)
}

/// A sampling request's mixture (its parameters under either name, each a number), replicas,
/// draws and seed; any other member is refused.
fn sample_request(
    body: &Map<String, Value>,
) -> Result<(ItlMixtureModel, i64, usize, u64), ServiceError> {
    let allowed: Vec<String> = itl_mixture::PARAMETERS
        .iter()
        .flat_map(|p| [p.to_string(), format!("itl_mix_{p}")])
        .chain(["n_replicas", "draws", "seed"].map(String::from))
        .collect();
    if let Some(unknown) = body.keys().find(|k| !allowed.contains(k)) {
        return Err(invalid(unknown, format!("unknown member '{unknown}'")));
    }
    // Every parameter given, under either name, is a number.
    for key in &allowed[..2 * itl_mixture::PARAMETERS.len()] {
        if body.get(key).is_some_and(|v| !v.is_number()) {
            return Err(invalid(key, format!("'{key}' is not a number")));
        }
    }
    let number = |key: &str| body.get(key).and_then(Value::as_f64);
    let m = ItlMixtureModel::from_map(number).map_err(|key| {
        invalid(
            &key,
            format!("'{key}' (or 'itl_mix_{key}') is missing or not a number"),
        )
    })?;
    let count = |key: &str, min: u64, max: u64, default: Option<u64>| match body.get(key) {
        None | Some(Value::Null) if default.is_some() => Ok(default.unwrap_or(min)),
        v => v
            .and_then(integer)
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                invalid(
                    key,
                    format!("'{key}' must be an integer from {min} to {max}"),
                )
            }),
    };
    Ok((
        m,
        count("n_replicas", 1, MAX_INTEGER, None)? as i64,
        count("draws", 1, MAX_VALUES as u64, Some(1))? as usize,
        count("seed", 0, MAX_INTEGER, Some(0))?,
    ))
}
