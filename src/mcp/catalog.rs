//! The tools: each names the REST operation it calls, and its arguments are that operation's
//! query parameters from the catalog (`schema`), plus the few a path needs (`domain`, `run_id`)
//! or the tool itself takes (`max_rows`, `kind`, `sql`).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::schema::{self, Arg};
use crate::engine::Domain;
use crate::service::ask::measurements::Measured;
use crate::service::ask::{self as ask, Question, ValueKind, parameter_specs};

/// What a tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// The snapshot and both domains' fields (`/v1/datasets`, `/v1/{domain}/fields`).
    Describe,
    /// A question of the service's door, asked directly, of the domain's resource at `path`
    /// (`/v1/{domain}/{path}`, the path its REST twin is at); an answer that is a bare list of
    /// rows is wrapped under the last name.
    Ask(Question, &'static str, &'static str),
    /// One run: the door's `Question::One` (`GET /v1/{domain}/runs/{run_id}`).
    Run,
    /// `GET /v1/llm/runs/{run_id}/itl?summary=true`.
    ItlSummary,
    /// `GET /v1/{domain}/runs/{run_id}/timeline`, summarised.
    TimelineSummary,
    /// `POST /v1/sql`, the rows cut to `max_rows`.
    Sql,
    /// A statistics question of the imported measurements.
    Measurements(Measured<'static>),
    /// One of the SVG charts.
    Chart,
}

/// One tool.
#[derive(Debug, Clone)]
pub(super) struct ToolSpec {
    pub(super) name: &'static str,
    pub(super) title: &'static str,
    pub(super) description: String,
    pub(super) kind: Kind,
    /// The arguments translated into the REST query.
    pub(super) args: Vec<Arg>,
    /// Arguments of the tool itself (path segments, the tool's own options): in the schema, not
    /// in the query.
    pub(super) own: Vec<Arg>,
    pub(super) required: &'static [&'static str],
    pub(super) output: Value,
}

impl ToolSpec {
    pub(super) fn input_schema(&self) -> Map<String, Value> {
        let all: Vec<Arg> = self.own.iter().chain(&self.args).cloned().collect();
        schema::object_schema(&all, self.required)
    }
}

/// Rows a tool answers unless `limit` (or `max_rows`) says otherwise: an assistant reads its
/// answer, so it gets a page, with the total and the next page's path.
pub(super) const DEFAULT_ROWS: u64 = 50;
/// Most rows of an SQL answer a tool returns.
pub(super) const MAX_SQL_ROWS: u64 = 1000;
/// Chart kinds, the question of each, and its REST path (`{domain}`, `{run_id}` filled in).
pub(super) const CHARTS: &[(&str, Question, &str)] = &[
    (
        "pareto",
        ask::PARETO_CHART,
        "/v1/{domain}/charts/pareto.svg",
    ),
    ("sweep", ask::SWEEP_CHART, "/v1/{domain}/charts/sweep.svg"),
    (
        "timeline",
        ask::TIMELINE_CHART,
        "/v1/{domain}/runs/{run_id}/timeline.svg",
    ),
    ("itl", ask::ITL_CHART, "/v1/llm/runs/{run_id}/itl.svg"),
    ("plan", ask::PLAN_CHART, "/v1/llm/charts/plan.svg"),
];

fn domain_arg() -> Arg {
    schema::arg(
        "domain",
        "llm (text and multimodal chat runs, the default) or diffusion (text-to-image and text-to-video runs).",
        &ValueKind::Choice(vec!["llm".into(), "diffusion".into()]),
    )
}

fn run_id_arg() -> Arg {
    schema::arg(
        "run_id",
        "The run's id, as find_runs and the other tools name it (e.g. gpqa~Qwen--Qwen3-8B~B200~g1~b64~r1).",
        &ValueKind::Choice(Vec::new()),
    )
    .with_schema(json!({"type": "string", "minLength": 1}))
}

impl Arg {
    fn with_schema(mut self, mut schema: Value) -> Self {
        if let Some(d) = self.schema.get("description") {
            schema["description"] = d.clone();
        }
        self.schema = schema;
        self
    }
}

/// Both domains' catalog entries of `endpoint`, merged.
fn domain_args(endpoint: Question) -> Vec<Arg> {
    schema::merge_domains(
        schema::args_of(parameter_specs(Domain::Llm, endpoint)),
        schema::args_of(parameter_specs(Domain::Diffusion, endpoint)),
    )
}

/// One domain's catalog entries of `endpoint`.
fn llm_args(endpoint: Question) -> Vec<Arg> {
    schema::args_of(parameter_specs(Domain::Llm, endpoint))
}

/// The union of argument lists (first wins on a name).
fn union(lists: Vec<Vec<Arg>>) -> Vec<Arg> {
    let mut out: Vec<Arg> = Vec::new();
    for list in lists {
        for a in list {
            if !out.iter().any(|o| o.name == a.name) {
                out.push(a);
            }
        }
    }
    out
}

fn rows_output(key: &str, what: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            key: {"type": "array", "items": {"type": "object"}, "description": what},
            "count": {"type": "integer", "description": "Rows in this answer."},
        },
        "required": [key],
    })
}

/// The tools, in the order `tools/list` gives them.
pub(super) fn tools() -> Vec<ToolSpec> {
    let mut t = Vec::new();
    t.push(ToolSpec {
        name: "describe_dataset",
        title: "Describe the dataset",
        description: "What is loaded: the snapshot id, each domain's source, revision and run counts, and every field of the LLM and diffusion runs with its type, unit and description. Start here to learn the field names the other tools take.".into(),
        kind: Kind::Describe,
        args: Vec::new(),
        own: Vec::new(),
        required: &[],
        output: json!({
            "type": "object",
            "properties": {
                "snapshot": {"type": "string"},
                "datasets": {"type": "array", "items": {"type": "object"}},
                "fields": {"type": "object", "properties": {
                    "llm": {"type": "array", "items": {"type": "object"}},
                    "diffusion": {"type": "array", "items": {"type": "object"}},
                }},
            },
            "required": ["snapshot", "datasets", "fields"],
        }),
    });
    let mut find = domain_args(Question::List);
    for a in &mut find {
        if a.name == "limit" {
            a.schema["description"] = json!(format!(
                "Page size (default {DEFAULT_ROWS} for a tool; at most the server's --max-rows)."
            ));
        }
    }
    t.push(ToolSpec {
        name: "find_runs",
        title: "Find runs",
        description: "Measured runs matching filters (task, model, GPU, GPU count, batch size and ranges of them), sorted and paged, with the fields asked for: energy per token or image, throughput, latency percentiles, power, configuration. The same answer as GET /v1/{domain}/runs; `total` counts every match and `next` names the next page.".into(),
        kind: Kind::Ask(Question::List, "runs", ""),
        args: find,
        own: vec![domain_arg()],
        required: &[],
        output: {
            let mut o = rows_output("runs", "The runs of this page, fields as asked.");
            o["properties"]["total"] = json!({"type": "integer", "description": "Runs matching the filters."});
            o["properties"]["next"] = json!({"type": ["string", "null"], "description": "Path of the next page (REST), or null."});
            o
        },
    });
    t.push(ToolSpec {
        name: "get_run",
        title: "Get one run",
        description: "One run by its id: every field (or those asked for). GET /v1/{domain}/runs/{run_id}.".into(),
        kind: Kind::Run,
        args: domain_args(Question::One),
        own: vec![domain_arg(), run_id_arg()],
        required: &["run_id"],
        output: json!({"type": "object", "properties": {"run_id": {"type": "string"}}, "required": ["run_id"]}),
    });
    t.push(ToolSpec {
        name: "group_runs",
        title: "Group runs",
        description: "Runs grouped by fields with aggregates (count, min, max, mean, median, sum, argmin, argmax of numeric fields), e.g. the least energy per token of each model on a task. GET /v1/{domain}/groups.".into(),
        kind: Kind::Ask(Question::Group, "groups", ""),
        args: domain_args(Question::Group),
        own: vec![domain_arg()],
        required: &[],
        output: rows_output("groups", "One object per group: its key, the grouping fields and the aggregates."),
    });
    t.push(ToolSpec {
        name: "best_configuration",
        title: "Energy-optimal configuration",
        description: "The configuration that uses the least energy (per token, or per image/video) among the runs that meet a latency deadline and an energy budget, one per group (`per`, default model_id). Without `deadline`, one task and the leaderboard's latency field use the leaderboard's deadline for the task. GET /v1/{domain}/best.".into(),
        kind: Kind::Ask(Question::Best, "best", ""),
        args: domain_args(Question::Best),
        own: vec![domain_arg()],
        required: &[],
        output: rows_output("runs", "The best run of each group."),
    });
    t.push(ToolSpec {
        name: "pareto_frontier",
        title: "Latency-energy Pareto frontier",
        description: "The runs no other run beats on both latency and energy (lower is better on both), optionally one frontier per value of `per`. GET /v1/{domain}/pareto.".into(),
        kind: Kind::Ask(Question::Pareto, "pareto", ""),
        args: domain_args(Question::Pareto),
        own: vec![domain_arg()],
        required: &[],
        output: rows_output("runs", "The frontier's runs, by increasing latency."),
    });
    t.push(ToolSpec {
        name: "column_statistics",
        title: "Column statistics",
        description: "Statistics of each column of the filtered runs, named as the Hugging Face dataset viewer names them: for numbers the missing count, min, max, mean, median, standard deviation and a 10-bin histogram; for strings and booleans the distinct values and their frequencies. GET /v1/{domain}/statistics.".into(),
        kind: Kind::Ask(Question::Statistics, "statistics", ""),
        args: domain_args(Question::Statistics),
        own: vec![domain_arg()],
        required: &[],
        output: json!({"type": "object", "properties": {
            "num_examples": {"type": "integer"},
            "statistics": {"type": "array", "items": {"type": "object"}},
        }, "required": ["num_examples", "statistics"]}),
    });
    t.push(ToolSpec {
        name: "dataset_changes",
        title: "What changed between two revisions",
        description: "Runs added, removed and changed between two revisions of the dataset (`from`, `to`: hub commits, branches or tags, or local snapshot names; `to` defaults to the served one), each changed field with its old and new value and relative change, counts per task and GPU, the largest moves, and per task each model's rank by least energy before and after. GET /v1/{domain}/changes.".into(),
        kind: Kind::Ask(Question::Changes, "changes", ""),
        args: domain_args(Question::Changes),
        own: vec![domain_arg()],
        required: &["from"],
        output: json!({"type": "object", "properties": {
            "summary": {"type": "object"}, "ranks": {"type": "array"},
            "added": {"type": "array"}, "removed": {"type": "array"}, "changed": {"type": "array"},
        }, "required": ["summary", "added", "removed", "changed"]}),
    });
    t.push(ToolSpec {
        name: "fit_batch_sweep",
        title: "Fit batch-size sweeps",
        description: "Logistic fits of fields (power, latency, throughput, energy) against log2 of the batch size, per model, task, GPU model and GPU count, with predictions at batch sizes that were not measured (`predict`). The toolkit's LogisticModel. GET /v1/{domain}/fits/logistic.".into(),
        kind: Kind::Ask(Question::Sweep, "fits/logistic", "fits"),
        args: domain_args(Question::Sweep),
        own: vec![domain_arg()],
        required: &[],
        output: rows_output("fits", "One fit per group and field: L, x0, k, b0, goodness of fit and pred_<batch> values."),
    });
    t.push(ToolSpec {
        name: "run_itl_summary",
        title: "Inter-token latency summary",
        description: "The inter-token latencies of one LLM run summarised: count, mean, p50, p90, p95, p99, max (seconds) and a 50-bin histogram, from its raw results (downloaded on first use). The samples themselves are at GET /v1/llm/runs/{run_id}/itl.".into(),
        kind: Kind::ItlSummary,
        args: schema::args_of(parameter_specs(Domain::Llm, ask::ITL_ONE))
            .into_iter()
            .filter(|a| a.name == "revision")
            .collect(),
        own: vec![run_id_arg()],
        required: &["run_id"],
        output: json!({"type": "object", "properties": {
            "run_id": {"type": "string"}, "count": {"type": "integer"},
            "mean_s": {"type": "number"}, "p50_s": {"type": "number"}, "p99_s": {"type": "number"},
            "full_data": {"type": "string"},
        }, "required": ["run_id", "count", "full_data"]}),
    });
    let timeline_args: Vec<Arg> = schema::args_of(parameter_specs(Domain::Llm, ask::TIMELINE_ONE))
        .into_iter()
        .filter(|a| a.name == "metric" || a.name == "revision")
        .collect();
    t.push(ToolSpec {
        name: "run_timeline_summary",
        title: "Power or temperature timeline summary",
        description: "One run's GPU power (or temperature) timeline summarised: samples, duration, minimum, mean and maximum of the total over its GPUs. The samples are at GET /v1/{domain}/runs/{run_id}/timeline.".into(),
        kind: Kind::TimelineSummary,
        args: timeline_args,
        own: vec![domain_arg(), run_id_arg()],
        required: &["run_id"],
        output: json!({"type": "object", "properties": {
            "run_id": {"type": "string"}, "metric": {"type": "string"}, "samples": {"type": "integer"},
            "duration_s": {"type": ["number", "null"]}, "min": {"type": ["number", "null"]},
            "mean": {"type": ["number", "null"]}, "max": {"type": ["number", "null"]},
            "full_data": {"type": "string"},
        }, "required": ["run_id", "metric", "samples", "full_data"]}),
    });
    t.push(ToolSpec {
        name: "query_sql",
        title: "Read-only SQL",
        description: format!(
            "A read-only SQL query (DataFusion's dialect) over the tables llm_runs, diffusion_runs and the others GET /v1/sql/tables lists, with $1, $2... bound to `params`. The server's SQL limits apply; the answer keeps at most `max_rows` rows (default {DEFAULT_ROWS}, at most {MAX_SQL_ROWS}) and says when rows were cut."
        ),
        kind: Kind::Sql,
        args: Vec::new(),
        own: vec![
            schema::arg("sql", "The query.", &ValueKind::Strings)
                .with_schema(json!({"type": "string", "minLength": 1})),
            schema::arg("params", "Values of the placeholders $1, $2...: numbers, strings, booleans or null.", &ValueKind::Strings)
                .with_schema(json!({"type": "array", "items": {"type": ["string", "number", "boolean", "null"]}})),
            schema::arg("max_rows", "Most rows to return.", &ValueKind::Count(MAX_SQL_ROWS))
                .with_schema(json!({"type": "integer", "minimum": 1, "maximum": MAX_SQL_ROWS})),
            schema::arg("revision", "The dataset revision the tables are of (default: the served one).", &ValueKind::Revision),
        ],
        required: &["sql"],
        output: {
            let mut o = rows_output("rows", "The rows kept, as objects by column name.");
            o["properties"]["columns"] = json!({"type": "array", "items": {"type": "object"}});
            o["properties"]["truncated"] = json!({"type": "boolean", "description": "Whether rows were cut to max_rows."});
            o["properties"]["total_rows"] = json!({"type": "integer", "description": "Rows the query answered before the cut."});
            o
        },
    });
    for (name, what, title, description) in [
        (
            "compare_measurements",
            Measured::Compare,
            "Compare two sets of measurements",
            "Two groups of runs (filters prefixed a. and b.: the dataset's runs and imported ones, e.g. an LLM Energy Measure run) compared on one metric: mean, spread, confidence intervals and Welch's t-test. GET /v1/measurements/compare.",
        ),
        (
            "repeat_stats",
            Measured::RepeatStats,
            "Repeat statistics",
            "Statistics over repeated runs of one configuration (grouped by `by`): mean, standard deviation, coefficient of variation and a confidence interval of a metric, trimmed if asked. GET /v1/measurements/repeat-stats.",
        ),
    ] {
        let specs = what.specs();
        t.push(ToolSpec {
            name,
            title,
            description: description.into(),
            kind: Kind::Measurements(what),
            args: specs
                .into_iter()
                .filter(|s| s.name != "format")
                .map(flag_as_boolean)
                .map(|s| schema::arg(&s.name, &s.description, &s.value))
                .collect(),
            own: Vec::new(),
            required: &[],
            output: json!({"type": "object"}),
        });
    }
    let chart_args = union(vec![
        domain_args(ask::PARETO_CHART),
        domain_args(ask::SWEEP_CHART),
        llm_args(ask::TIMELINE_CHART),
        llm_args(ask::PLAN_CHART),
    ]);
    t.push(ToolSpec {
        name: "chart",
        title: "Draw a chart",
        description: "An SVG chart, returned as an image/svg+xml resource: `pareto` (latency against energy with the frontier), `sweep` (a field against the batch size), `timeline` (one run's power), `itl` (one run's inter-token latency histogram) or `plan` (a deployment plan's options). Each kind takes its REST chart's parameters.".into(),
        kind: Kind::Chart,
        args: chart_args,
        own: vec![
            schema::arg(
                "kind",
                "Which chart.",
                &ValueKind::Choice(CHARTS.iter().map(|(k, _, _)| k.to_string()).collect()),
            ),
            domain_arg(),
            {
                let mut a = run_id_arg();
                a.schema["description"] = json!("The run (timeline and itl charts).");
                a
            },
        ],
        required: &["kind"],
        output: json!({"type": "object", "properties": {
            "kind": {"type": "string"}, "path": {"type": "string"},
            "media_type": {"type": "string"}, "bytes": {"type": "integer"},
        }, "required": ["kind", "path", "media_type", "bytes"]}),
    });
    t
}

/// A `true`/`false` choice as a boolean argument.
fn flag_as_boolean(mut s: ask::ParamSpec) -> ask::ParamSpec {
    if s.value == ValueKind::Choice(vec!["true".into(), "false".into()]) {
        s.value = ValueKind::Flag;
    }
    s
}

/// The tools, built once.
pub(super) fn shared() -> Arc<Vec<ToolSpec>> {
    static TOOLS: std::sync::OnceLock<Arc<Vec<ToolSpec>>> = std::sync::OnceLock::new();
    TOOLS.get_or_init(|| Arc::new(tools())).clone()
}
