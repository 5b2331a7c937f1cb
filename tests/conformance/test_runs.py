"""Conformance of /v1/{domain}/runs and /v1/{domain}/groups with mlenergy-data 0.4.0 over the same
parquet files: counts, order and every value, floats compared exactly."""

import dataclasses
import math

import numpy as np
import pytest


def public_fields(collection):
    record_type = type(collection[0])
    return [f.name for f in dataclasses.fields(record_type) if not f.name.startswith("_")]


def assert_same_runs(toolkit_runs, api_runs, fields):
    """Same runs, same order, every public field equal (None == null, floats exactly)."""
    assert len(api_runs) == len(toolkit_runs)
    for i, (rec, got) in enumerate(zip(toolkit_runs, api_runs)):
        for f in fields:
            want = getattr(rec, f)
            have = got[f]
            if isinstance(want, float) and isinstance(have, (int, float)) and not isinstance(have, bool):
                assert float(have) == want, (i, f, have, want)
            else:
                assert have == want, (i, f, have, want)


def api_runs(api, domain, **params):
    body = api.json(f"/v1/{domain}/runs", **params)
    assert body["total"] == len(body["runs"])
    return body["runs"]


# (toolkit call on the collection, query parameters) for every filter case of docs/toolkit.md
# §10.2 and the §14.4 documentation examples, plus empty results.
LLM_CASES = [
    (lambda r: r, {}),
    (lambda r: r.task("gpqa"), {"task": "gpqa"}),
    (lambda r: r.task("gpqa", "lm-arena-chat"), {"task": "gpqa,lm-arena-chat"}),
    (lambda r: r.task("gpqa", "lm-arena-chat"), {"task": ["gpqa", "lm-arena-chat"]}),
    (lambda r: r.task("nonexistent"), {"task": "nonexistent"}),
    (lambda r: r.task(), {"task": ""}),
    (lambda r: r.gpu_model("H100"), {"gpu_model": "H100"}),
    (lambda r: r.gpu_model("B200"), {"gpu": "B200"}),
    (lambda r: r.gpu_model("H100", "B200"), {"gpu_model": "H100,B200"}),
    (lambda r: r.precision("fp8"), {"precision": "fp8"}),
    (lambda r: r.precision("bfloat16", "mxfp4"), {"precision": "bfloat16,mxfp4"}),
    (lambda r: r.nickname("DeepSeek R1"), {"nickname": "DeepSeek R1"}),
    (lambda r: r.architecture("MoE"), {"architecture": "MoE"}),
    (lambda r: r.architecture("Dense Transformer", "Mamba-Transformer Hybrid"), {"architecture": "Dense Transformer,Mamba-Transformer Hybrid"}),
    (lambda r: r.model_id("meta-llama/Llama-3.1-70B-Instruct"), {"model_id": "meta-llama/Llama-3.1-70B-Instruct"}),
    (lambda r: r.model_id("openai/gpt-oss-20b"), {"model": "openai/gpt-oss-20b"}),
    (lambda r: r.max_num_seqs(128), {"max_num_seqs": "128"}),
    (lambda r: r.max_num_seqs(128), {"batch": "128"}),
    (lambda r: r.max_num_seqs(8, 4096), {"max_num_seqs": ["8", "4096"]}),
    (lambda r: r.max_num_seqs(min=64), {"max_num_seqs_min": "64"}),
    (lambda r: r.max_num_seqs(min=16, max=128), {"max_num_seqs_min": "16", "max_num_seqs_max": "128"}),
    (lambda r: r.max_num_seqs(max=16), {"batch_max": "16"}),
    (lambda r: r.max_num_seqs(min=0), {"max_num_seqs_min": "0"}),
    (lambda r: r.max_num_seqs(min=5000), {"max_num_seqs_min": "5000"}),
    (lambda r: r.num_gpus(1), {"num_gpus": "1"}),
    (lambda r: r.num_gpus(1.0), {"num_gpus": "1.0"}),
    (lambda r: r.num_gpus(min=2), {"num_gpus_min": "2"}),
    (lambda r: r.num_gpus(min=2, max=4), {"num_gpus_min": "2", "num_gpus_max": "4"}),
    (lambda r: r.num_gpus(3), {"num_gpus": "3"}),
    (lambda r: r.task("gpqa").gpu_model("B200").max_num_seqs(min=64), {"task": "gpqa", "gpu_model": "B200", "max_num_seqs_min": "64"}),
    (lambda r: r.task("lm-arena-chat").num_gpus(min=2).precision("fp8").architecture("MoE"),
     {"task": "lm-arena-chat", "num_gpus_min": "2", "precision": "fp8", "architecture": "MoE"}),
    (lambda r: r.stable(), {"stability": "stable"}),
]

DIFFUSION_CASES = [
    (lambda r: r, {}),
    (lambda r: r.task("text-to-image"), {"task": "text-to-image"}),
    (lambda r: r.task("text-to-video", "text-to-image"), {"task": "text-to-video,text-to-image"}),
    (lambda r: r.task("nonexistent"), {"task": "nonexistent"}),
    (lambda r: r.model_id("black-forest-labs/FLUX.1-dev"), {"model_id": "black-forest-labs/FLUX.1-dev"}),
    (lambda r: r.gpu_model("H100"), {"gpu": "H100"}),
    (lambda r: r.nickname("FLUX.1 dev"), {"nickname": "FLUX.1 dev"}),
    (lambda r: r.precision("bfloat16"), {"precision": "bfloat16"}),
    (lambda r: r.precision("fp8"), {"precision": "fp8"}),
    (lambda r: r.batch_size(1), {"batch_size": "1"}),
    (lambda r: r.batch_size(2, 4), {"batch": "2,4"}),
    (lambda r: r.batch_size(min=2), {"batch_size_min": "2"}),
    (lambda r: r.batch_size(min=2, max=8), {"batch_min": "2", "batch_max": "8"}),
    (lambda r: r.num_gpus(8), {"num_gpus": "8"}),
    (lambda r: r.num_gpus(min=2, max=4), {"num_gpus_min": "2", "num_gpus_max": "4"}),
    (lambda r: r.task("text-to-video").gpu_model("B200").batch_size(max=2), {"task": "text-to-video", "gpu_model": "B200", "batch_size_max": "2"}),
]


@pytest.mark.parametrize("case", range(len(LLM_CASES)))
def test_llm_filters(api, llm, case):
    call, params = LLM_CASES[case]
    expected = call(llm)
    got = api_runs(api, "llm", **params)
    assert_same_runs(expected, got, public_fields(llm))


@pytest.mark.parametrize("case", range(len(DIFFUSION_CASES)))
def test_diffusion_filters(api, diffusion, case):
    call, params = DIFFUSION_CASES[case]
    expected = call(diffusion)
    got = api_runs(api, "diffusion", **params)
    assert_same_runs(expected, got, public_fields(diffusion))


def test_stability_views(api, llm, llm_all):
    assert_same_runs(llm_all, api_runs(api, "llm", stability="all"), public_fields(llm))
    assert_same_runs(llm_all.unstable(), api_runs(api, "llm", stability="unstable"), public_fields(llm))
    assert_same_runs(llm_all.stable(), api_runs(api, "llm"), public_fields(llm))
    # The toolkit refuses unstable() on a stable-only collection; the service, which always loads
    # stable and unstable runs, answers it from the full table.
    with pytest.raises(ValueError):
        llm.unstable()


def test_to_dataframe_values_match(api, llm):
    df = llm.task("image-chat").to_dataframe()
    got = api_runs(api, "llm", task="image-chat")
    assert list(df.columns) == public_fields(llm)
    for i, row in enumerate(df.itertuples(index=False)):
        for f, want in zip(df.columns, row):
            have = got[i][f]
            if want is None or (isinstance(want, float) and math.isnan(want)):
                assert have is None, (i, f)
            else:
                assert have == want, (i, f, have, want)


def test_first_run_and_energy_optimum(api, llm):
    first = api.json("/v1/llm/runs", limit="1")["runs"][0]
    assert_same_runs([llm[0]], [first], public_fields(llm))
    best = min(llm.task("gpqa"), key=lambda r: r.energy_per_token_joules)
    got = api.json("/v1/llm/runs", task="gpqa", sort="energy_per_token_joules", limit="1")["runs"][0]
    assert_same_runs([best], [got], public_fields(llm))
    optimum = api.json("/v1/llm/groups", task="gpqa", agg="argmin(energy_per_token_joules)")["groups"][0]
    assert_same_runs([best], [optimum["argmin_energy_per_token_joules"]], public_fields(llm))


@pytest.mark.parametrize(
    "key,descending",
    [("energy_per_token_joules", False), ("avg_power_watts", True), ("num_gpus", False), ("nickname", True), ("p99_itl_ms", False)],
)
def test_sort_is_a_stable_sort_of_the_toolkit_order(api, llm, key, descending):
    expected = sorted(llm.task("lm-arena-chat"), key=lambda r: getattr(r, key), reverse=descending)
    got = api_runs(api, "llm", task="lm-arena-chat", sort=("-" if descending else "") + key)
    assert_same_runs(expected, got, public_fields(llm))


def test_multi_key_sort_and_paging(api, diffusion):
    expected = sorted(diffusion, key=lambda r: (-r.batch_size, r.energy_per_generation_joules))
    pages = []
    for offset in range(0, len(expected), 300):
        pages += api.json("/v1/diffusion/runs", sort="-batch_size,energy_per_generation_joules", limit="300", offset=str(offset))["runs"]
    assert_same_runs(expected, pages, public_fields(diffusion))


def toolkit_key(key):
    return list(key) if isinstance(key, tuple) else key


GROUP_CASES = [
    ("llm", ("task",), {}),
    ("llm", ("model_id", "max_num_seqs"), {}),
    ("llm", ("gpu_model",), {"model_id": "meta-llama/Llama-3.1-70B-Instruct"}),
    ("llm", ("task", "gpu_model", "num_gpus"), {"architecture": "MoE"}),
    ("llm", (), {}),
    ("llm", ("task",), {"task": "nonexistent"}),
    ("llm", ("seed",), {}),
    ("diffusion", ("batch_size",), {}),
    ("diffusion", ("model_id", "gpu_model"), {"task": "text-to-video"}),
    ("diffusion", ("num_frames",), {}),
]

AGG_FIELDS = {
    "llm": ["energy_per_token_joules", "avg_power_watts", "median_itl_ms", "max_num_seqs", "mean_itl_ms"],
    "diffusion": ["energy_per_generation_joules", "batch_latency_s", "batch_size", "num_frames"],
}


def numpy_aggregates(records, field):
    vals = [getattr(r, field) for r in records if getattr(r, field) is not None]
    if not vals:
        return {k: None for k in ("min", "max", "mean", "median", "sum", "argmin", "argmax")} | {"count": 0}
    arr = np.array(vals)
    non_null = [r for r in records if getattr(r, field) is not None]
    as_int = all(isinstance(v, int) and not isinstance(v, bool) for v in vals)
    return {
        "count": len(vals),
        "min": min(vals),
        "max": max(vals),
        "mean": float(np.mean(arr.astype(float))),
        "median": float(np.median(arr.astype(float))),
        "sum": int(np.sum(arr)) if as_int else float(np.sum(arr)),
        "argmin": non_null[int(np.argmin(arr))],
        "argmax": non_null[int(np.argmax(arr))],
    }


@pytest.mark.parametrize("case", range(len(GROUP_CASES)))
def test_group_by(api, llm, diffusion, case):
    domain, by, filters = GROUP_CASES[case]
    collection = llm if domain == "llm" else diffusion
    for name, value in filters.items():
        collection = getattr(collection, name)(value)
    expected = collection.group_by(*by)
    aggs = ",".join(f"{f}({field})" for field in AGG_FIELDS[domain] for f in ("count", "min", "max", "mean", "median", "sum", "argmin", "argmax"))
    body = api.json(f"/v1/{domain}/groups", by=",".join(by), agg=aggs, **filters)
    assert body["by"] == list(by)
    groups = body["groups"]
    assert [g["key"] for g in groups] == [toolkit_key(k) for k in expected]
    fields = public_fields(llm if domain == "llm" else diffusion)
    for g, (key, members) in zip(groups, expected.items()):
        assert g["count"] == len(members)
        for field in AGG_FIELDS[domain]:
            want = numpy_aggregates(members, field)
            for func in ("count", "min", "max", "mean", "median", "sum"):
                assert g[f"{func}_{field}"] == want[func], (key, func, field)
            for func in ("argmin", "argmax"):
                if want[func] is None:
                    assert g[f"{func}_{field}"] is None
                else:
                    assert_same_runs([want[func]], [g[f"{func}_{field}"]], fields)
        # The members themselves: the same filters plus the key select exactly the group.
        if by and all(getattr(members[0], b) is not None for b in by):
            params = dict(filters)
            for b in by:
                param = {"gpu_model": "gpu_model", "model_id": "model_id", "task": "task", "num_gpus": "num_gpus",
                         "max_num_seqs": "max_num_seqs", "batch_size": "batch_size"}.get(b)
                if param is None:
                    break
                params[param] = str(getattr(members[0], b))
            else:
                assert_same_runs(members, api_runs(api, domain, **params), fields)


def test_errors_mirror_toolkit_refusals(api, llm, diffusion):
    # Exact values mixed with a range: ValueError in the toolkit, 400 here.
    with pytest.raises(ValueError):
        llm.max_num_seqs(16, min=8)
    p = api.problem("/v1/llm/runs", 400, max_num_seqs="16", max_num_seqs_min="8")
    assert p["parameter"] == "max_num_seqs"
    with pytest.raises(ValueError):
        diffusion.batch_size(1, min=1)
    api.problem("/v1/diffusion/runs", 400, batch_size="1", batch_size_min="1")
    # A numeric filter with no value: TypeError in the toolkit, 400 here.
    with pytest.raises(TypeError):
        llm.max_num_seqs()
    p = api.problem("/v1/llm/runs", 400, max_num_seqs="")
    assert "must be a number" in p["detail"]
    # An unknown group_by field: AttributeError in the toolkit, 400 naming it here.
    with pytest.raises(AttributeError):
        llm.group_by("no_such_field")
    p = api.problem("/v1/llm/groups", 400, by="no_such_field")
    assert p["parameter"] == "by" and "task" in p["allowed"]
