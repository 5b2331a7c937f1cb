"""Small raw benchmark trees in the real layout (docs/raw-format.md §1-§5), for conformance tests.

Each helper writes one run directory (results.json, optionally prometheus.json) and the config
files its row needs. Values are chosen per test case; request lists are generated from a seeded
random generator so ITL statistics are non-trivial.
"""

import json
import random
from pathlib import Path


def _write_json(path: Path, obj, indent: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=indent))


def llm_config(cfg: Path, task: str, model_id: str, sku: str, *, model_info: dict | None = None,
               monolithic: str | None = None) -> None:
    org, model = model_id.split("/")
    info = model_info if model_info is not None else {
        "nickname": f"{model} nick", "total_parameters_billion": 8.0, "active_parameters_billion": 8.0,
        "architecture": "Dense Transformer", "weight_precision": "bfloat16",
    }
    _write_json(cfg / task / org / model / "model_info.json", info)
    mono = monolithic if monolithic is not None else "tensor-parallel-size: 1\nenable-expert-parallel: false\n"
    p = cfg / task / org / model / sku / "monolithic.config.yaml"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(mono)


def requests(rng: random.Random, n: int, *, failed: int = 0, chunky: bool = True,
             tokens: tuple[int, int] = (2, 40)) -> list[dict]:
    out = []
    for i in range(n):
        if i < failed:
            out.append({"success": False, "itl": [], "output_len": 0, "error": "timeout"})
            continue
        length = rng.randint(*tokens)
        itl = []
        for _ in range(length):
            if chunky and rng.random() < 0.2:
                itl.append(0.0)
            else:
                itl.append(rng.uniform(0.005, 0.08))
        out.append({"success": True, "itl": itl, "output_len": length, "prompt_len": rng.randint(10, 500)})
    return out


def llm_run(root: Path, *, gpu: str = "h100", sku: str = "H100", suite: str = "llm", task: str = "gpqa",
            model_id: str = "org/model-a", num_gpus="1", max_num_seqs="16", repeats="1", seed="48105",
            results: dict | None = None, prometheus: dict | None = None, n_requests: int = 30,
            failed: int = 0, rng_seed: int = 0, dirname: str | None = None,
            tokens: tuple[int, int] = (2, 40), indent: int | None = None, **overrides) -> Path:
    org, model = model_id.split("/")
    cfg_name = dirname or (
        f"num_gpus+{num_gpus}+max_num_seqs+{max_num_seqs}+num_request_repeats+{repeats}"
        f"+dataset_split+train+num_requests+1024+seed+{seed}"
    )
    d = root / "llm" / gpu / "current" / "run" / suite / task / "results" / org / model / sku / cfg_name
    rng = random.Random(rng_seed)
    reqs = requests(rng, n_requests, failed=failed, tokens=tokens)
    completed = sum(1 for r in reqs if r["success"])
    body = {
        "model_id": model_id,
        "completed": completed,
        "total_output_tokens": sum(r["output_len"] for r in reqs if r["success"]),
        "steady_state_energy": 200.0 + rng_seed,
        "steady_state_duration": 30.0 + rng_seed / 7,
        "steady_state_energy_per_token": 0.2 + rng_seed / 1000,
        "output_throughput": 20.0,
        "timeline": {"steady_state_start_time": 1.0, "steady_state_end_time": 2.0},
        "results": reqs,
    }
    body.update(overrides)
    if results is not None:
        body = results
    _write_json(d / "results.json", body, indent)
    if prometheus is not None:
        _write_json(d / "prometheus.json", prometheus)
    return d


def prom(avg_batch) -> dict:
    return {"steady_state_stats": {"vllm:num_requests_running": avg_batch, "vllm:kv_cache_usage_perc": 0.4}}


def diffusion_config(cfg: Path, task: str, model_id: str, *, model_info: dict | None = None) -> None:
    org, model = model_id.split("/")
    info = model_info if model_info is not None else {
        "nickname": f"{model} nick", "total_parameters_billion": 12.0, "active_parameters_billion": 12.0,
        "weight_precision": "bfloat16",
    }
    _write_json(cfg / task / org / model / "model_info.json", info)


def diffusion_run(root: Path, *, gpu: str = "h100", task: str = "text-to-image", model_id: str = "org/diff-a",
                  cfg_name: str = "batch-1+size-1024x1024+steps-20+seed-48105+uly-1+ring-1+tc-False",
                  iterations: list | None = None, video: bool = False, rng_seed: int = 0, **extra) -> Path:
    org, model = model_id.split("/")
    d = root / "diffusion" / gpu / "current" / "run" / "diffusion" / task / org / model / cfg_name
    rng = random.Random(rng_seed)
    its = iterations if iterations is not None else [
        {"time": rng.uniform(1.0, 3.0), "gpu_energy": {str(g): rng.uniform(100, 900) for g in range(2)}}
        for _ in range(5)
    ]
    body = {"model": model_id, "batch_size": 1, "iteration_energy_measurements": its}
    if video:
        body.update({"num_frames": 81, "fps": 15})
    body.update(extra)
    _write_json(d / "results.json", body)
    return d


def timeline(rng: random.Random, n_gpus: int, start: float, end: float, *, steady: tuple[float, float] | None = None) -> dict:
    """A timeline in the harness's shape: power polled every 0.1 s and temperature every 0.5 s,
    one timestamp shared by all GPUs per poll, a sample emitted only when the value changed (so
    GPUs' series are misaligned and of different lengths), plus a stray off-axis sample."""
    def series(period, value, integer=False):
        out = {}
        for g in range(n_gpus):
            pts, prev, k = [], None, 0
            while True:
                t = round(start + k * period, 6)
                if t > end:
                    break
                v = value(g)
                if integer:
                    v = int(v)
                if v != prev and rng.random() > 0.25:
                    pts.append([t, v])
                    prev = v
                k += 1
            if g == n_gpus - 1 and n_gpus > 1:
                pts.append([round(start + 0.05, 6), value(g)])
                pts.sort()
            out[str(g)] = pts
        return out

    body = {
        "benchmark_start_time": start,
        "benchmark_end_time": end,
        "power": {
            "device_instant": series(0.1, lambda g: round(rng.uniform(300, 700), 3)),
            "device_average": series(0.1, lambda g: round(rng.uniform(350, 650), 3)),
            "memory_average": series(0.1, lambda g: round(rng.uniform(50, 90), 3)),
        },
        "temperature": series(0.5, lambda g: rng.uniform(40, 80), integer=True),
    }
    if steady:
        body["steady_state_start_time"], body["steady_state_end_time"] = steady
    return body
