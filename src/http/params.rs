//! Query-string parsing: turns `?task=gpqa&num_gpus_min=2&sort=-energy_per_token_joules` into
//! engine queries, refusing anything unknown or malformed with the parameter named and the
//! accepted values listed. Repeated or comma-separated values are OR; different filters AND.

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::fields::{FieldSpec, RUN_ID, derived_fields, published_fields};
use crate::engine::models::SweepQuery;
use crate::engine::{
    AggFunc, AggSpec, BestQuery, Domain, Filter, FrontierQuery, GroupQuery, RunQuery, RunTable,
    SortKey, Stability,
};
use crate::rawfile::timeline::Metric;

use super::error::AppError;
use super::negotiate::Format;

/// Which endpoint the parameters are for (decides what is accepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
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
    /// An SVG chart of what this endpoint answers: its parameters but `format` and `fields`.
    Chart(&'static Endpoint),
    /// Predictions of configurations: a model (`model_id` or its parameters), `task`, and lists
    /// of GPU models, GPU counts and batch sizes.
    Predict,
    /// The predictor's held-out figures (only `format`).
    PredictQuality,
    /// A deployment plan: `Predict`'s configuration parameters, the workload, the latency target,
    /// PUE, grid and price.
    Plan,
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

/// The query parameters of the endpoints (`Endpoint::RawOne`/`RawMany` with their extras), one
/// constant each: the handler parses with it and the OpenAPI document is generated from it.
pub const OUTPUT_LENGTHS_ONE: Endpoint = Endpoint::RawOne(&["include_unsuccessful"]);
pub const OUTPUT_LENGTHS_MANY: Endpoint = Endpoint::RawMany(&["include_unsuccessful"]);
pub const ITL_ONE: Endpoint = Endpoint::RawOne(&["summary"]);
pub const ITL_MANY: Endpoint = Endpoint::RawMany(&["summary"]);
pub const TIMELINE_ONE: Endpoint = Endpoint::RawOne(&["metric", "per_gpu", "every"]);
pub const TIMELINE_MANY: Endpoint = Endpoint::RawMany(&["metric", "every"]);
pub const RAW_FILE: Endpoint = Endpoint::RawOne(&[]);
pub const PREFETCH: Endpoint = Endpoint::RawMany(&[]);
pub const EVICT: Endpoint = Endpoint::RawOne(&[]);
pub const ITL_MIXTURE_ONE: Endpoint = Endpoint::RawOne(&["max_samples", "seed"]);
pub const ITL_MIXTURE_MANY: Endpoint = Endpoint::RawMany(&["max_samples", "seed"]);
pub const PARETO_CHART: Endpoint = Endpoint::Chart(&Endpoint::Pareto);
pub const SWEEP_CHART: Endpoint = Endpoint::Chart(&Endpoint::SweepChart);
pub const TIMELINE_CHART: Endpoint = Endpoint::Chart(&Endpoint::RawOne(&["metric", "every"]));
pub const ITL_CHART: Endpoint = Endpoint::Chart(&Endpoint::RawOne(&[]));
pub const PLAN_CHART: Endpoint = Endpoint::Chart(&Endpoint::Plan);
pub const RATING_CHART: Endpoint = Endpoint::Chart(&Endpoint::RawOne(&[]));

/// Every endpoint's query grammar by the name a handler's `#[utoipa::path]` gives it
/// (`extensions(("x-query" = json!("list")))`), from which the document lists its parameters.
pub const QUERIES: &[(&str, Endpoint)] = &[
    ("list", Endpoint::List),
    ("one", Endpoint::One),
    ("group", Endpoint::Group),
    ("sweep", Endpoint::Sweep),
    ("pareto", Endpoint::Pareto),
    ("best", Endpoint::Best),
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
    ("predict", Endpoint::Predict),
    ("predict_quality", Endpoint::PredictQuality),
    ("plan", Endpoint::Plan),
    ("plan_chart", PLAN_CHART),
    ("rating_chart", RATING_CHART),
];

/// Samples an ITL mixture is fitted to unless `max_samples` says otherwise (the toolkit's users'
/// choice: `max_samples=2048, seed=0`).
pub const DEFAULT_MAX_SAMPLES: usize = 2048;

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
}

/// One query parameter an endpoint accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    pub name: String,
    pub description: String,
    pub value: ValueKind,
    /// For the parameters of a numeric filter (exact values, `_min`, `_max`, and their aliases):
    /// the field. Exact values and a range of one field cannot be combined, nor a bound given
    /// under its name and its alias at once.
    pub numeric_filter: Option<&'static str>,
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
    }
}

/// What a string filter selects.
fn string_filter_doc(param: &str) -> &'static str {
    match param {
        "task" => "Task(s), e.g. gpqa, lm-arena-chat, text-to-image.",
        "model_id" => "Model id(s), e.g. Qwen/Qwen3-8B.",
        "gpu_model" => "GPU model(s): H100, B200.",
        "nickname" => "Model nickname(s).",
        "precision" => "Weight precision(s), e.g. bfloat16, fp8 (field weight_precision).",
        "architecture" => "Architecture(s), e.g. MoE.",
        "run_id" => {
            "Run id(s), as the runs list names them: any set of runs, e.g. the rows a client kept."
        }
        _ => "Values of the field.",
    }
}

/// A number written as the OpenAPI document allows (`[+-]?d{1,15}(.d{1,15})?([eE][+-]?d{1,2})?`),
/// finite; `None` otherwise. The measurement filters read their values with it, so that what the
/// document calls invalid is refused.
pub fn documented_number(v: &str) -> Option<f64> {
    let b = v.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize, max: usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        (1..=max).contains(&(*i - start))
    };
    if !digits(&mut i, 15) {
        return None;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i, 15) {
            return None;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i, 2) {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    v.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// The largest `offset`: the largest integer a JSON number holds exactly (clients in JavaScript
/// cannot write a larger one faithfully).
pub const MAX_OFFSET: u64 = (1 << 53) - 1;

/// The default largest page (`--max-rows`); the document states it as `limit`'s maximum.
pub const DEFAULT_MAX_ROWS: usize = 100_000;

/// Every query parameter an endpoint accepts for a domain, in order: canonical names, then
/// aliases. The parser accepts exactly these names, and the OpenAPI document lists exactly these.
pub fn parameter_specs(domain: Domain, endpoint: Endpoint) -> Vec<ParamSpec> {
    if let Endpoint::Chart(inner) = endpoint {
        return parameter_specs(domain, *inner)
            .into_iter()
            .filter(|s| s.name != "format" && s.name != "fields")
            .collect();
    }
    let fields: Vec<FieldSpec> = std::iter::once(RUN_ID)
        .chain(published_fields(domain).iter().copied())
        .chain(derived_fields(domain).iter().copied())
        .collect();
    let names = || {
        fields
            .iter()
            .map(|f| f.name.to_string())
            .collect::<Vec<_>>()
    };
    let numeric = || {
        fields
            .iter()
            .filter(|f| f.ty.is_numeric())
            .map(|f| f.name.to_string())
            .collect::<Vec<_>>()
    };
    let mut out = Vec::new();
    let filtered = matches!(
        endpoint,
        Endpoint::List
            | Endpoint::Group
            | Endpoint::RawMany(_)
            | Endpoint::Sweep
            | Endpoint::Pareto
            | Endpoint::Best
            | Endpoint::SweepChart
    );
    let numeric_specs = |p: &'static str, name: &str, alias: bool| {
        let of = if alias {
            format!(" Alias of {p}.")
        } else {
            String::new()
        };
        [
            ParamSpec {
                numeric_filter: Some(p),
                ..spec(
                    name,
                    format!("Exact {p} value(s), comma-separated; not with a range.{of}"),
                    ValueKind::Numbers,
                )
            },
            ParamSpec {
                numeric_filter: Some(p),
                ..spec(
                    format!("{name}_min"),
                    format!("Inclusive lower bound on {p}.{of}"),
                    ValueKind::Number,
                )
            },
            ParamSpec {
                numeric_filter: Some(p),
                ..spec(
                    format!("{name}_max"),
                    format!("Inclusive upper bound on {p}.{of}"),
                    ValueKind::Number,
                )
            },
        ]
    };
    if filtered {
        for (p, _, _) in string_filters(domain) {
            out.push(spec(*p, string_filter_doc(p), ValueKind::Strings));
        }
        for (p, _) in numeric_filters(domain) {
            out.extend(numeric_specs(p, p, false));
        }
        if domain == Domain::Llm {
            out.push(spec(
                "stability",
                "Stable runs (default), unstable ones, or all.",
                ValueKind::Choice(vec!["stable".into(), "unstable".into(), "all".into()]),
            ));
        }
    }
    match endpoint {
        Endpoint::List => out.extend([
            spec(
                "sort",
                "Sort keys, comma-separated; `-field` for descending. Nulls sort last; the default order breaks ties.",
                ValueKind::SortKeys(names()),
            ),
            spec(
                "limit",
                format!("Page size (default: every matching run, up to the server's maximum, {DEFAULT_MAX_ROWS} unless --max-rows says otherwise)."),
                ValueKind::Count(DEFAULT_MAX_ROWS as u64),
            ),
            spec("offset", "Rows to skip.", ValueKind::Count(MAX_OFFSET)),
            spec(
                "fields",
                "Fields to return, comma-separated; run_id always comes first.",
                ValueKind::FieldList(names()),
            ),
        ]),
        Endpoint::Group => out.extend([
            spec(
                "by",
                "Fields to group by, comma-separated; none: one group.",
                ValueKind::FieldList(names()),
            ),
            spec(
                "agg",
                "Aggregates, comma-separated: `func(field)`, or `func` alone for every numeric field, with func one of count, min, max, mean, median, sum, argmin, argmax (fields numeric except for count).",
                ValueKind::Aggregates {
                    fields: names(),
                    numeric: numeric(),
                },
            ),
        ]),
        Endpoint::One => out.push(spec(
            "fields",
            "Fields to return, comma-separated; run_id always comes first.",
            ValueKind::FieldList(names()),
        )),
        Endpoint::Sweep => out.extend([
            spec(
                "y",
                format!(
                    "Numeric fields to fit against log2 of the batch size (repeat or comma-separate; default {}).",
                    crate::engine::models::sweep::default_ys(domain).join(", ")
                ),
                ValueKind::NumericFields(numeric()),
            ),
            spec(
                "by",
                "Fields to group the runs by, comma-separated (default model_id, task, gpu_model, num_gpus).",
                ValueKind::FieldList(names()),
            ),
            spec(
                "predict",
                "Batch sizes to predict every fitted field at, comma-separated (each > 0).",
                ValueKind::PositiveNumbers,
            ),
        ]),
        Endpoint::Pareto => out.extend([
            spec(
                "x",
                format!(
                    "The latency field (numeric; lower is better). Default: {}.",
                    both_defaults(default_latency)
                ),
                ValueKind::NumericField(numeric()),
            ),
            spec(
                "y",
                format!(
                    "The energy field (numeric; lower is better). Default: {}.",
                    both_defaults(default_energy)
                ),
                ValueKind::NumericField(numeric()),
            ),
            spec(
                "per",
                "Fields whose values each get a frontier of their own, comma-separated (e.g. model_id); default: one frontier.",
                ValueKind::FieldList(names()),
            ),
            spec(
                "fields",
                "Fields to return, comma-separated; run_id always comes first.",
                ValueKind::FieldList(names()),
            ),
        ]),
        Endpoint::SweepChart => out.push(spec(
            "y",
            format!(
                "The numeric field drawn against the batch size. Default: {}.",
                both_defaults(default_energy)
            ),
            ValueKind::NumericField(numeric()),
        )),
        Endpoint::Chart(_) => unreachable!("answered above"),
        Endpoint::Best => out.extend([
            spec(
                "deadline",
                "Largest latency allowed, inclusive, in the latency field's unit. Default when one task is filtered and the latency is the leaderboard's (an ITL in ms for LLM runs, batch_latency_s for diffusion): the leaderboard's for that task, 500 ms for LLM and MLLM tasks, 30 s for text-to-image, 300 s for text-to-video; else no deadline.",
                ValueKind::NonNegative,
            ),
            spec(
                "latency",
                format!(
                    "The latency field (numeric). Default: {}.",
                    both_defaults(default_latency)
                ),
                ValueKind::NumericField(numeric()),
            ),
            spec(
                "energy_budget",
                "Largest energy allowed, inclusive, in the energy field's unit. Default: no limit.",
                ValueKind::NonNegative,
            ),
            spec(
                "energy",
                format!(
                    "The energy field minimised (numeric). Default: {}.",
                    both_defaults(default_energy)
                ),
                ValueKind::NumericField(numeric()),
            ),
            spec(
                "per",
                "Fields the choice is made per, comma-separated (default model_id; empty: the one best run).",
                ValueKind::FieldList(names()),
            ),
            spec(
                "fields",
                "Fields to return, comma-separated; run_id always comes first.",
                ValueKind::FieldList(names()),
            ),
        ]),
        Endpoint::Plan => {
            out.extend(parameter_specs(domain, Endpoint::Predict).into_iter().filter(|s| s.name != "format").map(|mut s| {
                match s.name.as_str() {
                    "task" => s.description = "Task(s) the workload is like, comma-separated (default: the tasks the model was measured on).".into(),
                    "num_gpus" => s.description = "GPU counts a replica may use, comma-separated (default 1, 2, 4, 8).".into(),
                    "max_num_seqs" => s.description = "Batch sizes considered, comma-separated (default: every batch size of the snapshot's runs).".into(),
                    "gpu_model" => s.description = "GPU models allowed, comma-separated (default: every GPU model of the snapshot).".into(),
                    _ => {}
                }
                s
            }));
            out.extend([
                spec("output_tokens_per_s", "The workload: output tokens a second, averaged over the day (or requests_per_day with output_length).", ValueKind::Number),
                spec("requests_per_day", "The workload: requests a day (with output_length).", ValueKind::Number),
                spec("output_length", "Output tokens per request (with requests_per_day).", ValueKind::Number),
                spec("median_itl_ms_max", "Largest median inter-token latency allowed, in ms (predicted or measured).", ValueKind::Number),
                spec("p90_itl_ms_max", "Largest 90th-percentile inter-token latency allowed, in ms (predicted or measured).", ValueKind::Number),
                spec("pue", "Power usage effectiveness multiplying GPU energy, at least 1 (default 1: GPU energy only).", ValueKind::Number),
                spec("grid", "Grid carbon intensity of this ISO 3166-1 alpha-3 country code or Ember region (e.g. USA, FRA, EU, WORLD), from Ember's yearly averages embedded; not with gco2_per_kwh.", ValueKind::Strings),
                spec("gco2_per_kwh", "Grid carbon intensity, gCO2e/kWh (0 or more); not with grid.", ValueKind::Number),
                spec("price_per_kwh", "Electricity price per kWh (0 or more), in any currency: cost_per_day is in the same one.", ValueKind::Number),
            ]);
        }
        Endpoint::Predict => {
            let batch = match domain {
                Domain::Llm => "max_num_seqs",
                Domain::Diffusion => "batch_size",
            };
            out.extend([
                spec(
                    "model_id",
                    "The model: one of the snapshot's (its parameters, architecture and precision are known; its measured sweeps are interpolated), or a name of your own with its parameters.",
                    ValueKind::Strings,
                ),
                spec(
                    "total_params_billions",
                    "Total parameters, in billions (> 0); required for a model not in the snapshot.",
                    ValueKind::Number,
                ),
                spec(
                    "activated_params_billions",
                    "Parameters active per token, in billions (> 0, at most the total; default: the total).",
                    ValueKind::Number,
                ),
            ]);
            if domain == Domain::Llm {
                out.push(spec(
                    "architecture",
                    "Architecture, as the run field (default: MoE when fewer parameters are active than there are, else Dense Transformer).",
                    ValueKind::Strings,
                ));
            }
            out.extend([
                spec(
                    "weight_precision",
                    "Weight precision, as the run field (default: the model's, else bfloat16).",
                    ValueKind::Strings,
                ),
                spec(
                    "task",
                    "Task(s), comma-separated (default: the tasks the model was measured on).",
                    ValueKind::Strings,
                ),
                spec(
                    "gpu_model",
                    "GPU model(s), comma-separated (default: every GPU model of the snapshot).",
                    ValueKind::Strings,
                ),
                spec(
                    "num_gpus",
                    "GPU counts, comma-separated (default: the model's measured counts, else 1, 2, 4, 8).",
                    ValueKind::PositiveNumbers,
                ),
                spec(
                    batch,
                    "Batch sizes, comma-separated (default: the model's measured ones, else the snapshot's common ones).",
                    ValueKind::PositiveNumbers,
                ),
            ]);
        }
        Endpoint::PredictQuality => {}
        Endpoint::RawMany(extra) | Endpoint::RawOne(extra) => {
            for e in extra {
                out.push(match *e {
                    "max_samples" => spec(
                        *e,
                        format!(
                            "Samples to fit to, drawn at random without replacement (seeded) when a run has more; `all` fits every sample (default {DEFAULT_MAX_SAMPLES})."
                        ),
                        ValueKind::CountOrAll,
                    ),
                    "seed" => spec(
                        *e,
                        "Seed of the subsampling (default 0).",
                        ValueKind::Count(MAX_OFFSET),
                    ),
                    "include_unsuccessful" => spec(
                        *e,
                        "Also failed requests that carry an output_len (0 in v3).",
                        ValueKind::Flag,
                    ),
                    "summary" => spec(
                        *e,
                        "One row per run of count, mean_s, p50_s, p90_s, p95_s, p99_s, max_s and a 50-bin histogram instead of the samples.",
                        ValueKind::Flag,
                    ),
                    "per_gpu" => spec(
                        *e,
                        "Wide form: a column per GPU and the total.",
                        ValueKind::Flag,
                    ),
                    "metric" => spec(
                        *e,
                        "power.device_instant (default), power.device_average or temperature.",
                        ValueKind::Choice(Metric::NAMES.iter().map(|m| m.to_string()).collect()),
                    ),
                    "every" => spec(
                        *e,
                        "Downsample: one row per bucket of this duration (e.g. 1s, 500ms, 2m) with the mean of each column.",
                        ValueKind::Duration,
                    ),
                    other => spec(other, "", ValueKind::Strings),
                });
            }
        }
    }
    out.push(spec(
        "format",
        "json (default), csv, ndjson, arrow or parquet; overrides Accept.",
        ValueKind::Choice(Format::ALL.iter().map(|f| f.name().to_string()).collect()),
    ));
    if filtered {
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
                out.extend(numeric_specs(p, a, true));
            }
        }
    }
    out
}

/// The leaderboard's latency field of a domain: the median ITL, the batch latency.
pub fn default_latency(domain: Domain) -> &'static str {
    match domain {
        Domain::Llm => "median_itl_ms",
        Domain::Diffusion => "batch_latency_s",
    }
}

/// The leaderboard's energy field of a domain: per token, per generation.
pub fn default_energy(domain: Domain) -> &'static str {
    match domain {
        Domain::Llm => "energy_per_token_joules",
        Domain::Diffusion => "energy_per_generation_joules",
    }
}

/// `f`'s value for each domain, as a parameter's documentation states a default.
fn both_defaults(f: fn(Domain) -> &'static str) -> String {
    format!(
        "{} (llm), {} (diffusion)",
        f(Domain::Llm),
        f(Domain::Diffusion)
    )
}

/// The leaderboard's default deadline for `task` in the unit of `latency`, when the latency is
/// the leaderboard's kind for the domain (an ITL in ms, the batch latency in s): 500 ms for every
/// LLM and MLLM task (the frontend treats a task it does not know as one), 30 s for
/// text-to-image, 300 s for text-to-video.
pub fn default_deadline(domain: Domain, task: &str, latency: &str) -> Option<f64> {
    match domain {
        Domain::Llm if latency.ends_with("_itl_ms") => Some(500.0),
        Domain::Diffusion if latency == "batch_latency_s" => match task {
            "text-to-image" => Some(30.0),
            "text-to-video" => Some(300.0),
            _ => None,
        },
        _ => None,
    }
}

/// Every parameter an endpoint accepts for a domain (canonical names, then aliases).
pub fn allowed_parameters(domain: Domain, endpoint: Endpoint) -> Vec<String> {
    parameter_specs(domain, endpoint)
        .into_iter()
        .map(|s| s.name)
        .collect()
}

/// The parameters an endpoint accepts: in the document's order (a refusal lists them so), and as a
/// set (each name of each request is looked up in it).
struct Allowed {
    names: Vec<String>,
    set: std::collections::HashSet<String>,
}

/// `allowed_parameters`, made once per (domain, endpoint): every request checks its names.
fn allowed_once(domain: Domain, endpoint: Endpoint) -> std::sync::Arc<Allowed> {
    use std::collections::HashMap;
    use std::sync::{Arc, LazyLock, RwLock};
    type Made = HashMap<(Domain, Endpoint), Arc<Allowed>>;
    static MADE: LazyLock<RwLock<Made>> = LazyLock::new(Default::default);
    if let Some(a) = MADE.read().expect("not poisoned").get(&(domain, endpoint)) {
        return a.clone();
    }
    let names = allowed_parameters(domain, endpoint);
    let a = Arc::new(Allowed {
        set: names.iter().cloned().collect(),
        names,
    });
    MADE.write()
        .expect("not poisoned")
        .insert((domain, endpoint), a.clone());
    a
}

/// The field a filter parameter (an alias, or a `_min`/`_max` bound) filters on; `None` for
/// parameters that are not filters.
pub fn filtered_field(domain: Domain, param: &str) -> Option<&'static str> {
    if param == "stability" {
        return (domain == Domain::Llm).then_some("is_stable");
    }
    let canon = canonical(domain, param)?;
    let base = canon
        .strip_suffix("_min")
        .or_else(|| canon.strip_suffix("_max"))
        .unwrap_or(&canon);
    string_filters(domain)
        .iter()
        .find(|(p, _, _)| *p == base)
        .map(|(_, field, _)| *field)
        .or_else(|| {
            numeric_filters(domain)
                .iter()
                .find(|(p, _)| *p == base)
                .map(|(p, _)| *p)
        })
}

/// Parsed query string: canonical parameter name → values (comma-split, in order).
pub struct Params {
    values: BTreeMap<String, Vec<String>>,
    /// The name each canonical parameter was given as (for messages).
    given_as: BTreeMap<String, String>,
    /// Parameters with an item of white space alone.
    blank: BTreeSet<String>,
}

pub fn canonical(domain: Domain, name: &str) -> Option<String> {
    for (p, _, aliases) in string_filters(domain) {
        if name == *p || aliases.contains(&name) {
            return Some(p.to_string());
        }
    }
    // Compared in place, without building `{filter}{suffix}`: every parameter of every request
    // is looked up here, and most are no filter.
    for (p, aliases) in numeric_filters(domain) {
        for suffix in ["", "_min", "_max"] {
            if let Some(stem) = name.strip_suffix(suffix)
                && (stem == *p || aliases.contains(&stem))
            {
                return Some(format!("{p}{suffix}"));
            }
        }
    }
    None
}

impl Params {
    /// Split and validate parameter names for `endpoint`.
    pub fn parse(
        domain: Domain,
        endpoint: Endpoint,
        query: Option<&str>,
    ) -> Result<Params, AppError> {
        let allowed = allowed_once(domain, endpoint);
        let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut given_as = BTreeMap::new();
        let mut blank = BTreeSet::new();
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            if !allowed.set.contains(k.as_ref()) {
                return Err(AppError::UnknownParameter {
                    parameter: k.into_owned(),
                    allowed: allowed.names.clone(),
                });
            }
            let key = canonical(domain, &k).unwrap_or_else(|| k.to_string());
            // The name a parameter was first given as, kept only when it is not the canonical one
            // (`name` falls back to the key).
            if k != key.as_str() && !values.contains_key(&key) {
                given_as.insert(key.clone(), k.to_string());
            }
            // An item of white space alone (` `, U+0085) is no empty item: a list parameter
            // refuses it (an empty one is skipped, as the document says).
            if v.split(',').any(|s| !s.is_empty() && s.trim().is_empty()) {
                blank.insert(key.clone());
            }
            let entry: &mut Vec<String> = values.entry(key).or_default();
            entry.extend(v.split(',').map(|s| s.trim().to_string()));
        }
        Ok(Params {
            values,
            given_as,
            blank,
        })
    }

    fn name(&self, key: &str) -> String {
        self.given_as
            .get(key)
            .cloned()
            .unwrap_or_else(|| key.to_string())
    }

    /// The one value of a single-valued parameter.
    fn single(&self, key: &str) -> Result<Option<&str>, AppError> {
        match self.values.get(key).map(Vec::as_slice) {
            None => Ok(None),
            Some([v]) => Ok(Some(v.as_str())),
            Some(_) => Err(AppError::InvalidParameter {
                parameter: self.name(key),
                detail: format!("parameter '{}' takes a single value", self.name(key)),
                allowed: None,
            }),
        }
    }

    /// The value of a single-valued parameter, if given.
    pub fn single_value(&self, key: &str) -> Result<Option<&str>, AppError> {
        self.single(key)
    }

    /// The items of a list parameter (empty items skipped), if given; an item of white space
    /// alone is refused.
    pub fn items(&self, key: &str) -> Result<Option<Vec<&str>>, AppError> {
        if self.blank.contains(key) {
            return Err(AppError::InvalidParameter {
                parameter: self.name(key),
                detail: format!(
                    "parameter '{}' has an item of white space alone",
                    self.name(key)
                ),
                allowed: None,
            });
        }
        Ok(self.values.get(key).map(|v| {
            v.iter()
                .map(String::as_str)
                .filter(|s| !s.is_empty())
                .collect()
        }))
    }

    /// A single number greater than 0 named by `key`, if given.
    pub fn positive(&self, key: &str) -> Result<Option<f64>, AppError> {
        let Some(v) = self.single(key)? else {
            return Ok(None);
        };
        let x = self.number(key, v)?;
        if x <= 0.0 {
            return Err(AppError::InvalidParameter {
                parameter: self.name(key),
                detail: format!(
                    "parameter '{}' must be greater than 0, got '{v}'",
                    self.name(key)
                ),
                allowed: None,
            });
        }
        Ok(Some(x))
    }

    /// Numbers greater than 0, comma-separated, named by `key`, if given.
    pub fn positives(&self, key: &str) -> Result<Option<Vec<f64>>, AppError> {
        let Some(items) = self.items(key)? else {
            return Ok(None);
        };
        let mut out = Vec::new();
        for v in items {
            let x = self.number(key, v)?;
            if x <= 0.0 {
                return Err(AppError::InvalidParameter {
                    parameter: self.name(key),
                    detail: format!(
                        "parameter '{}' takes numbers greater than 0, got '{v}'",
                        self.name(key)
                    ),
                    allowed: None,
                });
            }
            out.push(x);
        }
        Ok(Some(out))
    }

    pub fn format(&self) -> Result<Option<&str>, AppError> {
        self.single("format")
    }

    fn number(&self, key: &str, v: &str) -> Result<f64, AppError> {
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(AppError::InvalidParameter {
                parameter: self.name(key),
                detail: format!("parameter '{}' must be a number, got '{v}'", self.name(key)),
                allowed: None,
            }),
        }
    }

    fn count(&self, key: &str) -> Result<Option<usize>, AppError> {
        self.single(key)?
            .map(|v| {
                v.parse::<usize>().map_err(|_| AppError::InvalidParameter {
                    parameter: self.name(key),
                    detail: format!(
                        "parameter '{}' must be a non-negative integer, got '{v}'",
                        self.name(key)
                    ),
                    allowed: None,
                })
            })
            .transpose()
    }

    /// `count`, refused above `max` ("<name> N is above the maximum of <max><unit>").
    fn count_at_most(&self, key: &str, max: u64, unit: &str) -> Result<Option<usize>, AppError> {
        match self.count(key)? {
            Some(n) if n as u64 > max => Err(AppError::InvalidParameter {
                parameter: self.name(key),
                detail: format!("{} {n} is above the maximum of {max}{unit}", self.name(key)),
                allowed: None,
            }),
            n => Ok(n),
        }
    }

    /// Filters and stability shared by the list and group endpoints.
    fn filters(&self, domain: Domain) -> Result<(Vec<Filter>, Stability), AppError> {
        let mut filters = Vec::new();
        for (p, field, _) in string_filters(domain) {
            if let Some(vals) = self.values.get(*p) {
                filters.push(Filter::OneOf {
                    field: field.to_string(),
                    values: vals.clone(),
                });
            }
        }
        for (p, _) in numeric_filters(domain) {
            // Most requests name few filters: one none of whose parameters (`p`, `p_min`,
            // `p_max`, all sorted from `p` on) is given is passed before its bounds are named.
            let from_p = (std::ops::Bound::Included(*p), std::ops::Bound::Unbounded);
            let mut named = self.values.range::<str, _>(from_p);
            if !named.next().is_some_and(|(k, _)| k.starts_with(*p)) {
                continue;
            }
            let (min_key, max_key) = (format!("{p}_min"), format!("{p}_max"));
            let exact = self.values.get(*p);
            let (min, max) = (self.single(&min_key)?, self.single(&max_key)?);
            if exact.is_some() && (min.is_some() || max.is_some()) {
                let range = if min.is_some() { &min_key } else { &max_key };
                return Err(AppError::InvalidParameter {
                    parameter: self.name(p),
                    detail: format!(
                        "'{}' (exact values) cannot be combined with '{}' (a range); use one or the other",
                        self.name(p),
                        self.name(range)
                    ),
                    allowed: None,
                });
            }
            if let Some(vals) = exact {
                let nums = vals
                    .iter()
                    .map(|v| self.number(p, v))
                    .collect::<Result<Vec<_>, _>>()?;
                filters.push(Filter::NumOneOf {
                    field: p.to_string(),
                    values: nums,
                });
            } else if min.is_some() || max.is_some() {
                filters.push(Filter::Range {
                    field: p.to_string(),
                    min: min.map(|v| self.number(&min_key, v)).transpose()?,
                    max: max.map(|v| self.number(&max_key, v)).transpose()?,
                });
            }
        }
        let stability = match self.single("stability")? {
            None | Some("stable") => Stability::Stable,
            Some("unstable") => Stability::Unstable,
            Some("all") => Stability::All,
            Some(other) => {
                return Err(AppError::InvalidParameter {
                    parameter: "stability".into(),
                    detail: format!("unknown stability '{other}'"),
                    allowed: Some(vec!["stable".into(), "unstable".into(), "all".into()]),
                });
            }
        };
        Ok((filters, stability))
    }

    /// A list of field names, each checked against the table.
    fn field_list(&self, key: &str, table: &RunTable) -> Result<Option<Vec<String>>, AppError> {
        let Some(vals) = self.values.get(key) else {
            return Ok(None);
        };
        if self.blank.contains(key) {
            return Err(self.blank_item(key, table.field_names()));
        }
        let names: Vec<String> = vals.iter().filter(|v| !v.is_empty()).cloned().collect();
        for n in &names {
            if table.field_index(n).is_none() {
                return Err(AppError::UnknownField {
                    parameter: key.into(),
                    field: n.clone(),
                    allowed: table.field_names(),
                });
            }
        }
        Ok(Some(names))
    }

    /// The refusal of a list parameter with a blank item, naming what it takes.
    fn blank_item(&self, key: &str, allowed: Vec<String>) -> AppError {
        let name = self.name(key);
        AppError::InvalidParameter {
            parameter: name.clone(),
            detail: format!(
                "parameter '{name}' has an empty item (or one of white space alone): give its items separated by commas"
            ),
            allowed: Some(allowed),
        }
    }

    /// A boolean flag (`true`/`false`/`1`/`0`), false when absent.
    pub fn flag(&self, key: &str) -> Result<bool, AppError> {
        match self.single(key)? {
            None => Ok(false),
            Some("true" | "1") => Ok(true),
            Some("false" | "0") => Ok(false),
            Some(other) => Err(AppError::InvalidParameter {
                parameter: key.into(),
                detail: format!("parameter '{key}' is a boolean, got '{other}'"),
                allowed: Some(vec!["true".into(), "false".into()]),
            }),
        }
    }

    /// The sweep-fit question: the run filters, `by` (default model_id, task, gpu_model,
    /// num_gpus), the fields `y` (numeric; default per domain), and `predict` (positive).
    pub fn sweep_query(&self, domain: Domain, table: &RunTable) -> Result<SweepQuery, AppError> {
        use crate::engine::models::sweep::{DEFAULT_BY, default_ys};
        let (filters, stability) = self.filters(domain)?;
        let by = self
            .field_list("by", table)?
            .unwrap_or_else(|| DEFAULT_BY.iter().map(|s| s.to_string()).collect());
        let ys = match self.field_list("y", table)? {
            Some(ys) if !ys.is_empty() => ys,
            _ => default_ys(domain).iter().map(|s| s.to_string()).collect(),
        };
        for y in &ys {
            let i = table.field_index(y).expect("checked by field_list");
            if !table.fields[i].ty.is_numeric() {
                return Err(AppError::InvalidParameter {
                    parameter: "y".into(),
                    detail: format!("field '{y}' is not numeric"),
                    allowed: Some(table.numeric_field_names()),
                });
            }
        }
        let mut predict = Vec::new();
        for v in self
            .values
            .get("predict")
            .into_iter()
            .flatten()
            .filter(|v| !v.is_empty())
        {
            let b = self.number("predict", v)?;
            if b <= 0.0 {
                return Err(AppError::InvalidParameter {
                    parameter: "predict".into(),
                    detail: format!("batch size {v} is not positive"),
                    allowed: None,
                });
            }
            predict.push(b);
        }
        Ok(SweepQuery {
            by,
            ys,
            filters,
            stability,
            predict,
        })
    }

    /// A single numeric field named by `key`, or `default`.
    fn numeric_field(
        &self,
        key: &str,
        table: &RunTable,
        default: &str,
    ) -> Result<String, AppError> {
        let Some(name) = self.single(key)? else {
            return Ok(default.to_string());
        };
        match table.field_index(name) {
            Some(i) if table.fields[i].ty.is_numeric() => Ok(name.to_string()),
            Some(_) => Err(AppError::InvalidParameter {
                parameter: key.into(),
                detail: format!("field '{name}' is not numeric"),
                allowed: Some(table.numeric_field_names()),
            }),
            None => Err(AppError::UnknownField {
                parameter: key.into(),
                field: name.into(),
                allowed: table.numeric_field_names(),
            }),
        }
    }

    /// A number of 0 or more named by `key`, if given.
    fn non_negative(&self, key: &str) -> Result<Option<f64>, AppError> {
        let Some(v) = self.single(key)? else {
            return Ok(None);
        };
        let x = self.number(key, v)?;
        if x < 0.0 {
            return Err(AppError::InvalidParameter {
                parameter: key.into(),
                detail: format!("parameter '{key}' must be 0 or more, got '{v}'"),
                allowed: None,
            });
        }
        Ok(Some(x))
    }

    /// The Pareto question: the run filters, `x` and `y` (default the leaderboard's latency and
    /// energy fields), `per` (default none).
    pub fn pareto_query(
        &self,
        domain: Domain,
        table: &RunTable,
    ) -> Result<(RunQuery, FrontierQuery), AppError> {
        let q = FrontierQuery {
            x: self.numeric_field("x", table, default_latency(domain))?,
            y: self.numeric_field("y", table, default_energy(domain))?,
            per: self.field_list("per", table)?.unwrap_or_default(),
        };
        Ok((self.run_filters(domain)?, q))
    }

    /// The field a sweep chart draws (`y`, default the leaderboard's energy field).
    pub fn chart_y(&self, domain: Domain, table: &RunTable) -> Result<String, AppError> {
        self.numeric_field("y", table, default_energy(domain))
    }

    /// The energy-optimal question: the run filters, `latency` and `energy` (default the
    /// leaderboard's), `deadline` (default: the leaderboard's for a single filtered task),
    /// `energy_budget` (default none), `per` (default model_id).
    pub fn best_query(
        &self,
        domain: Domain,
        table: &RunTable,
    ) -> Result<(RunQuery, BestQuery), AppError> {
        let latency = self.numeric_field("latency", table, default_latency(domain))?;
        let deadline = match self.non_negative("deadline")? {
            Some(d) => Some(d),
            None => match self.values.get("task").map(Vec::as_slice) {
                Some([task]) => default_deadline(domain, task, &latency),
                _ => None,
            },
        };
        let q = BestQuery {
            energy: self.numeric_field("energy", table, default_energy(domain))?,
            latency,
            deadline,
            energy_budget: self.non_negative("energy_budget")?,
            per: self
                .field_list("per", table)?
                .unwrap_or_else(|| vec!["model_id".to_string()]),
        };
        Ok((self.run_filters(domain)?, q))
    }

    /// `max_samples`: `None` for `all`, else a positive count (default `DEFAULT_MAX_SAMPLES`).
    pub fn max_samples(&self) -> Result<Option<usize>, AppError> {
        match self.single("max_samples")? {
            None => Ok(Some(DEFAULT_MAX_SAMPLES)),
            Some("all") => Ok(None),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(AppError::InvalidParameter {
                    parameter: "max_samples".into(),
                    detail: format!("max_samples must be a positive integer or 'all', got '{v}'"),
                    allowed: None,
                }),
            },
        }
    }

    /// `seed` (default 0).
    pub fn seed(&self) -> Result<u64, AppError> {
        // The document's bound: integers a JSON client (a browser's double) holds exactly.
        Ok(self.count_at_most("seed", MAX_OFFSET, "")?.unwrap_or(0) as u64)
    }

    /// A hint per string filter value that matches no run of `table` (the answer is still what
    /// the filter selects: nothing for that value): `gpu_model 'h100' matches no run; did you
    /// mean 'H100'?`. An empty value, which matches nothing by definition, gets none.
    pub fn filter_warnings(&self, domain: Domain, table: &RunTable) -> Vec<String> {
        let mut out = Vec::new();
        for (p, field, _) in string_filters(domain) {
            let Some(vals) = self.values.get(*p) else {
                continue;
            };
            let Some(col) = table.field_index(field) else {
                continue;
            };
            let data = table.column(col);
            let value = |r: usize| match data.get(r) {
                crate::engine::frame::Value::Str(s) => Some(s),
                _ => None,
            };
            // A value that matches (the usual case) is found by a scan that stops at its first
            // run; the sorted list of known values is made only for one that does not.
            let mut known: Vec<&str> = Vec::new();
            for v in vals {
                if v.is_empty() || (0..table.len()).any(|r| value(r) == Some(v.as_str())) {
                    continue;
                }
                if known.is_empty() {
                    known = (0..table.len()).filter_map(value).collect();
                    known.sort_unstable();
                    known.dedup();
                }
                let name = self.name(p);
                out.push(match suggestion(v, &known) {
                    Some(s) => format!("{name} '{v}' matches no run; did you mean '{s}'?"),
                    None => format!("{name} '{v}' matches no run"),
                });
            }
        }
        out
    }

    /// Filters and stability alone (raw-derived collections).
    pub fn run_filters(&self, domain: Domain) -> Result<RunQuery, AppError> {
        let (filters, stability) = self.filters(domain)?;
        Ok(RunQuery {
            filters,
            stability,
            ..Default::default()
        })
    }

    pub fn fields(&self, table: &RunTable) -> Result<Option<Vec<String>>, AppError> {
        self.field_list("fields", table)
    }

    pub fn run_query(
        &self,
        domain: Domain,
        table: &RunTable,
        max_rows: usize,
    ) -> Result<RunQuery, AppError> {
        let (filters, stability) = self.filters(domain)?;
        let mut sort = Vec::new();
        for key in self
            .values
            .get("sort")
            .into_iter()
            .flatten()
            .filter(|k| !k.is_empty())
        {
            let (field, descending) = match key.strip_prefix('-') {
                Some(f) => (f, true),
                None => (key.strip_prefix('+').unwrap_or(key), false),
            };
            if table.field_index(field).is_none() {
                return Err(AppError::UnknownField {
                    parameter: "sort".into(),
                    field: field.into(),
                    allowed: table.field_names(),
                });
            }
            sort.push(SortKey {
                field: field.into(),
                descending,
            });
        }
        let limit = self.count_at_most("limit", max_rows as u64, " rows per response")?;
        Ok(RunQuery {
            filters,
            stability,
            sort,
            offset: self.count_at_most("offset", MAX_OFFSET, "")?.unwrap_or(0),
            limit,
            fields: self.fields(table)?,
        })
    }

    pub fn group_query(&self, domain: Domain, table: &RunTable) -> Result<GroupQuery, AppError> {
        let (filters, stability) = self.filters(domain)?;
        let by = self.field_list("by", table)?.unwrap_or_default();
        // An aggregate list has no empty item: `agg=` and `agg=count,` are refused.
        let agg_blank = self.blank.contains("agg")
            || self
                .values
                .get("agg")
                .is_some_and(|v| v.iter().any(String::is_empty));
        if agg_blank {
            return Err(self.blank_item(
                "agg",
                AggFunc::NAMES.iter().map(|n| n.to_string()).collect(),
            ));
        }
        let mut aggs = Vec::new();
        for a in self
            .values
            .get("agg")
            .into_iter()
            .flatten()
            .filter(|a| !a.is_empty())
        {
            aggs.push(parse_agg(a, table)?);
        }
        Ok(GroupQuery {
            by,
            aggs,
            filters,
            stability,
        })
    }
}

/// `func` or `func(field)`.
fn parse_agg(s: &str, table: &RunTable) -> Result<AggSpec, AppError> {
    let (func_name, field) = match s.split_once('(') {
        Some((f, rest)) => match rest.strip_suffix(')') {
            Some(field) => (f.trim(), Some(field.trim().to_string())),
            None => {
                return Err(AppError::InvalidParameter {
                    parameter: "agg".into(),
                    detail: format!(
                        "cannot read aggregate '{s}': write func or func(field), e.g. mean(energy_per_token_joules)"
                    ),
                    allowed: None,
                });
            }
        },
        None => (s, None),
    };
    let func: AggFunc = func_name.parse().map_err(|_| AppError::InvalidParameter {
        parameter: "agg".into(),
        detail: format!("unknown aggregate function '{func_name}'"),
        allowed: Some(AggFunc::NAMES.iter().map(|n| n.to_string()).collect()),
    })?;
    if let Some(f) = &field {
        let Some(i) = table.field_index(f) else {
            return Err(AppError::UnknownField {
                parameter: "agg".into(),
                field: f.clone(),
                allowed: table.field_names(),
            });
        };
        if func != AggFunc::Count && !table.fields[i].ty.is_numeric() {
            return Err(AppError::InvalidParameter {
                parameter: "agg".into(),
                detail: format!("{func_name}({f}) needs a numeric field"),
                allowed: Some(table.numeric_field_names()),
            });
        }
    }
    Ok(AggSpec { func, field })
}

/// The known value a mistyped one most likely meant: the same but for case, else the closest by
/// edit distance when the distance is small for the value's length (at most 2, and under a third
/// of it).
pub fn suggestion<'a>(value: &str, known: &[&'a str]) -> Option<&'a str> {
    let lower = value.to_lowercase();
    if let Some(k) = known.iter().find(|k| k.to_lowercase() == lower) {
        return Some(k);
    }
    let limit = 2.min(value.chars().count().div_ceil(3));
    known
        .iter()
        .map(|k| (strsim::levenshtein(&lower, &k.to_lowercase()), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name is a filter's canonical name when it is the filter or one of its aliases, with
    /// `_min`, `_max` or nothing after it (numeric filters); nothing else is.
    #[test]
    fn names_and_aliases_become_canonical() {
        for domain in [Domain::Llm, Domain::Diffusion] {
            for (p, aliases) in numeric_filters(domain) {
                for suffix in ["", "_min", "_max"] {
                    for given in std::iter::once(p).chain(aliases.iter()) {
                        assert_eq!(
                            canonical(domain, &format!("{given}{suffix}")),
                            Some(format!("{p}{suffix}"))
                        );
                    }
                }
            }
            for (p, _, aliases) in string_filters(domain) {
                for given in std::iter::once(p).chain(aliases.iter()) {
                    assert_eq!(canonical(domain, given), Some(p.to_string()));
                }
            }
        }
        assert_eq!(
            canonical(Domain::Llm, "batch_max"),
            Some("max_num_seqs_max".into())
        );
        assert_eq!(
            canonical(Domain::Diffusion, "batch"),
            Some("batch_size".into())
        );
        for other in [
            "",
            "_min",
            "num_gpus_",
            "num_gpus_mi",
            "num_gpus_maxx",
            "xnum_gpus",
            "num_gpu_min",
            "batch_min_max",
            "task_min",
            "gpu_max",
            "limit",
            "sort",
            "max_num_seqs_mid",
        ] {
            assert_eq!(canonical(Domain::Llm, other), None, "{other}");
        }
        assert_eq!(canonical(Domain::Diffusion, "max_num_seqs"), None);
    }

    /// Parameters are checked against the endpoint's set; an unknown one is refused with the
    /// whole list, in the document's order.
    #[test]
    fn unknown_parameters_are_refused_with_the_allowed_list() {
        let p = Params::parse(
            Domain::Llm,
            Endpoint::List,
            Some("batch_min=8&gpu=B200,H100&limit=5"),
        )
        .unwrap();
        assert_eq!(p.single_value("max_num_seqs_min").unwrap(), Some("8"));
        assert_eq!(p.items("gpu_model").unwrap(), Some(vec!["B200", "H100"]));
        assert_eq!(p.name("gpu_model"), "gpu");
        match Params::parse(Domain::Llm, Endpoint::List, Some("limit=5&colour=red")) {
            Err(AppError::UnknownParameter { parameter, allowed }) => {
                assert_eq!(parameter, "colour");
                assert_eq!(allowed, allowed_parameters(Domain::Llm, Endpoint::List));
                assert!(allowed.iter().any(|a| a == "max_num_seqs_min"));
            }
            _ => panic!("colour is no parameter of the list"),
        }
    }
}
