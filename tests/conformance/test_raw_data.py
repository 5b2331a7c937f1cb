"""/v1/llm/.../output-lengths and /itl against mlenergy-data 0.4.0's output_lengths() and
inter_token_latencies() on a generated raw tree served directly (`--data raw:ROOT`)."""

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

import rawgen as g
from conftest import running_server
from test_build import make_tree, rel_to_root
from mlenergy.data import LLMRuns


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("rawdata")
    r1, _ = make_tree(base)
    # A run whose successful request lacks output_len: the toolkit raises, we answer 422.
    g.llm_config(r1 / "configs" / "vllm", "sourcegraph-fim", "org/model-e", "H100")
    d = g.llm_run(r1, task="sourcegraph-fim", model_id="org/model-e", prometheus=g.prom(16.0), rng_seed=30)
    body = json.loads((d / "results.json").read_text())
    del body["results"][3]["output_len"]
    (d / "results.json").write_text(json.dumps(body))
    with running_server(f"raw:{r1}") as base_url:
        yield r1, base_url


def get(base, path, **params):
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    try:
        with urllib.request.urlopen(url) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def ids_by_path(base):
    _, body = get(base, "/v1/llm/runs", stability="all", fields="results_path")
    return {r["results_path"]: r["run_id"] for r in body["runs"]}


def test_per_run_output_lengths_and_itl(served):
    r1, base = served
    ids = ids_by_path(base)
    runs = LLMRuns.from_raw_results(r1, stable_only=False).task("gpqa", "lm-arena-chat", "image-chat", "video-chat")
    assert len(runs) > 10
    for rec in runs:
        run_id = ids[rel_to_root(rec._results_path, [r1])]
        status, rows = get(base, f"/v1/llm/runs/{run_id}/output-lengths")
        assert status == 200
        assert [r["output_len"] for r in rows] == rec.output_lengths()
        assert {r["run_id"] for r in rows} <= {run_id}
        _, rows = get(base, f"/v1/llm/runs/{run_id}/output-lengths", include_unsuccessful="true")
        assert [r["output_len"] for r in rows] == rec.output_lengths(include_unsuccessful=True)
        _, rows = get(base, f"/v1/llm/runs/{run_id}/itl")
        assert [r["itl_s"] for r in rows] == rec.inter_token_latencies()
        assert rows[0]["max_num_seqs"] == rec.max_num_seqs and rows[0]["task"] == rec.task


def test_collection_frames_match(served):
    r1, base = served
    runs = LLMRuns.from_raw_results(r1, stable_only=False).task("gpqa")
    expected = runs.output_lengths()
    status, rows = get(base, "/v1/llm/output-lengths", task="gpqa", stability="all")
    assert status == 200
    assert len(rows) == len(expected)
    # Runs come in the same order here (no ties in gpqa), requests in file order.
    for (_, want), got in zip(expected.iterrows(), rows):
        for col in ["task", "model_id", "num_gpus", "max_num_seqs", "output_len"]:
            assert got[col] == want[col]
    itl = runs.inter_token_latencies()
    _, rows = get(base, "/v1/llm/itl", task="gpqa", stability="all")
    assert [r["itl_s"] for r in rows] == list(itl["itl_s"])
    status, csv = None, urllib.request.urlopen(base + "/v1/llm/itl?task=gpqa&stability=all&format=csv").read().decode()
    assert csv.splitlines()[0] == "run_id,task,model_id,num_gpus,max_num_seqs,itl_s"
    assert len(csv.splitlines()) == len(itl) + 1


def test_raw_errors(served):
    r1, base = served
    ids = ids_by_path(base)
    bad = next(i for p, i in ids.items() if "sourcegraph-fim" in p)
    with pytest.raises(ValueError):
        LLMRuns.from_raw_results(r1, stable_only=False).task("sourcegraph-fim").output_lengths()
    status, p = get(base, f"/v1/llm/runs/{bad}/output-lengths")
    assert status == 422 and p["type"] == "/problems/raw_invalid" and "output_len" in p["detail"]
    # The whole collection fails on that run, naming it.
    status, p = get(base, "/v1/llm/output-lengths", stability="all")
    assert status == 422 and bad in p["detail"]
    status, p = get(base, "/v1/llm/runs/nope/itl")
    assert status == 404 and p["type"] == "/problems/unknown_run"
    status, p = get(base, "/v1/llm/itl", include_unsuccessful="true")
    assert status == 400 and p["parameter"] == "include_unsuccessful"
    status, p = get(base, "/v1/llm/output-lengths", include_unsuccessful="maybe")
    assert status == 400 and p["allowed"] == ["true", "false"]


def test_itl_summary_matches_numpy(served):
    import numpy as np

    r1, base = served
    ids = ids_by_path(base)
    runs = LLMRuns.from_raw_results(r1, stable_only=False).task("gpqa")
    status, rows = get(base, "/v1/llm/itl", task="gpqa", stability="all", summary="true")
    assert status == 200 and len(rows) == len(runs)
    by_id = {r["run_id"]: r for r in rows}
    for rec in runs:
        s = by_id[ids[rel_to_root(rec._results_path, [r1])]]
        x = np.array(rec.inter_token_latencies())
        assert s["count"] == len(x)
        assert s["mean_s"] == float(np.mean(x))
        for q in (50, 90, 95, 99):
            assert s[f"p{q}_s"] == float(np.percentile(x, q))
        assert s["max_s"] == float(x.max())
        counts, edges = np.histogram(x, bins=50)
        h = s["histogram"]
        assert h["counts"] == counts.tolist() and h["edges"] == edges.tolist()
    one = get(base, f"/v1/llm/runs/{rows[0]['run_id']}/itl", summary="true")[1]
    assert one == [rows[0]]


def test_raw_passthrough(served):
    r1, base = served
    ids = ids_by_path(base)
    path, run_id = next((p, i) for p, i in ids.items() if "max_num_seqs+8+" in p)
    with urllib.request.urlopen(f"{base}/v1/llm/runs/{run_id}/raw/results.json") as r:
        assert r.headers["content-type"] == "application/json"
        assert r.read() == (r1 / path).read_bytes()
    with urllib.request.urlopen(f"{base}/v1/llm/runs/{run_id}/raw/prometheus.json") as r:
        assert r.read() == (r1 / path).with_name("prometheus.json").read_bytes()
    status, p = get(base, f"/v1/llm/runs/{run_id}/raw/server.log")
    assert status == 400 and p["allowed"] == ["results.json", "prometheus.json"]
    no_prom = next(i for p, i in ids.items() if "model-b" in p and "max_num_seqs+16+" in p)
    status, p = get(base, f"/v1/llm/runs/{no_prom}/raw/prometheus.json")
    assert status == 404 and p["type"] == "/problems/raw_unavailable"


def test_arrow_answer_is_dictionary_encoded_and_equal(served):
    import pyarrow as pa

    r1, base = served
    runs = LLMRuns.from_raw_results(r1, stable_only=False).task("gpqa")
    want = runs.inter_token_latencies()
    with urllib.request.urlopen(base + "/v1/llm/itl?task=gpqa&stability=all&format=arrow") as r:
        table = pa.ipc.open_stream(r.read()).read_all()
    assert table.column_names == ["run_id", "task", "model_id", "num_gpus", "max_num_seqs", "itl_s"]
    for name in ["run_id", "task", "model_id", "num_gpus", "max_num_seqs"]:
        assert pa.types.is_dictionary(table.schema.field(name).type), name
    got = table.to_pandas()
    assert got["itl_s"].tolist() == list(want["itl_s"])
    assert got["model_id"].astype(str).tolist() == list(want["model_id"])
    assert got["num_gpus"].astype(int).tolist() == [int(x) for x in want["num_gpus"]]


def test_restart_answers_from_persisted_derived_data(tmp_path):
    """A second server on the same cache answers from the persisted derived data: after the first
    one, the compiled dataset's raw files are overwritten with blanks of the same size and
    modification time (so their fingerprints are unchanged), and every answer stays the toolkit's."""
    import os
    import subprocess
    import time

    from conftest import BINARY

    r1, _ = make_tree(tmp_path / "tree")
    out = tmp_path / "compiled"
    subprocess.run([BINARY, "build", str(r1), "--out", str(out)], check=True, capture_output=True)
    cache = str(tmp_path / "cache")
    runs = LLMRuns.from_raw_results(r1, stable_only=False).task("gpqa")
    want = list(runs.inter_token_latencies()["itl_s"])
    paths = ["/v1/llm/itl", "/v1/llm/output-lengths"]
    # The leaderboard reads raw files only when asked: what is persisted is what these requests read.
    lazy = ("--leaderboard-histograms", "on-request")
    with running_server(str(out), cache, lazy) as base:
        first = {p: get(base, p, task="gpqa", stability="all") for p in paths}
    assert first["/v1/llm/itl"][0] == 200
    assert [r["itl_s"] for r in first["/v1/llm/itl"][1]] == want
    derived = tmp_path / "cache" / "derived"
    deadline = time.time() + 30
    while len(list(derived.rglob("*.arrow"))) < len(runs) and time.time() < deadline:
        time.sleep(0.1)
    assert len(list(derived.rglob("*.arrow"))) == len(runs)
    for p in out.rglob("results.json"):
        st = os.stat(p)
        with open(p, "r+b") as f:
            f.write(b" " * st.st_size)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    with running_server(str(out), cache, lazy) as base:
        for p in paths:
            assert get(base, p, task="gpqa", stability="all") == first[p]
        # A run never read before has nothing persisted: its blanked file is unreadable.
        other = get(base, "/v1/llm/itl", task="lm-arena-chat", stability="all")
        assert other[0] == 422 and other[1]["type"] == "/problems/raw_invalid"
