"""The records' fields, in the toolkit's declaration order (mlenergy-data 0.4.0; the server's
`/v1/{domain}/fields` lists the same names), and which server parameter filters each."""

from __future__ import annotations

LLM_FIELDS: tuple[str, ...] = (
    "domain", "task", "model_id", "nickname", "architecture", "total_params_billions",
    "activated_params_billions", "weight_precision", "gpu_model", "num_gpus", "max_num_seqs", "seed",
    "num_request_repeats", "tensor_parallel", "expert_parallel", "data_parallel",
    "steady_state_energy_joules", "steady_state_duration_seconds", "energy_per_token_joules",
    "energy_per_request_joules", "output_throughput_tokens_per_sec", "request_throughput_req_per_sec",
    "avg_power_watts", "total_output_tokens", "completed_requests", "avg_output_len", "mean_itl_ms",
    "median_itl_ms", "p50_itl_ms", "p90_itl_ms", "p95_itl_ms", "p99_itl_ms", "avg_batch_size",
    "is_stable", "unstable_reason",
)
LLM_PATHS: tuple[str, ...] = ("results_path", "prometheus_path")

DIFFUSION_FIELDS: tuple[str, ...] = (
    "domain", "task", "model_id", "nickname", "total_params_billions", "activated_params_billions",
    "weight_precision", "gpu_model", "num_gpus", "batch_size", "inference_steps", "height", "width",
    "num_frames", "fps", "ulysses_degree", "ring_degree", "use_torch_compile", "batch_latency_s",
    "avg_power_watts", "energy_per_generation_joules", "throughput_generations_per_sec",
)
DIFFUSION_PATHS: tuple[str, ...] = ("results_path",)

# Field -> the server's query parameter for it. Numeric ones also take `<param>_min`/`<param>_max`.
STRING_PARAMS = {
    "run_id": "run_id",
    "task": "task",
    "model_id": "model_id",
    "gpu_model": "gpu_model",
    "nickname": "nickname",
    "weight_precision": "precision",
    "architecture": "architecture",
}
NUMERIC_PARAMS = {"num_gpus": "num_gpus", "max_num_seqs": "max_num_seqs", "batch_size": "batch_size"}

# The columns each bulk frame keeps of a run besides its values (the toolkit's order).
LLM_KEYS = ("task", "model_id", "num_gpus", "max_num_seqs")
DIFFUSION_KEYS = ("task", "model_id", "num_gpus", "batch_size")

# Fields the toolkit declares `int | None`. Loaded from a parquet file (from_parquet, from_directory,
# from_hf), pandas turns such a column into floats when the file holds a null in it, so the toolkit's
# records carry 81.0 where a raw load carries 81; the client gives what the toolkit gives for the
# server's kind of source.
NULLABLE_INTS = {
    "llm": ("seed", "num_request_repeats"),
    "diffusion": ("inference_steps", "num_frames", "fps", "ulysses_degree", "ring_degree"),
}
