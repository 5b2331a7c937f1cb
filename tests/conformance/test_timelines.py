"""Timelines against mlenergy-data 0.4.0: every metric, LLM (steady-state window) and diffusion
(whole series), 1, 2 and 8 GPUs with misaligned timestamps, per run, per GPU and over runs."""

import json
import random
import urllib.error
import urllib.parse
import urllib.request

import pytest

import rawgen as g
from mlenergy.data import DiffusionRuns, LLMRuns
from mlenergy.data.records.timelines import extract_device_timeline
from conftest import running_server
from test_build import rel_to_root

METRICS = ["power.device_instant", "power.device_average", "temperature"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("timelines") / "root"
    rng = random.Random(7)
    cfg, dcfg = root / "configs" / "vllm", root / "configs" / "xdit"
    g.llm_config(cfg, "gpqa", "org/model-a", "H100")
    for i, (gpus, batch) in enumerate([(1, 8), (2, 16), (8, 64)]):
        start = 1_700_000_000.0 + 1000 * i + 0.123
        tl = g.timeline(rng, gpus, start, start + 40, steady=(round(start + 5.05, 6), round(start + 35.0, 6)))
        # The 8-GPU run is written with indent=2, as the real files are (docs/raw-format.md §2.1).
        g.llm_run(root, num_gpus=str(gpus), max_num_seqs=str(batch), prometheus=g.prom(float(batch)), rng_seed=i,
                  timeline=tl, n_requests=200, indent=2 if gpus == 8 else None)
    g.diffusion_config(dcfg, "text-to-image", "org/diff-a")
    g.diffusion_config(dcfg, "text-to-video", "org/video-a")
    for i, (task, model, cfg_name) in enumerate([
        ("text-to-image", "org/diff-a", "batch-1+size-1024x1024+steps-20+seed-48105+uly-1+ring-2+tc-False"),
        ("text-to-video", "org/video-a", "batch-1+size-480x832+steps-50+seed-48105+uly-4+ring-2+tc-False"),
    ]):
        start = 1_700_100_000.0 + 1000 * i
        tl = g.timeline(rng, 2 if i == 0 else 8, start, start + 30)
        g.diffusion_run(root, task=task, model_id=model, cfg_name=cfg_name, video=(i == 1), rng_seed=i, timeline=tl)
    with running_server(f"raw:{root}") as base:
        yield root, base


def get(base, path, **params):
    with urllib.request.urlopen(base + path + "?" + urllib.parse.urlencode(params)) as r:
        return json.loads(r.read())


def run_ids(base, domain):
    runs = get(base, f"/v1/{domain}/runs", fields="results_path", **({"stability": "all"} if domain == "llm" else {}))["runs"]
    return {r["results_path"]: r["run_id"] for r in runs}


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("domain", ["llm", "diffusion"])
def test_per_run_timelines(served, domain, metric):
    root, base = served
    runs = LLMRuns.from_raw_results(root, stable_only=False) if domain == "llm" else DiffusionRuns.from_raw_results(root)
    ids = run_ids(base, domain)
    assert len(runs) >= 2
    for rec in runs:
        want = rec.timelines(metric=metric)
        got = get(base, f"/v1/{domain}/runs/{ids[rel_to_root(rec._results_path, [root])]}/timeline", metric=metric)
        assert len(got) == len(want)
        for (_, w), h in zip(want.iterrows(), got):
            assert (h["timestamp"], h["relative_time_s"], h["value"], h["metric"]) == (
                w["timestamp"], w["relative_time_s"], w["value"], w["metric"])


@pytest.mark.parametrize("metric", METRICS)
def test_collection_timelines(served, metric):
    root, base = served
    for domain, runs in [("llm", LLMRuns.from_raw_results(root, stable_only=False)), ("diffusion", DiffusionRuns.from_raw_results(root))]:
        want = runs.timelines(metric=metric)
        got = get(base, f"/v1/{domain}/timelines", metric=metric, **({"stability": "all"} if domain == "llm" else {}))
        assert len(got) == len(want)
        cols = [c for c in want.columns]
        for (_, w), h in zip(want.iterrows(), got):
            for c in cols:
                assert h[c] == w[c], (domain, c, h[c], w[c])


def test_per_gpu_wide_form(served):
    root, base = served
    ids = run_ids(base, "llm")
    rec = LLMRuns.from_raw_results(root, stable_only=False).num_gpus(8)[0]
    raw = json.loads(open(rec._results_path).read())["timeline"]
    want = extract_device_timeline(raw["power"]["device_instant"], label="power_device_instant",
                                   steady_state_start=raw["steady_state_start_time"], steady_state_end=raw["steady_state_end_time"])
    got = get(base, f"/v1/llm/runs/{ids[rel_to_root(rec._results_path, [root])]}/timeline", per_gpu="true")
    assert list(got[0].keys())[1:] == list(want.columns)
    for (_, w), h in zip(want.iterrows(), got):
        for c in want.columns:
            wv = w[c]
            assert (h[c] is None and wv != wv) or h[c] == wv, (c, h[c], wv)


def test_itl_and_output_lengths_of_compact_and_indented_files(served):
    root, base = served
    ids = run_ids(base, "llm")
    runs = LLMRuns.from_raw_results(root, stable_only=False)
    indented = [rec for rec in runs if open(rec._results_path).read(3) == "{\n "]
    assert len(indented) == 1 and len(runs) == 3
    for rec in runs:
        run_id = ids[rel_to_root(rec._results_path, [root])]
        assert [r["itl_s"] for r in get(base, f"/v1/llm/runs/{run_id}/itl")] == rec.inter_token_latencies()
        got = get(base, f"/v1/llm/runs/{run_id}/output-lengths", include_unsuccessful="true")
        assert [r["output_len"] for r in got] == rec.output_lengths(include_unsuccessful=True)


def test_unknown_metric_is_a_400(served):
    _, base = served
    try:
        urllib.request.urlopen(base + "/v1/llm/timelines?metric=power.memory_average")
        raise AssertionError("expected 400")
    except urllib.error.HTTPError as e:
        p = json.loads(e.read())
        assert e.code == 400 and p["parameter"] == "metric" and p["allowed"] == METRICS


def test_downsampling_means_per_bucket(served):
    import numpy as np

    root, base = served
    ids = run_ids(base, "llm")
    rec = LLMRuns.from_raw_results(root, stable_only=False).num_gpus(2)[0]
    run = ids[rel_to_root(rec._results_path, [root])]
    full = rec.timelines(metric="power.device_instant")
    got = get(base, f"/v1/llm/runs/{run}/timeline", metric="power.device_instant", every="2s")
    buckets = np.floor(full["relative_time_s"].to_numpy() / 2.0)
    expected = [(g["relative_time_s"].iloc[0], float(np.mean(g["value"].to_numpy())))
                for _, g in full.groupby(buckets, sort=True)]
    assert [(r["relative_time_s"], r["value"]) for r in got] == expected
    try:
        urllib.request.urlopen(base + f"/v1/llm/runs/{run}/timeline?every=soon")
        raise AssertionError("expected 400")
    except urllib.error.HTTPError as e:
        assert e.code == 400 and json.loads(e.read())["parameter"] == "every"
