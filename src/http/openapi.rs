//! OpenAPI document pieces that are not handler annotations: parameter groups, envelope types
//! and the run schemas, which are generated from the field catalog so they cannot drift from it.

use std::borrow::Cow;

use serde::Serialize;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};
use utoipa::{IntoParams, OpenApi, PartialSchema, ToSchema};

use crate::engine::Domain;
use crate::engine::fields::{FieldSpec, FieldType, RUN_ID, published_fields};

/// Run filters (LLM and diffusion; the LLM-only and diffusion-only ones say so).
#[allow(dead_code)]
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunFilterParams {
    /// Task(s); repeat or comma-separate for OR.
    task: Option<Vec<String>>,
    /// Model id(s), e.g. `Qwen/Qwen3-8B`. Alias: `model`.
    model_id: Option<Vec<String>>,
    /// GPU model(s): H100, B200. Alias: `gpu`.
    gpu_model: Option<Vec<String>>,
    /// Model nickname(s).
    nickname: Option<Vec<String>>,
    /// Weight precision(s): bfloat16, fp8, mxfp4 (field `weight_precision`).
    precision: Option<Vec<String>>,
    /// LLM only: architecture(s): "Dense Transformer", MoE, "Mamba-Transformer Hybrid".
    architecture: Option<Vec<String>>,
    /// Exact GPU count(s); not with num_gpus_min/num_gpus_max.
    num_gpus: Option<Vec<f64>>,
    /// Inclusive lower bound on num_gpus.
    num_gpus_min: Option<f64>,
    /// Inclusive upper bound on num_gpus.
    num_gpus_max: Option<f64>,
    /// LLM only: exact max_num_seqs value(s). Alias: `batch`.
    max_num_seqs: Option<Vec<f64>>,
    /// LLM only: inclusive lower bound on max_num_seqs. Alias: `batch_min`.
    max_num_seqs_min: Option<f64>,
    /// LLM only: inclusive upper bound on max_num_seqs. Alias: `batch_max`.
    max_num_seqs_max: Option<f64>,
    /// Diffusion only: exact batch size(s). Alias: `batch`.
    batch_size: Option<Vec<f64>>,
    /// Diffusion only: inclusive lower bound on batch_size. Alias: `batch_min`.
    batch_size_min: Option<f64>,
    /// Diffusion only: inclusive upper bound on batch_size. Alias: `batch_max`.
    batch_size_max: Option<f64>,
    /// LLM only: stable (default), unstable or all.
    stability: Option<String>,
    /// json (default), csv, ndjson, arrow or parquet; overrides Accept.
    format: Option<String>,
}

/// Sorting, paging and projection.
#[allow(dead_code)]
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Comma-separated sort keys; `-field` for descending. Nulls sort last.
    sort: Option<String>,
    /// Page size (default: every matching run, up to the server's row cap).
    limit: Option<usize>,
    /// Rows to skip.
    offset: Option<usize>,
    /// Comma-separated fields to return; run_id is always included.
    fields: Option<String>,
}

/// Grouping.
#[allow(dead_code)]
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GroupParams {
    /// Comma-separated fields to group by; none: a single group.
    by: Option<String>,
    /// Comma-separated aggregates: `func(field)` or `func` for every numeric field, with func one
    /// of count, min, max, mean, median, sum, argmin, argmax.
    agg: Option<String>,
}

fn field_schema(f: &FieldSpec) -> Schema {
    let ty = match f.ty {
        FieldType::String => Type::String,
        FieldType::Int64 => Type::Integer,
        FieldType::Double => Type::Number,
        FieldType::Bool => Type::Boolean,
    };
    let schema_type = if f.nullable {
        SchemaType::from_iter([ty, Type::Null])
    } else {
        SchemaType::new(ty)
    };
    let description = match f.unit {
        Some(u) => format!("{} Unit: {u}.", f.description),
        None => f.description.to_string(),
    };
    ObjectBuilder::new()
        .schema_type(schema_type)
        .description(Some(description))
        .into()
}

fn run_schema(domain: Domain) -> Schema {
    let mut b = ObjectBuilder::new().description(Some(format!(
        "A {domain} run. With `fields`, only run_id and the named fields are present."
    )));
    for f in std::iter::once(&RUN_ID).chain(published_fields(domain)) {
        b = b.property(f.name, field_schema(f)).required(f.name);
    }
    b.into()
}

/// A LLM run: `run_id` then the 37 published columns.
pub struct LlmRun;
/// A diffusion run: `run_id` then the 23 published columns.
pub struct DiffusionRun;
/// A run of either domain.
pub struct Run;

impl PartialSchema for LlmRun {
    fn schema() -> RefOr<Schema> {
        run_schema(Domain::Llm).into()
    }
}
impl ToSchema for LlmRun {
    fn name() -> Cow<'static, str> {
        "LlmRun".into()
    }
}
impl PartialSchema for DiffusionRun {
    fn schema() -> RefOr<Schema> {
        run_schema(Domain::Diffusion).into()
    }
}
impl ToSchema for DiffusionRun {
    fn name() -> Cow<'static, str> {
        "DiffusionRun".into()
    }
}
impl PartialSchema for Run {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(RefOr::Ref(utoipa::openapi::Ref::from_schema_name("LlmRun")))
            .item(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                "DiffusionRun",
            )))
            .into()
    }
}
impl ToSchema for Run {
    fn name() -> Cow<'static, str> {
        "Run".into()
    }
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push(("LlmRun".into(), LlmRun::schema()));
        schemas.push(("DiffusionRun".into(), DiffusionRun::schema()));
    }
}

/// A page of runs (JSON representation of `GET /v1/{domain}/runs`).
#[allow(dead_code)]
#[derive(Serialize, ToSchema)]
pub struct RunList {
    domain: Domain,
    /// Matching runs before paging.
    total: usize,
    offset: usize,
    /// The page size asked for; null for all.
    limit: Option<usize>,
    /// Runs in this page.
    count: usize,
    /// URL of the next page, or null.
    next: Option<String>,
    runs: Vec<Run>,
}

/// A group: `key` (bare value for one `by` field, an array for several, [] for none), the `by`
/// fields by name, `count`, then `{func}_{field}` aggregates; argmin/argmax hold a whole run.
pub struct Group;
impl PartialSchema for Group {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .property(
                "key",
                ObjectBuilder::new().schema_type(SchemaType::AnyValue),
            )
            .required("key")
            .property("count", ObjectBuilder::new().schema_type(Type::Integer))
            .required("count")
            .additional_properties(Some(ObjectBuilder::new().schema_type(SchemaType::AnyValue)))
            .into()
    }
}
impl ToSchema for Group {
    fn name() -> Cow<'static, str> {
        "Group".into()
    }
}

/// Groups (JSON representation of `GET /v1/{domain}/groups`).
#[allow(dead_code)]
#[derive(Serialize, ToSchema)]
pub struct GroupList {
    domain: Domain,
    by: Vec<String>,
    /// Number of groups.
    count: usize,
    groups: Vec<Group>,
}

impl Serialize for Run {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}
impl Serialize for Group {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "mlenergy-server",
        description = "Query service over the ML.ENERGY benchmark-v3 dataset: GPU energy, throughput and latency of LLM and diffusion inference runs.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    components(schemas(super::error::Problem, LlmRun, DiffusionRun)),
    tags(
        (name = "runs", description = "Run summaries: filter, sort, page, group"),
        (name = "raw", description = "Data only the raw results hold: output lengths, inter-token latencies"),
        (name = "catalog", description = "What is loaded and what the fields mean"),
        (name = "health", description = "Liveness and readiness"),
    )
)]
pub struct ApiDoc;
