"""The leaderboard's data files served from a raw tree (the generated one of test_build.py)
against the same files made the way the leaderboard's build makes them (leaderboard-contract
§2.1-§2.6): mlenergy-data 0.4.0 reads the runs and their output lengths, numpy makes the
histograms, json.dumps writes the bytes. The served files must be identical, byte for byte; here
the histograms come from the raw files, read after the server starts."""

import json
import time
import urllib.request
from collections import OrderedDict

import numpy as np
import pytest

from conftest import running_server
from mlenergy.data import DiffusionRuns, LLMRuns
from test_build import make_tree

DISPLAY = {
    "gpqa": "GPQA Diamond",
    "lm-arena-chat": "LLM Chat (LM Arena)",
    "sourcegraph-fim": "Fill-in-the-Middle (Sourcegraph)",
    "image-chat": "Image Chat",
    "video-chat": "Video Chat",
    "text-to-image": "Text to Image",
    "text-to-video": "Text to Video",
}
GROUPS = {
    "llm": {"gpqa", "lm-arena-chat", "sourcegraph-fim"},
    "mllm": {"image-chat", "video-chat"},
    "diffusion": {"text-to-image", "text-to-video"},
}
DATE = "2026-03-01"


def llm_key(r):
    return (r.model_id, r.task, r.gpu_model, r.num_gpus, r.max_num_seqs, r.num_request_repeats or 1, r.seed or 0)


def diffusion_key(r):
    return (r.model_id, r.task, r.gpu_model, r.num_gpus, r.batch_size, r.height, r.width,
            r.inference_steps or 0, r.ulysses_degree or 0, r.ring_degree or 0, r.use_torch_compile or False)


def media(task):
    return "video" if "video" in task else "image"


def diffusion_media(r):
    m = media(r.task)
    out = {
        f"energy_per_{m}_joules": r.energy_per_generation_joules,
        f"throughput_{m}s_per_sec": r.throughput_generations_per_sec,
        f"{m}_height": r.height,
        f"{m}_width": r.width,
    }
    if m == "video":
        out["fps"] = r.fps
        out["num_frames"] = r.num_frames
    return out


def expected_files(root):
    """path -> bytes, as the leaderboard's build writes them (last_updated = DATE)."""
    llm_loaded = list(LLMRuns.from_raw_results(root))  # stable only, the toolkit's load order
    diff_loaded = list(DiffusionRuns.from_raw_results(root))
    llm = sorted(llm_loaded, key=llm_key)
    diff = sorted(diff_loaded, key=diffusion_key)
    files = {}
    tasks = sorted({r.task for r in llm} | {r.task for r in diff})
    models = {}
    for r in llm_loaded:
        models.setdefault(r.model_id, {
            "activated_params_billions": r.activated_params_billions, "architecture": r.architecture,
            "nickname": r.nickname, "total_params_billions": r.total_params_billions,
            "weight_precision": r.weight_precision})
    for r in diff_loaded:
        models.setdefault(r.model_id, {
            "activated_params_billions": r.activated_params_billions, "nickname": r.nickname,
            "total_params_billions": r.total_params_billions, "weight_precision": r.weight_precision})
    files["index.json"] = {
        "architectures": {k: sorted(t for t in tasks if t in v) for k, v in GROUPS.items()},
        "last_updated": DATE,
        "models": dict(sorted(models.items())),
        "tasks": tasks,
    }
    for task in sorted({r.task for r in llm}):
        files[f"tasks/{task}.json"] = {
            "configurations": [{
                "activated_params_billions": r.activated_params_billions, "architecture": r.architecture,
                "avg_batch_size": r.avg_batch_size, "avg_output_len": r.avg_output_len,
                "avg_power_watts": r.avg_power_watts, "data_parallel": r.data_parallel,
                "energy_per_request_joules": r.energy_per_request_joules,
                "energy_per_token_joules": r.energy_per_token_joules, "expert_parallel": r.expert_parallel,
                "gpu_model": r.gpu_model, "max_num_seqs": r.max_num_seqs, "median_itl_ms": r.median_itl_ms,
                "model_id": r.model_id, "nickname": r.nickname, "num_gpus": r.num_gpus,
                "output_throughput_tokens_per_sec": r.output_throughput_tokens_per_sec,
                "p90_itl_ms": r.p90_itl_ms, "p95_itl_ms": r.p95_itl_ms, "p99_itl_ms": r.p99_itl_ms,
                "tensor_parallel": r.tensor_parallel, "total_params_billions": r.total_params_billions,
                "weight_precision": r.weight_precision,
            } for r in llm if r.task == task],
            "task": task,
            "task_display_name": DISPLAY.get(task, task),
        }
    for task in sorted({r.task for r in diff}):
        files[f"tasks/{task}.json"] = {
            "architecture": "diffusion",
            "configurations": [{
                "activated_params_billions": r.activated_params_billions, "avg_power_watts": r.avg_power_watts,
                "batch_latency_s": r.batch_latency_s, "batch_size": r.batch_size, "gpu_model": r.gpu_model,
                "inference_steps": r.inference_steps, "model_id": r.model_id, "nickname": r.nickname,
                "num_gpus": r.num_gpus, "ring_degree": r.ring_degree,
                "total_params_billions": r.total_params_billions, "ulysses_degree": r.ulysses_degree,
                "weight_precision": r.weight_precision, **diffusion_media(r),
            } for r in diff if r.task == task],
            "task": task,
            "task_display_name": DISPLAY.get(task, task),
        }
    pairs = OrderedDict()
    for r in llm:
        pairs.setdefault((r.model_id, r.task), []).append(r)
    for (model_id, task), runs in pairs.items():
        lengths = [np.asarray(r.output_lengths(), dtype=np.int64) for r in runs]
        _, edges = np.histogram(np.concatenate(lengths), bins=50)
        configs, total = [], np.zeros(50, dtype=np.int64)
        for r, l in zip(runs, lengths):
            counts, _ = np.histogram(l, bins=edges)
            total += counts
            dp, ep, tp = r.data_parallel, r.expert_parallel, r.tensor_parallel
            configs.append({
                "avg_batch_size": r.avg_batch_size, "avg_output_len": r.avg_output_len,
                "avg_power_watts": r.avg_power_watts, "energy_per_request_joules": r.energy_per_request_joules,
                "energy_per_token_joules": r.energy_per_token_joules, "gpu_model": r.gpu_model,
                "max_num_seqs": r.max_num_seqs, "median_itl_ms": r.median_itl_ms, "num_gpus": r.num_gpus,
                "output_length_distribution": {"bins": [float(e) for e in edges], "counts": [int(c) for c in counts]},
                "output_throughput_tokens_per_sec": r.output_throughput_tokens_per_sec,
                "p90_itl_ms": r.p90_itl_ms, "p95_itl_ms": r.p95_itl_ms, "p99_itl_ms": r.p99_itl_ms,
                "parallelization": {"data_parallel": dp, "expert_parallel": ep,
                                    "notes": "DP for attention, EP for MLP experts" if dp > 1 and ep > 1 else "",
                                    "tensor_parallel": tp},
            })
        first = runs[0]
        files[f"models/{model_id.replace('/', '__')}__{task}.json"] = {
            "activated_params_billions": first.activated_params_billions, "architecture": first.architecture,
            "configurations": configs, "model_id": model_id,
            "output_length_distribution": {"bins": [float(e) for e in edges], "counts": [int(c) for c in total]},
            "task": task, "total_params_billions": first.total_params_billions,
            "weight_precision": first.weight_precision,
        }
    dpairs = OrderedDict()
    for r in diff:
        dpairs.setdefault((r.model_id, r.task), []).append(r)
    for (model_id, task), runs in dpairs.items():
        first = runs[0]
        files[f"models/{model_id.replace('/', '__')}__{task}.json"] = {
            "activated_params_billions": first.activated_params_billions,
            "configurations": [{
                "avg_power_watts": r.avg_power_watts, "batch_latency_s": r.batch_latency_s,
                "batch_size": r.batch_size, "gpu_model": r.gpu_model, "inference_steps": r.inference_steps,
                "num_gpus": r.num_gpus,
                "parallelization": {"ring_degree": r.ring_degree, "ulysses_degree": r.ulysses_degree},
                **diffusion_media(r),
            } for r in runs],
            "model_id": model_id, "nickname": first.nickname, "task": task,
            "total_params_billions": first.total_params_billions, "weight_precision": first.weight_precision,
        }
    return {p: json.dumps(v, indent=2, sort_keys=True).encode() for p, v in files.items()}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    r1, _ = make_tree(tmp_path_factory.mktemp("lb"))
    return r1


def fetch(url):
    with urllib.request.urlopen(url) as r:
        return r.read()


@pytest.mark.parametrize("reading", ["on-request", "background"])
def test_files_from_a_raw_tree_are_the_builds(tree, reading):
    want = expected_files(tree)
    assert any(p.startswith("models/") and "output_length_distribution" in v.decode() for p, v in want.items())
    llm_models = sum(1 for p in want if p.startswith("models/") and b"output_length" in want[p])
    with running_server(f"raw:{tree}", args=("--leaderboard-date", DATE, "--leaderboard-histograms", reading)) as base:
        if reading == "background":
            # The model files' histograms are read after start; /readyz says when they all are.
            deadline = time.time() + 60
            while True:
                h = json.loads(fetch(f"{base}/readyz"))["leaderboard"]["histograms"]
                if h["pending"] == 0 or time.time() > deadline:
                    break
                time.sleep(0.1)
            assert h["pending"] == 0 and h["without"] == [], h
            assert h["ready"] == llm_models
        else:
            # Nothing is read until a model file is asked for (the default: raw files are read lazily).
            time.sleep(1)
            h = json.loads(fetch(f"{base}/readyz"))["leaderboard"]["histograms"]
            assert (h["pending"], h["ready"]) == (llm_models, 0), h
        index = json.loads(fetch(f"{base}/leaderboard/data/index.json"))
        served = {"index.json"} | {f"tasks/{t}.json" for t in index["tasks"]}
        for t in index["tasks"]:
            for c in json.loads(fetch(f"{base}/leaderboard/data/tasks/{t}.json"))["configurations"]:
                served.add(f"models/{c['model_id'].replace('/', '__')}__{t}.json")
        assert served == set(want)
        for path, body in want.items():
            got = fetch(f"{base}/leaderboard/data/{path}")
            assert got == body, (path, got.decode()[:2000], body.decode()[:2000])
        h = json.loads(fetch(f"{base}/readyz"))["leaderboard"]["histograms"]
        assert (h["pending"], h["ready"], h["without"]) == (0, llm_models, []), h


def test_a_request_reads_the_raw_files_itself(tree):
    """A model file asked for before the background reading reaches it is made for the request."""
    want = expected_files(tree)
    path = next(p for p in sorted(want) if p.startswith("models/") and b"output_length" in want[p])
    with running_server(f"raw:{tree}", args=("--leaderboard-date", DATE)) as base:
        assert fetch(f"{base}/data/{path}") == want[path]


def build(tree, out, *flags):
    import subprocess
    from conftest import BINARY

    proc = subprocess.run([BINARY, "build", str(tree), "--out", str(out), *flags], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_compiled_tree_with_raw_files_gives_the_builds_bytes(tree, tmp_path):
    """`build` copies the raw files into the compiled directory: served from there, the files are
    the leaderboard build's."""
    out = tmp_path / "compiled"
    build(tree, out)
    want = expected_files(tree)
    with running_server(str(out), args=("--leaderboard-date", DATE)) as base:
        for path, body in want.items():
            assert fetch(f"{base}/leaderboard/data/{path}") == body, path


def test_a_compiled_tree_without_raw_files_carries_the_histograms(tree, tmp_path):
    """Built with --skip-raw, the compiled directory has no raw files but the histograms `build`
    made from them: every file is the leaderboard build's, with no raw read."""
    out = tmp_path / "compiled"
    build(tree, out, "--skip-raw")
    assert (out / "histograms" / "llm_output_lengths.parquet").is_file()
    want = expected_files(tree)
    with running_server(str(out), args=("--leaderboard-date", DATE)) as base:
        for path, body in want.items():
            with urllib.request.urlopen(f"{base}/leaderboard/data/{path}") as r:
                assert (r.read(), r.headers.get("Warning")) == (body, None), path


def test_a_compiled_tree_without_raw_files_leaves_the_histograms_out(tree, tmp_path):
    """A compiled directory with neither raw files nor histograms (built with --skip-raw before
    build wrote them): the LLM model files are served without the histogram keys (the frontend
    hides that panel), and say why."""
    out = tmp_path / "compiled"
    build(tree, out, "--skip-raw")
    import shutil
    shutil.rmtree(out / "histograms")
    want = expected_files(tree)
    with running_server(str(out), args=("--leaderboard-date", DATE)) as base:
        for path, body in want.items():
            with urllib.request.urlopen(f"{base}/leaderboard/data/{path}") as r:
                got, warning = r.read(), r.headers.get("Warning")
            expected = json.loads(body)
            if "output_length_distribution" in expected:
                del expected["output_length_distribution"]
                for c in expected["configurations"]:
                    del c["output_length_distribution"]
                assert warning and "no output-length histograms" in warning, path
            else:
                assert warning is None
            assert got == json.dumps(expected, indent=2, sort_keys=True).encode(), path
        h = json.loads(fetch(f"{base}/readyz"))["leaderboard"]["histograms"]
        assert h["pending"] == 0 and len(h["without"]) == h["files"] > 0
