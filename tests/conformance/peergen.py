"""Small result trees of peer energy-measurement tools, and the values the measurement import must
serve for them (issue 18).

Layouts follow the peer tools' real files (shared spec `peer-formats.md`: §1 LLM Energy Measure v1
and v2, §2 IPW single-turn profiles and agentic runs). Primitives (timestamps, energies, tokens,
latency samples, per-query records) are drawn from seeded generators; the expected canonical
values are then computed here, independently of the server, from the files as written, by the
rules of the import contract (`/tmp/peer/contract.md`, "canonical values"): plain Python sums and
means, numpy's default (linear) percentiles, scipy's exact t quantile for repeat statistics.

Every generator writes one layout under a root and returns {(source_kind, local_id): expectation}:

    {"columns": {run column: value}   # only the columns the contract fixes for that source
     "warnings_contain": [str]        # substrings (case-insensitive) the run's warnings must hold
     "requests": [{...}], "turns": [{...}]   # expected rows, where meaningful (no run_id)
     "timeseries_rows": int}          # LEM v2 timeseries.parquet rows

    python3 tests/conformance/peergen.py OUT_DIR            # every layout + OUT_DIR/expected.json
    python3 tests/conformance/peergen.py --bench N_LEM N_IPW QUERIES OUT_DIR   # a large set
"""

import argparse
import json
import math
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# --------------------------------------------------------------------------------------------
# Shared helpers

BASE_TIME = datetime(2026, 1, 12, 9, 0, 0, 137)

# The contract's MFU peaks (dense BF16 TFLOPS) by normalised hardware; "H100 PCIe" is 756.
PEAK_TFLOPS = {"H100": 989.5, "H200": 989.5, "B200": 2250.0, "A100": 312.0, "L40S": 183.0,
               "RTX4090": 165.2, "MI300X": 1307.4}

# LEM's hard-coded t table (§1.5): 1.96 for every other n.
LEM_T = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447, 8: 2.365, 9: 2.306, 10: 2.262}


def _write_json(path: Path, obj, indent: int | None = 2) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=indent))


def _iso(dt: datetime) -> str:
    """pydantic's rendering of a naive datetime (microseconds shown when non-zero)."""
    return dt.isoformat()


def _parse(s: str) -> datetime:
    return datetime.fromisoformat(s)


def _mean(xs):
    return sum(xs) / len(xs) if xs else None


def _pct(xs, q):
    return float(np.percentile(np.asarray(xs, dtype=float), q)) if len(xs) else None


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def _finite(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def hardware(name: str | None) -> str | None:
    """The contract's normalised hardware name: first matching substring, else the raw name."""
    if name is None:
        return None
    for key, norm in (("H100", "H100"), ("B200", "B200"), ("H200", "H200"), ("A100", "A100"),
                      ("L40S", "L40S"), ("4090", "RTX4090"), ("MI300X", "MI300X")):
        if key in name:
            return norm
    return name


def peak_tflops(raw_name: str) -> float | None:
    hw = hardware(raw_name)
    if hw == "H100" and "PCIE" in raw_name.upper():
        return 756.0
    return PEAK_TFLOPS.get(hw)


def expectation(columns: dict, *, warnings_contain=(), **extra) -> dict:
    return {"columns": columns, "warnings_contain": list(warnings_contain), **extra}


def exact_repeat_stats(values: list[float]) -> dict:
    """Repeat statistics with the exact t quantile t(0.975, n-1) (the service's rule)."""
    from scipy import stats

    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in values) / (n - 1))
    sem = std / math.sqrt(n)
    t = float(stats.t.ppf(0.975, n - 1))
    return {"n": n, "mean": mean, "std": std, "sem": sem, "t": t, "ci95_lo": mean - t * sem,
            "ci95_hi": mean + t * sem, "cv": std / abs(mean) if mean != 0 else 0.0,
            "min": min(values), "max": max(values)}


# --------------------------------------------------------------------------------------------
# LLM Energy Measure v1 (§1.2-§1.5)

def lem_config(model="meta-llama/Llama-3.1-8B-Instruct", backend="pytorch", *, dataset="ai_energy_score",
               sample_size=100, batch_size=8, max_num_seqs=None, num_input_prompts=100, gpus=(0,)) -> dict:
    """An `effective_config` (ExperimentConfig, §1.7); `dataset=None` drops the dataset block."""
    cfg = {
        "config_name": f"{model.split('/')[-1].lower()}-{backend}",
        "model_name": model, "adapter": None, "max_input_tokens": 512, "max_output_tokens": 128,
        "min_output_tokens": 0, "num_input_prompts": num_input_prompts,
        "gpus": list(gpus), "fp_precision": "bfloat16",
        "decoder": {"temperature": 0.0, "do_sample": False, "top_k": 50, "top_p": 1.0,
                    "repetition_penalty": 1.0, "preset": "deterministic"},
        "traffic_simulation": {"enabled": False, "mode": "constant", "target_qps": 1.0, "seed": 42},
        "streaming": True, "streaming_warmup_requests": 5, "backend": backend,
        "io": {"results_dir": "results"}, "cycle_id": None, "num_cycles": 1, "query_rate": 1.0,
        "random_seed": 42, "extra_metadata": {},
    }
    if dataset is not None:
        cfg["dataset"] = {"name": dataset, "sample_size": sample_size, "split": "train", "column": "text"}
    if batch_size is not None:
        cfg["batching"] = {"batch_size": batch_size, "strategy": "static"}
    if backend == "vllm":
        cfg["vllm"] = {"max_num_seqs": max_num_seqs, "gpu_memory_utilization": 0.9} if max_num_seqs else {}
    return cfg


def lem_latency(rng: np.random.Generator, n_requests: int, out_lens: list[int]) -> dict:
    """`latency_measurements`: per-request TTFT, every inter-token interval, and the trimmed ones
    (first and last interval of a request dropped when it has at least 3)."""
    ttft = np.round(rng.uniform(15.0, 250.0, n_requests), 3).tolist()
    full, trimmed = [], []
    for length in out_lens:
        iv = np.round(rng.uniform(4.0, 45.0, max(length - 1, 0)), 3).tolist()
        full += iv
        trimmed += iv[1:-1] if len(iv) >= 3 else iv
    return {"ttft_ms": ttft, "itl_full_ms": full, "itl_trimmed_ms": trimmed, "request_count": n_requests,
            "total_output_tokens": sum(out_lens), "excluded_tokens": 2 * n_requests, "streaming_mode": True,
            "warmup_requests_excluded": 5, "measurement_mode": "true_streaming"}


def lem_process(rng: np.random.Generator, exp_id: str, k: int, config: dict, *, start: datetime, duration: float,
                gpu_id: int, gpu_name: str = "NVIDIA H100 80GB HBM3", n_requests: int = 12,
                out_tokens: tuple[int, int] = (6, 40), params_b: float = 8.0) -> dict:
    """One RawProcessResult (§1.3) with consistent primitives."""
    backend = config["backend"]
    out_lens = rng.integers(out_tokens[0], out_tokens[1] + 1, n_requests).tolist()
    in_lens = rng.integers(20, 300, n_requests).tolist()
    lat = lem_latency(rng, n_requests, out_lens)
    end = start + timedelta(microseconds=round(duration * 1e6))
    dur = (end - start).total_seconds()
    inference_time = round(dur * float(rng.uniform(0.85, 0.97)), 4)
    out_tok, in_tok = sum(out_lens), sum(in_lens)
    tps = out_tok / inference_time
    gpu_w, cpu_w, ram_w = (float(x) for x in (rng.uniform(220, 520), rng.uniform(25, 70), rng.uniform(6, 14)))
    gpu_j, cpu_j, ram_j = round(gpu_w * dur, 4), round(cpu_w * dur, 4), round(ram_w * dur, 4)
    total_j = gpu_j + cpu_j + ram_j
    flops = 2.0 * params_b * 1e9 * (in_tok + out_tok)
    return {
        "schema_version": "2.0.0", "experiment_id": exp_id, "backend": backend,
        "backend_version": "0.6.3" if backend == "vllm" else "2.5.1",
        "process_index": k, "gpu_id": gpu_id, "gpu_name": gpu_name, "gpu_is_mig": False, "gpu_mig_profile": None,
        "energy_measurement_warning": None, "energy_tracking_failed": False,
        "config_name": config["config_name"], "model_name": config["model_name"],
        "timestamps": {"start": _iso(start), "end": _iso(end), "duration_sec": dur},
        "inference_metrics": {
            "total_tokens": in_tok + out_tok, "input_tokens": in_tok, "output_tokens": out_tok,
            "inference_time_sec": inference_time, "tokens_per_second": tps, "latency_per_token_ms": 1000.0 / tps,
            "time_to_first_token_ms": sum(lat["ttft_ms"]) / n_requests, "latency_measurements": lat,
        },
        "energy_metrics": {
            "total_energy_j": total_j, "gpu_energy_j": gpu_j, "cpu_energy_j": cpu_j, "ram_energy_j": ram_j,
            "gpu_power_w": round(gpu_w, 3), "cpu_power_w": round(cpu_w, 3), "duration_sec": dur,
            "emissions_kg_co2": total_j / 3.6e6 * 0.4, "energy_per_token_j": 0.0,  # the trap (§1.8 4.)
        },
        "compute_metrics": {
            "flops_total": flops, "flops_per_token": 2.0 * params_b * 1e9, "flops_per_second": flops / inference_time,
            "peak_memory_mb": round(float(rng.uniform(17000, 21000)), 1), "model_memory_mb": 16060.5,
            "flops_method": "architecture", "flops_confidence": "medium", "compute_precision": "bf16",
        },
        "effective_config": config, "cli_overrides": {}, "config_warnings": [],
        "parameter_provenance": {"model_name": {"value": config["model_name"], "source": "config_file",
                                                "source_detail": "config.yaml"}},
        "preset_chain": [], "cycle_run_info": None,
    }


def fail_energy(proc: dict) -> None:
    """energy_tracking_failed: the energy block holds zero placeholders."""
    proc["energy_tracking_failed"] = True
    proc["energy_measurement_warning"] = "CodeCarbon tracker failed to start"
    em = proc["energy_metrics"]
    for key in ("total_energy_j", "gpu_energy_j", "cpu_energy_j", "ram_energy_j", "gpu_power_w", "cpu_power_w",
                "emissions_kg_co2"):
        em[key] = 0.0


def _windows(procs):
    return [(_parse(p["timestamps"]["start"]), _parse(p["timestamps"]["end"])) for p in procs]


def _overlap_ok(procs) -> bool:
    """Temporal overlap (§1.4): the common window is positive and >= half the shortest process."""
    w = _windows(procs)
    common = (min(e for _, e in w) - max(s for s, _ in w)).total_seconds()
    shortest = min((e - s).total_seconds() for s, e in w)
    return common > 0 and common >= 0.5 * shortest


def lem_aggregate(exp_id: str, procs: list[dict]) -> dict:
    """An AggregatedResult (§1.4), built the way LEM's late aggregation does."""
    n = len(procs)
    ttft = [x for p in procs for x in (p["inference_metrics"].get("latency_measurements") or {}).get("ttft_ms", [])]
    itl = [x for p in procs for x in (p["inference_metrics"].get("latency_measurements") or {}).get("itl_trimmed_ms", [])]
    full = [x for p in procs for x in (p["inference_metrics"].get("latency_measurements") or {}).get("itl_full_ms", [])]
    stats = None
    if ttft:
        a, b, c = np.asarray(ttft), np.asarray(itl), np.asarray(full)
        stats = {
            "ttft_mean_ms": float(a.mean()), "ttft_median_ms": float(np.median(a)),
            "ttft_p95_ms": float(np.percentile(a, 95)), "ttft_p99_ms": float(np.percentile(a, 99)),
            "ttft_min_ms": float(a.min()), "ttft_max_ms": float(a.max()), "ttft_samples": len(a),
            "itl_mean_ms": float(b.mean()), "itl_median_ms": float(np.median(b)),
            "itl_p95_ms": float(np.percentile(b, 95)), "itl_p99_ms": float(np.percentile(b, 99)),
            "itl_samples": len(b), "itl_full_mean_ms": float(c.mean()), "itl_full_p99_ms": float(np.percentile(c, 99)),
        }
    w = _windows(procs)
    gpu_ids = [p["gpu_id"] for p in procs]
    total_tokens = sum(p["inference_metrics"]["total_tokens"] for p in procs)
    total_energy = sum(p["energy_metrics"]["total_energy_j"] for p in procs)
    first = procs[0]
    return {
        "schema_version": "2.0.0", "experiment_id": exp_id, "backend": first["backend"],
        "backend_version": first["backend_version"],
        "aggregation": {"method": "sum_energy_avg_throughput", "num_processes": n,
                        "temporal_overlap_verified": _overlap_ok(procs),
                        "gpu_attribution_verified": len(set(gpu_ids)) == len(gpu_ids), "warnings": []},
        "total_tokens": total_tokens, "total_energy_j": total_energy,
        "total_inference_time_sec": sum(p["inference_metrics"]["inference_time_sec"] for p in procs),
        "avg_tokens_per_second": sum(p["inference_metrics"]["tokens_per_second"] for p in procs) / n,
        "avg_energy_per_token_j": total_energy / total_tokens if total_tokens else 0.0,
        "total_flops": sum((p.get("compute_metrics") or {}).get("flops_total", 0.0) for p in procs),
        "process_results": procs,
        "start_time": _iso(min(s for s, _ in w)), "end_time": _iso(max(e for _, e in w)),
        "effective_config": first["effective_config"], "cli_overrides": {}, "config_warnings": [],
        "parameter_provenance": first["parameter_provenance"], "preset_chain": [],
        "latency_stats": stats, "energy_tracking_failed": any(p["energy_tracking_failed"] for p in procs),
    }


def write_lem_experiment(results: Path, exp_id: str, procs: list[dict], *, aggregated: bool = True,
                         raw: bool = False, markers: set[int] | None = None) -> dict:
    """Writes aggregated/<id>.json and/or raw/<id>/process_<k>.json (+ .completed_<k> for `markers`,
    default every process); returns the aggregate."""
    agg = lem_aggregate(exp_id, procs)
    if aggregated:
        _write_json(results / "aggregated" / f"{exp_id}.json", agg)
    if raw:
        for p in procs:
            k = p["process_index"]
            _write_json(results / "raw" / exp_id / f"process_{k}.json", p)
            if markers is None or k in markers:
                (results / "raw" / exp_id / f".completed_{k}").write_text("")
    return agg


def lem_v1_expected(exp_id: str, procs: list[dict], agg: dict | None = None, *, warnings_contain=()) -> dict:
    """The contract's LEM v1 run columns, from the process results as written (and the aggregate,
    for its latency_stats fallback)."""
    cfg = (agg or procs[0]).get("effective_config") or {}
    m = re.fullmatch(r"(.*)_c(\d+)", exp_id)
    base, repeat = (m.group(1), int(m.group(2))) if m else (exp_id, None)
    failed = any(p.get("energy_tracking_failed") for p in procs)
    gpu_ids = [p["gpu_id"] for p in procs]
    starts = [p["timestamps"]["start"] for p in procs]
    ends = [p["timestamps"]["end"] for p in procs]
    t0, t1 = min(starts, key=_parse), max(ends, key=_parse)
    window_s = max(p["timestamps"]["duration_sec"] for p in procs)
    num_gpus = len(set(gpu_ids))

    if cfg.get("backend", procs[0]["backend"]) == "vllm" and (cfg.get("vllm") or {}).get("max_num_seqs") is not None:
        batch = (cfg["vllm"]["max_num_seqs"], "max_num_seqs")
    elif (cfg.get("batching") or {}).get("batch_size") is not None:
        batch = (cfg["batching"]["batch_size"], "static_batch_size")
    else:
        batch = (None, "static_batch_size")

    def esum(key):
        vals = [p["energy_metrics"][key] for p in procs if p["energy_metrics"].get(key) is not None]
        return sum(vals) if vals else None

    gpu, cpu, ram, total = esum("gpu_energy_j"), esum("cpu_energy_j"), esum("ram_energy_j"), esum("total_energy_j")
    all_gpu = all((p["energy_metrics"].get("gpu_energy_j") or 0) > 0 for p in procs)
    energy, scope = (gpu, "gpu") if all_gpu else (total, "gpu_cpu_ram")
    if all_gpu:
        avg_power = sum(p["energy_metrics"]["gpu_power_w"] for p in procs)
    else:
        avg_power = energy / window_s
    if failed:
        gpu = cpu = ram = total = energy = None

    lms = [p["inference_metrics"].get("latency_measurements") for p in procs]
    if all(lm is not None and lm.get("request_count") is not None for lm in lms):
        requests = sum(lm["request_count"] for lm in lms)
    elif (cfg.get("dataset") or {}).get("sample_size") is not None:
        requests = cfg["dataset"]["sample_size"]
    else:
        requests = cfg.get("num_input_prompts")

    out_tok = sum(p["inference_metrics"]["output_tokens"] for p in procs)
    in_tok = sum(p["inference_metrics"]["input_tokens"] for p in procs)
    tps_pp = sum(p["inference_metrics"]["tokens_per_second"] for p in procs) / len(procs)

    lat = {}
    if any(lm is not None for lm in lms):
        ttft = [x for lm in lms if lm for x in lm["ttft_ms"]]
        itl = [x for lm in lms if lm for x in lm["itl_trimmed_ms"]]
        for name, xs in (("ttft", ttft), ("itl", itl)):
            lat[f"{name}_mean_s"] = _mean(xs) / 1000 if xs else None
            for q in (50, 95, 99):
                lat[f"{name}_p{q}_s"] = _pct(xs, q) / 1000 if xs else None
    elif agg is not None and agg.get("latency_stats"):
        ls = agg["latency_stats"]
        for name in ("ttft", "itl"):
            lat[f"{name}_mean_s"] = ls[f"{name}_mean_ms"] / 1000
            lat[f"{name}_p50_s"] = ls[f"{name}_median_ms"] / 1000
            lat[f"{name}_p95_s"] = ls[f"{name}_p95_ms"] / 1000
            lat[f"{name}_p99_s"] = ls[f"{name}_p99_ms"] / 1000
    else:
        lat = {f"{n}_{s}_s": None for n in ("ttft", "itl") for s in ("mean", "p50", "p95", "p99")}

    flops_vals = [p["compute_metrics"]["flops_total"] for p in procs
                  if (p.get("compute_metrics") or {}).get("flops_total") is not None]
    flops = sum(flops_vals) if flops_vals else None
    peak = peak_tflops(procs[0]["gpu_name"])
    mfu = flops / window_s / (num_gpus * peak * 1e12) if flops and peak else None

    cols = {
        "source_kind": "lem_v1", "local_id": exp_id, "experiment_id": base, "repeat_index": repeat,
        "model": cfg.get("model_name", procs[0].get("model_name")), "hardware": hardware(procs[0]["gpu_name"]),
        "hardware_raw": procs[0]["gpu_name"], "num_gpus": num_gpus, "task": (cfg.get("dataset") or {}).get("name"),
        "workload_kind": "single_turn", "engine": procs[0]["backend"], "batch_value": batch[0],
        "batch_semantics": batch[1], "started_at": t0, "ended_at": t1,
        "wall_s": (_parse(t1) - _parse(t0)).total_seconds(),
        "energy_j": energy, "window": "inference_only", "window_s": window_s, "attribution": "measured",
        "token_basis": "output", "gpu_energy_j": gpu, "cpu_energy_j": cpu, "ram_energy_j": ram,
        "soc_energy_j": None, "gpu_cpu_ram_energy_j": total, "baseline_power_w": None, "adjusted_energy_j": None,
        "requests": requests, "requests_completed": requests, "input_tokens": in_tok, "output_tokens": out_tok,
        "energy_per_output_token_j": _ratio(energy, out_tok), "tokens_per_joule": _ratio(out_tok, energy),
        "energy_per_request_j": _ratio(energy, requests), "output_tps": tps_pp * len(procs),
        "output_tps_per_process": tps_pp, **lat, "flops": flops, "mfu": mfu,
        "accuracy": None, "ipj": None, "ipw": None,
        "is_stable": _overlap_ok(procs) and len(set(gpu_ids)) == len(gpu_ids) and not failed,
    }
    if not failed:
        cols["energy_scope"] = scope
        cols["avg_power_w"] = avg_power
    # With a failed process the contract nulls the energies but fixes neither the scope nor the
    # average power (Σ gpu_power_w would hold a placeholder): not asserted.
    warn = list(warnings_contain)
    if failed:
        warn.append("energy_tracking_failed")
    if any(p.get("gpu_is_mig") for p in procs):
        warn.append("MIG")
    return expectation(cols, warnings_contain=warn)


def _lem_procs(rng, exp_id, config, n, *, start, gpu_name="NVIDIA H100 80GB HBM3", gpu_ids=None,
               durations=None, offsets=None, n_requests=12, **kw):
    gpu_ids = gpu_ids if gpu_ids is not None else list(range(n))
    durations = durations or [float(rng.uniform(40, 60)) for _ in range(n)]
    offsets = offsets or [float(rng.uniform(0, 1.5)) for _ in range(n)]
    return [lem_process(rng, exp_id, k, config, start=start + timedelta(seconds=offsets[k]), duration=durations[k],
                        gpu_id=gpu_ids[k], gpu_name=gpu_name, n_requests=n_requests, **kw) for k in range(n)]


def lem_v1_aggregated(root: Path, seed: int = 1) -> dict:
    """(a) aggregated/<id>.json experiments: pytorch on H100 (raw files and markers written too, so
    an importer must not count it twice), vLLM with max_num_seqs on A100 (4 processes), and pytorch
    on an H100 PCIe (its own MFU peak)."""
    rng = np.random.default_rng(seed)
    out = {}
    cfg = lem_config(batch_size=8, sample_size=24, gpus=(0, 1))
    procs = _lem_procs(rng, "0001", cfg, 2, start=BASE_TIME)
    agg = write_lem_experiment(root, "0001", procs, raw=True)
    out[("lem_v1", "0001")] = lem_v1_expected("0001", procs, agg)

    cfg = lem_config("Qwen/Qwen2.5-7B-Instruct", "vllm", batch_size=None, max_num_seqs=64, dataset="alpaca",
                     sample_size=40, gpus=(0, 1, 2, 3))
    procs = _lem_procs(rng, "0002", cfg, 4, start=BASE_TIME + timedelta(hours=1), gpu_name="NVIDIA A100-SXM4-80GB",
                       n_requests=10)
    agg = write_lem_experiment(root, "0002", procs)
    out[("lem_v1", "0002")] = lem_v1_expected("0002", procs, agg)

    cfg = lem_config("mistralai/Mistral-7B-Instruct-v0.3", batch_size=4, sample_size=15, gpus=(0, 1, 2))
    procs = _lem_procs(rng, "0003", cfg, 3, start=BASE_TIME + timedelta(hours=2), gpu_name="NVIDIA H100 PCIe",
                       n_requests=5)
    agg = write_lem_experiment(root, "0003", procs)
    out[("lem_v1", "0003")] = lem_v1_expected("0003", procs, agg)
    return out


def lem_v1_raw(root: Path, seed: int = 2) -> dict:
    """(b) raw/<id>/process_<k>.json only: a clean experiment (L40S), one missing `.completed_1`,
    one whose process windows do not overlap (unstable), one with a duplicate gpu id (unstable)."""
    rng = np.random.default_rng(seed)
    out = {}
    cfg = lem_config("google/gemma-2-2b-it", batch_size=16, sample_size=20)
    procs = _lem_procs(rng, "0011", cfg, 2, start=BASE_TIME + timedelta(days=1), gpu_name="NVIDIA L40S", n_requests=10)
    write_lem_experiment(root, "0011", procs, aggregated=False, raw=True)
    out[("lem_v1", "0011")] = lem_v1_expected("0011", procs)

    cfg = lem_config(batch_size=8, sample_size=30)
    procs = _lem_procs(rng, "0012", cfg, 3, start=BASE_TIME + timedelta(days=1, hours=1), n_requests=10)
    write_lem_experiment(root, "0012", procs, aggregated=False, raw=True, markers={0, 2})
    out[("lem_v1", "0012")] = lem_v1_expected("0012", procs, warnings_contain=["completed"])

    procs = _lem_procs(rng, "0013", cfg, 2, start=BASE_TIME + timedelta(days=1, hours=2), durations=[30.0, 30.5],
                       offsets=[0.0, 31.25], n_requests=8)
    write_lem_experiment(root, "0013", procs, aggregated=False, raw=True)
    assert not _overlap_ok(procs)
    out[("lem_v1", "0013")] = lem_v1_expected("0013", procs)

    procs = _lem_procs(rng, "0014", cfg, 2, start=BASE_TIME + timedelta(days=1, hours=3), gpu_ids=[0, 0],
                       n_requests=8)
    write_lem_experiment(root, "0014", procs, aggregated=False, raw=True)
    out[("lem_v1", "0014")] = lem_v1_expected("0014", procs)
    return out


def lem_cycle_statistics(aggs: list[dict]) -> dict:
    """CycleStatistics the LEM way (§1.5): its t table, 1.96 beyond n = 10."""
    def ms(xs):
        n = len(xs)
        m = sum(xs) / n
        s = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
        return m, s

    n = len(aggs)
    t = LEM_T.get(n, 1.96)
    energy = [a["total_energy_j"] for a in aggs]
    tput = [a["avg_tokens_per_second"] for a in aggs]
    eff = [a["total_tokens"] / a["total_energy_j"] for a in aggs]
    lat = [1000.0 / a["avg_tokens_per_second"] for a in aggs]
    em, es = ms(energy)
    tm, ts = ms(tput)
    fm, fs = ms(eff)
    lm, ls = ms(lat)
    return {
        "num_cycles": n, "energy_mean_j": em, "energy_std_j": es,
        "energy_ci_95_lower": em - t * es / math.sqrt(n), "energy_ci_95_upper": em + t * es / math.sqrt(n),
        "throughput_mean_tps": tm, "throughput_std_tps": ts,
        "throughput_ci_95_lower": tm - t * ts / math.sqrt(n), "throughput_ci_95_upper": tm + t * ts / math.sqrt(n),
        "efficiency_mean_tpj": fm, "efficiency_std_tpj": fs, "latency_mean_ms": lm, "latency_std_ms": ls,
        "energy_cv": es / abs(em) if em else 0.0, "throughput_cv": ts / abs(tm) if tm else 0.0,
    }


def lem_v1_multicycle(root: Path, seed: int = 3, base: str = "0020", cycles: int = 12) -> tuple[dict, list[dict]]:
    """(c) `<base>_c0 .. _c11`, each with aggregated/<id>.json, and `<base>_multi_cycle.json` at the
    root. Returns (runs, repeat-stats expectations): for gpu_cpu_ram_energy_j and
    output_tps_per_process, the exact-t statistics over the cycles and the file's CycleStatistics."""
    rng = np.random.default_rng(seed)
    cfg = lem_config("meta-llama/Llama-3.2-3B-Instruct", batch_size=8, sample_size=20, gpus=(0, 1))
    cfg["num_cycles"] = cycles
    runs, aggs, meta = {}, [], []
    for k in range(cycles):
        exp_id = f"{base}_c{k}"
        start = BASE_TIME + timedelta(days=2, minutes=10 * k)
        procs = _lem_procs(rng, exp_id, cfg, 2, start=start, n_requests=10)
        aggs.append(write_lem_experiment(root, exp_id, procs))
        runs[("lem_v1", exp_id)] = lem_v1_expected(exp_id, procs, aggs[-1])
        meta.append({"cycle_id": k, "timestamp": _iso(start), "gpu_temperature_c": float(rng.integers(35, 60)),
                     "system_load": round(float(rng.uniform(0.2, 2.0)), 2)})
    statistics = lem_cycle_statistics(aggs)
    start, end = _parse(aggs[0]["start_time"]), _parse(aggs[-1]["end_time"])
    _write_json(root / f"{base}_multi_cycle.json", {
        "schema_version": "2.0.0", "experiment_id": base, "backend": "pytorch", "backend_version": "2.5.1",
        "num_cycles": cycles, "statistics": statistics, "cycle_results": aggs, "cycle_metadata": meta,
        "start_time": _iso(start), "end_time": _iso(end), "total_duration_sec": (end - start).total_seconds(),
        "effective_config": cfg, "config_warnings": [],
    })
    order = [runs[("lem_v1", f"{base}_c{k}")]["columns"] for k in range(cycles)]
    s = statistics
    repeat = [
        {"source_kind": "lem_v1", "experiment_id": base, "metric": "gpu_cpu_ram_energy_j",
         **exact_repeat_stats([c["gpu_cpu_ram_energy_j"] for c in order]),
         "reported": {"n": s["num_cycles"], "mean": s["energy_mean_j"], "std": s["energy_std_j"],
                      "ci95_lo": s["energy_ci_95_lower"], "ci95_hi": s["energy_ci_95_upper"], "cv": s["energy_cv"]}},
        {"source_kind": "lem_v1", "experiment_id": base, "metric": "output_tps_per_process",
         **exact_repeat_stats([c["output_tps_per_process"] for c in order]),
         "reported": {"n": s["num_cycles"], "mean": s["throughput_mean_tps"], "std": s["throughput_std_tps"],
                      "ci95_lo": s["throughput_ci_95_lower"], "ci95_hi": s["throughput_ci_95_upper"],
                      "cv": s["throughput_cv"]}},
    ]
    return runs, repeat


def lem_v1_edge(root: Path, seed: int = 4) -> dict:
    """(d) energy_tracking_failed on one process; gpu_energy_j absent everywhere (scope falls back to
    gpu_cpu_ram); gpu_energy_j 0 on one process, and one process without latency_measurements
    (requests from dataset.sample_size); unknown fields plus missing optional blocks (no
    latency_measurements: latency from latency_stats; no compute_metrics; no dataset: task null,
    requests from num_input_prompts); a MIG slice."""
    rng = np.random.default_rng(seed)
    out = {}
    cfg = lem_config(batch_size=8, sample_size=24)
    t = BASE_TIME + timedelta(days=3)

    procs = _lem_procs(rng, "0031", cfg, 2, start=t, n_requests=12)
    fail_energy(procs[1])
    agg = write_lem_experiment(root, "0031", procs)
    out[("lem_v1", "0031")] = lem_v1_expected("0031", procs, agg)

    procs = _lem_procs(rng, "0032", cfg, 2, start=t + timedelta(hours=1), n_requests=12)
    for p in procs:
        del p["energy_metrics"]["gpu_energy_j"]
        p["energy_metrics"]["gpu_power_w"] = 0.0
    agg = write_lem_experiment(root, "0032", procs)
    out[("lem_v1", "0032")] = lem_v1_expected("0032", procs, agg)

    procs = _lem_procs(rng, "0033", cfg, 2, start=t + timedelta(hours=2), n_requests=12)
    em = procs[1]["energy_metrics"]
    em["total_energy_j"] -= em["gpu_energy_j"]
    em["gpu_energy_j"], em["gpu_power_w"] = 0.0, 0.0
    procs[1]["inference_metrics"]["latency_measurements"] = None
    agg = write_lem_experiment(root, "0033", procs)
    out[("lem_v1", "0033")] = lem_v1_expected("0033", procs, agg)

    cfg_lenient = lem_config("microsoft/Phi-3-mini-4k-instruct", dataset=None, batch_size=2, num_input_prompts=50)
    cfg_lenient["future_block"] = {"anything": [1, 2, 3]}
    procs = _lem_procs(rng, "0034", cfg_lenient, 2, start=t + timedelta(hours=3), n_requests=9)
    agg = lem_aggregate("0034", procs)  # latency_stats from the samples, which are then dropped
    for p in procs:
        p["inference_metrics"]["latency_measurements"] = None
        del p["compute_metrics"]
        p["energy_metrics"]["extra_rail_j"] = 1.5
        p["tool_specific_extension"] = {"nested": {"x": 1}}
    agg["process_results"] = procs
    agg["total_flops"] = 0.0
    agg["a_field_from_the_future"] = "kept, never an error"
    _write_json(root / "aggregated" / "0034.json", agg)
    out[("lem_v1", "0034")] = lem_v1_expected("0034", procs, agg)

    cfg = lem_config(batch_size=4, sample_size=10)
    procs = _lem_procs(rng, "0035", cfg, 1, start=t + timedelta(hours=4), gpu_name="NVIDIA A100-SXM4-80GB MIG 3g.40gb",
                       n_requests=10)
    procs[0].update(gpu_is_mig=True, gpu_mig_profile="3g.40gb",
                    energy_measurement_warning="MIG instance: energy covers the whole parent GPU")
    agg = write_lem_experiment(root, "0035", procs)
    out[("lem_v1", "0035")] = lem_v1_expected("0035", procs, agg)
    return out


def lem_v1_broken(root: Path, seed: int = 5) -> tuple[dict, list[str]]:
    """A results dir whose raw/0041/process_1.json is truncated (JSON cut in half), next to a clean
    raw/0042. Returns (runs, the broken files' paths relative to root). 0041 itself may or may not
    be imported from its surviving process; only 0042 is expected."""
    rng = np.random.default_rng(seed)
    cfg = lem_config(batch_size=8, sample_size=16)
    procs = _lem_procs(rng, "0041", cfg, 2, start=BASE_TIME + timedelta(days=4), n_requests=8)
    write_lem_experiment(root, "0041", procs, aggregated=False, raw=True)
    broken = root / "raw" / "0041" / "process_1.json"
    text = broken.read_text()
    broken.write_text(text[: len(text) // 2])
    procs = _lem_procs(rng, "0042", cfg, 2, start=BASE_TIME + timedelta(days=4, hours=1), n_requests=8)
    write_lem_experiment(root, "0042", procs, aggregated=False, raw=True)
    return {("lem_v1", "0042"): lem_v1_expected("0042", procs)}, ["raw/0041/process_1.json"]


# --------------------------------------------------------------------------------------------
# LLM Energy Measure v2 (`llenergymeasure`, §1.9)

TIMESERIES_SCHEMA = pa.schema([
    ("timestamp_s", pa.float64()), ("gpu_index", pa.int32()), ("power_w", pa.float32()),
    ("temperature_c", pa.float32()), ("memory_used_mb", pa.float32()), ("memory_total_mb", pa.float32()),
    ("sm_utilisation_pct", pa.float32()), ("throttle_reasons", pa.int64()),
])


def write_timeseries(path: Path, rng: np.random.Generator, n_gpus: int, n_samples: int, period: float = 0.1) -> int:
    """timeseries.parquet with the locked columns; returns its row count."""
    t = np.tile(np.round(np.arange(n_samples) * period, 3), n_gpus)
    g = np.repeat(np.arange(n_gpus, dtype=np.int32), n_samples)
    n = len(t)
    cols = {
        "timestamp_s": t, "gpu_index": g, "power_w": rng.uniform(150, 650, n).astype(np.float32),
        "temperature_c": rng.uniform(40, 80, n).astype(np.float32),
        "memory_used_mb": rng.uniform(30000, 70000, n).astype(np.float32),
        "memory_total_mb": np.full(n, 81559.0, np.float32), "sm_utilisation_pct": rng.uniform(0, 100, n).astype(np.float32),
        "throttle_reasons": np.where(rng.random(n) < 0.05, 4, 0).astype(np.int64),
    }
    pq.write_table(pa.table(cols, schema=TIMESERIES_SCHEMA), path)
    return n


def lem_v2_expected(local_id: str, result: dict, *, timeseries_rows: int | None) -> dict:
    procs = result.get("process_results") or []
    cfg = result.get("effective_config") or {}
    energy = result["total_energy_j"]
    steady = result.get("measurement_methodology") == "steady_state"
    if steady:
        w = result["steady_state_window"]
        window_s = w["end_s"] - w["start_s"]
    elif procs:
        window_s = max(p["timestamps"]["duration_sec"] for p in procs)
    else:
        window_s = result["total_inference_time_sec"]
    num_gpus = (result.get("multi_gpu") or {}).get("num_gpus") or len({p["gpu_id"] for p in procs})
    baseline = result.get("baseline_power_w")
    # Tokens, throughput and latency follow the v1 rules (from the processes).
    v1 = lem_v1_expected(local_id, procs, result)["columns"]
    cols = {k: v1[k] for k in (
        "model", "hardware", "hardware_raw", "task", "workload_kind", "batch_value", "batch_semantics",
        "requests", "requests_completed", "input_tokens", "output_tokens", "output_tps", "output_tps_per_process",
        "ttft_mean_s", "ttft_p50_s", "ttft_p95_s", "ttft_p99_s", "itl_mean_s", "itl_p50_s", "itl_p95_s", "itl_p99_s")}
    out_tok, requests = cols["output_tokens"], cols["requests"]
    cols.update({
        "source_kind": "lem_v2", "local_id": local_id,
        "experiment_id": result.get("measurement_config_hash") or local_id, "engine": result["backend"],
        "num_gpus": num_gpus, "energy_j": energy, "energy_scope": "gpu",
        "window": "steady_state" if steady else "inference_only", "window_s": window_s, "attribution": "measured",
        "token_basis": "output", "gpu_energy_j": energy, "baseline_power_w": baseline,
        "adjusted_energy_j": energy - baseline * window_s if baseline is not None else None,
        "energy_per_output_token_j": _ratio(energy, out_tok), "tokens_per_joule": _ratio(out_tok, energy),
        "energy_per_request_j": _ratio(energy, requests),
    })
    extra = {"timeseries_rows": timeseries_rows} if timeseries_rows is not None else {}
    return expectation(cols, **extra)


def lem_v2(root: Path, seed: int = 6) -> dict:
    """(e) `<model_slug>_<backend>_<YYYY-MM-DDTHH-MM>[_k]/result.json` (schema "2.0"): a steady-state
    vLLM run on 2 GPUs (one process) with a baseline and timeseries.parquet, and a `total`-methodology
    pytorch run (two processes, no baseline, no config hash, no timeseries)."""
    rng = np.random.default_rng(seed)
    out = {}

    def result(procs, cfg, **v2):
        agg = lem_aggregate(procs[0]["experiment_id"], procs)
        agg["schema_version"] = "2.0"
        agg.update(v2)
        return agg

    model = "meta-llama/Llama-3.1-8B-Instruct"
    name = f"{model.replace('/', '_')}_vllm_2026-03-10T14-05"
    cfg = lem_config(model, "vllm", batch_size=None, max_num_seqs=128, sample_size=30, gpus=(0, 1))
    procs = _lem_procs(rng, name, cfg, 1, start=BASE_TIME + timedelta(days=57), n_requests=30, durations=[90.0])
    steady_j = round(procs[0]["energy_metrics"]["gpu_energy_j"] * 0.7, 4)
    window = {"start_s": 12.5, "end_s": 72.25}
    body = result(procs, cfg, total_energy_j=steady_j, measurement_config_hash="3fa1c09b2e7d4a55",
                  measurement_methodology="steady_state", steady_state_window=window,
                  baseline_power_w=61.7, energy_adjusted_j=steady_j - 61.7 * 90.0,  # reported: whole duration
                  energy_per_device_j=[steady_j * 0.52, steady_j * 0.48],
                  energy_breakdown={"raw_j": steady_j, "adjusted_j": steady_j - 61.7 * 90.0, "baseline_power_w": 61.7,
                                    "baseline_method": "cached", "baseline_timestamp": 1773151200.0,
                                    "baseline_cache_age_sec": 412.0},
                  multi_gpu={"num_gpus": 2, "energy_per_gpu_j": [steady_j * 0.52, steady_j * 0.48],
                             "energy_total_j": steady_j, "energy_per_output_token_j": None},
                  flops_per_output_token=1.6e10, flops_per_input_token=1.6e10, flops_per_second=2.1e12,
                  environment_snapshot={"driver": "570.86.15", "cuda": "12.8"}, measurement_warnings=[],
                  warmup_excluded_samples=5, reproducibility_notes="fixed seed", timeseries="timeseries.parquet",
                  thermal_throttle={"detected": False, "thermal": False, "power": False, "sw_thermal": False,
                                    "hw_thermal": False, "hw_power": False, "throttle_duration_sec": 0.0,
                                    "max_temperature_c": 71.0, "throttle_timestamps": []},
                  warmup_result={"converged": True, "final_cv": 0.03, "iterations_completed": 5, "target_cv": 0.05,
                                 "max_prompts": 20, "latencies_ms": [812.1, 790.4, 801.9], "thermal_floor_wait_s": 0.0},
                  extended_metrics={"tpot_ms": 21.4, "token_efficiency_index": None})
    d = root / name
    _write_json(d / "result.json", body)
    rows = write_timeseries(d / "timeseries.parquet", rng, 2, 150)
    out[("lem_v2", name)] = lem_v2_expected(name, body, timeseries_rows=rows)

    model = "Qwen/Qwen2.5-0.5B-Instruct"
    name = f"{model.replace('/', '_')}_pytorch_2026-03-11T09-30_1"
    cfg = lem_config(model, batch_size=4, sample_size=16, gpus=(0, 1))
    procs = _lem_procs(rng, name, cfg, 2, start=BASE_TIME + timedelta(days=58), n_requests=8)
    gpu_total = sum(p["energy_metrics"]["gpu_energy_j"] for p in procs)
    body = result(procs, cfg, total_energy_j=gpu_total, measurement_methodology="total",
                  steady_state_window=None, baseline_power_w=None, energy_adjusted_j=None, timeseries=None)
    _write_json(root / name / "result.json", body)
    out[("lem_v2", name)] = lem_v2_expected(name, body, timeseries_rows=None)
    return out


# --------------------------------------------------------------------------------------------
# IPW single-turn profiles (§2.2-§2.5, §2.7 a)

F64, I64, STR, BOOL = pa.float64(), pa.int64(), pa.string(), pa.bool_()
STATS = pa.struct([("avg", F64), ("max", F64), ("median", F64), ("min", F64)])


def model_metrics_type(version: str) -> pa.StructType:
    """ModelMetrics as HF datasets stores it; `version` is "old" (Nov-2025 blocks), "new" (with
    evaluation, basis and ITL percentiles) or "concurrent" (new + phase, cost, hardware_utilization)."""
    energy = [("per_query_joules", F64), ("total_joules", F64), ("cpu_per_query_joules", F64),
              ("cpu_total_joules", F64), ("ane_per_query_joules", F64), ("ane_total_joules", F64)]
    latency = [("per_token_ms", F64), ("throughput_tokens_per_sec", F64), ("time_to_first_token_seconds", F64),
               ("total_query_seconds", F64)]
    fields = []
    if version != "old":
        fields.append(("compute_metrics", pa.struct([("flops_per_request", F64), ("macs_per_request", F64),
                                                     ("total_flops", F64), ("flops_per_token", F64)])))
        energy += [("basis", STR), ("energy_per_output_token_joules", F64), ("energy_per_total_token_joules", F64)]
        latency += [("median_itl_ms", F64), ("p90_itl_ms", F64), ("p95_itl_ms", F64), ("p99_itl_ms", F64),
                    ("itl_std_ms", F64)]
    fields += [
        ("energy_metrics", pa.struct(energy)), ("latency_metrics", pa.struct(latency)),
        ("memory_metrics", pa.struct([("cpu_mb", STATS), ("gpu_mb", STATS)])),
        ("power_metrics", pa.struct([("gpu", pa.struct([("per_query_watts", STATS), ("total_watts", STATS)])),
                                     ("cpu", pa.struct([("per_query_watts", STATS), ("total_watts", STATS)]))])),
        ("temperature_metrics", STATS),
        ("token_metrics", pa.struct([("input", I64), ("output", I64), ("total", I64)])),
        ("gpu_info", pa.struct([("name", STR), ("vendor", STR), ("device_id", STR), ("device_type", STR),
                                ("backend", STR)])),
        ("lm_correctness", BOOL), ("lm_response", STR),
    ]
    if version == "concurrent":
        fields += [
            ("phase_metrics", pa.struct([(k, F64) for k in (
                "prefill_energy_j", "decode_energy_j", "prefill_duration_ms", "decode_duration_ms",
                "prefill_power_avg_w", "decode_power_avg_w", "prefill_energy_per_input_token_j",
                "decode_energy_per_output_token_j")])),
            ("cost", pa.struct([(k, F64) for k in ("input_cost_usd", "output_cost_usd", "tool_cost_usd",
                                                    "total_cost_usd")])),
            ("hardware_utilization", pa.struct([
                ("gpu", pa.struct([(k, F64) for k in ("compute_utilization_pct", "memory_bandwidth_utilization_pct",
                                                       "tensor_core_utilization_pct", "memory_used_gb",
                                                       "memory_total_gb")])),
                ("derived", pa.struct([("mfu", F64), ("mbu", F64), ("arithmetic_intensity", F64)]))])),
        ]
    if version != "old":
        fields.append(("evaluation", pa.struct([("is_correct", BOOL), ("metadata", STR),
                                                ("config", pa.struct([("judge_model", STR)]))])))
    return pa.struct(fields)


def profile_schema(model: str, version: str) -> pa.Schema:
    fields = [("problem", STR), ("answer", STR), ("subject", STR), ("dataset_metadata", STR),
              ("model_answers", pa.struct([(model, STR)])), ("model_metrics", pa.struct([(model, model_metrics_type(version))]))]
    if version == "concurrent":
        fields += [("dataset_index", I64), ("request_start_time", F64), ("request_end_time", F64)]
    return pa.schema(fields)


def hf_features(t: pa.DataType):
    """The HF `features` description of an Arrow type (dataset_info.json)."""
    if pa.types.is_struct(t):
        return {t.field(i).name: hf_features(t.field(i).type) for i in range(t.num_fields)}
    dtype = {"string": "string", "double": "float64", "int64": "int64", "bool": "bool", "int32": "int32"}[str(t)]
    return {"dtype": dtype, "_type": "Value"}


def write_hf_dataset(d: Path, table: pa.Table, shard_rows: list[int], fingerprint: str) -> list[str]:
    """HF `save_to_disk`: Arrow IPC *stream* shards data-0000k-of-0000N.arrow, dataset_info.json and
    state.json listing the shards; returns the shard names."""
    d.mkdir(parents=True, exist_ok=True)
    features = {f.name: hf_features(f.type) for f in table.schema}
    schema = table.schema.with_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    table = table.replace_schema_metadata(schema.metadata)
    names, offset = [], 0
    for i, n in enumerate(shard_rows):
        name = f"data-{i:05d}-of-{len(shard_rows):05d}.arrow"
        with pa.OSFile(str(d / name), "wb") as sink, pa.ipc.new_stream(sink, schema) as w:
            w.write_table(table.slice(offset, n), max_chunksize=1000)
        names.append(name)
        offset += n
    assert offset == table.num_rows
    _write_json(d / "dataset_info.json", {"citation": "", "description": "", "features": features,
                                          "homepage": "", "license": ""})
    _write_json(d / "state.json", {"_data_files": [{"filename": n} for n in names], "_fingerprint": fingerprint,
                                   "_format_columns": None, "_format_kwargs": {}, "_format_type": None,
                                   "_output_all_columns": False, "_split": None})
    return names


def _stats(rng, centre, spread):
    lo, hi = centre - spread, centre + spread
    med = float(rng.uniform(lo, hi))
    return {"avg": centre, "max": round(hi, 3), "median": round(med, 3), "min": round(lo, 3)}


def ipw_record(rng: np.random.Generator, model: str, i: int, version: str, *, params_b: float,
               gpu_name: str, energy: str = "measured", output_zero: bool = False, correct=None,
               evaluated: str = "scored", duration: float | None = None, share: float = 1.0) -> dict:
    """One ProfilingRecord row. energy: "measured", "zero" (0 J with sampled power: imputation case),
    "nan", "negative". evaluated: "scored" (is_correct = correct), "none" (evaluation null),
    "failed" (is_correct null, evaluation_failed metadata), "legacy" (lm_correctness = correct)."""
    in_tok = int(rng.integers(30, 400))
    out_tok = 0 if output_zero else int(rng.integers(10, 300))
    ttft = None if output_zero else round(float(rng.uniform(0.02, 0.4)), 6)
    total_s = duration if duration is not None else round((ttft or 0.3) + out_tok * float(rng.uniform(0.008, 0.02)), 6)
    power = round(float(rng.uniform(150, 450)), 3)
    shared_power = round(power * share, 3)
    e = {"measured": round(shared_power * total_s, 6), "zero": 0.0, "nan": float("nan"), "negative": -3.0}[energy]
    e_total = round(power * total_s, 6) if energy == "measured" else e
    em = {"per_query_joules": e, "total_joules": e_total, "cpu_per_query_joules": round(float(rng.uniform(5, 30)), 4),
          "cpu_total_joules": None, "ane_per_query_joules": None, "ane_total_joules": None}
    lm = {"per_token_ms": total_s * 1000 / out_tok if out_tok else None,
          "throughput_tokens_per_sec": out_tok / total_s, "time_to_first_token_seconds": ttft,
          "total_query_seconds": total_s}
    metrics = {}
    if version != "old":
        flops = 2.0 * params_b * 1e9 * (in_tok + out_tok)
        metrics["compute_metrics"] = {"flops_per_request": flops, "macs_per_request": flops / 2, "total_flops": flops,
                                      "flops_per_token": 2.0 * params_b * 1e9}
        em.update(basis="gpu", energy_per_output_token_joules=e / out_tok if out_tok and math.isfinite(e) else None,
                  energy_per_total_token_joules=e / (in_tok + out_tok) if math.isfinite(e) else None)
        itl = np.sort(rng.uniform(5, 40, 4))
        lm.update(median_itl_ms=float(itl[1]), p90_itl_ms=float(itl[2]), p95_itl_ms=float(itl[2]),
                  p99_itl_ms=float(itl[3]), itl_std_ms=float(itl.std()))
    metrics.update({
        "energy_metrics": em, "latency_metrics": lm,
        "memory_metrics": {"cpu_mb": _stats(rng, 2048.0, 100), "gpu_mb": _stats(rng, 9000.0, 300)},
        "power_metrics": {"gpu": {"per_query_watts": _stats(rng, shared_power, 40), "total_watts": _stats(rng, power, 40)},
                          "cpu": {"per_query_watts": _stats(rng, 45.0, 5), "total_watts": _stats(rng, 45.0, 5)}},
        "temperature_metrics": _stats(rng, 62.0, 4),
        "token_metrics": {"input": in_tok, "output": out_tok, "total": in_tok + out_tok},
        "gpu_info": {"name": gpu_name, "vendor": "NVIDIA", "device_id": "0", "device_type": "GPU", "backend": "nvml"},
        "lm_correctness": correct if evaluated == "legacy" else None,
        "lm_response": f"answer {i}",
    })
    if version == "concurrent":
        pre = round(e * 0.1, 6)
        metrics["phase_metrics"] = {
            "prefill_energy_j": pre, "decode_energy_j": round(e - pre, 6), "prefill_duration_ms": ttft * 1000,
            "decode_duration_ms": (total_s - ttft) * 1000, "prefill_power_avg_w": shared_power,
            "decode_power_avg_w": shared_power, "prefill_energy_per_input_token_j": pre / in_tok,
            "decode_energy_per_output_token_j": (e - pre) / out_tok}
        cost_in, cost_out = in_tok / 1e6 * 0.05, out_tok / 1e6 * 0.08
        metrics["cost"] = {"input_cost_usd": cost_in, "output_cost_usd": cost_out, "tool_cost_usd": 0.0,
                           "total_cost_usd": cost_in + cost_out}
        metrics["hardware_utilization"] = {
            "gpu": {"compute_utilization_pct": 71.0, "memory_bandwidth_utilization_pct": 44.0,
                    "tensor_core_utilization_pct": None, "memory_used_gb": 30.1, "memory_total_gb": 79.6},
            "derived": {"mfu": round(float(rng.uniform(0.01, 0.2)), 6), "mbu": None, "arithmetic_intensity": None}}
    if version != "old":
        if evaluated == "scored":
            metrics["evaluation"] = {"is_correct": correct, "metadata": json.dumps(
                {"evaluation_failed": False, "evaluation_attempts": 1, "method": "exact_match"}),
                "config": {"judge_model": None}}
        elif evaluated == "failed":
            metrics["evaluation"] = {"is_correct": None, "metadata": json.dumps(
                {"evaluation_failed": True, "evaluation_attempts": 3, "error": "judge timeout"}),
                "config": {"judge_model": "gpt-5-nano-2025-08-07"}}
        else:
            metrics["evaluation"] = None
    return {"problem": f"Question {i}: what is {i} + {i}?", "answer": str(2 * i), "subject": "arithmetic",
            "dataset_metadata": json.dumps({"id": i, "level": int(rng.integers(1, 5))}),
            "model_answers": {model: f"answer {i}"}, "model_metrics": {model: metrics}}


def _is_correct(m: dict):
    ev = m.get("evaluation")
    if ev is not None and ev.get("is_correct") is not None:
        return ev["is_correct"]
    return m.get("lm_correctness")


def ipw_efficiency(metrics: list[dict]) -> tuple:
    """(accuracy, ipj, ipw, correct, incorrect, avg_energy, avg_power, energy_count, power_count) by
    `ipw analyze` (§2.7 a): scored records only; E_i kept when finite and > 1e-12; P_i = E_i/L_i,
    else the sampled per-query power (avg, median, max, min); energy <= 0 with power and latency is
    imputed as P_i x L_i."""
    scored = [m for m in metrics if _is_correct(m) is not None]
    correct = sum(1 for m in scored if _is_correct(m))
    if not scored:
        return (None, None, None, 0, 0, None, None, 0, 0)
    acc = correct / len(scored)
    energies, powers = [], []
    for m in scored:
        raw = m["energy_metrics"].get("per_query_joules")
        lat = m["latency_metrics"].get("total_query_seconds")
        e = raw if _finite(raw) and raw > 1e-12 else None
        lat = lat if _finite(lat) and lat > 0 else None
        if e is not None and lat is not None:
            p = e / lat
        else:
            w = ((m.get("power_metrics") or {}).get("gpu") or {}).get("per_query_watts") or {}
            p = next((w[k] for k in ("avg", "median", "max", "min") if _finite(w.get(k))), None)
        if e is not None:
            energies.append(e)
        elif _finite(raw) and raw <= 0 and p is not None and lat is not None:
            energies.append(p * lat)
        if p is not None:
            powers.append(p)
    avg_e, avg_p = _mean(energies), _mean(powers)
    return (acc, _ratio(acc, avg_e), _ratio(acc, avg_p), correct, len(scored) - correct, avg_e, avg_p,
            len(energies), len(powers))


def ipw_profile_expected(local_id: str, summary: dict, rows: list[dict]) -> dict:
    model = summary["model"]
    pc = summary.get("profiler_config") or {}
    batch = pc.get("max_concurrency") or 1
    attribution = "shared_by_concurrency" if batch > 1 else "measured"
    ms = [r["model_metrics"][model] for r in rows]
    reqs, energies = [], []
    for i, (r, m) in enumerate(zip(rows, ms)):
        e = m["energy_metrics"]["per_query_joules"]
        e = e if _finite(e) and e >= 0 else None
        if e is not None:
            energies.append(e)
        tm = m["token_metrics"]
        req = {"request_index": i, "input_tokens": tm["input"], "output_tokens": tm["output"],
               "success": tm["output"] > 0, "ttft_s": m["latency_metrics"]["time_to_first_token_seconds"],
               "latency_s": m["latency_metrics"]["total_query_seconds"], "energy_j": e,
               "attribution": attribution,
               "prefill_energy_j": (m.get("phase_metrics") or {}).get("prefill_energy_j"),
               "decode_energy_j": (m.get("phase_metrics") or {}).get("decode_energy_j"),
               "avg_power_w": m["power_metrics"]["gpu"]["per_query_watts"]["avg"],
               "flops": (m.get("compute_metrics") or {}).get("total_flops"),
               "mfu": ((m.get("hardware_utilization") or {}).get("derived") or {}).get("mfu"),
               "cost_usd": (m.get("cost") or {}).get("total_cost_usd"), "is_correct": _is_correct(m)}
        if e is not None:
            req["energy_scope"] = "gpu"
        reqs.append(req)
    energy = sum(energies) if energies else None
    window_s = sum(m["latency_metrics"]["total_query_seconds"] for m in ms)
    out_tok = sum(m["token_metrics"]["output"] for m in ms)
    in_tok = sum(m["token_metrics"]["input"] for m in ms)
    if batch <= 1:
        tps = out_tok / window_s
    elif rows and "request_start_time" in rows[0]:
        tps = out_tok / (max(r["request_end_time"] for r in rows) - min(r["request_start_time"] for r in rows))
    else:
        tps = None
    ttft = [m["latency_metrics"]["time_to_first_token_seconds"] for m in ms
            if _finite(m["latency_metrics"]["time_to_first_token_seconds"])]
    flops_vals = [m["compute_metrics"]["total_flops"] for m in ms if m.get("compute_metrics")]
    acc, ipj, ipw, *_ = ipw_efficiency(ms)
    gpu_name = (summary.get("gpu_info") or {}).get("name")
    cols = {
        "source_kind": "ipw_profile", "local_id": local_id, "model": model,
        "hardware": hardware(gpu_name or summary.get("hardware_label")), "num_gpus": None,
        "task": summary.get("dataset_name") or summary.get("dataset") or pc.get("dataset_id"),
        "workload_kind": "single_turn", "engine": pc.get("client_id"), "batch_value": batch,
        "batch_semantics": "client_concurrency", "energy_j": energy, "energy_scope": "gpu", "window": "per_query_sum",
        "window_s": window_s, "attribution": attribution, "token_basis": "output",
        "requests": len(rows), "requests_completed": sum(1 for m in ms if m["token_metrics"]["output"] > 0),
        "input_tokens": in_tok, "output_tokens": out_tok, "output_tps": tps, "avg_power_w": _ratio(energy, window_s),
        "energy_per_output_token_j": _ratio(energy, out_tok), "tokens_per_joule": _ratio(out_tok, energy),
        "energy_per_request_j": _ratio(energy, len(rows)),
        "ttft_mean_s": _mean(ttft), "ttft_p50_s": _pct(ttft, 50), "ttft_p95_s": _pct(ttft, 95), "ttft_p99_s": _pct(ttft, 99),
        "itl_mean_s": None, "itl_p50_s": None, "itl_p95_s": None, "itl_p99_s": None,
        "flops": sum(flops_vals) if flops_vals else None, "mfu": None, "accuracy": acc, "ipj": ipj, "ipw": ipw,
    }
    return expectation(cols, requests=reqs)


def accuracy_json(model: str, metrics: list[dict]) -> dict:
    """analysis/accuracy.json as `ipw analyze` reports it (the reported values; kept for audit)."""
    acc, ipj, ipw, correct, incorrect, avg_e, avg_p, ne, np_ = ipw_efficiency(metrics)
    failed = sum(1 for m in metrics if m.get("evaluation") and json.loads(m["evaluation"]["metadata"]).get("evaluation_failed"))
    unevaluated = sum(1 for m in metrics if _is_correct(m) is None) - failed
    summary = {"model": model, "correct": correct, "incorrect": incorrect, "unevaluated": unevaluated,
               "failed": failed, "total_scored": correct + incorrect, "accuracy": acc,
               "intelligence_per_joule": ipj, "intelligence_per_watt": ipw, "avg_per_query_energy_joules": avg_e,
               "avg_per_query_power_watts": avg_p, "energy_sample_count": ne, "power_sample_count": np_,
               "energy_basis": "gpu"}
    return {"analysis": "accuracy", "summary": summary, "warnings": [],
            "data": {"per_model": {model: summary}, "records": {model: []},
                     "efficiency": {model: {"intelligence_per_joule": ipj, "intelligence_per_watt": ipw}}}}


def _profile_summary(model, *, gpu_name, hardware_label, dataset, client, concurrency, n, old=False):
    s = {"model": model, "dataset": dataset, "hardware_label": hardware_label, "generated_at": 1773151200.25,
         "total_queries": n, "system_info": {"os_name": "Linux", "os_version": "6.8", "kernel_version": "6.8.0",
                                             "host_name": "node1", "cpu_count": 64, "cpu_brand": "AMD EPYC 9454"},
         "output_dir": "runs"}
    if not old:
        s.update({"dataset_name": dataset, "gpu_info": {"name": gpu_name, "vendor": "NVIDIA"},
                  "versions": {"ipw": "0.3.2", "python": "3.12.3"},
                  "profiler_config": {"dataset_id": f"ipw/{dataset}", "client_id": client,
                                      "client_base_url": "http://localhost:11434", "dataset_params": {},
                                      "client_params": {}, "model": model, "output_dir": "runs",
                                      "max_concurrency": concurrency, "max_queries": n, "phased_profiling": False,
                                      "run_hardware_benchmarks": False, "additional_parameters": {},
                                      "warmup_queries": 2}})
    return s


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", s)


def ipw_profiles(root: Path, seed: int = 7) -> dict:
    """(f) three profile directories: a current single-stream one (2 shards, zero-energy records with
    power, unevaluated and judge-failed records, a record with no output), an older one (no
    profiler_config/versions/gpu_info, lm_correctness instead of evaluation, no compute_metrics, a NaN
    and a negative energy), and a concurrent one (max_concurrency 4, request start/end times, shared
    energy, phase/cost/mfu blocks)."""
    rng = np.random.default_rng(seed)
    out = {}

    model, gpu = "llama3.2:1b", "NVIDIA H100 80GB HBM3"
    name = f"profile_{_slug(gpu)}_{_slug(model)}_gpqa"
    pattern = [True, False, True, True, False, None, True, False, True, True, False, None,
               True, True, None, False, True, "failed", True, False, False, True, True, False]
    rows = []
    for i, c in enumerate(pattern):
        rows.append(ipw_record(
            rng, model, i, "new", params_b=1.24, gpu_name=gpu,
            energy="zero" if i in (3, 8, 14) else "measured", output_zero=(i == 20),
            correct=c if c in (True, False) else None,
            evaluated="failed" if c == "failed" else ("none" if c is None else "scored")))
    table = pa.Table.from_pylist(rows, schema=profile_schema(model, "new"))
    d = root / name
    write_hf_dataset(d, table, [13, 11], "a1b2c3d4e5f60718")
    summary = _profile_summary(model, gpu_name=gpu, hardware_label=_slug(gpu), dataset="gpqa", client="ollama",
                               concurrency=1, n=len(rows))
    _write_json(d / "summary.json", summary)
    _write_json(d / "analysis" / "accuracy.json", accuracy_json(model, [r["model_metrics"][model] for r in rows]))
    out[("ipw_profile", name)] = ipw_profile_expected(name, summary, rows)

    model, gpu = "qwen2.5:0.5b", "NVIDIA GeForce RTX 4090"
    name = f"profile_{_slug(gpu)}_{_slug(model)}"
    legacy = [True, False, None, True, True, False, None, True]
    rows = [ipw_record(rng, model, i, "old", params_b=0.49, gpu_name=gpu, correct=c, evaluated="legacy",
                       energy={2: "nan", 5: "negative"}.get(i, "measured")) for i, c in enumerate(legacy)]
    table = pa.Table.from_pylist(rows, schema=profile_schema(model, "old"))
    d = root / name
    write_hf_dataset(d, table, [8], "0f0e0d0c0b0a0908")
    summary = _profile_summary(model, gpu_name=gpu, hardware_label=_slug(gpu), dataset="mmlu", client=None,
                               concurrency=None, n=len(rows), old=True)
    _write_json(d / "summary.json", summary)
    out[("ipw_profile", name)] = ipw_profile_expected(name, summary, rows)

    model, gpu = "llama3.1:8b", "NVIDIA H100 80GB HBM3"
    name = f"profile_{_slug(gpu)}_{_slug(model)}_gpqa_bs4"
    rows, t0 = [], 1773151200.0
    for w in range(4):  # 4 client workers, each sending 4 requests back to back
        t = t0 + 0.05 * w
        for j in range(4):
            i = 4 * w + j
            dur = round(float(rng.uniform(1.0, 4.0)), 3)
            start, end = round(t, 3), round(t + dur, 3)
            r = ipw_record(rng, model, i, "concurrent", params_b=8.03, gpu_name=gpu, correct=bool(i % 3),
                           duration=dur, share=0.25 + 0.05 * (i % 3))
            r.update(dataset_index=i, request_start_time=start, request_end_time=end)
            rows.append(r)
            t = end + 0.01
    rows.sort(key=lambda r: r["dataset_index"])
    table = pa.Table.from_pylist(rows, schema=profile_schema(model, "concurrent"))
    d = root / name
    write_hf_dataset(d, table, [8, 8], "1122334455667788")
    summary = _profile_summary(model, gpu_name=gpu, hardware_label=_slug(gpu), dataset="gpqa", client="vllm",
                               concurrency=4, n=len(rows))
    _write_json(d / "summary.json", summary)
    _write_json(d / "analysis" / "accuracy.json", accuracy_json(model, [r["model_metrics"][model] for r in rows]))
    out[("ipw_profile", name)] = ipw_profile_expected(name, summary, rows)
    return out


# --------------------------------------------------------------------------------------------
# IPW agentic runs (§2.6, §2.7 b)

TOOLS = ["web_search", "python_exec", "browse_page", "read_file"]


def agentic_trace(rng: np.random.Generator, q: int, *, turn_energy: bool, resolved, completed: bool = True) -> dict:
    """One QueryTrace line. With `turn_energy` every turn carries its own GPU/CPU energy and power;
    without it no turn does (only the query-level counter delta exists)."""
    turns = []
    for t in range(int(rng.integers(1, 5))):
        tools = [str(x) for x in rng.choice(TOOLS, size=int(rng.integers(0, 3)), replace=False)]
        wall = round(float(rng.uniform(1.0, 20.0)), 4)
        gp, cp = round(float(rng.uniform(180, 420)), 3), round(float(rng.uniform(30, 60)), 3)
        turns.append({
            "turn_index": t, "input_tokens": int(rng.integers(200, 2000)), "output_tokens": int(rng.integers(20, 400)),
            "tool_result_tokens": int(rng.integers(0, 800)) if tools else 0, "tools_called": tools,
            "tool_latencies_s": {name: round(float(rng.uniform(0.1, 3.0)), 4) for name in tools},
            "wall_clock_s": wall, "error": "tool timeout" if (q == 2 and t == 0) else None,
            "gpu_energy_joules": round(gp * wall, 4) if turn_energy else None,
            "cpu_energy_joules": round(cp * wall, 4) if turn_energy else None,
            "gpu_power_avg_watts": gp if turn_energy else None, "cpu_power_avg_watts": cp if turn_energy else None,
            "cost_usd": 0.0,
        })
    tool_time = sum(v for t in turns for v in t["tool_latencies_s"].values())
    wall = round(sum(t["wall_clock_s"] for t in turns) + tool_time, 4)
    out_tok = sum(t["output_tokens"] for t in turns)
    in_tok = sum(t["input_tokens"] for t in turns)
    if turn_energy:
        q_energy = round(sum(t["gpu_energy_joules"] for t in turns) * 1.08, 4)  # the query window includes tools
        q_power = sum(t["gpu_power_avg_watts"] for t in turns) / len(turns)
        q_cpu = round(sum(t["cpu_energy_joules"] for t in turns) * 1.05, 4)
    else:
        q_power = round(float(rng.uniform(180, 420)), 3)
        q_energy = round(q_power * wall, 4)
        q_cpu = None
    n_tools = sum(len(t["tools_called"]) for t in turns)
    return {
        "query_id": f"q{q:04d}", "workload_type": "gaia", "query_text": f"Task {q}", "response_text": f"Result {q}",
        "turns": turns, "num_turns": len(turns), "total_input_tokens": in_tok, "total_output_tokens": out_tok,
        "total_tokens": in_tok + out_tok, "tool_call_count": n_tools, "total_tool_calls": n_tools,
        "total_wall_clock_s": wall, "completed": completed, "timed_out": not completed,
        "query_gpu_energy_joules": q_energy, "query_cpu_energy_joules": q_cpu,
        "query_gpu_power_avg_watts": q_power, "query_cpu_power_avg_watts": None,
        "query_mbu_avg_pct": round(float(rng.uniform(10, 60)), 2), "query_mbu_max_pct": round(float(rng.uniform(60, 90)), 2),
        "throughput_tokens_per_sec": out_tok / wall, "energy_per_output_token_joules": q_energy / out_tok,
        "total_cost_usd": 0.0, "is_resolved": resolved,
        "unscorable_reason": "no_final_answer" if resolved is None else None,
        "score_metadata": {"grader": "exact"} if resolved is not None else {},
    }


def agentic_expected(local_id: str, summary: dict, traces: list[dict]) -> dict:
    cfg = summary["config"]
    batch = cfg.get("concurrency") or 1
    energies = [t["query_gpu_energy_joules"] for t in traces if _finite(t.get("query_gpu_energy_joules"))]
    powers = [t["query_gpu_power_avg_watts"] for t in traces if _finite(t.get("query_gpu_power_avg_watts"))]
    energy = sum(energies) if energies else None
    window_s = sum(t["total_wall_clock_s"] for t in traces)
    out_tok = sum(t["total_output_tokens"] for t in traces)
    in_tok = sum(t["total_input_tokens"] for t in traces)
    scored = [t["is_resolved"] for t in traces if t.get("is_resolved") is not None]
    acc = sum(scored) / len(scored) if scored else None
    reqs, turns = [], []
    for i, t in enumerate(traces):
        reqs.append({"request_index": i, "input_tokens": t["total_input_tokens"], "output_tokens": t["total_output_tokens"],
                     "success": t["completed"], "latency_s": t["total_wall_clock_s"],
                     "energy_j": t["query_gpu_energy_joules"], "energy_scope": "gpu", "attribution": "measured",
                     "avg_power_w": t["query_gpu_power_avg_watts"], "cost_usd": t["total_cost_usd"],
                     "is_correct": t["is_resolved"]})
        share = all(tt.get("gpu_energy_joules") is None for tt in t["turns"]) and _finite(t["query_gpu_energy_joules"])
        walls = sum(tt["wall_clock_s"] for tt in t["turns"])
        for tt in t["turns"]:
            turns.append({
                "request_index": i, "turn_index": tt["turn_index"], "input_tokens": tt["input_tokens"],
                "output_tokens": tt["output_tokens"], "tool_result_tokens": tt["tool_result_tokens"],
                "wall_s": tt["wall_clock_s"],
                "gpu_energy_j": t["query_gpu_energy_joules"] * tt["wall_clock_s"] / walls if share else tt["gpu_energy_joules"],
                "cpu_energy_j": tt["cpu_energy_joules"], "gpu_power_avg_w": tt["gpu_power_avg_watts"],
                "cpu_power_avg_w": tt["cpu_power_avg_watts"], "cost_usd": tt["cost_usd"], "error": tt["error"],
                "attribution": "wall_clock_share" if share else "measured", "tools": len(tt["tools_called"])})
    cols = {
        "source_kind": "ipw_agentic", "local_id": local_id, "model": cfg["model"], "task": cfg["dataset"],
        "workload_kind": "agentic", "engine": cfg["agent"], "batch_value": batch, "batch_semantics": "client_concurrency",
        "energy_j": energy, "energy_scope": "gpu", "window": "per_query_sum", "window_s": window_s,
        "attribution": "measured", "token_basis": "output", "requests": len(traces),
        "input_tokens": in_tok, "output_tokens": out_tok, "output_tps": out_tok / window_s if batch <= 1 else None,
        "energy_per_output_token_j": _ratio(energy, out_tok), "tokens_per_joule": _ratio(out_tok, energy),
        "energy_per_request_j": _ratio(energy, len(traces)),
        "accuracy": acc, "ipj": _ratio(acc, _mean(energies)), "ipw": _ratio(acc, _mean(powers)),
    }
    return expectation(cols, requests=reqs, turns=turns)


def agentic_summary(cfg: dict, traces: list[dict]) -> dict:
    """summary.json as IPW writes it; efficiency.ipj = accuracy / TOTAL GPU energy (§2.7 b)."""
    def stat(xs):
        xs = [x for x in xs if _finite(x)]
        if not xs:
            return None
        m = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
        return {"avg": m, "median": float(np.median(xs)), "min": min(xs), "max": max(xs), "std": sd}

    resolved = sum(1 for t in traces if t["is_resolved"] is True)
    unresolved = sum(1 for t in traces if t["is_resolved"] is False)
    acc = resolved / (resolved + unresolved) if resolved + unresolved else None
    gpu = sum(t["query_gpu_energy_joules"] for t in traces)
    powers = [t["query_gpu_power_avg_watts"] for t in traces]
    totals = {"queries": len(traces), "completed": sum(t["completed"] for t in traces), "resolved": resolved,
              "unresolved": unresolved, "turns": sum(t["num_turns"] for t in traces),
              "tool_calls": sum(t["total_tool_calls"] for t in traces),
              "input_tokens": sum(t["total_input_tokens"] for t in traces),
              "output_tokens": sum(t["total_output_tokens"] for t in traces),
              "total_tokens": sum(t["total_tokens"] for t in traces),
              "wall_clock_s": sum(t["total_wall_clock_s"] for t in traces), "gpu_energy_joules": gpu,
              "cpu_energy_joules": sum(t["query_cpu_energy_joules"] or 0.0 for t in traces), "cost_usd": 0.0,
              "accuracy": acc}
    return {
        "generated_at": "2026-03-12T10:00:00Z", "config": cfg, "totals": totals,
        "efficiency": {"accuracy": acc, "total_gpu_energy_joules": gpu, "total_cpu_energy_joules": totals["cpu_energy_joules"],
                       "avg_gpu_power_watts": sum(powers) / len(powers), "avg_cpu_power_watts": None,
                       "ipj": acc / gpu if acc else None, "ipw": acc / (sum(powers) / len(powers)) if acc else None},
        "averages": {"turns_per_query": totals["turns"] / len(traces),
                     "wall_clock_per_query_s": totals["wall_clock_s"] / len(traces),
                     "gpu_energy_per_query_joules": gpu / len(traces)},
        "statistics": {"wall_clock_s": stat([t["total_wall_clock_s"] for t in traces]),
                       "gpu_energy_joules": stat([t["query_gpu_energy_joules"] for t in traces]),
                       "turns": stat([t["num_turns"] for t in traces])},
    }


def ipw_agentic(root: Path, seed: int = 8) -> dict:
    """(g) `run_<agent>_<model_slug>_<dataset>/traces.jsonl` + summary.json: a sequential react run
    (queries with per-turn energy, queries without it, one timed out; resolved true/false/null) and
    a concurrent openhands run (concurrency 2: no run-level throughput)."""
    rng = np.random.default_rng(seed)
    out = {}
    for agent, model, dataset, concurrency, plan in (
        ("react", "llama3.2:3b", "gaia", 1,
         [(True, True), (False, False), (True, None), (False, True), (True, False), (False, True)]),
        ("openhands", "qwen3:8b", "swebench", 2, [(True, True), (False, False), (True, True)]),
    ):
        name = f"run_{agent}_{_slug(model)}_{dataset}"
        traces = [agentic_trace(rng, q, turn_energy=e, resolved=r, completed=not (agent == "react" and q == 4))
                  for q, (e, r) in enumerate(plan)]
        cfg = {"agent": agent, "model": model, "dataset": dataset, "client_base_url": "http://localhost:8000/v1",
               "max_queries": len(traces), "concurrency": concurrency, "query_timeout": 600, "export_format": "jsonl",
               "estimate_flops": False, "eval_client": "openai", "eval_model": "gpt-5-nano-2025-08-07"}
        d = root / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
        summary = agentic_summary(cfg, traces)
        _write_json(d / "summary.json", summary)
        out[("ipw_agentic", name)] = agentic_expected(name, summary, traces)
    return out


# --------------------------------------------------------------------------------------------
# Everything, and the CLI

LAYOUTS = ["lem_v1_aggregated", "lem_v1_raw", "lem_v1_multicycle", "lem_v1_edge", "lem_v1_broken", "lem_v2",
           "ipw_profiles", "ipw_agentic"]


def write_all(out: Path) -> dict:
    """Every layout under out/<layout>/. Returns {"runs": {(kind, local_id): expectation (with
    "layout")}, "repeat_stats": [...], "broken": [{"layout", "path"}], "layouts": {name: dir}}."""
    runs, repeat, broken = {}, [], []

    def add(layout, got):
        for key, exp in got.items():
            assert key not in runs, key
            runs[key] = {**exp, "layout": layout}

    add("lem_v1_aggregated", lem_v1_aggregated(out / "lem_v1_aggregated"))
    add("lem_v1_raw", lem_v1_raw(out / "lem_v1_raw"))
    got, repeat = lem_v1_multicycle(out / "lem_v1_multicycle")
    add("lem_v1_multicycle", got)
    add("lem_v1_edge", lem_v1_edge(out / "lem_v1_edge"))
    got, paths = lem_v1_broken(out / "lem_v1_broken")
    add("lem_v1_broken", got)
    broken = [{"layout": "lem_v1_broken", "path": p} for p in paths]
    add("lem_v2", lem_v2(out / "lem_v2"))
    add("ipw_profiles", ipw_profiles(out / "ipw_profiles"))
    add("ipw_agentic", ipw_agentic(out / "ipw_agentic"))
    return {"runs": runs, "repeat_stats": repeat, "broken": broken,
            "layouts": {name: str(out / name) for name in LAYOUTS}}


def to_json(expected: dict) -> dict:
    """expected.json: runs as a list (their tuple keys become source_kind/local_id fields)."""
    return {**expected, "runs": [{"source_kind": k, "local_id": i, **v} for (k, i), v in expected["runs"].items()]}


# --- the benchmark set

def bench_lem(results: Path, n: int, seed: int = 11, cycles: int = 10) -> None:
    """n LEM v1 experiments (aggregated files, 4 processes, 100 requests each), as n/cycles bases of
    `cycles` cycles so repeat statistics have groups of `cycles` runs."""
    rng = np.random.default_rng(seed)
    cfg = lem_config(batch_size=8, sample_size=400, gpus=(0, 1, 2, 3))
    for e in range(n):
        base, k = divmod(e, cycles)
        exp_id = f"{base + 1000:04d}_c{k}"
        procs = _lem_procs(rng, exp_id, cfg, 4, start=BASE_TIME + timedelta(minutes=5 * e), n_requests=100,
                           out_tokens=(3, 6))
        write_lem_experiment(results, exp_id, procs)


def bench_ipw(root: Path, n: int, queries: int, seed: int = 12) -> None:
    """n IPW profiles of `queries` rows (2 shards each), built column-wise."""
    rng = np.random.default_rng(seed)
    model, gpu = "llama3.2:1b", "NVIDIA H100 80GB HBM3"
    mtype = model_metrics_type("new")

    def arr(values, t=F64):
        return pa.array(values, type=t)

    def struct(t, children):
        return pa.StructArray.from_arrays(children, fields=list(t))

    def stats_arr(centre):
        return struct(STATS, [arr(centre), arr(centre * 1.2), arr(centre), arr(centre * 0.8)])

    for p in range(n):
        q = queries
        in_tok, out_tok = rng.integers(30, 400, q), rng.integers(10, 300, q)
        ttft = np.round(rng.uniform(0.02, 0.4, q), 6)
        total_s = np.round(ttft + out_tok * rng.uniform(0.008, 0.02, q), 6)
        power = np.round(rng.uniform(150, 450, q), 3)
        energy = np.where(rng.random(q) < 0.03, 0.0, np.round(power * total_s, 6))
        flops = 2.0 * 1.24e9 * (in_tok + out_tok)
        correct = rng.random(q) < 0.6
        scored = rng.random(q) < 0.9
        none = np.full(q, None)
        children = {
            "compute_metrics": [arr(flops), arr(flops / 2), arr(flops), arr(np.full(q, 2.48e9))],
            "energy_metrics": [arr(energy), arr(energy), arr(none), arr(none), arr(none), arr(none),
                               arr(np.full(q, "gpu"), STR), arr(energy / out_tok), arr(energy / (in_tok + out_tok))],
            "latency_metrics": [arr(total_s * 1000 / out_tok), arr(out_tok / total_s), arr(ttft), arr(total_s),
                                *[arr(rng.uniform(5, 40, q)) for _ in range(5)]],
            "memory_metrics": [stats_arr(np.full(q, 2048.0)), stats_arr(np.full(q, 9000.0))],
            "power_metrics": [struct(mtype["power_metrics"].type[0].type, [stats_arr(power), stats_arr(power)]),
                              struct(mtype["power_metrics"].type[1].type, [stats_arr(np.full(q, 45.0)),
                                                                           stats_arr(np.full(q, 45.0))])],
            "temperature_metrics": None,
            "token_metrics": [arr(in_tok, I64), arr(out_tok, I64), arr(in_tok + out_tok, I64)],
            "gpu_info": [arr(np.full(q, gpu), STR), arr(np.full(q, "NVIDIA"), STR), arr(np.full(q, "0"), STR),
                         arr(np.full(q, "GPU"), STR), arr(np.full(q, "nvml"), STR)],
            "lm_correctness": arr(none, BOOL), "lm_response": arr(np.full(q, "answer"), STR),
            "evaluation": [arr(np.where(scored, correct, None), BOOL),
                           arr(np.full(q, '{"evaluation_failed": false}'), STR),
                           struct(mtype["evaluation"].type[2].type, [arr(none, STR)])],
        }
        cols = []
        for f in mtype:
            c = children[f.name]
            if f.name == "temperature_metrics":
                cols.append(stats_arr(np.full(q, 62.0)))
            elif isinstance(c, list):
                cols.append(struct(f.type, c))
            else:
                cols.append(c)
        metrics = struct(mtype, cols)
        idx = np.arange(q)
        table = pa.table({
            "problem": arr([f"Question {i}" for i in idx], STR), "answer": arr(idx.astype(str), STR),
            "subject": arr(np.full(q, "arithmetic"), STR), "dataset_metadata": arr(np.full(q, "{}"), STR),
            "model_answers": struct(pa.struct([(model, STR)]), [arr(np.full(q, "answer"), STR)]),
            "model_metrics": struct(pa.struct([(model, mtype)]), [metrics]),
        }, schema=profile_schema(model, "new"))
        name = f"profile_{_slug(gpu)}_{_slug(model)}_bench{p:04d}"
        d = root / name
        write_hf_dataset(d, table, [q // 2, q - q // 2], f"{p:016x}")
        _write_json(d / "summary.json", _profile_summary(model, gpu_name=gpu, hardware_label=_slug(gpu),
                                                         dataset="bench", client="ollama", concurrency=1, n=q))


def write_bench(out: Path, n_lem: int, n_ipw: int, queries: int) -> list[Path]:
    """The benchmark set; returns the layout directories to import."""
    lem, ipw = out / "lem_v1_bench", out / "ipw_bench"
    bench_lem(lem, n_lem)
    bench_ipw(ipw, n_ipw, queries)
    return [lem, ipw]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", nargs=3, type=int, metavar=("N_LEM", "N_IPW", "QUERIES"),
                    help="write the benchmark set instead of the conformance layouts")
    ap.add_argument("out", type=Path)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.bench:
        for d in write_bench(args.out, *args.bench):
            print(d)
        return
    expected = write_all(args.out)
    _write_json(args.out / "expected.json", to_json(expected))
    print(f"wrote {len(expected['runs'])} runs in {len(LAYOUTS)} layouts under {args.out}")


if __name__ == "__main__":
    sys.exit(main())
