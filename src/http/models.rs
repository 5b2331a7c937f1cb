//! The models on data of the caller's own (docs/toolkit.md §12): `POST /v1/models/logistic/fit`
//! and `/eval`, `POST /v1/models/itl-mixture/fit` and `/sample`, answered at the service's door
//! (`service::ask::models`: the bodies, their checks and the answers). Here: the body extractors
//! whose refusals are problem+json, and the bodies' and answers' schemas for the document.

use axum::Json;
use axum::extract::{FromRequest, Request, State};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::error::AppError;
use super::state::{AppState, BodyLimit, GuardOptions};
use crate::service::ask::models::{
    LogisticEvalRequest, LogisticFitRequest, MAX_INTEGER, MAX_VALUES, MixtureFitRequest,
    ModelRequest,
};

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
    Ok(Json(
        state.door.model(ModelRequest::LogisticFit(req)).await?,
    ))
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
    Ok(Json(
        state.door.model(ModelRequest::LogisticEval(req)).await?,
    ))
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
    Ok(Json(state.door.model(ModelRequest::MixtureFit(req)).await?))
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
    ApiJson(req): ApiJson<Map<String, Value>>,
) -> Result<Json<Value>, AppError> {
    Ok(Json(
        state.door.model(ModelRequest::MixtureSample(req)).await?,
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

    use super::{MAX_INTEGER, MAX_VALUES};
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
                    .maximum(Some(MAX_INTEGER as f64)),
            )
            .property("seed", ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::Integer, Type::Null])).minimum(Some(0)).maximum(Some(MAX_INTEGER as f64)))
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
                    .maximum(Some(MAX_INTEGER as f64)),
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
                    .maximum(Some(MAX_INTEGER as f64)),
            )
            .additional_properties(Some(
                utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
            ));
        all.item(object).into()
    });
}
