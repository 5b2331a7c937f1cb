//! OpenAPI document pieces that are not handler annotations: the run schemas and envelope types,
//! generated from the field catalog; every operation's query parameters, generated from the
//! parameter catalog the handlers parse with (`ask::parameter_specs`); and the problem
//! responses, one shared definition each. So the document cannot drift from the code.

use std::borrow::Cow;

use serde::Serialize;
use utoipa::openapi::RefOr;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn, ParameterStyle};
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};
use utoipa::{OpenApi, PartialSchema, ToSchema};

use super::problems::{PROBLEMS, problem_response};
use crate::engine::Domain;
use crate::engine::fields::{FieldSpec, FieldType, RUN_ID, derived_fields, published_fields};
use crate::service::ask::{self as ask, ParamSpec, Question, ValueKind};

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
    for f in std::iter::once(&RUN_ID)
        .chain(published_fields(domain))
        .chain(derived_fields(domain))
    {
        b = b.property(f.name, field_schema(f));
    }
    // Every field is present unless `fields` projects the run.
    b = b.required(RUN_ID.name);
    b.into()
}

/// A LLM run: `run_id`, the 37 published columns, then the derived `energy_rating`.
pub struct LlmRun;
/// A diffusion run: `run_id`, the 23 published columns, then the derived `energy_rating`.
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
        // anyOf: a projected run (`fields=...`) can fit both.
        utoipa::openapi::schema::AnyOfBuilder::new()
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
    /// Hints, present when a filter value matches no run (`gpu_model 'h100' matches no run; did
    /// you mean 'H100'?`); also sent as `Warning` headers, in every format.
    #[schema(required = false)]
    warnings: Option<Vec<String>>,
    /// The snapshot the answer is from.
    snapshot: crate::service::snapshot::Identity,
    runs: Vec<Run>,
}

/// The runs on a Pareto frontier (JSON representation of `GET /v1/{domain}/pareto`).
#[allow(dead_code)]
#[derive(Serialize, ToSchema)]
pub struct ParetoAnswer {
    domain: Domain,
    /// The latency field.
    x: String,
    /// The energy field.
    y: String,
    /// The fields each value of which has a frontier of its own ([]: one frontier).
    per: Vec<String>,
    /// Runs on the frontier(s).
    count: usize,
    /// Filtered runs left out because their x or y is null.
    without_value: usize,
    /// Hints, present when a filter value matches no run.
    #[schema(required = false)]
    warnings: Option<Vec<String>>,
    /// Per group (in the order of the groups' first runs), by x, then y.
    /// The snapshot the answer is from.
    snapshot: crate::service::snapshot::Identity,
    runs: Vec<Run>,
}

/// The energy-optimal runs (JSON representation of `GET /v1/{domain}/best`).
#[allow(dead_code)]
#[derive(Serialize, ToSchema)]
pub struct BestAnswer {
    domain: Domain,
    /// The latency field.
    latency: String,
    /// The deadline applied (given, or the task's default), or null for none.
    deadline: Option<f64>,
    /// The energy field minimised.
    energy: String,
    /// The energy budget applied, or null for none.
    energy_budget: Option<f64>,
    /// The fields the choice is made per.
    per: Vec<String>,
    /// Runs chosen: one per group with a run within the deadline and the budget.
    count: usize,
    /// Filtered runs left out because their latency or energy is null.
    without_value: usize,
    /// Hints, present when a filter value matches no run.
    #[schema(required = false)]
    warnings: Option<Vec<String>>,
    /// Ascending by energy.
    /// The snapshot the answer is from.
    snapshot: crate::service::snapshot::Identity,
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
    /// The snapshot the answer is from.
    snapshot: crate::service::snapshot::Identity,
    /// Hints, present when a filter value matches no run; also sent as `Warning` headers.
    #[schema(required = false)]
    warnings: Option<Vec<String>>,
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
        (name = "models", description = "Fitted models: logistic batch-sweep curves and ITL mixtures, over the dataset or over data of your own"),
        (name = "catalog", description = "What is loaded and what the fields mean"),
        (name = "health", description = "Liveness and readiness"),
        (name = "sql", description = "Read-only SQL over the run tables, with limits"),
        (name = "charts", description = "Charts as SVG (800 × 500, labelled axes with units, a legend, styles that survive grey-scale printing): the Pareto frontier, batch sweeps with their fitted curves, timelines, ITL histograms"),
        (name = "measurements", description = "Other tools' measurements (LLM Energy Measure, IPW) imported into one schema beside the dataset's runs: runs, requests, turns, sources, repeat statistics with exact t intervals, A/B comparisons with Welch's test"),
        (name = "leaderboard", description = "The ML.ENERGY leaderboard's data files, made from the served dataset as the leaderboard's build makes them"),
    )
)]
pub struct ApiDoc;

fn string_schema() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

/// `^(?:a|b|c)$` over names made of `[A-Za-z0-9_.]` (dots escaped).
pub(crate) fn alternatives(names: &[String]) -> String {
    names
        .iter()
        .map(|n| n.replace('.', "\\."))
        .collect::<Vec<_>>()
        .join("|")
}

/// A JSON number as the parser reads it (finite, within f64's range).
const NUMBER: &str = "[+-]?[0-9]{1,15}(?:\\.[0-9]{1,15})?(?:[eE][+-]?[0-9]{1,2})?";

/// A positive number as the parser reads it.
const POSITIVE: &str = "(?:[1-9][0-9]{0,8}(?:\\.[0-9]{1,6})?|0\\.[0-9]{0,5}[1-9])";

/// The schema of one parameter's value, with how an array is written (`explode`).
fn value_schema(kind: &ValueKind) -> (Schema, Option<bool>) {
    use utoipa::openapi::schema::ArrayBuilder;
    let array = |items: ObjectBuilder, explode: bool| -> (Schema, Option<bool>) {
        (ArrayBuilder::new().items(items).into(), Some(explode))
    };
    match kind {
        ValueKind::Strings => array(string_schema(), true),
        ValueKind::Numbers => (
            string_schema()
                .pattern(Some(format!("^{NUMBER}(?:,{NUMBER})*$")))
                .into(),
            None,
        ),
        ValueKind::Number => (ObjectBuilder::new().schema_type(Type::Number).into(), None),
        ValueKind::Choice(words) => (
            string_schema().enum_values(Some(words.clone())).into(),
            None,
        ),
        ValueKind::Flag => (ObjectBuilder::new().schema_type(Type::Boolean).into(), None),
        ValueKind::Count(max) => (
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(0))
                .maximum(Some(*max as f64))
                .into(),
            None,
        ),
        // An empty item is accepted and skipped (`by=` is no field: one group); an item of white
        // space alone is none of these and refused.
        ValueKind::FieldList(names) => array(
            string_schema().enum_values(Some(
                names
                    .iter()
                    .cloned()
                    .chain([String::new()])
                    .collect::<Vec<_>>(),
            )),
            false,
        ),
        ValueKind::SortKeys(names) => array(
            string_schema().pattern(Some(format!("^-?(?:{})$", alternatives(names)))),
            false,
        ),
        ValueKind::Aggregates { fields, numeric } => {
            let funcs: Vec<String> = crate::engine::AggFunc::NAMES
                .iter()
                .map(|s| s.to_string())
                .collect();
            let pattern = format!(
                "^(?:(?:{f})|count\\((?:{all})\\)|(?:{f})\\((?:{num})\\))$",
                f = alternatives(&funcs),
                all = alternatives(fields),
                num = alternatives(numeric),
            );
            // No empty item (`agg=`, `agg=count,` are refused), and at least one when given.
            (
                ArrayBuilder::new()
                    .items(string_schema().pattern(Some(pattern)))
                    .min_items(Some(1))
                    .into(),
                Some(false),
            )
        }
        ValueKind::Duration => (
            string_schema()
                .pattern(Some("^[1-9][0-9]{0,5}(?:ms|s|m|h)$"))
                .into(),
            None,
        ),
        ValueKind::NumericFields(names) => {
            array(string_schema().enum_values(Some(names.clone())), true)
        }
        ValueKind::PositiveNumbers => (
            string_schema()
                .pattern(Some(format!("^(?:{POSITIVE}(?:,{POSITIVE})*)?$")))
                .into(),
            None,
        ),
        ValueKind::NumericField(names) => (
            string_schema().enum_values(Some(names.clone())).into(),
            None,
        ),
        ValueKind::NonNegative => (
            ObjectBuilder::new()
                .schema_type(Type::Number)
                .minimum(Some(0.0))
                .into(),
            None,
        ),
        ValueKind::Fraction => (
            ObjectBuilder::new()
                .schema_type(Type::Number)
                .minimum(Some(0.0))
                .maximum(Some(0.5))
                .into(),
            None,
        ),
        ValueKind::CountOrAll => (
            string_schema()
                .pattern(Some("^(?:all|[1-9][0-9]{0,8})$"))
                .into(),
            None,
        ),
        ValueKind::Revision => (
            string_schema()
                .pattern(Some(crate::service::ask::REVISION_PATTERN))
                .into(),
            None,
        ),
    }
}

fn query_parameter(
    name: &str,
    description: &str,
    schema: Schema,
    explode: Option<bool>,
) -> Parameter {
    let mut p = ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Query)
        .required(Required::False)
        .description(Some(description))
        .schema(Some(schema))
        .build();
    if let Some(explode) = explode {
        p.style = Some(ParameterStyle::Form);
        p.explode = Some(explode);
    }
    p
}

/// The query parameters of `specs`: one parameter each, except that the parameters of one
/// numeric filter (exact values, `_min`, `_max`, and the alias's) form one object written as
/// separate query parameters (`style: form`, `explode: true`), whose schema says which of them
/// cannot be combined.
fn query_parameters(specs: &[ParamSpec]) -> Vec<Parameter> {
    let mut out = Vec::new();
    let mut groups: Vec<(&str, Vec<&ParamSpec>)> = Vec::new();
    for s in specs {
        match s.numeric_filter {
            None => {
                let (schema, explode) = value_schema(&s.value);
                let mut p = query_parameter(&s.name, &s.description, schema, explode);
                if s.required {
                    p.required = Required::True;
                }
                out.push(p);
            }
            Some(field) => match groups.iter_mut().find(|g| g.0 == field) {
                Some(g) => g.1.push(s),
                None => groups.push((field, vec![s])),
            },
        }
    }
    for (field, members) in groups {
        let mut obj = ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(
                utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
            ));
        for m in &members {
            let (schema, _) = value_schema(&m.value);
            obj = obj.property(&m.name, with_description(schema, &m.description));
        }
        let exact: Vec<&str> = members
            .iter()
            .filter(|m| m.value == ValueKind::Numbers)
            .map(|m| m.name.as_str())
            .collect();
        let bounds: Vec<&str> = members
            .iter()
            .filter(|m| m.value == ValueKind::Number)
            .map(|m| m.name.as_str())
            .collect();
        let mut dependent = serde_json::Map::new();
        for e in &exact {
            let any: Vec<serde_json::Value> = bounds
                .iter()
                .map(|b| serde_json::json!({"required": [b]}))
                .collect();
            dependent.insert(e.to_string(), serde_json::json!({"not": {"anyOf": any}}));
        }
        // A bound given under its name and under the alias's is two values of one bound.
        for b in &bounds {
            let suffix = if b.ends_with("_min") { "_min" } else { "_max" };
            let twins: Vec<&&str> = bounds
                .iter()
                .filter(|o| *o != b && o.ends_with(suffix))
                .collect();
            if !twins.is_empty() {
                let any: Vec<serde_json::Value> = twins
                    .iter()
                    .map(|t| serde_json::json!({"required": [t]}))
                    .collect();
                let entry = dependent
                    .entry(b.to_string())
                    .or_insert_with(|| serde_json::json!({"not": {"anyOf": []}}));
                if let Some(list) = entry["not"]["anyOf"].as_array_mut() {
                    list.extend(any);
                }
            }
        }
        // A JSON Schema keyword, not an `x-` extension: written as it is.
        let extensions: utoipa::openapi::extensions::Extensions =
            [("dependentSchemas", serde_json::Value::Object(dependent))]
                .into_iter()
                .collect();
        obj = obj.extensions(Some(extensions));
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        let description = format!(
            "The {field} filter, written as the separate query parameters {}: exact values, or an inclusive range, not both.",
            names.join(", ")
        );
        out.push(query_parameter(
            &format!("{field}_filter"),
            &description,
            obj.into(),
            Some(true),
        ));
    }
    out
}

fn with_description(schema: Schema, description: &str) -> Schema {
    match schema {
        Schema::Object(mut o) => {
            o.description = Some(description.to_string());
            Schema::Object(o)
        }
        Schema::Array(mut a) => {
            a.description = Some(description.to_string());
            Schema::Array(a)
        }
        other => other,
    }
}

/// The parameters both domains accept, for an operation templated on `{domain}`, with the
/// values both accept (field names common to both tables).
fn common_specs(endpoint: Question) -> Vec<ParamSpec> {
    let diffusion = ask::parameter_specs(Domain::Diffusion, endpoint);
    let both = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter().filter(|x| b.contains(x)).cloned().collect()
    };
    ask::parameter_specs(Domain::Llm, endpoint)
        .into_iter()
        .filter_map(|mut s| {
            // Same name and same meaning: `batch` filters max_num_seqs for LLM runs but
            // batch_size for diffusion runs, so it is only in the concrete operations.
            let d = diffusion
                .iter()
                .find(|d| d.name == s.name && d.numeric_filter == s.numeric_filter)?;
            s.value = match (s.value, &d.value) {
                (ValueKind::FieldList(a), ValueKind::FieldList(b)) => {
                    ValueKind::FieldList(both(&a, b))
                }
                (ValueKind::SortKeys(a), ValueKind::SortKeys(b)) => {
                    ValueKind::SortKeys(both(&a, b))
                }
                (ValueKind::NumericFields(a), ValueKind::NumericFields(b)) => {
                    ValueKind::NumericFields(both(&a, b))
                }
                (ValueKind::NumericField(a), ValueKind::NumericField(b)) => {
                    ValueKind::NumericField(both(&a, b))
                }
                (
                    ValueKind::Aggregates { fields, numeric },
                    ValueKind::Aggregates {
                        fields: f2,
                        numeric: n2,
                    },
                ) => ValueKind::Aggregates {
                    fields: both(&fields, f2),
                    numeric: both(&numeric, n2),
                },
                (v, _) => v,
            };
            Some(s)
        })
        .collect()
}

/// `op`'s parameters with the query parameters of `specs` (path parameters kept, `domain`
/// dropped for a concrete domain).
fn complete_operation(
    op: &mut utoipa::openapi::path::Operation,
    specs: Option<Vec<ParamSpec>>,
    domain: Option<Domain>,
) {
    let mut parameters: Vec<Parameter> = op
        .parameters
        .take()
        .unwrap_or_default()
        .into_iter()
        // Query parameters come from the catalog; an operation without one (SQL's q and format)
        // keeps those of its annotation.
        .filter(|p| match p.parameter_in {
            ParameterIn::Path => !(domain.is_some() && p.name == "domain"),
            ParameterIn::Query => specs.is_none(),
            _ => false,
        })
        .collect();
    if let Some(specs) = specs {
        parameters.extend(query_parameters(&specs));
    }
    for p in &mut parameters {
        // A format parameter that its annotation left as any string (SQL's) names the formats.
        if p.name == "format" && p.parameter_in == ParameterIn::Query {
            let names: Vec<&str> = super::negotiate::Format::ALL
                .iter()
                .map(|f| f.name())
                .collect();
            p.schema = Some(string_schema().enum_values(Some(names)).into());
        }
        // SQL text: something besides white space (what is SQL, a schema cannot say).
        if p.name == "q" && p.parameter_in == ParameterIn::Query {
            p.schema = Some(
                string_schema()
                    .min_length(Some(1))
                    .pattern(Some("\\S"))
                    .into(),
            );
        }
        if p.name == "file" {
            let files: Vec<&str> = match domain {
                Some(Domain::Llm) => vec!["results.json", "prometheus.json"],
                _ => vec!["results.json"],
            };
            p.schema = Some(string_schema().enum_values(Some(files)).into());
        }
    }
    // An operation that takes a revision answers its refusals too.
    if parameters.iter().any(|p| {
        p.parameter_in == ParameterIn::Query && matches!(p.name.as_str(), "revision" | "from")
    }) {
        for status in std::iter::once(400).chain(super::problems::REVISION_PROBLEMS) {
            op.responses
                .responses
                .entry(status.to_string())
                .or_insert_with(|| super::problems::problem_ref(status));
        }
    }
    op.parameters = (!parameters.is_empty()).then_some(parameters);
    if let Some(d) = domain
        && let Some(id) = &op.operation_id
    {
        op.operation_id = Some(format!("{id}_{d}"));
    }
}

/// The document completed from the parameter catalog: each operation's query parameters are the
/// ones its handler parses (`ask::parameter_specs` of the grammar its annotation names), the
/// problem responses its annotation names get their shared definitions, and an operation templated on `{domain}` (which documents the parameters both
/// domains take) gets a concrete copy per domain with that domain's parameters.
pub fn complete(doc: &mut utoipa::openapi::OpenApi) {
    complete_inner(doc);
    concrete_measurement_tables(doc);
}

fn complete_inner(doc: &mut utoipa::openapi::OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    for (_, name, description) in PROBLEMS {
        components
            .responses
            .insert(name.to_string(), RefOr::T(problem_response(description)));
    }
    let paths: Vec<String> = doc.paths.paths.keys().cloned().collect();
    for path in paths {
        for method in METHODS {
            let Some(op) = doc
                .paths
                .paths
                .get_mut(&path)
                .and_then(|item| method(item).as_mut())
            else {
                continue;
            };
            let endpoint = query_of(op, &path);
            if path.starts_with("/v1/measurements/") {
                complete_operation(
                    op,
                    crate::service::ask::measurements::measurement_specs(&path, None),
                    None,
                );
                continue;
            }
            let templated = path.contains("{domain}");
            let base = op.clone();
            let specs = endpoint.map(|e| {
                if templated {
                    common_specs(e)
                } else {
                    ask::parameter_specs(Domain::Llm, e)
                }
            });
            complete_operation(op, specs, None);
            if templated {
                for d in Domain::ALL {
                    let mut concrete = base.clone();
                    complete_operation(
                        &mut concrete,
                        endpoint.map(|e| ask::parameter_specs(d, e)),
                        Some(d),
                    );
                    let concrete_path = path.replace("{domain}", d.as_str());
                    *method(doc.paths.paths.entry(concrete_path).or_default()) = Some(concrete);
                }
            }
        }
    }
}

/// The operation slots of a path item, one per method the API uses.
type Slot = fn(&mut utoipa::openapi::PathItem) -> &mut Option<utoipa::openapi::path::Operation>;
const METHODS: [Slot; 3] = [|i| &mut i.get, |i| &mut i.post, |i| &mut i.delete];

/// The query grammar `op`'s handler parses with, named in its annotation
/// (`extensions(("x-query" = json!("list")))`); the extension is taken out of the document.
fn query_of(op: &mut utoipa::openapi::path::Operation, path: &str) -> Option<Question> {
    let ext = op.extensions.as_mut()?;
    let name = ext.remove("x-query")?;
    if ext.is_empty() {
        op.extensions = None;
    }
    let name = name.as_str().unwrap_or_default();
    let found = ask::QUERIES.iter().find(|(n, _)| *n == name);
    Some(
        found
            .unwrap_or_else(|| panic!("{path}: x-query {name:?} names no query grammar"))
            .1,
    )
}

/// `/v1/measurements/{table}` documented once per table (each with its own columns' filters).
fn concrete_measurement_tables(doc: &mut utoipa::openapi::OpenApi) {
    let Some(item) = doc.paths.paths.remove("/v1/measurements/{table}") else {
        return;
    };
    let Some(base) = item.get else { return };
    for table in crate::peer::schema::LIST_TABLES {
        let mut op = base.clone();
        op.parameters = op.parameters.map(|ps| {
            ps.into_iter()
                .filter(|p| p.parameter_in != ParameterIn::Path)
                .collect()
        });
        complete_operation(
            &mut op,
            crate::service::ask::measurements::measurement_specs(
                "/v1/measurements/{table}",
                Some(table),
            ),
            None,
        );
        op.operation_id = Some(format!("list_{table}"));
        op.summary = Some(format!("List the measurement table `{table}`"));
        doc.paths
            .paths
            .entry(format!("/v1/measurements/{table}"))
            .or_default()
            .get = Some(op);
    }
}

/// One request's output length (JSON rows of the output-lengths endpoints).
#[allow(dead_code)]
#[derive(ToSchema)]
pub struct OutputLengthRow {
    run_id: String,
    task: String,
    model_id: String,
    num_gpus: i64,
    max_num_seqs: i64,
    output_len: i64,
}

/// One smoothed inter-token latency, in seconds (JSON rows of the ITL endpoints).
#[allow(dead_code)]
#[derive(ToSchema)]
pub struct ItlRow {
    run_id: String,
    task: String,
    model_id: String,
    num_gpus: i64,
    max_num_seqs: i64,
    itl_s: f64,
}

/// A run's ITL statistics in seconds (`summary=true`): numpy's mean and linear percentiles, and
/// a 50-bin `np.histogram`.
#[allow(dead_code)]
#[derive(ToSchema)]
pub struct ItlSummaryRow {
    run_id: String,
    task: String,
    model_id: String,
    num_gpus: i64,
    max_num_seqs: i64,
    count: i64,
    mean_s: Option<f64>,
    p50_s: Option<f64>,
    p90_s: Option<f64>,
    p95_s: Option<f64>,
    p99_s: Option<f64>,
    max_s: Option<f64>,
    histogram: ItlHistogram,
}

/// `np.histogram(samples, bins=50)`: 51 edges and 50 counts.
#[allow(dead_code)]
#[derive(ToSchema)]
pub struct ItlHistogram {
    edges: Vec<f64>,
    counts: Vec<u64>,
}

/// A row of the ITL endpoints: samples, or with `summary=true` one summary per run.
pub struct ItlAnswerRow;
impl PartialSchema for ItlAnswerRow {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(RefOr::Ref(utoipa::openapi::Ref::from_schema_name("ItlRow")))
            .item(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                "ItlSummaryRow",
            )))
            .into()
    }
}
impl ToSchema for ItlAnswerRow {
    fn name() -> Cow<'static, str> {
        "ItlAnswerRow".into()
    }
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push(("ItlRow".into(), ItlRow::schema()));
        schemas.push(("ItlSummaryRow".into(), ItlSummaryRow::schema()));
        <ItlSummaryRow as ToSchema>::schemas(schemas);
    }
}

/// A timeline row. Long form: `value` and `metric` then the run's key columns (`task`,
/// `model_id`, `num_gpus`, and `max_num_seqs` or `batch_size`); with `per_gpu=true`, a column per
/// GPU (`<metric>_device_<n>`) and `<metric>_total` instead.
pub struct TimelineRow;
impl PartialSchema for TimelineRow {
    fn schema() -> RefOr<Schema> {
        let number =
            || ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::Number, Type::Null]));
        let string = || ObjectBuilder::new().schema_type(Type::String);
        let integer = || ObjectBuilder::new().schema_type(Type::Integer);
        ObjectBuilder::new()
            .property("run_id", string())
            .required("run_id")
            .property("timestamp", number())
            .required("timestamp")
            .property("relative_time_s", number())
            .required("relative_time_s")
            .property("value", number())
            .property("metric", string())
            .property("task", string())
            .property("model_id", string())
            .property("num_gpus", integer())
            .property("max_num_seqs", integer())
            .property("batch_size", integer())
            .additional_properties(Some(number()))
            .into()
    }
}
impl ToSchema for TimelineRow {
    fn name() -> Cow<'static, str> {
        "TimelineRow".into()
    }
}

/// One logistic sweep fit (JSON rows of `/v1/{domain}/fits/logistic`): the `by` fields first
/// (default model_id, task, gpu_model, num_gpus), then these, then `pred_<batch>` per batch size
/// asked for.
pub struct LogisticFitRow;
impl PartialSchema for LogisticFitRow {
    fn schema() -> RefOr<Schema> {
        let number =
            || ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::Number, Type::Null]));
        ObjectBuilder::new()
            .property("y", string_schema().description(Some("The fitted field")))
            .required("y")
            .property("L", number().description(Some("Amplitude")))
            .property(
                "x0",
                number().description(Some("Midpoint, in log2 of the batch size")),
            )
            .property(
                "k",
                number().description(Some("Steepness (a grid value, 0.01 to 100)")),
            )
            .property("b0", number().description(Some("Baseline")))
            .property(
                "n",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .description(Some("Batch sizes fitted")),
            )
            .property(
                "batch_sizes",
                utoipa::openapi::schema::ArrayBuilder::new()
                    .items(ObjectBuilder::new().schema_type(Type::Integer)),
            )
            .property("mse", number())
            .property(
                "r2",
                number().description(Some("Null when the field does not vary")),
            )
            .property(
                "max_rel_residual",
                number().description(Some("Largest |residual| / |y| over the batch sizes")),
            )
            .property(
                "degenerate",
                ObjectBuilder::new()
                    .schema_type(Type::Boolean)
                    .description(Some("No grid search: one batch size, or a constant field")),
            )
            .additional_properties(Some(ObjectBuilder::new().schema_type(SchemaType::AnyValue)))
            .into()
    }
}
impl ToSchema for LogisticFitRow {
    fn name() -> Cow<'static, str> {
        "LogisticFitRow".into()
    }
}

/// One run's ITL mixture (JSON rows of the itl-mixture endpoints).
#[allow(dead_code)]
#[derive(ToSchema)]
pub struct ItlMixtureRow {
    run_id: String,
    task: String,
    model_id: String,
    num_gpus: i64,
    max_num_seqs: i64,
    loc: Option<f64>,
    pi_steady: Option<f64>,
    sigma_steady: Option<f64>,
    scale_steady: Option<f64>,
    pi_stall: Option<f64>,
    sigma_stall: Option<f64>,
    scale_stall: Option<f64>,
    /// The mixture's analytic mean, in seconds.
    mean_s: Option<f64>,
    /// The mixture's analytic variance, in s².
    variance_s2: Option<f64>,
    /// Samples fitted.
    n: i64,
    /// Samples the run holds.
    n_samples: i64,
}
