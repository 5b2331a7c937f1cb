"""The generated raw runs embedded in data/sample (raw::generate): what `cargo run` serves from them
equals mlenergy-data 0.4.0 reading the same directory with from_directory()."""

import pytest

from conftest import SAMPLE
from mlenergy.data import DiffusionRuns, LLMRuns

METRICS = ["power.device_instant", "power.device_average", "temperature"]


def _with_raw(runs):
    return [r for r in runs if r._results_path]


def _llm():
    runs = _with_raw(LLMRuns.from_directory(SAMPLE, stable_only=False))
    assert len(runs) == 1 and runs[0].num_gpus == 2
    return runs[0]


def _ids(api, domain):
    params = {"fields": "run_id,results_path"}
    if domain == "llm":
        params["stability"] = "all"
    rows = api.json(f"/v1/{domain}/runs", **params)["runs"]
    return {str(SAMPLE / r["results_path"]): r["run_id"] for r in rows if r["results_path"]}


def test_llm_output_lengths_and_itl(api):
    rec = _llm()
    run_id = _ids(api, "llm")[rec._results_path]
    rows = api.json(f"/v1/llm/runs/{run_id}/output-lengths")
    assert [r["output_len"] for r in rows] == rec.output_lengths()
    assert sum(rec.output_lengths()) == rec.total_output_tokens
    rows = api.json(f"/v1/llm/runs/{run_id}/itl")
    assert [r["itl_s"] for r in rows] == rec.inter_token_latencies()


@pytest.mark.parametrize("metric", METRICS)
def test_timelines_of_every_generated_run(api, metric):
    runs = [("llm", _llm())] + [("diffusion", r) for r in _with_raw(DiffusionRuns.from_directory(SAMPLE))]
    assert {r.task for _, r in runs} == {"video-chat", "text-to-image", "text-to-video"}
    for domain, rec in runs:
        run_id = _ids(api, domain)[rec._results_path]
        want = rec.timelines(metric=metric)
        got = api.json(f"/v1/{domain}/runs/{run_id}/timeline", metric=metric)
        assert len(got) == len(want) > 0
        for (_, w), h in zip(want.iterrows(), got):
            assert (h["timestamp"], h["relative_time_s"], h["value"], h["metric"]) == (
                w["timestamp"], w["relative_time_s"], w["value"], w["metric"])
