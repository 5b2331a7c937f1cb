//! The MCP server's answers (rmcp's `ServerHandler`): tools, resources, prompts and completions.
//! A tool call is a question of the service's door (or its catalog), asked directly
//! (`McpServer::ask`); its answer is the tool's result.

use std::sync::Arc;
use std::time::Instant;

use axum::http::StatusCode;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    CompletionInfo, ContentBlock, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Reference, Resource, ResourceContents, Role,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

use super::catalog::{CHARTS, DEFAULT_ROWS, Kind, MAX_SQL_ROWS, ToolSpec};
use super::schema;
use super::text;
use crate::engine::Domain;
use crate::http::error::AppError;
use crate::http::request_metrics::Metrics;
use crate::service::ServiceError;
use crate::service::ask::measurements::MeasurementsRequest;
use crate::service::ask::{self as ask, Door, Encoded, Question};
use crate::service::catalog::{DatasetList, FieldList};

/// A tool's failure: the REST API's problem document (its slug, detail, and the parameter and
/// allowed values when it names them), or one of the tool's own.
#[derive(Debug, Clone)]
pub(super) struct Problem(Value);

impl Problem {
    fn new(
        slug: &str,
        status: u16,
        detail: &str,
        parameter: Option<&str>,
        allowed: &[String],
    ) -> Self {
        let mut p = json!({"slug": slug, "status": status, "detail": detail});
        if let Some(name) = parameter {
            p["parameter"] = json!(name);
        }
        if !allowed.is_empty() {
            p["allowed"] = json!(allowed);
        }
        Problem(p)
    }

    /// A tool's own refusal of one argument.
    fn invalid(detail: &str, parameter: Option<&str>, allowed: &[String]) -> Self {
        Problem::new("invalid_argument", 400, detail, parameter, allowed)
    }

    fn internal(detail: &str) -> Self {
        Problem::new("internal", 500, detail, None, &[])
    }

    /// The service's refusal, as the REST API words it.
    fn service(e: ServiceError) -> Self {
        Problem::app(AppError::from(e))
    }

    /// A refusal as the REST API words it.
    fn app(e: AppError) -> Self {
        Problem::from_answer(e.status(), json!(e.problem()))
    }

    fn argument(e: schema::ArgError) -> Self {
        Problem::invalid(&e.detail, Some(&e.parameter), &e.allowed)
    }

    /// A REST problem+json answer, its `type` (`/problems/<slug>`) as the slug.
    fn from_answer(status: StatusCode, v: Value) -> Self {
        let slug = v["type"]
            .as_str()
            .and_then(|t| t.rsplit('/').next())
            .unwrap_or("error")
            .to_string();
        let mut p = json!({
            "slug": slug,
            "status": status.as_u16(),
            "detail": v["detail"].as_str().or(v["title"].as_str()).unwrap_or("refused"),
        });
        for k in ["title", "parameter", "allowed"] {
            if let Some(x) = v.get(k) {
                p[k] = x.clone();
            }
        }
        Problem(p)
    }

    fn result(self) -> CallToolResult {
        let text = format!(
            "{}: {}",
            self.0["slug"].as_str().unwrap_or("error"),
            self.0["detail"].as_str().unwrap_or("")
        );
        let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
        r.structured_content = Some(self.0);
        r
    }

    pub(super) fn slug(&self) -> &str {
        self.0["slug"].as_str().unwrap_or("error")
    }
}

/// The MCP server: one per request (stateless), cheap to make.
#[derive(Clone)]
pub(super) struct McpServer {
    /// The service's door: the questions declared there are asked directly.
    pub(super) door: Arc<Door>,
    pub(super) tools: Arc<Vec<ToolSpec>>,
    /// The tools as listed, built once (rmcp asks for a tool's schema on every call).
    pub(super) listed: Arc<Vec<Tool>>,
    pub(super) metrics: Arc<Metrics>,
}

impl McpServer {
    /// The tools as `tools/list` gives them.
    pub(super) fn listing(tools: &[ToolSpec]) -> Vec<Tool> {
        tools.iter().map(Self::tool).collect()
    }

    fn tool(spec: &ToolSpec) -> Tool {
        Tool::new(
            spec.name,
            spec.description.clone(),
            Arc::new(spec.input_schema()),
        )
        .with_title(spec.title)
        .with_raw_output_schema(Arc::new({
            let mut o = spec.output.as_object().cloned().unwrap_or_default();
            o.insert("$schema".into(), json!(schema::JSON_SCHEMA));
            o
        }))
        .with_annotations(
            ToolAnnotations::with_title(spec.title)
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        )
    }

    /// A tool's answer.
    async fn run(
        &self,
        spec: &ToolSpec,
        given: Map<String, Value>,
    ) -> Result<CallToolResult, Problem> {
        match spec.kind {
            Kind::Describe => self.describe_tool(given).await,
            Kind::Ask(question, path, wrap) => {
                let v = json(&*self.ask_tool(spec, question, path, given).await?)?;
                no_match(spec, &v)?;
                Ok(rows_result(v, wrap))
            }
            Kind::Run => self.run_tool(spec, given).await,
            Kind::ItlSummary => self.itl_summary(spec, given).await,
            Kind::TimelineSummary => self.timeline_summary(spec, given).await,
            Kind::Sql => self.sql(spec, given).await,
            Kind::Measurements(what) => {
                let q = schema::query(&spec.args, &given).map_err(Problem::argument)?;
                let path = format!("/v1/measurements/{}", what.slug());
                let req =
                    MeasurementsRequest::parse(what, Some(&q), path).map_err(Problem::service)?;
                let v = json(
                    &*self
                        .door
                        .measurements(&req)
                        .await
                        .map_err(Problem::service)?,
                )?;
                Ok(rows_result(v, "groups"))
            }
            Kind::Chart => self.chart(spec, given).await,
        }
    }

    /// `describe_dataset`: the snapshot, its datasets and both domains' fields.
    async fn describe_tool(&self, given: Map<String, Value>) -> Result<CallToolResult, Problem> {
        if let Some((k, _)) = given.iter().next() {
            return Err(Problem::argument(schema::ArgError {
                parameter: k.clone(),
                detail: format!("unknown argument '{k}'; this tool takes none"),
                allowed: Vec::new(),
            }));
        }
        let v = self.describe()?;
        let text = describe_text(&v);
        Ok(structured(v, text))
    }

    /// `get_run`: one run's fields, asked of the door.
    async fn run_tool(
        &self,
        spec: &ToolSpec,
        mut given: Map<String, Value>,
    ) -> Result<CallToolResult, Problem> {
        let (domain, run, q) = of_run(spec, &mut given)?;
        let path = format!("/v1/{domain}/runs/{}", segment(&run));
        let v = json(&*self.ask(Question::One, domain, Some(run), path, &q).await?)?;
        let text = text::fields(&v, &[]);
        Ok(structured(v, text))
    }

    /// `run_itl_summary`: a run's inter-token latency percentiles, with where the samples are.
    async fn itl_summary(
        &self,
        spec: &ToolSpec,
        mut given: Map<String, Value>,
    ) -> Result<CallToolResult, Problem> {
        let run = run_id(given.remove("run_id"))?;
        let q = schema::query(&spec.args, &given).map_err(Problem::argument)?;
        let full = format!("/v1/llm/runs/{}/itl", segment(&run));
        let q = if q.is_empty() {
            "summary=true".to_string()
        } else {
            format!("summary=true&{q}")
        };
        let v = json(
            &*self
                .ask(ask::ITL_ONE, "llm", Some(run), full.clone(), &q)
                .await?,
        )?;
        let mut row = v
            .as_array()
            .and_then(|a| a.first())
            .cloned()
            .unwrap_or(json!({}));
        row["full_data"] = json!(full);
        let text = format!(
            "{}samples: {full}\n",
            text::fields(
                &row,
                &[
                    "run_id", "count", "mean_s", "p50_s", "p90_s", "p95_s", "p99_s", "max_s"
                ]
            )
        );
        Ok(structured(row, text))
    }

    /// `run_timeline_summary`: a run's timeline of one metric in short, with where it is whole.
    async fn timeline_summary(
        &self,
        spec: &ToolSpec,
        mut given: Map<String, Value>,
    ) -> Result<CallToolResult, Problem> {
        let (domain, run, q) = of_run(spec, &mut given)?;
        let path = format!("/v1/{domain}/runs/{}/timeline", segment(&run));
        let full = with_query(&path, &q);
        let v = json(
            &*self
                .ask(ask::TIMELINE_ONE, domain, Some(run.clone()), path, &q)
                .await?,
        )?;
        let metric = given
            .get("metric")
            .and_then(|m| m.as_str())
            .unwrap_or("power.device_instant");
        let s = timeline_summary(&run, metric, &v, &full);
        let text = text::fields(&s, &[]);
        Ok(structured(s, text))
    }

    /// `query_sql`: the SQL answer, cut to `max_rows` rows.
    async fn sql(
        &self,
        spec: &ToolSpec,
        mut given: Map<String, Value>,
    ) -> Result<CallToolResult, Problem> {
        let sql = given.remove("sql");
        let params = given.remove("params").unwrap_or(json!([]));
        let revision = match given.remove("revision") {
            None | Some(Value::Null) => None,
            Some(Value::String(r)) => Some(r),
            Some(v) => {
                return Err(Problem::invalid(
                    &format!("revision must be a string, not {v}"),
                    Some("revision"),
                    &[],
                ));
            }
        };
        let max_rows = match given.remove("max_rows") {
            None | Some(Value::Null) => DEFAULT_ROWS,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=MAX_SQL_ROWS).contains(n))
                .ok_or_else(|| {
                    Problem::invalid(
                        &format!("max_rows must be an integer from 1 to {MAX_SQL_ROWS}, not {v}"),
                        Some("max_rows"),
                        &[],
                    )
                })?,
        };
        schema::query(&spec.args, &given).map_err(Problem::argument)?;
        let Some(Value::String(sql)) = sql else {
            return Err(Problem::invalid(
                "sql (a string) is required",
                Some("sql"),
                &[],
            ));
        };
        let params = match params {
            Value::Array(values) => values
                .into_iter()
                .enumerate()
                .map(|(i, v)| {
                    ask::sql::json_param(v).ok_or_else(|| {
                        Problem::invalid(
                            &format!("params[{i}] is not a number, string, boolean or null"),
                            Some("params"),
                            &[],
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            _ => {
                return Err(Problem::invalid(
                    "params must be an array of numbers, strings, booleans or nulls",
                    Some("params"),
                    &[],
                ));
            }
        };
        let asked = ask::sql::SqlAsked {
            text: &sql,
            params,
            format: ask::Format::Json,
            keep: false,
            revision: revision.as_deref(),
        };
        let v = json(&*self.door.sql(asked).await.map_err(Problem::service)?)?;
        Ok(sql_result(v, max_rows as usize))
    }

    async fn chart(
        &self,
        spec: &ToolSpec,
        mut given: Map<String, Value>,
    ) -> Result<CallToolResult, Problem> {
        let kinds: Vec<String> = CHARTS.iter().map(|(k, _, _)| k.to_string()).collect();
        let kind = given.remove("kind");
        let Some((kind, question, template)) = kind
            .as_ref()
            .and_then(|k| k.as_str())
            .and_then(|k| CHARTS.iter().find(|(name, _, _)| *name == k))
        else {
            return Err(Problem::invalid(
                &format!("kind must be one of {}", kinds.join(", ")),
                Some("kind"),
                &kinds,
            ));
        };
        let domain = domain(given.remove("domain"))?;
        let run = given.remove("run_id");
        let mut path = template.replace("{domain}", domain);
        let run = if path.contains("{run_id}") {
            let run = run_id(run)?;
            path = path.replace("{run_id}", &segment(&run));
            Some(run)
        } else if run.is_some() {
            return Err(Problem::invalid(
                &format!("a {kind} chart is not of one run: leave out run_id"),
                Some("run_id"),
                &[],
            ));
        } else {
            None
        };
        let q = schema::query(&spec.args, &given).map_err(Problem::argument)?;
        // A chart of LLM runs only (its path says llm) is asked of that domain.
        let of = if template.contains("{domain}") {
            domain
        } else {
            "llm"
        };
        let answer = self.ask(*question, of, run, path.clone(), &q).await?;
        let (ct, bytes) = (answer.content_type, &answer.body);
        let path = with_query(&path, &q);
        let svg = String::from_utf8_lossy(bytes).into_owned();
        let info = json!({"kind": kind, "path": path, "media_type": ct, "bytes": bytes.len()});
        let uri = format!("mlenergy://charts{path}");
        let content = vec![
            ContentBlock::text(format!(
                "The {kind} chart ({} bytes of SVG), also at GET {path}.",
                bytes.len()
            )),
            ContentBlock::resource(ResourceContents::TextResourceContents {
                uri,
                mime_type: Some("image/svg+xml".into()),
                text: svg,
                meta: None,
            }),
        ];
        let mut r = CallToolResult::success(content);
        r.structured_content = Some(info);
        Ok(r)
    }

    /// The door's answer to the question of a `Kind::Ask` tool, asked with the tool's arguments
    /// (the domain among them).
    pub(super) async fn ask_tool(
        &self,
        spec: &ToolSpec,
        question: Question,
        path: &str,
        mut given: Map<String, Value>,
    ) -> Result<Arc<Encoded>, Problem> {
        let domain = domain(given.remove("domain"))?;
        if question == Question::List && !given.contains_key("limit") {
            given.insert("limit".into(), json!(DEFAULT_ROWS));
        }
        let q = schema::query(&spec.args, &given).map_err(Problem::argument)?;
        self.ask(question, domain, None, format!("/v1/{domain}/{path}"), &q)
            .await
    }

    /// The JSON answer of the service's door to `question`, asked with the query `q`.
    async fn ask(
        &self,
        question: Question,
        domain: &str,
        run_id: Option<String>,
        path: String,
        q: &str,
    ) -> Result<Arc<Encoded>, Problem> {
        let domain = Domain::parse(domain).ok_or_else(|| Problem::internal("domain"))?;
        let req = ask::Request::parse(question, domain, run_id, Some(q), path)
            .map_err(Problem::service)?;
        let reply = self.door.ask(&req).await.map_err(Problem::service)?;
        // No tool asks for samples, the one kind of answer sent as it is made.
        reply
            .whole()
            .ok_or_else(|| Problem::internal("an answer too long to hold"))
    }

    /// The snapshot, its datasets and both domains' fields.
    fn describe(&self) -> Result<Value, Problem> {
        let service = self.door.service();
        let snapshot = service.snapshot();
        let datasets = value(&DatasetList::of(&snapshot, service.last_reload()))?;
        let llm = value(&FieldList::of(&snapshot, Domain::Llm))?;
        let diffusion = value(&FieldList::of(&snapshot, Domain::Diffusion))?;
        Ok(json!({
            "snapshot": datasets["snapshot"],
            "last_reload": datasets["last_reload"],
            "datasets": datasets["datasets"],
            "fields": {"llm": llm["fields"], "diffusion": diffusion["fields"]},
        }))
    }

    /// Values of a prompt argument that start with (or contain) what was typed: model ids,
    /// tasks and GPU models of the loaded runs.
    async fn complete_values(&self, argument: &str, typed: &str) -> Vec<String> {
        let field = match argument {
            "model_id" | "task" | "gpu_model" => argument,
            _ => return Vec::new(),
        };
        let mut values = Vec::new();
        for domain in ["llm", "diffusion"] {
            let asked = self
                .ask(
                    Question::Group,
                    domain,
                    None,
                    format!("/v1/{domain}/groups"),
                    &format!("by={field}&agg=count"),
                )
                .await;
            if let Ok(v) = asked.and_then(|a| json(&a)) {
                for g in v["groups"].as_array().into_iter().flatten() {
                    if let Some(s) = g[field].as_str() {
                        values.push(s.to_string());
                    }
                }
            }
        }
        let typed = typed.to_lowercase();
        let mut starts: Vec<String> = values
            .iter()
            .filter(|v| v.to_lowercase().starts_with(&typed))
            .cloned()
            .collect();
        let contains = values
            .iter()
            .filter(|v| !v.to_lowercase().starts_with(&typed) && v.to_lowercase().contains(&typed))
            .cloned();
        starts.extend(contains);
        starts.dedup();
        starts.truncate(CompletionInfo::MAX_VALUES);
        starts
    }
}

/// An empty answer because a filter's value matches no run at all (a typo: the REST answer
/// warns, with the did-you-mean hint) is a tool error, so that the assistant corrects the value
/// rather than concluding there is nothing.
fn no_match(spec: &ToolSpec, v: &Value) -> Result<(), Problem> {
    let empty = ["runs", "groups"].iter().any(|k| {
        v.get(*k)
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
    });
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !empty || warnings.is_empty() {
        return Ok(());
    }
    // "task 'gpqq' matches no run; did you mean 'gpqa'?": the parameter comes first.
    let parameter = warnings[0]
        .split_whitespace()
        .next()
        .filter(|p| spec.args.iter().any(|a| a.name == *p));
    let mut p = Problem::new("no_match", 404, &warnings.join("; "), parameter, &[]);
    p.0["warnings"] = json!(warnings);
    Err(p)
}

fn structured(v: Value, text: String) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(v);
    r
}

/// A list answer: an object with a list of rows (`runs`, `groups`), or a bare list wrapped under
/// `key`; the text a table of its first rows, its warnings after it.
fn rows_result(v: Value, key: &str) -> CallToolResult {
    let v = match v {
        Value::Array(rows) => json!({key: rows, "count": rows.len()}),
        v => v,
    };
    let (rows, total) = ["runs", "groups", "fits", "rows"]
        .iter()
        .find_map(|k| v.get(*k).and_then(|r| r.as_array()))
        .map(|rows| (rows.as_slice(), v["total"].as_u64()))
        .unwrap_or((&[], None));
    let mut t = if rows.is_empty() && v.get("runs").is_none() && v.get("groups").is_none() {
        text::fields(&v, &[])
    } else {
        text::table(rows, total)
    };
    for w in v["warnings"].as_array().into_iter().flatten() {
        t.push_str(&format!("warning: {}\n", w.as_str().unwrap_or("")));
    }
    structured(v, t)
}

fn sql_result(v: Value, max_rows: usize) -> CallToolResult {
    let mut v = v;
    let total = v["rows"].as_array().map_or(0, |r| r.len());
    let truncated = total > max_rows;
    if let Some(rows) = v["rows"].as_array_mut() {
        rows.truncate(max_rows);
    }
    v["count"] = json!(total.min(max_rows));
    v["total_rows"] = json!(total);
    v["truncated"] = json!(truncated);
    let rows = v["rows"].as_array().cloned().unwrap_or_default();
    let mut t = text::table(&rows, Some(total as u64));
    if truncated {
        t.push_str(&format!(
            "Rows cut: {total} answered, {max_rows} kept (max_rows).\n"
        ));
    }
    structured(v, t)
}

/// A timeline's few numbers: samples, duration and the value's range and mean.
fn timeline_summary(run: &str, metric: &str, v: &Value, full: &str) -> Value {
    let rows = v.as_array().map(Vec::as_slice).unwrap_or(&[]);
    let values: Vec<f64> = rows.iter().filter_map(|r| r["value"].as_f64()).collect();
    let times: Vec<f64> = rows
        .iter()
        .filter_map(|r| r["relative_time_s"].as_f64())
        .collect();
    let (min, max) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        });
    let mean = (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
    let duration = match (times.first(), times.last()) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    json!({
        "run_id": run,
        "metric": metric,
        "samples": rows.len(),
        "duration_s": duration,
        "min": (!values.is_empty()).then_some(min),
        "mean": mean,
        "max": (!values.is_empty()).then_some(max),
        "full_data": full,
    })
}

fn describe_text(v: &Value) -> String {
    let mut t = format!("snapshot {}\n", v["snapshot"].as_str().unwrap_or("?"));
    for d in v["datasets"].as_array().into_iter().flatten() {
        t.push_str(&format!(
            "{}: {} runs ({} stable) from {}{}\n",
            d["domain"].as_str().unwrap_or("?"),
            d["rows"],
            d["stable_rows"],
            d["source"].as_str().unwrap_or("?"),
            d["revision"]
                .as_str()
                .map(|r| format!(" at {r}"))
                .unwrap_or_default(),
        ));
    }
    for domain in ["llm", "diffusion"] {
        let names: Vec<&str> = v["fields"][domain]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["name"].as_str())
            .collect();
        t.push_str(&format!("{domain} fields: {}\n", names.join(", ")));
    }
    t
}

/// A door's answer as JSON.
/// A catalog answer as JSON.
fn value(answer: &impl serde::Serialize) -> Result<Value, Problem> {
    serde_json::to_value(answer).map_err(|e| Problem::internal(&format!("answer: {e}")))
}

fn json(answer: &Encoded) -> Result<Value, Problem> {
    serde_json::from_slice(&answer.body)
        .map_err(|e| Problem::internal(&format!("answer is not JSON: {e}")))
}

/// The domain and the run of a tool about one run, and its other arguments as a query.
fn of_run(
    spec: &ToolSpec,
    given: &mut Map<String, Value>,
) -> Result<(&'static str, String, String), Problem> {
    let domain = domain(given.remove("domain"))?;
    let run = run_id(given.remove("run_id"))?;
    let q = schema::query(&spec.args, given).map_err(Problem::argument)?;
    Ok((domain, run, q))
}

/// `domain`: llm (the default) or diffusion.
fn domain(v: Option<Value>) -> Result<&'static str, Problem> {
    match v {
        None | Some(Value::Null) => Ok("llm"),
        Some(Value::String(s)) if s == "llm" => Ok("llm"),
        Some(Value::String(s)) if s == "diffusion" => Ok("diffusion"),
        Some(other) => Err(Problem::invalid(
            &format!("domain must be llm or diffusion, not {other}"),
            Some("domain"),
            &["llm".into(), "diffusion".into()],
        )),
    }
}

fn run_id(v: Option<Value>) -> Result<String, Problem> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(Problem::invalid(
            "run_id (a run's id, as find_runs names it) is required",
            Some("run_id"),
            &[],
        )),
    }
}

/// A path segment, percent-encoded (a run id holds `~`, safe, but a caller may send anything).
fn segment(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

fn with_query(path: &str, q: &str) -> String {
    if q.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{q}")
    }
}

/// The resources: the dataset card and each domain's fields.
pub(super) const RESOURCES: &[(&str, &str, &str)] = &[
    (
        "mlenergy://dataset",
        "dataset",
        "The dataset card: what is loaded (snapshot, sources, revisions, run counts) and what the ML.ENERGY benchmark measures.",
    ),
    (
        "mlenergy://fields/llm",
        "fields-llm",
        "Every field of the LLM runs: name, type, unit, description and the filters that select it.",
    ),
    (
        "mlenergy://fields/diffusion",
        "fields-diffusion",
        "Every field of the diffusion runs: name, type, unit, description and the filters that select it.",
    ),
];

const CARD: &str = "# ML.ENERGY benchmark v3\n\nMeasured GPU energy, throughput and latency of inference runs: LLM and multimodal chat \
(tasks gpqa, lm-arena-chat, sourcegraph-fim, image-chat, video-chat) and diffusion (text-to-image, text-to-video), on NVIDIA \
H100 and B200 GPUs, over models, batch sizes (max_num_seqs for LLM, batch_size for diffusion) and parallelism settings. \
Energy is measured on the GPUs during the steady state of each run; a run is one configuration's measurement. \
LLM runs are stable or unstable (the toolkit's stability cascade); tools answer stable runs unless `stability` says otherwise.\n\n\
Start with the tools describe_dataset (fields), find_runs and best_configuration.\n";

pub(super) fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "energy_optimal_configuration",
            Some("Find the configuration of a model (or of any model) on a task that uses the least energy under a latency budget, and show the trade-off around it."),
            Some(vec![
                PromptArgument::new("task").with_description("The task, e.g. gpqa or lm-arena-chat.").with_required(true),
                PromptArgument::new("latency_budget_ms").with_description("Largest median inter-token latency allowed, in ms (default: the leaderboard's deadline for the task).").with_required(false),
                PromptArgument::new("model_id").with_description("One model (e.g. Qwen/Qwen3-8B); none: compare every model.").with_required(false),
                PromptArgument::new("gpu_model").with_description("H100 or B200; none: both.").with_required(false),
            ]),
        ),
        Prompt::new(
            "compare_gpus",
            Some("Compare H100 and B200 for one model on one task: the least energy per token each reaches, and at what latency and batch size."),
            Some(vec![
                PromptArgument::new("model_id").with_description("The model, e.g. Qwen/Qwen3-8B.").with_required(true),
                PromptArgument::new("task").with_description("The task, e.g. gpqa.").with_required(true),
            ]),
        ),
    ]
}

fn prompt_text(name: &str, args: &Map<String, Value>) -> Result<String, McpError> {
    let arg = |k: &str| {
        args.get(k).and_then(|v| {
            v.as_str()
                .map(str::to_string)
                .or_else(|| (!v.is_null()).then(|| v.to_string()))
        })
    };
    let need = |k: &str| {
        arg(k).ok_or_else(|| {
            McpError::invalid_params(format!("prompt {name} needs the argument {k}"), None)
        })
    };
    Ok(match name {
        "energy_optimal_configuration" => {
            let task = need("task")?;
            let mut filters = format!("task {task:?}");
            if let Some(m) = arg("model_id") {
                filters.push_str(&format!(", model_id {m:?}"));
            }
            if let Some(g) = arg("gpu_model") {
                filters.push_str(&format!(", gpu_model {g:?}"));
            }
            let deadline = match arg("latency_budget_ms") {
                Some(ms) => format!("deadline {ms} (median_itl_ms, the default latency field)"),
                None => {
                    "no deadline argument (the leaderboard's deadline for the task applies)".into()
                }
            };
            format!(
                "Find the energy-optimal LLM configuration with {filters} under a latency budget.\n\
                 1. Call best_configuration with {filters} and {deadline}; per model_id unless one model is given.\n\
                 2. For the best run, call get_run to read its configuration (GPU model and count, max_num_seqs, parallelism) and its energy per token, throughput and latencies.\n\
                 3. Call pareto_frontier with the same filters to show what a looser or tighter budget would give (median_itl_ms against energy_per_token_joules).\n\
                 Answer with the configuration, its energy per token in joules, its median ITL in ms, and the nearest frontier points on either side. Quote numbers as the tools give them."
            )
        }
        "compare_gpus" => {
            let model = need("model_id")?;
            let task = need("task")?;
            format!(
                "Compare H100 and B200 for model_id {model:?} on task {task:?}.\n\
                 1. Call group_runs with model_id {model:?}, task {task:?}, by [\"gpu_model\"] and agg [\"min(energy_per_token_joules)\", \"argmin(energy_per_token_joules)\", \"count\"].\n\
                 2. For each GPU model's argmin run, call get_run for its max_num_seqs, num_gpus, median_itl_ms and output_throughput_tokens_per_sec.\n\
                 Answer with a small table (GPU model, least energy per token, at which batch size and GPU count, its median ITL) and the ratio between the two GPUs."
            )
        }
        other => {
            return Err(McpError::invalid_params(
                format!(
                    "no prompt named {other}; prompts: energy_optimal_configuration, compare_gpus"
                ),
                None,
            ));
        }
    })
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .enable_completions()
                .build(),
        )
        .with_server_info(
            Implementation::new("mlenergy-server", env!("CARGO_PKG_VERSION"))
                .with_title("ML.ENERGY benchmark data"),
        )
        .with_instructions(
            "Measured GPU energy, throughput and latency of LLM and diffusion inference (ML.ENERGY benchmark v3). \
             Every tool is read-only and answers from the loaded snapshot exactly as the REST API does. \
             describe_dataset lists the fields; find_runs, group_runs, best_configuration and pareto_frontier select runs; \
             query_sql answers anything else in SQL.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.listed.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listed.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(spec) = self.tools.iter().find(|t| t.name == request.name) else {
            return Err(McpError::invalid_params(
                format!(
                    "no tool named {}; tools: {}",
                    request.name,
                    self.tools
                        .iter()
                        .map(|t| t.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            ));
        };
        let started = Instant::now();
        let result = self.run(spec, request.arguments.unwrap_or_default()).await;
        let outcome = match &result {
            Ok(_) => "ok",
            Err(p) if p.slug() == "internal" => "failed",
            Err(_) => "refused",
        };
        self.metrics
            .tool_call(spec.name, outcome, started.elapsed());
        Ok(CallToolResponse::Complete(
            result.unwrap_or_else(Problem::result),
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(
            RESOURCES
                .iter()
                .map(|(uri, name, description)| {
                    Resource::new(*uri, *name)
                        .with_description(*description)
                        .with_mime_type(if *uri == "mlenergy://dataset" {
                            "text/markdown"
                        } else {
                            "application/json"
                        })
                })
                .collect(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.as_str();
        let failed = |p: Problem| {
            McpError::internal_error(
                p.0["detail"].as_str().unwrap_or("failed").to_string(),
                Some(p.0),
            )
        };
        let (text, mime) = match uri {
            "mlenergy://dataset" => {
                let d = self.describe().map_err(failed)?;
                let mut card = CARD.to_string();
                card.push_str("\n## Loaded\n\n");
                card.push_str(&describe_text(&d));
                (card, "text/markdown")
            }
            "mlenergy://fields/llm" | "mlenergy://fields/diffusion" => {
                let domain = match uri.rsplit('/').next() {
                    Some("diffusion") => Domain::Diffusion,
                    _ => Domain::Llm,
                };
                let snapshot = self.door.service().snapshot();
                let v = value(&FieldList::of(&snapshot, domain)).map_err(failed)?;
                (
                    serde_json::to_string_pretty(&v).unwrap_or_default(),
                    "application/json",
                )
            }
            other => {
                return Err(McpError::resource_not_found(
                    format!(
                        "no resource {other}; resources: {}",
                        RESOURCES.iter().map(|r| r.0).collect::<Vec<_>>().join(", ")
                    ),
                    None,
                ));
            }
        };
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
            vec![ResourceContents::TextResourceContents {
                uri: uri.to_string(),
                mime_type: Some(mime.into()),
                text,
                meta: None,
            }],
        )))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        let text = prompt_text(&request.name, &args)?;
        let description = prompts()
            .into_iter()
            .find(|p| p.name == request.name)
            .and_then(|p| p.description)
            .unwrap_or_default();
        Ok(GetPromptResponse::Complete(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(description),
        ))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let values = match &request.r#ref {
            Reference::Prompt(p) if prompts().iter().any(|x| x.name == p.name) => {
                self.complete_values(&request.argument.name, &request.argument.value)
                    .await
            }
            _ => Vec::new(),
        };
        let info = CompletionInfo::new(values).map_err(|e| McpError::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }
}
