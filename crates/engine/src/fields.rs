//! The field catalog: every column of the published run tables, in the published order, with its
//! type, unit and meaning. Everything else (parquet loading, filters, sorting, OpenAPI schemas,
//! `GET /v1/{domain}/fields`) is driven from these two tables, so a column is described once.

use serde::Serialize;

use super::domain::Domain;

/// Logical type of a field, as published (`string`, `int64`, `double`, `bool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    String,
    Int64,
    Double,
    Bool,
}

impl FieldType {
    /// The Arrow type SQL sees the field as.
    pub fn sql_type(self) -> &'static str {
        match self {
            FieldType::String => "Utf8",
            FieldType::Int64 => "Int64",
            FieldType::Double => "Float64",
            FieldType::Bool => "Boolean",
        }
    }

    /// Whether min/max/mean/median/sum and range filters apply.
    pub fn is_numeric(self) -> bool {
        matches!(self, FieldType::Int64 | FieldType::Double)
    }
}

/// One column of a run table.
#[derive(Debug, Clone, Copy)]
pub struct FieldSpec {
    pub name: &'static str,
    pub ty: FieldType,
    pub unit: Option<&'static str>,
    /// May hold null in the published data.
    pub nullable: bool,
    pub description: &'static str,
}

const fn f(
    name: &'static str,
    ty: FieldType,
    unit: Option<&'static str>,
    nullable: bool,
    description: &'static str,
) -> FieldSpec {
    FieldSpec {
        name,
        ty,
        unit,
        nullable,
        description,
    }
}

use FieldType::{Bool, Double, Int64, String as Str};

/// The synthetic key column that precedes the published columns in every representation.
pub const RUN_ID: FieldSpec = f(
    "run_id",
    Str,
    None,
    false,
    "Stable, URL-safe run identifier derived from the natural key (docs/http-api.md, 'Run ids').",
);

/// `runs/llm.parquet`: the 35 `LLMRun` fields in dataclass order, then the two path columns.
pub const LLM_FIELDS: &[FieldSpec] = &[
    f(
        "domain",
        Str,
        None,
        false,
        "Always \"llm\" (text and multimodal chat tasks).",
    ),
    f(
        "task",
        Str,
        None,
        false,
        "Benchmark task: gpqa, lm-arena-chat, sourcegraph-fim, image-chat, video-chat.",
    ),
    f(
        "model_id",
        Str,
        None,
        false,
        "Hugging Face model id, \"<org>/<model>\".",
    ),
    f("nickname", Str, None, false, "Human-readable model name."),
    f(
        "architecture",
        Str,
        None,
        false,
        "Model architecture (\"Dense Transformer\", \"MoE\", \"Mamba-Transformer Hybrid\").",
    ),
    f(
        "total_params_billions",
        Double,
        Some("billion parameters"),
        false,
        "Total parameter count.",
    ),
    f(
        "activated_params_billions",
        Double,
        Some("billion parameters"),
        false,
        "Parameters active per token (equals the total for dense models).",
    ),
    f(
        "weight_precision",
        Str,
        None,
        false,
        "Weight precision (bfloat16, fp8, mxfp4).",
    ),
    f(
        "gpu_model",
        Str,
        None,
        false,
        "GPU SKU, upper case (H100, B200).",
    ),
    f(
        "num_gpus",
        Int64,
        Some("GPUs"),
        false,
        "Number of GPUs serving the model.",
    ),
    f(
        "max_num_seqs",
        Int64,
        Some("sequences"),
        false,
        "Configured maximum batch size (vLLM max_num_seqs).",
    ),
    f(
        "seed",
        Int64,
        None,
        true,
        "Dataset sampling seed from the run directory name.",
    ),
    f(
        "num_request_repeats",
        Int64,
        None,
        true,
        "How many times the request set was repeated.",
    ),
    f(
        "tensor_parallel",
        Int64,
        None,
        false,
        "Tensor-parallel degree.",
    ),
    f(
        "expert_parallel",
        Int64,
        None,
        false,
        "Expert-parallel degree (1 when expert parallelism is off).",
    ),
    f("data_parallel", Int64, None, false, "Data-parallel degree."),
    f(
        "steady_state_energy_joules",
        Double,
        Some("J"),
        true,
        "GPU energy over the steady-state window, summed over all GPUs.",
    ),
    f(
        "steady_state_duration_seconds",
        Double,
        Some("s"),
        true,
        "Length of the steady-state window.",
    ),
    f(
        "energy_per_token_joules",
        Double,
        Some("J/token"),
        false,
        "Steady-state GPU energy per output token.",
    ),
    f(
        "energy_per_request_joules",
        Double,
        Some("J/request"),
        true,
        "energy_per_token_joules x avg_output_len.",
    ),
    f(
        "output_throughput_tokens_per_sec",
        Double,
        Some("tokens/s"),
        false,
        "Steady-state output token throughput.",
    ),
    f(
        "request_throughput_req_per_sec",
        Double,
        Some("requests/s"),
        true,
        "output_throughput_tokens_per_sec / avg_output_len.",
    ),
    f(
        "avg_power_watts",
        Double,
        Some("W"),
        false,
        "Steady-state energy / duration: total power over all GPUs.",
    ),
    f(
        "total_output_tokens",
        Double,
        Some("tokens"),
        true,
        "Output tokens of all successful requests.",
    ),
    f(
        "completed_requests",
        Double,
        Some("requests"),
        true,
        "Number of successful requests.",
    ),
    f(
        "avg_output_len",
        Double,
        Some("tokens"),
        true,
        "total_output_tokens / completed_requests.",
    ),
    f(
        "mean_itl_ms",
        Double,
        Some("ms"),
        true,
        "Mean inter-token latency (chunked-prefill smoothed).",
    ),
    f(
        "median_itl_ms",
        Double,
        Some("ms"),
        true,
        "Median inter-token latency (equals p50_itl_ms).",
    ),
    f(
        "p50_itl_ms",
        Double,
        Some("ms"),
        true,
        "50th percentile inter-token latency (numpy linear).",
    ),
    f(
        "p90_itl_ms",
        Double,
        Some("ms"),
        true,
        "90th percentile inter-token latency.",
    ),
    f(
        "p95_itl_ms",
        Double,
        Some("ms"),
        true,
        "95th percentile inter-token latency.",
    ),
    f(
        "p99_itl_ms",
        Double,
        Some("ms"),
        true,
        "99th percentile inter-token latency.",
    ),
    f(
        "avg_batch_size",
        Double,
        Some("sequences"),
        true,
        "Mean running batch size in the steady state (vllm:num_requests_running).",
    ),
    f(
        "is_stable",
        Bool,
        None,
        false,
        "Whether the run passed the stability checks.",
    ),
    f(
        "unstable_reason",
        Str,
        None,
        false,
        "Empty if stable, else the reason code (e.g. low_batch_utilization:0.500000).",
    ),
    f(
        "results_path",
        Str,
        None,
        true,
        "Path of the raw results.json, relative to the dataset root.",
    ),
    f(
        "prometheus_path",
        Str,
        None,
        true,
        "Path of the raw prometheus.json, relative to the dataset root.",
    ),
];

/// `runs/diffusion.parquet`: the 22 `DiffusionRun` fields in dataclass order, then the path column.
pub const DIFFUSION_FIELDS: &[FieldSpec] = &[
    f("domain", Str, None, false, "Always \"diffusion\"."),
    f(
        "task",
        Str,
        None,
        false,
        "Benchmark task: text-to-image or text-to-video.",
    ),
    f(
        "model_id",
        Str,
        None,
        false,
        "Hugging Face model id, \"<org>/<model>\".",
    ),
    f("nickname", Str, None, false, "Human-readable model name."),
    f(
        "total_params_billions",
        Double,
        Some("billion parameters"),
        false,
        "Total parameter count.",
    ),
    f(
        "activated_params_billions",
        Double,
        Some("billion parameters"),
        false,
        "Active parameter count.",
    ),
    f(
        "weight_precision",
        Str,
        None,
        false,
        "Weight precision (bfloat16 for every v3 run).",
    ),
    f(
        "gpu_model",
        Str,
        None,
        false,
        "GPU SKU, upper case (H100, B200).",
    ),
    f(
        "num_gpus",
        Int64,
        Some("GPUs"),
        false,
        "ulysses_degree x ring_degree.",
    ),
    f(
        "batch_size",
        Int64,
        Some("generations"),
        false,
        "Generations per batch.",
    ),
    f(
        "inference_steps",
        Int64,
        Some("steps"),
        true,
        "Denoising steps.",
    ),
    f(
        "height",
        Int64,
        Some("px"),
        false,
        "Output height (0 when the run directory has no size).",
    ),
    f(
        "width",
        Int64,
        Some("px"),
        false,
        "Output width (0 when the run directory has no size).",
    ),
    f(
        "num_frames",
        Int64,
        Some("frames"),
        true,
        "Frames per video (text-to-video only).",
    ),
    f(
        "fps",
        Int64,
        Some("frames/s"),
        true,
        "Video frame rate (text-to-video only).",
    ),
    f(
        "ulysses_degree",
        Int64,
        None,
        true,
        "Ulysses sequence-parallel degree.",
    ),
    f(
        "ring_degree",
        Int64,
        None,
        true,
        "Ring-attention parallel degree.",
    ),
    f(
        "use_torch_compile",
        Bool,
        None,
        true,
        "Whether torch.compile was used.",
    ),
    f(
        "batch_latency_s",
        Double,
        Some("s"),
        false,
        "Mean time per batch.",
    ),
    f(
        "avg_power_watts",
        Double,
        Some("W"),
        false,
        "Mean batch energy / mean batch latency, total over all GPUs.",
    ),
    f(
        "energy_per_generation_joules",
        Double,
        Some("J/generation"),
        false,
        "Mean batch energy / batch_size.",
    ),
    f(
        "throughput_generations_per_sec",
        Double,
        Some("generations/s"),
        false,
        "batch_size / batch_latency_s.",
    ),
    f(
        "results_path",
        Str,
        None,
        true,
        "Path of the raw results.json, relative to the dataset root.",
    ),
];

/// The energy rating (`rating`), computed when the table is built: not a published column.
pub const ENERGY_RATING: FieldSpec = f(
    "energy_rating",
    Int64,
    Some("stars"),
    true,
    "1 to 5 stars as AI Energy Score rates energy: five equal bands of the energy range (per output token for LLM runs, per generation for diffusion) of the runs of the task, LLM runs within their size class (A up to 20 B total parameters, B up to 66 B, C above); 5 is the lowest band. Null for unstable LLM runs.",
);

/// The columns a run table computes after the published ones.
pub fn derived_fields(_domain: Domain) -> &'static [FieldSpec] {
    &[ENERGY_RATING]
}

/// The published columns of a domain (without `run_id`).
pub fn published_fields(domain: Domain) -> &'static [FieldSpec] {
    match domain {
        Domain::Llm => LLM_FIELDS,
        Domain::Diffusion => DIFFUSION_FIELDS,
    }
}

/// The fields the toolkit sorts loaded collections by (docs/toolkit.md §5.6).
pub fn default_sort_keys(domain: Domain) -> &'static [&'static str] {
    match domain {
        Domain::Llm => &["task", "model_id", "gpu_model", "num_gpus", "max_num_seqs"],
        Domain::Diffusion => &["task", "model_id", "gpu_model", "num_gpus", "batch_size"],
    }
}
