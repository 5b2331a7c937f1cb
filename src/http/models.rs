//! The models on data of the caller's own (docs/toolkit.md §12): `POST /v1/models/logistic/fit`
//! and `/eval`, `POST /v1/models/itl-mixture/fit` and `/sample`. JSON in and out, parameters in
//! the toolkit's `to_dict` shape (the mixture's also with the `itl_mix_` prefix, as `from_dict`
//! reads them).

use axum::Json;
use axum::extract::{FromRequest, Request, State};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::error::AppError;
use super::state::{AppState, BodyLimit, GuardOptions};
use crate::engine::models::itl_mixture::{self, ItlMixtureModel};
use crate::engine::models::{LogisticModel, logistic::batch_x};

/// The most numbers one array of a body may hold.
pub const MAX_VALUES: usize = 10_000_000;

/// A JSON body whose rejections are problem+json: 413 over the size limit, 400 otherwise, naming
/// what is wrong.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, AppError> {
        use axum::extract::rejection::JsonRejection;
        let limit = body_limit(&req);
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(ApiJson(v)),
            Err(JsonRejection::BytesRejection(e)) if e.status() == 413 => {
                Err(AppError::PayloadTooLarge { limit })
            }
            Err(e) => Err(AppError::InvalidBody {
                field: None,
                detail: e.body_text(),
            }),
        }
    }
}

/// The body limit of the route `req` is for.
fn body_limit(req: &Request) -> usize {
    req.extensions()
        .get::<BodyLimit>()
        .map_or(GuardOptions::MAX_BODY_BYTES, |l| l.0)
}

/// A body as bytes, refused as problem+json past the route's limit (413 naming it).
pub struct ApiBytes(pub bytes::Bytes);

impl<S: Send + Sync> FromRequest<S> for ApiBytes {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, AppError> {
        let limit = body_limit(&req);
        match bytes::Bytes::from_request(req, state).await {
            Ok(b) => Ok(ApiBytes(b)),
            Err(e) if e.status() == 413 => Err(AppError::PayloadTooLarge { limit }),
            Err(e) => Err(AppError::InvalidBody {
                field: None,
                detail: e.body_text(),
            }),
        }
    }
}

/// These endpoints take no query parameter: any is refused, as everywhere else.
pub struct NoQuery;

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for NoQuery {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, AppError> {
        let query = parts.uri.query().unwrap_or("");
        match form_urlencoded::parse(query.as_bytes()).next() {
            Some((k, _)) => Err(AppError::UnknownParameter {
                parameter: k.into_owned(),
                allowed: Vec::new(),
            }),
            None => Ok(NoQuery),
        }
    }
}

/// A member that may be absent but, when present, is not null.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<f64>>, D::Error> {
    Vec::<f64>::deserialize(d).map(Some)
}

/// The largest seed or count a body takes: the largest integer a JSON number holds exactly.
const MAX_INTEGER: u64 = (1 << 53) - 1;

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

fn invalid(field: &str, detail: impl Into<String>) -> AppError {
    AppError::InvalidBody {
        field: Some(field.into()),
        detail: detail.into(),
    }
}

/// A list of numbers checked to be finite and at most `MAX_VALUES` long.
fn numbers(field: &str, v: &[f64], allow_empty: bool) -> Result<(), AppError> {
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
fn x_of(x: Option<Vec<f64>>, batch: Option<Vec<f64>>) -> Result<Vec<f64>, AppError> {
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

/// A fitted logistic model and how well it fits.
#[allow(dead_code)]
#[derive(ToSchema)]
pub struct LogisticFitAnswer {
    #[schema(rename = "L")]
    l: Option<f64>,
    x0: Option<f64>,
    k: Option<f64>,
    b0: Option<f64>,
    mse: Option<f64>,
    r2: Option<f64>,
    max_rel_residual: Option<f64>,
    n: usize,
    degenerate: bool,
}

/// A finite number, or null.
fn num(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

/// Fit a logistic model (the toolkit's `LogisticModel.fit`).
#[utoipa::path(
    post,
    path = "/v1/models/logistic/fit",
    tag = "models",
    request_body = schema::LogisticFitBody,
    responses((status = 200, description = "The parameters (L, x0, k, b0) and the fit's quality", body = LogisticFitAnswer),
        super::problems::BodyProblems,
    )
)]
pub async fn logistic_fit(
    State(state): State<AppState>,
    _: NoQuery,
    ApiJson(req): ApiJson<LogisticFitRequest>,
) -> Result<Json<Value>, AppError> {
    let _place = state.door.costly_place()?;
    let x = x_of(req.x, req.batch)?;
    numbers("y", &req.y, false)?;
    if x.len() != req.y.len() {
        return Err(invalid(
            "y",
            format!("{} x values but {} y values", x.len(), req.y.len()),
        ));
    }
    let n = x.len();
    let (m, q) = tokio::task::spawn_blocking(move || LogisticModel::fit_with_quality(&x, &req.y))
        .await
        .map_err(|e| AppError::Internal(format!("fit task: {e}")))?;
    Ok(Json(json!({
        "L": num(m.l), "x0": num(m.x0), "k": num(m.k), "b0": num(m.b0),
        "mse": num(q.mse), "r2": num(q.r2), "max_rel_residual": num(q.max_rel_residual),
        "n": n, "degenerate": q.degenerate,
    })))
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

/// Values and derivatives (dy/dx) at the points asked for.
#[allow(dead_code)]
#[derive(ToSchema)]
pub struct LogisticEvalAnswer {
    /// Null where the value is not finite.
    values: Vec<Option<f64>>,
    derivatives: Vec<Option<f64>>,
}

/// Evaluate a logistic model: values and derivatives with respect to x.
#[utoipa::path(
    post,
    path = "/v1/models/logistic/eval",
    tag = "models",
    request_body = schema::LogisticEvalBody,
    responses((status = 200, description = "Values and dy/dx at each point", body = LogisticEvalAnswer),
        super::problems::BodyProblems,
    )
)]
pub async fn logistic_eval(
    State(state): State<AppState>,
    _: NoQuery,
    ApiJson(req): ApiJson<LogisticEvalRequest>,
) -> Result<Json<Value>, AppError> {
    let _place = state.door.costly_place()?;
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
    Ok(Json(json!({
        "values": x.iter().map(|&v| num(m.eval_x(v))).collect::<Vec<_>>(),
        "derivatives": x.iter().map(|&v| num(m.deriv_wrt_x(v))).collect::<Vec<_>>(),
    })))
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

/// A fitted ITL mixture: the seven parameters, its mean and variance, the samples fitted.
#[allow(dead_code)]
#[derive(ToSchema)]
pub struct MixtureFitAnswer {
    loc: Option<f64>,
    pi_steady: Option<f64>,
    sigma_steady: Option<f64>,
    scale_steady: Option<f64>,
    pi_stall: Option<f64>,
    sigma_stall: Option<f64>,
    scale_stall: Option<f64>,
    mean_s: Option<f64>,
    variance_s2: Option<f64>,
    n: usize,
}

fn mixture_json(m: &ItlMixtureModel) -> Map<String, Value> {
    let (mean, var) = m.mean_var();
    let values = [
        m.loc,
        m.pi_steady,
        m.sigma_steady,
        m.scale_steady,
        m.pi_stall,
        m.sigma_stall,
        m.scale_stall,
    ];
    let mut out: Map<String, Value> = itl_mixture::PARAMETERS
        .iter()
        .zip(values)
        .map(|(k, v)| (k.to_string(), num(v)))
        .collect();
    out.insert("mean_s".into(), num(mean));
    out.insert("variance_s2".into(), num(var));
    out
}

/// Fit an ITL mixture (the toolkit's `ITLMixtureModel.fit`).
#[utoipa::path(
    post,
    path = "/v1/models/itl-mixture/fit",
    tag = "models",
    request_body = schema::MixtureFitBody,
    responses((status = 200, description = "The parameters, mean and variance, samples fitted", body = MixtureFitAnswer),
        super::problems::BodyProblems,
    )
)]
pub async fn mixture_fit(
    State(state): State<AppState>,
    _: NoQuery,
    ApiJson(req): ApiJson<MixtureFitRequest>,
) -> Result<Json<Value>, AppError> {
    let _place = state.door.costly_place()?;
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
    let usable = req
        .samples
        .iter()
        .filter(|v| v.is_finite() && **v > 0.0)
        .count();
    let max_samples = req.max_samples.map(|m| m as usize);
    let seed = req.seed.unwrap_or(0);
    let n = max_samples.map_or(usable, |m| usable.min(m));
    let m =
        tokio::task::spawn_blocking(move || ItlMixtureModel::fit(&req.samples, max_samples, seed))
            .await
            .map_err(|e| AppError::Internal(format!("fit task: {e}")))?;
    let mut out = mixture_json(&m);
    out.insert("n".into(), json!(n));
    Ok(Json(Value::Object(out)))
}

/// The draws, in seconds.
#[allow(dead_code)]
#[derive(ToSchema)]
pub struct MixtureSampleAnswer {
    /// Null where a draw is not finite.
    draws: Vec<Option<f64>>,
}

/// Draws of `sample_avg` from an ITL mixture.
#[utoipa::path(
    post,
    path = "/v1/models/itl-mixture/sample",
    tag = "models",
    request_body = schema::MixtureSampleBody,
    responses((status = 200, description = "The draws, in seconds", body = MixtureSampleAnswer),
        super::problems::BodyProblems,
    )
)]
pub async fn mixture_sample(
    State(state): State<AppState>,
    _: NoQuery,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Result<Json<Value>, AppError> {
    let _place = state.door.costly_place()?;
    let (m, n_replicas, draws, seed) = sample_request(&body)?;
    let values = tokio::task::spawn_blocking(move || {
        let mut rng = itl_mixture::rng(seed);
        (0..draws)
            .map(|_| m.sample_avg(n_replicas, &mut rng))
            .collect::<Vec<f64>>()
    })
    .await
    .map_err(|e| AppError::Internal(format!("sampling task: {e}")))?;
    Ok(Json(
        json!({ "draws": values.iter().map(|&v| num(v)).collect::<Vec<_>>() }),
    ))
}

/// A sampling request's mixture (its parameters under either name, each a number), replicas,
/// draws and seed; any other member is refused.
fn sample_request(
    body: &Map<String, Value>,
) -> Result<(ItlMixtureModel, i64, usize, u64), AppError> {
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

/// The request bodies as the document gives them: what `serde` alone cannot say (x or batch,
/// not both; a parameter under its name or its `itl_mix_` form; bounds).
pub mod schema {
    use std::borrow::Cow;

    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{
        AllOfBuilder, ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
    };
    use utoipa::{PartialSchema, ToSchema};

    use super::MAX_VALUES;
    use crate::engine::models::itl_mixture::PARAMETERS;

    fn number() -> ObjectBuilder {
        ObjectBuilder::new().schema_type(Type::Number)
    }

    fn numbers(min_items: usize, items: ObjectBuilder) -> ArrayBuilder {
        ArrayBuilder::new()
            .items(items)
            .min_items(Some(min_items))
            .max_items(Some(MAX_VALUES))
    }

    fn exactly_one_of(a: &str, b: &str) -> OneOfBuilder {
        OneOfBuilder::new()
            .item(ObjectBuilder::new().required(a))
            .item(ObjectBuilder::new().required(b))
    }

    macro_rules! schema_type {
        ($name:ident, $build:expr) => {
            pub struct $name;
            impl PartialSchema for $name {
                fn schema() -> RefOr<Schema> {
                    $build
                }
            }
            impl ToSchema for $name {
                fn name() -> Cow<'static, str> {
                    stringify!($name).into()
                }
            }
        };
    }

    schema_type!(
        LogisticFitBody,
        AllOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .description(Some("x (typically log2 batch sizes) or batch (each > 0), and y: one y per x, as many as x"))
                    .property("x", numbers(1, number()))
                    .property("batch", numbers(1, number().exclusive_minimum(Some(0))))
                    .property("y", numbers(1, number()))
                    .required("y")
                    .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false))),
            )
            .item(exactly_one_of("x", "batch"))
            .into()
    );

    schema_type!(
        LogisticEvalBody,
        AllOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .description(Some("The parameters and the points: x, or batch sizes evaluated at log2(max(int(batch), 1))"))
                    .property("L", number())
                    .property("x0", number())
                    .property("k", number())
                    .property("b0", number())
                    .property("x", numbers(0, number()))
                    .property("batch", numbers(0, number()))
                    .required("L")
                    .required("x0")
                    .required("k")
                    .required("b0")
                    .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false))),
            )
            .item(exactly_one_of("x", "batch"))
            .into()
    );

    schema_type!(
        MixtureFitBody,
        ObjectBuilder::new()
            .description(Some("ITL samples in seconds (only finite positive ones are fitted); at most max_samples of them drawn at random (null or absent: all), seeded"))
            .property("samples", numbers(0, number()))
            .required("samples")
            .property(
                "max_samples",
                ObjectBuilder::new()
                    .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
                    .minimum(Some(1))
                    .maximum(Some(super::MAX_INTEGER as f64)),
            )
            .property("seed", ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::Integer, Type::Null])).minimum(Some(0)).maximum(Some(super::MAX_INTEGER as f64)))
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)))
            .into()
    );

    schema_type!(MixtureSampleBody, {
        let mut object = ObjectBuilder::new()
            .description(Some("The seven parameters (each by its name or as itl_mix_<name>), replicas averaged per draw, draws, seed"));
        let mut all = AllOfBuilder::new();
        for p in PARAMETERS {
            let prefixed = format!("itl_mix_{p}");
            object = object.property(p, number()).property(&prefixed, number());
            all = all.item(
                utoipa::openapi::schema::AnyOfBuilder::new()
                    .item(ObjectBuilder::new().required(p))
                    .item(ObjectBuilder::new().required(&prefixed)),
            );
        }
        object = object
            .property(
                "n_replicas",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(1))
                    .maximum(Some(super::MAX_INTEGER as f64)),
            )
            .required("n_replicas")
            .property(
                "draws",
                ObjectBuilder::new()
                    .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
                    .minimum(Some(1))
                    .maximum(Some(MAX_VALUES as f64)),
            )
            .property(
                "seed",
                ObjectBuilder::new()
                    .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
                    .minimum(Some(0))
                    .maximum(Some(super::MAX_INTEGER as f64)),
            )
            .additional_properties(Some(
                utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
            ));
        all.item(object).into()
    });
}
