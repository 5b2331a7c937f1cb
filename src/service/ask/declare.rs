//! Every question the service answers and the parameters each takes, declared once as tables:
//! the query grammar (`grammar`) parses with them, the OpenAPI document lists them, MCP's tools
//! take them as arguments and the explorer draws its controls from them. A declaration names a
//! parameter, its aliases, what its values are, and what it means; what depends on a domain (its
//! fields, its batch parameter, its defaults) is filled in when a domain resolves it.

use crate::engine::Domain;
use crate::engine::fields::{FieldSpec, RUN_ID, derived_fields, published_fields};
use crate::engine::frontier::{default_energy, default_latency};
use crate::rawfile::timeline::Metric;

use super::format::Format;

/// A question the service answers (decides which parameters are accepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Question {
    List,
    Group,
    One,
    /// Raw-derived data over the filtered runs, with these extra parameters.
    RawMany(&'static [&'static str]),
    /// Raw-derived data of one run, with these extra parameters.
    RawOne(&'static [&'static str]),
    /// Logistic fits of batch sweeps over the filtered runs (`y`, `by`, `predict`).
    Sweep,
    /// The Pareto frontier of the filtered runs (`x`, `y`, `per`, `fields`).
    Pareto,
    /// The energy-optimal run per group under a deadline and a budget (`deadline`, `latency`,
    /// `energy_budget`, `energy`, `per`, `fields`).
    Best,
    /// A batch sweep drawn: the run filters and one `y`.
    SweepChart,
    /// An SVG chart of what this question answers: its parameters but `format` and `fields`.
    Chart(&'static Question),
    /// Predictions of configurations: a model (`model_id` or its parameters), `task`, and lists
    /// of GPU models, GPU counts and batch sizes.
    Predict,
    /// The predictor's held-out figures (only `format`).
    PredictQuality,
    /// A deployment plan: `Predict`'s configuration parameters, the workload, the latency target,
    /// PUE, grid and price.
    Plan,
    /// Column statistics of the filtered runs (`fields`: which columns).
    Statistics,
    /// What changed between two revisions (`from`, `to`) among the filtered runs.
    Changes,
}

/// String filters: (parameter, field, aliases).
pub fn string_filters(
    domain: Domain,
) -> &'static [(&'static str, &'static str, &'static [&'static str])] {
    match domain {
        Domain::Llm => &[
            ("task", "task", &[]),
            ("model_id", "model_id", &["model"]),
            ("gpu_model", "gpu_model", &["gpu"]),
            ("nickname", "nickname", &[]),
            ("precision", "weight_precision", &[]),
            ("architecture", "architecture", &[]),
            ("run_id", "run_id", &[]),
        ],
        Domain::Diffusion => &[
            ("task", "task", &[]),
            ("model_id", "model_id", &["model"]),
            ("gpu_model", "gpu_model", &["gpu"]),
            ("nickname", "nickname", &[]),
            ("precision", "weight_precision", &[]),
            ("run_id", "run_id", &[]),
        ],
    }
}

/// Numeric filters: (parameter = field, aliases). Each also takes `<name>_min` / `<name>_max`.
pub fn numeric_filters(domain: Domain) -> &'static [(&'static str, &'static [&'static str])] {
    match domain {
        Domain::Llm => &[("num_gpus", &[]), ("max_num_seqs", &["batch"])],
        Domain::Diffusion => &[("num_gpus", &[]), ("batch_size", &["batch"])],
    }
}

/// What a string filter selects.
const STRING_FILTER_DOCS: &[(&str, &str)] = &[
    ("task", "Task(s), e.g. gpqa, lm-arena-chat, text-to-image."),
    ("model_id", "Model id(s), e.g. Qwen/Qwen3-8B."),
    ("gpu_model", "GPU model(s): H100, B200."),
    ("nickname", "Model nickname(s)."),
    (
        "precision",
        "Weight precision(s), e.g. bfloat16, fp8 (field weight_precision).",
    ),
    ("architecture", "Architecture(s), e.g. MoE."),
    (
        "run_id",
        "Run id(s), as the runs list names them: any set of runs, e.g. the rows a client kept.",
    ),
];

fn string_filter_doc(param: &str) -> &'static str {
    STRING_FILTER_DOCS
        .iter()
        .find(|(p, _)| *p == param)
        .map_or("Values of the field.", |(_, d)| d)
}

/// The questions' query grammars by the name a handler's `#[utoipa::path]` gives it
/// (`extensions(("x-query" = json!("list")))`), from which the document lists its parameters.
pub const OUTPUT_LENGTHS_ONE: Question = Question::RawOne(&["include_unsuccessful"]);
pub const OUTPUT_LENGTHS_MANY: Question = Question::RawMany(&["include_unsuccessful"]);
pub const ITL_ONE: Question = Question::RawOne(&["summary"]);
pub const ITL_MANY: Question = Question::RawMany(&["summary"]);
pub const TIMELINE_ONE: Question = Question::RawOne(&["metric", "per_gpu", "every"]);
pub const TIMELINE_MANY: Question = Question::RawMany(&["metric", "every"]);
pub const RAW_FILE: Question = Question::RawOne(&[]);
pub const PREFETCH: Question = Question::RawMany(&[]);
pub const EVICT: Question = Question::RawOne(&[]);
pub const ITL_MIXTURE_ONE: Question = Question::RawOne(&["max_samples", "seed"]);
pub const ITL_MIXTURE_MANY: Question = Question::RawMany(&["max_samples", "seed"]);
pub const PARETO_CHART: Question = Question::Chart(&Question::Pareto);
pub const SWEEP_CHART: Question = Question::Chart(&Question::SweepChart);
pub const TIMELINE_CHART: Question = Question::Chart(&Question::RawOne(&["metric", "every"]));
pub const ITL_CHART: Question = Question::Chart(&Question::RawOne(&[]));
pub const PLAN_CHART: Question = Question::Chart(&Question::Plan);
/// A run's rating badge: of one run, and takes nothing.
pub const RATING_CHART: Question = Question::Chart(&Question::One);

/// Every question's grammar by its name in the OpenAPI annotations.
pub const QUERIES: &[(&str, Question)] = &[
    ("list", Question::List),
    ("one", Question::One),
    ("group", Question::Group),
    ("sweep", Question::Sweep),
    ("pareto", Question::Pareto),
    ("best", Question::Best),
    ("output_lengths_one", OUTPUT_LENGTHS_ONE),
    ("output_lengths_many", OUTPUT_LENGTHS_MANY),
    ("itl_one", ITL_ONE),
    ("itl_many", ITL_MANY),
    ("timeline_one", TIMELINE_ONE),
    ("timeline_many", TIMELINE_MANY),
    ("raw_file", RAW_FILE),
    ("prefetch", PREFETCH),
    ("evict", EVICT),
    ("itl_mixture_one", ITL_MIXTURE_ONE),
    ("itl_mixture_many", ITL_MIXTURE_MANY),
    ("pareto_chart", PARETO_CHART),
    ("sweep_chart", SWEEP_CHART),
    ("timeline_chart", TIMELINE_CHART),
    ("itl_chart", ITL_CHART),
    ("predict", Question::Predict),
    ("predict_quality", Question::PredictQuality),
    ("plan", Question::Plan),
    ("plan_chart", PLAN_CHART),
    ("rating_chart", RATING_CHART),
    ("statistics", Question::Statistics),
    ("changes", Question::Changes),
];

/// Samples an ITL mixture is fitted to unless `max_samples` says otherwise (the toolkit's users'
/// choice: `max_samples=2048, seed=0`).
pub const DEFAULT_MAX_SAMPLES: usize = 2048;

/// The largest `offset`: the largest integer a JSON number holds exactly (clients in JavaScript
/// cannot write a larger one faithfully).
pub const MAX_OFFSET: u64 = (1 << 53) - 1;

/// The default largest page (`--max-rows`); the document states it as `limit`'s maximum.
pub const DEFAULT_MAX_ROWS: usize = 100_000;

/// What a query parameter's value is: what the parser reads, and what the OpenAPI document says.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueKind {
    /// Strings, OR'ed: the parameter repeated, or values separated by commas.
    Strings,
    /// Exact numbers, OR'ed: comma-separated (or the parameter repeated).
    Numbers,
    /// One number (a range bound).
    Number,
    /// One of these words.
    Choice(Vec<String>),
    /// `true`/`false` (or `1`/`0`).
    Flag,
    /// A non-negative integer, at most this.
    Count(u64),
    /// Comma-separated field names.
    FieldList(Vec<String>),
    /// Comma-separated field names, each optionally prefixed with `-` (descending).
    SortKeys(Vec<String>),
    /// Comma-separated aggregates: `func`, `func(numeric field)`, or `count(any field)`.
    Aggregates {
        fields: Vec<String>,
        numeric: Vec<String>,
    },
    /// A positive duration such as `500ms`, `1s`, `2m`.
    Duration,
    /// Names of numeric fields, the parameter repeated or comma-separated.
    NumericFields(Vec<String>),
    /// Positive numbers, comma-separated.
    PositiveNumbers,
    /// A positive count, or `all`.
    CountOrAll,
    /// One numeric field's name.
    NumericField(Vec<String>),
    /// A number of 0 or more.
    NonNegative,
    /// A number from 0 to 0.5: the share trimmed from each end.
    Fraction,
    /// A dataset revision: a hub commit, branch or tag, or a local snapshot's name.
    Revision,
}

/// What a revision's name may be (a git ref name's characters; no `..`): what the grammar reads
/// and the document states.
pub const REVISION_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$";

/// One query parameter a question accepts, resolved for a domain.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    pub name: String,
    pub description: String,
    pub value: ValueKind,
    /// For the parameters of a numeric filter (exact values, `_min`, `_max`, and their aliases):
    /// the field. Exact values and a range of one field cannot be combined, nor a bound given
    /// under its name and its alias at once.
    pub numeric_filter: Option<&'static str>,
    /// Whether a request must give it (`changes`' `from`).
    pub required: bool,
}

pub fn spec(
    name: impl Into<String>,
    description: impl Into<String>,
    value: ValueKind,
) -> ParamSpec {
    ParamSpec {
        name: name.into(),
        description: description.into(),
        value,
        numeric_filter: None,
        required: false,
    }
}

/// What a declared parameter takes, before a domain names its fields.
#[derive(Debug, Clone, Copy)]
enum Takes {
    Strings,
    Number,
    PositiveNumbers,
    NonNegative,
    Flag,
    Count(u64),
    /// `limit`: a page of at most the server's largest.
    Page,
    CountOrAll,
    Duration,
    Metric,
    Format,
    Fields,
    SortKeys,
    Aggregates,
    NumericField,
    NumericFields,
    Revision,
}

/// A declaration's text: fixed, or made for a domain (it states a default that depends on it).
#[derive(Clone, Copy)]
enum Doc {
    Text(&'static str),
    Made(fn(Domain) -> String),
}

/// One declared parameter. The name [`BATCH`] stands for the domain's batch parameter.
#[derive(Clone, Copy)]
struct Decl {
    name: &'static str,
    takes: Takes,
    doc: Doc,
    /// Declared for this domain only.
    only: Option<Domain>,
    /// A request must give it.
    required: bool,
}

/// The name a declaration gives the domain's batch parameter (`max_num_seqs`, `batch_size`).
const BATCH: &str = "<batch>";

const fn decl(name: &'static str, takes: Takes, doc: &'static str) -> Decl {
    Decl {
        name,
        takes,
        doc: Doc::Text(doc),
        only: None,
        required: false,
    }
}

const fn made(name: &'static str, takes: Takes, doc: fn(Domain) -> String) -> Decl {
    Decl {
        name,
        takes,
        doc: Doc::Made(doc),
        only: None,
        required: false,
    }
}

const fn required(d: Decl) -> Decl {
    Decl {
        required: true,
        ..d
    }
}

const fn llm_only(d: Decl) -> Decl {
    Decl {
        only: Some(Domain::Llm),
        ..d
    }
}

const FIELDS: Decl = decl(
    "fields",
    Takes::Fields,
    "Fields to return, comma-separated; run_id always comes first.",
);

const LIST: &[Decl] = &[
    decl(
        "sort",
        Takes::SortKeys,
        "Sort keys, comma-separated; `-field` for descending. Nulls sort last; the default order breaks ties.",
    ),
    made("limit", Takes::Page, |_| {
        format!(
            "Page size (default: every matching run, up to the server's maximum, {DEFAULT_MAX_ROWS} unless --max-rows says otherwise)."
        )
    }),
    decl("offset", Takes::Count(MAX_OFFSET), "Rows to skip."),
    FIELDS,
];

const GROUP: &[Decl] = &[
    decl(
        "by",
        Takes::Fields,
        "Fields to group by, comma-separated; none: one group.",
    ),
    decl(
        "agg",
        Takes::Aggregates,
        "Aggregates, comma-separated: `func(field)`, or `func` alone for every numeric field, with func one of count, min, max, mean, median, sum, argmin, argmax (fields numeric except for count).",
    ),
];

const ONE: &[Decl] = &[FIELDS];

const CHANGES: &[Decl] = &[
    required(decl(
        "from",
        Takes::Revision,
        "The revision compared from (required): a hub commit, branch or tag, a local snapshot's name, or a snapshot id.",
    )),
    decl(
        "to",
        Takes::Revision,
        "The revision compared to (default: the served revision); not the same as from.",
    ),
];

const STATISTICS: &[Decl] = &[decl(
    "fields",
    Takes::Fields,
    "Columns to describe, comma-separated (default: every column).",
)];

const SWEEP: &[Decl] = &[
    made("y", Takes::NumericFields, |domain| {
        format!(
            "Numeric fields to fit against log2 of the batch size (repeat or comma-separate; default {}).",
            crate::engine::models::sweep::default_ys(domain).join(", ")
        )
    }),
    decl(
        "by",
        Takes::Fields,
        "Fields to group the runs by, comma-separated (default model_id, task, gpu_model, num_gpus).",
    ),
    decl(
        "predict",
        Takes::PositiveNumbers,
        "Batch sizes to predict every fitted field at, comma-separated (each > 0).",
    ),
];

/// `f`'s value for each domain, as a parameter's documentation states a default.
fn both_defaults(f: fn(Domain) -> &'static str) -> String {
    format!(
        "{} (llm), {} (diffusion)",
        f(Domain::Llm),
        f(Domain::Diffusion)
    )
}

const PARETO: &[Decl] = &[
    made("x", Takes::NumericField, |_| {
        format!(
            "The latency field (numeric; lower is better). Default: {}.",
            both_defaults(default_latency)
        )
    }),
    made("y", Takes::NumericField, |_| {
        format!(
            "The energy field (numeric; lower is better). Default: {}.",
            both_defaults(default_energy)
        )
    }),
    decl(
        "per",
        Takes::Fields,
        "Fields whose values each get a frontier of their own, comma-separated (e.g. model_id); default: one frontier.",
    ),
    FIELDS,
];

const SWEEP_CHART_Y: &[Decl] = &[made("y", Takes::NumericField, |_| {
    format!(
        "The numeric field drawn against the batch size. Default: {}.",
        both_defaults(default_energy)
    )
})];

const BEST: &[Decl] = &[
    decl(
        "deadline",
        Takes::NonNegative,
        "Largest latency allowed, inclusive, in the latency field's unit. Default when one task is filtered and the latency is the leaderboard's (an ITL in ms for LLM runs, batch_latency_s for diffusion): the leaderboard's for that task, 500 ms for LLM and MLLM tasks, 30 s for text-to-image, 300 s for text-to-video; else no deadline.",
    ),
    made("latency", Takes::NumericField, |_| {
        format!(
            "The latency field (numeric). Default: {}.",
            both_defaults(default_latency)
        )
    }),
    decl(
        "energy_budget",
        Takes::NonNegative,
        "Largest energy allowed, inclusive, in the energy field's unit. Default: no limit.",
    ),
    made("energy", Takes::NumericField, |_| {
        format!(
            "The energy field minimised (numeric). Default: {}.",
            both_defaults(default_energy)
        )
    }),
    decl(
        "per",
        Takes::Fields,
        "Fields the choice is made per, comma-separated (default model_id; empty: the one best run).",
    ),
    FIELDS,
];

/// The model a prediction or a plan is of.
const MODEL: &[Decl] = &[
    decl(
        "model_id",
        Takes::Strings,
        "The model: one of the snapshot's (its parameters, architecture and precision are known; its measured sweeps are interpolated), or a name of your own with its parameters.",
    ),
    decl(
        "total_params_billions",
        Takes::Number,
        "Total parameters, in billions (> 0); required for a model not in the snapshot.",
    ),
    decl(
        "activated_params_billions",
        Takes::Number,
        "Parameters active per token, in billions (> 0, at most the total; default: the total).",
    ),
    llm_only(decl(
        "architecture",
        Takes::Strings,
        "Architecture, as the run field (default: MoE when fewer parameters are active than there are, else Dense Transformer).",
    )),
    decl(
        "weight_precision",
        Takes::Strings,
        "Weight precision, as the run field (default: the model's, else bfloat16).",
    ),
];

/// The configurations a prediction covers.
const PREDICT_GRID: &[Decl] = &[
    decl(
        "task",
        Takes::Strings,
        "Task(s), comma-separated (default: the tasks the model was measured on).",
    ),
    decl(
        "gpu_model",
        Takes::Strings,
        "GPU model(s), comma-separated (default: every GPU model of the snapshot).",
    ),
    decl(
        "num_gpus",
        Takes::PositiveNumbers,
        "GPU counts, comma-separated (default: the model's measured counts, else 1, 2, 4, 8).",
    ),
    decl(
        BATCH,
        Takes::PositiveNumbers,
        "Batch sizes, comma-separated (default: the model's measured ones, else the snapshot's common ones).",
    ),
];

/// The configurations a plan considers.
const PLAN_GRID: &[Decl] = &[
    decl(
        "task",
        Takes::Strings,
        "Task(s) the workload is like, comma-separated (default: the tasks the model was measured on).",
    ),
    decl(
        "gpu_model",
        Takes::Strings,
        "GPU models allowed, comma-separated (default: every GPU model of the snapshot).",
    ),
    decl(
        "num_gpus",
        Takes::PositiveNumbers,
        "GPU counts a replica may use, comma-separated (default 1, 2, 4, 8).",
    ),
    decl(
        BATCH,
        Takes::PositiveNumbers,
        "Batch sizes considered, comma-separated (default: every batch size of the snapshot's runs).",
    ),
];

/// A plan's workload, latency target and what its energy costs.
const PLAN: &[Decl] = &[
    decl(
        "output_tokens_per_s",
        Takes::Number,
        "The workload: output tokens a second, averaged over the day (or requests_per_day with output_length).",
    ),
    decl(
        "requests_per_day",
        Takes::Number,
        "The workload: requests a day (with output_length).",
    ),
    decl(
        "output_length",
        Takes::Number,
        "Output tokens per request (with requests_per_day).",
    ),
    decl(
        "median_itl_ms_max",
        Takes::Number,
        "Largest median inter-token latency allowed, in ms (predicted or measured).",
    ),
    decl(
        "p90_itl_ms_max",
        Takes::Number,
        "Largest 90th-percentile inter-token latency allowed, in ms (predicted or measured).",
    ),
    decl(
        "pue",
        Takes::Number,
        "Power usage effectiveness multiplying GPU energy, at least 1 (default 1: GPU energy only).",
    ),
    decl(
        "grid",
        Takes::Strings,
        "Grid carbon intensity of this ISO 3166-1 alpha-3 country code or Ember region (e.g. USA, FRA, EU, WORLD), from Ember's yearly averages embedded; not with gco2_per_kwh.",
    ),
    decl(
        "gco2_per_kwh",
        Takes::Number,
        "Grid carbon intensity, gCO2e/kWh (0 or more); not with grid.",
    ),
    decl(
        "price_per_kwh",
        Takes::Number,
        "Electricity price per kWh (0 or more), in any currency: cost_per_day is in the same one.",
    ),
];

/// The extra parameters raw-derived questions may take, by name.
const RAW_EXTRAS: &[Decl] = &[
    made("max_samples", Takes::CountOrAll, |_| {
        format!(
            "Samples to fit to, drawn at random without replacement (seeded) when a run has more; `all` fits every sample (default {DEFAULT_MAX_SAMPLES})."
        )
    }),
    decl(
        "seed",
        Takes::Count(MAX_OFFSET),
        "Seed of the subsampling (default 0).",
    ),
    decl(
        "include_unsuccessful",
        Takes::Flag,
        "Also failed requests that carry an output_len (0 in v3).",
    ),
    decl(
        "summary",
        Takes::Flag,
        "One row per run of count, mean_s, p50_s, p90_s, p95_s, p99_s, max_s and a 50-bin histogram instead of the samples.",
    ),
    decl(
        "per_gpu",
        Takes::Flag,
        "Wide form: a column per GPU and the total.",
    ),
    decl(
        "metric",
        Takes::Metric,
        "power.device_instant (default), power.device_average or temperature.",
    ),
    decl(
        "every",
        Takes::Duration,
        "Downsample: one row per bucket of this duration (e.g. 1s, 500ms, 2m) with the mean of each column.",
    ),
];

const FORMAT: Decl = decl(
    "format",
    Takes::Format,
    "json (default), csv, ndjson, arrow or parquet; overrides Accept.",
);

const REVISION: Decl = decl(
    "revision",
    Takes::Revision,
    "The dataset revision to answer from: a hub commit, branch or tag, a local snapshot's name, or a snapshot id (default: the served revision). Answers name the snapshot they come from (`x-snapshot`, and `snapshot` in JSON envelopes).",
);

/// What a question takes: the run filters or not, then its own parameters in groups (then
/// `format`, which every question takes).
struct Shape {
    filtered: bool,
    own: &'static [&'static [Decl]],
}

impl Question {
    /// Whether answering it is costly work (raw files read, a model fitted, a chart drawn): it
    /// takes one of the door's places while it is computed.
    pub fn costly(self) -> bool {
        matches!(
            self,
            Question::RawOne(_) | Question::RawMany(_) | Question::Sweep | Question::Chart(_)
        )
    }

    /// The question's parameters as declared (raw-derived extras and charts aside).
    fn shape(self) -> Shape {
        let (filtered, own): (bool, &'static [&'static [Decl]]) = match self {
            Question::List => (true, &[LIST]),
            Question::Group => (true, &[GROUP]),
            Question::One => (false, &[ONE]),
            Question::Sweep => (true, &[SWEEP]),
            Question::Pareto => (true, &[PARETO]),
            Question::Best => (true, &[BEST]),
            Question::SweepChart => (true, &[SWEEP_CHART_Y]),
            Question::Predict => (false, &[MODEL, PREDICT_GRID]),
            Question::Plan => (false, &[MODEL, PLAN_GRID, PLAN]),
            Question::PredictQuality => (false, &[]),
            Question::Statistics => (true, &[STATISTICS]),
            Question::Changes => (true, &[CHANGES]),
            Question::RawMany(_) => (true, &[]),
            Question::RawOne(_) | Question::Chart(_) => (false, &[]),
        };
        Shape { filtered, own }
    }
}

/// A domain's fields as the declarations name them: every field, and the numeric ones.
struct DomainFields {
    names: Vec<String>,
    numeric: Vec<String>,
}

impl DomainFields {
    fn of(domain: Domain) -> DomainFields {
        let fields: Vec<FieldSpec> = std::iter::once(RUN_ID)
            .chain(published_fields(domain).iter().copied())
            .chain(derived_fields(domain).iter().copied())
            .collect();
        DomainFields {
            names: fields.iter().map(|f| f.name.to_string()).collect(),
            numeric: fields
                .iter()
                .filter(|f| f.ty.is_numeric())
                .map(|f| f.name.to_string())
                .collect(),
        }
    }
}

/// The batch parameter of a domain.
fn batch_parameter(domain: Domain) -> &'static str {
    match domain {
        Domain::Llm => "max_num_seqs",
        Domain::Diffusion => "batch_size",
    }
}

impl Decl {
    fn resolve(&self, domain: Domain, fields: &DomainFields) -> ParamSpec {
        let value = match self.takes {
            Takes::Format => {
                ValueKind::Choice(Format::ALL.iter().map(|f| f.name().to_string()).collect())
            }
            Takes::Strings => ValueKind::Strings,
            Takes::Number => ValueKind::Number,
            Takes::PositiveNumbers => ValueKind::PositiveNumbers,
            Takes::NonNegative => ValueKind::NonNegative,
            Takes::Flag => ValueKind::Flag,
            Takes::Count(max) => ValueKind::Count(max),
            Takes::Page => ValueKind::Count(DEFAULT_MAX_ROWS as u64),
            Takes::CountOrAll => ValueKind::CountOrAll,
            Takes::Duration => ValueKind::Duration,
            Takes::Metric => {
                ValueKind::Choice(Metric::NAMES.iter().map(|m| m.to_string()).collect())
            }
            Takes::Fields => ValueKind::FieldList(fields.names.clone()),
            Takes::SortKeys => ValueKind::SortKeys(fields.names.clone()),
            Takes::Aggregates => ValueKind::Aggregates {
                fields: fields.names.clone(),
                numeric: fields.numeric.clone(),
            },
            Takes::NumericField => ValueKind::NumericField(fields.numeric.clone()),
            Takes::NumericFields => ValueKind::NumericFields(fields.numeric.clone()),
            Takes::Revision => ValueKind::Revision,
        };
        let name = match self.name {
            BATCH => batch_parameter(domain),
            n => n,
        };
        let description = match self.doc {
            Doc::Text(t) => t.to_string(),
            Doc::Made(f) => f(domain),
        };
        ParamSpec {
            required: self.required,
            ..spec(name, description, value)
        }
    }
}

/// The three parameters of a numeric filter `p` under `name` (itself or an alias).
fn numeric_filter_specs(p: &'static str, name: &str, alias: bool) -> [ParamSpec; 3] {
    let of = if alias {
        format!(" Alias of {p}.")
    } else {
        String::new()
    };
    let filter = |name: String, description: String, value| ParamSpec {
        numeric_filter: Some(p),
        ..spec(name, description, value)
    };
    [
        filter(
            name.to_string(),
            format!("Exact {p} value(s), comma-separated; not with a range.{of}"),
            ValueKind::Numbers,
        ),
        filter(
            format!("{name}_min"),
            format!("Inclusive lower bound on {p}.{of}"),
            ValueKind::Number,
        ),
        filter(
            format!("{name}_max"),
            format!("Inclusive upper bound on {p}.{of}"),
            ValueKind::Number,
        ),
    ]
}

/// The run filters' parameters under their canonical names.
fn filter_specs(domain: Domain) -> Vec<ParamSpec> {
    let mut out: Vec<ParamSpec> = string_filters(domain)
        .iter()
        .map(|(p, _, _)| spec(*p, string_filter_doc(p), ValueKind::Strings))
        .collect();
    for (p, _) in numeric_filters(domain) {
        out.extend(numeric_filter_specs(p, p, false));
    }
    if domain == Domain::Llm {
        out.push(spec(
            "stability",
            "Stable runs (default), unstable ones, or all.",
            ValueKind::Choice(vec!["stable".into(), "unstable".into(), "all".into()]),
        ));
    }
    out
}

/// The run filters' aliases.
fn filter_alias_specs(domain: Domain) -> Vec<ParamSpec> {
    let mut out = Vec::new();
    for (p, _, aliases) in string_filters(domain) {
        for a in *aliases {
            out.push(spec(
                *a,
                format!("Alias of {p}. {}", string_filter_doc(p)),
                ValueKind::Strings,
            ));
        }
    }
    for (p, aliases) in numeric_filters(domain) {
        for a in *aliases {
            out.extend(numeric_filter_specs(p, a, true));
        }
    }
    out
}

/// Every query parameter a question accepts for a domain, in order: canonical names, then
/// aliases. The parser accepts exactly these names, and the OpenAPI document lists exactly these.
pub fn parameter_specs(domain: Domain, question: Question) -> Vec<ParamSpec> {
    if let Question::Chart(inner) = question {
        return parameter_specs(domain, *inner)
            .into_iter()
            .filter(|s| s.name != "format" && s.name != "fields")
            .collect();
    }
    let fields = DomainFields::of(domain);
    let shape = question.shape();
    let extras = match question {
        Question::RawMany(extra) | Question::RawOne(extra) => extra,
        _ => &[][..],
    };
    let declared = shape
        .own
        .iter()
        .flat_map(|group| group.iter())
        .chain(
            extras
                .iter()
                .filter_map(|e| RAW_EXTRAS.iter().find(|d| d.name == *e)),
        )
        .chain([&FORMAT, &REVISION])
        // `changes` names its two revisions itself.
        .filter(|d| !(question == Question::Changes && d.name == "revision"))
        .filter(|d| d.only.is_none_or(|only| only == domain));
    let mut out = if shape.filtered {
        filter_specs(domain)
    } else {
        Vec::new()
    };
    out.extend(declared.map(|d| d.resolve(domain, &fields)));
    if shape.filtered {
        out.extend(filter_alias_specs(domain));
    }
    out
}

/// Every parameter a question accepts for a domain (canonical names, then aliases).
pub fn allowed_parameters(domain: Domain, question: Question) -> Vec<String> {
    parameter_specs(domain, question)
        .into_iter()
        .map(|s| s.name)
        .collect()
}
