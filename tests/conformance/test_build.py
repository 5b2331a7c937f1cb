"""`mlenergy-server build` against mlenergy-data 0.4.0's from_raw_results on generated raw trees
that cover the stability rules at and around their thresholds, a cascade (within and across
roots), a missing prometheus.json, EP/DP configs, chunked-prefill zeros, failed requests, a run
with no successful ITL, duplicate keys differing by repeats, and diffusion image and video runs."""

import math
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import rawgen as g
from conftest import BINARY, running_server
from mlenergy.data import DiffusionRuns, LLMRuns


def make_tree(base: Path) -> tuple[Path, Path]:
    r1, r2 = base / "root1", base / "root2"
    cfg = r1 / "configs" / "vllm"
    # A group with a cascade: 8, 16 stable; 32 low utilisation; 64 stable but cascades; root2 adds 128.
    g.llm_config(cfg, "gpqa", "org/model-a", "H100")
    g.llm_run(r1, max_num_seqs="8", prometheus=g.prom(8.0), rng_seed=1)
    g.llm_run(r1, max_num_seqs="16", prometheus=g.prom(16.0), rng_seed=2)
    g.llm_run(r1, max_num_seqs="32", prometheus=g.prom(16.0), rng_seed=3)
    g.llm_run(r1, max_num_seqs="64", prometheus=g.prom(63.0), rng_seed=4)
    g.llm_run(r2, max_num_seqs="128", prometheus=g.prom(127.0), rng_seed=5)
    # Utilisation exactly 0.85 (stable) and just below (unstable), in their own groups.
    g.llm_run(r1, num_gpus="2", max_num_seqs="100", prometheus=g.prom(85.0), rng_seed=6)
    g.llm_run(r1, num_gpus="4", max_num_seqs="100", prometheus=g.prom(84.99), rng_seed=7)
    # Steady state exactly 20 s (stable), 15.3 s (unstable), missing (unstable, row dropped).
    g.llm_config(cfg, "lm-arena-chat", "org/model-b", "H100")
    g.llm_run(r1, task="lm-arena-chat", model_id="org/model-b", max_num_seqs="8", steady_state_duration=20.0,
              prometheus=g.prom(8.0), rng_seed=8)
    g.llm_run(r1, task="lm-arena-chat", model_id="org/model-b", num_gpus="2", max_num_seqs="8",
              steady_state_duration=15.3, prometheus=g.prom(8.0), rng_seed=9)
    # Energy per token 0 (unstable, throughput from the fallback) and via the fallback key.
    g.llm_run(r1, task="lm-arena-chat", model_id="org/model-b", num_gpus="4", max_num_seqs="8",
              steady_state_energy_per_token=0.0, prometheus=g.prom(8.0), rng_seed=10)
    g.llm_run(r1, task="lm-arena-chat", model_id="org/model-b", num_gpus="8", max_num_seqs="8",
              steady_state_energy_per_token=None, energy_per_token_joules=0.31, prometheus=g.prom(8.0), rng_seed=11)
    # No prometheus.json; prometheus with a non-dict stats block.
    g.llm_run(r1, task="lm-arena-chat", model_id="org/model-b", max_num_seqs="16", rng_seed=12)
    g.llm_run(r1, task="lm-arena-chat", model_id="org/model-b", max_num_seqs="32",
              prometheus={"steady_state_stats": [1, 2]}, rng_seed=13)
    # Failed requests mixed in; a run with only failed requests (no ITL: dropped).
    g.llm_run(r1, task="lm-arena-chat", model_id="org/model-b", max_num_seqs="64", failed=10,
              prometheus=g.prom(64.0), rng_seed=14)
    g.llm_run(r1, task="lm-arena-chat", model_id="org/model-b", max_num_seqs="128", failed=30,
              prometheus=g.prom(128.0), rng_seed=15)
    # Duplicate natural keys differing only in repeats.
    g.llm_run(r1, task="lm-arena-chat", model_id="org/model-b", max_num_seqs="256", repeats="1",
              prometheus=g.prom(256.0), rng_seed=16)
    g.llm_run(r1, task="lm-arena-chat", model_id="org/model-b", max_num_seqs="256", repeats="2",
              prometheus=g.prom(256.0), rng_seed=17)
    # EP with data-parallel-size 0 on B200, an explicit EP size, MoE inferred, fp8 inferred, mllm suite.
    g.llm_config(cfg, "image-chat", "org/Model-C-FP8", "B200",
                 model_info={"total_parameters_billion": 30, "active_parameters_billion": 3},
                 monolithic="enable-expert-parallel: true\ndata-parallel-size: 0\n")
    g.llm_run(r1, gpu="b200", sku="B200", suite="mllm", task="image-chat", model_id="org/Model-C-FP8",
              num_gpus="8", max_num_seqs="64", prometheus=g.prom(60.0), rng_seed=18)
    g.llm_config(cfg, "video-chat", "org/model-d", "B200",
                 monolithic="enable-expert-parallel: true\nexpert-parallel-size: 4\ntensor-parallel-size: 2\n")
    g.llm_run(r1, gpu="b200", sku="B200", suite="mllm", task="video-chat", model_id="org/model-d",
              num_gpus="8", max_num_seqs="32", prometheus=g.prom(31.0), rng_seed=19)

    # A results file that cannot be parsed: unstable (failed_to_load_results), no row, and it still
    # starts a cascade in its group (§16.6).
    bad = g.llm_run(r1, num_gpus="8", max_num_seqs="4", rng_seed=24)
    (bad / "results.json").write_text('{"steady_state_energy": 1.0, "results": [')
    g.llm_run(r1, num_gpus="8", max_num_seqs="8", prometheus=g.prom(8.0), rng_seed=25)

    dcfg = r1 / "configs" / "xdit"
    g.diffusion_config(dcfg, "text-to-image", "org/diff-a")
    g.diffusion_run(r1, rng_seed=20)
    g.diffusion_run(r1, gpu="b200", cfg_name="batch-4+size-512x768+steps-28+seed-48105+uly-2+ring-2+tc-True", rng_seed=21)
    g.diffusion_run(r1, cfg_name="batch-2+steps-20+seed-48105+uly-1+ring-2+tc-False", rng_seed=22,
                    iterations=[{"time": 2.0, "gpu_energy": {"0": 50.0, "1": 51.5}}, {"time": 0.0, "gpu_energy": {"0": 9.0}},
                                {"time": 2.1, "gpu_energy": "n/a"}, {"time": 2.2, "gpu_energy": {"0": 55.0, "1": 54.0}},
                                # No gpu_energy at all: the toolkit counts the iteration with energy 0.
                                {"time": 1.9}])
    g.diffusion_config(dcfg, "text-to-video", "org/video-a", model_info={"total_parameters_billion": 14.0})
    g.diffusion_run(r1, task="text-to-video", model_id="org/video-a", video=True,
                    cfg_name="batch-1+size-480x832+steps-50+seed-48105+uly-4+ring-2+tc-False", rng_seed=23)
    return r1, r2


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    base = tmp_path_factory.mktemp("raw")
    r1, r2 = make_tree(base)
    out = base / "compiled"
    proc = subprocess.run([BINARY, "build", str(r1), str(r2), "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return r1, r2, out, proc.stderr


def rel_to_root(path: str, roots: list[Path]) -> str:
    for r in roots:
        try:
            return Path(path).relative_to(r).as_posix()
        except ValueError:
            continue
    raise AssertionError(f"{path} is under no root")


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    return a == b


def compare(toolkit_runs, parquet_path: Path, roots: list[Path]):
    ours = pq.read_table(parquet_path).to_pylist()
    by_path = {row["results_path"]: row for row in ours}
    assert len(ours) == len(toolkit_runs)
    fields = list(toolkit_runs.to_dataframe().columns)
    for rec in toolkit_runs:
        key = rel_to_root(rec._results_path, roots)
        row = by_path[key]
        for f in fields:
            assert same(getattr(rec, f), row[f]), (key, f, getattr(rec, f), row[f])
    return ours


def test_llm_rows_equal_the_toolkits(built):
    r1, r2, out, _ = built
    expected = LLMRuns.from_raw_results(r1, r2, stable_only=False)
    rows = compare(expected, out / "runs" / "llm.parquet", [r1, r2])
    reasons = sorted({row["unstable_reason"] for row in rows})
    assert reasons == [
        "",
        "cascade_from_unstable_batch:32",
        "cascade_from_unstable_batch:4",
        "invalid_energy_per_token:0.0",
        "low_batch_utilization:0.500000",
        "low_batch_utilization:0.849900",
        "short_steady_state:15.3",
    ]


def test_diffusion_rows_equal_the_toolkits(built):
    r1, r2, out, _ = built
    expected = DiffusionRuns.from_raw_results(r1, r2)
    rows = compare(expected, out / "runs" / "diffusion.parquet", [r1, r2])
    assert {(r["height"], r["width"]) for r in rows} == {(1024, 1024), (512, 768), (0, 0), (480, 832)}


def test_toolkit_reads_the_compiled_directory(built):
    r1, r2, out, _ = built
    compiled = LLMRuns.from_directory(out, stable_only=False)
    assert len(compiled) == len(LLMRuns.from_raw_results(r1, r2, stable_only=False))
    assert len(DiffusionRuns.from_directory(out)) == len(DiffusionRuns.from_raw_results(r1, r2))
    # Raw files were copied under their relative paths, so the toolkit can read them back.
    first = compiled.task("gpqa")[0]
    assert Path(first._results_path).is_file()
    assert first.output_lengths() == LLMRuns.from_raw_results(r1, stable_only=False).task("gpqa")[0].output_lengths()


def test_the_built_histograms_are_the_leaderboards(built):
    """`build` writes histograms/llm_output_lengths.parquet (issue 29): per (model, task) group of
    stable runs, numpy's 50 bins over the pooled output lengths the toolkit reads, each run counted
    on the shared edges, one row per run and bin keyed by the server's run_id."""
    r1, r2, out, stderr = built
    table = pq.read_table(out / "histograms" / "llm_output_lengths.parquet").to_pylist()
    assert [c for c in table[0]] == ["run_id", "task", "model_id", "gpu_model", "num_gpus", "max_num_seqs",
                                     "num_request_repeats", "bin_index", "bin_lo", "bin_hi", "right_closed",
                                     "count"]
    rows = {(r["task"], r["model_id"], r["gpu_model"], r["num_gpus"], r["max_num_seqs"], r["num_request_repeats"]):
            r for r in pq.read_table(out / "runs" / "llm.parquet").to_pylist()}
    stable = [r for r in LLMRuns.from_raw_results(r1, r2, stable_only=True)]
    groups = {}
    for r in stable:
        groups.setdefault((r.model_id, r.task), []).append(r)
    expected = {}
    for runs in groups.values():
        lengths = [np.asarray(r.output_lengths(), dtype=np.int64) for r in runs]
        _, edges = np.histogram(np.concatenate(lengths), bins=50)
        for r, l in zip(runs, lengths):
            counts, _ = np.histogram(l, bins=edges)
            key = (r.task, r.model_id, r.gpu_model, r.num_gpus, r.max_num_seqs, r.num_request_repeats)
            assert key in rows
            expected[key] = ([float(e) for e in edges], [int(c) for c in counts])
    got = {}
    for b in table:
        key = (b["task"], b["model_id"], b["gpu_model"], b["num_gpus"], b["max_num_seqs"], b["num_request_repeats"])
        got.setdefault(key, []).append(b)
    assert set(got) == set(expected), "every stable run, and only they"
    for key, bins in got.items():
        bins.sort(key=lambda b: b["bin_index"])
        edges, counts = expected[key]
        assert [b["bin_index"] for b in bins] == list(range(50))
        assert [b["bin_lo"] for b in bins] + [bins[-1]["bin_hi"]] == edges
        assert [b["count"] for b in bins] == counts
        assert [b["right_closed"] for b in bins] == [False] * 49 + [True]
    assert f"output-length histograms of {len(expected)} of {len(expected)} stable LLM runs" in stderr


def test_skipped_files_are_listed(built):
    *_, stderr = built
    assert "no valid ITL samples" in stderr
    assert "EOF while parsing" in stderr
    assert "Missing required steady_state_energy_per_token" not in stderr


def test_a_bad_directory_name_is_skipped_not_fatal(tmp_path):
    """The toolkit aborts the whole load when a run has max_num_seqs but no num_gpus (§5.5); the
    build lists that file as skipped and builds the rest."""
    root = tmp_path / "root"
    g.llm_config(root / "configs" / "vllm", "gpqa", "org/model-a", "H100")
    g.llm_run(root, max_num_seqs="16", prometheus=g.prom(16.0), rng_seed=1)
    g.llm_run(root, dirname="max_num_seqs+32+num_request_repeats+1+seed+48105", prometheus=g.prom(32.0), rng_seed=2)
    bad = root / "llm/h100/current/run/llm/gpqa/results/org/model-a/H100/num_gpus+1+max_num_seqs+64/results.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    with pytest.raises(ValueError):
        LLMRuns.from_raw_results(root, stable_only=False)
    out = tmp_path / "out"
    proc = subprocess.run([BINARY, "build", str(root), "--out", str(out), "--skip-raw"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "has max_num_seqs but no parseable num_gpus" in proc.stderr
    rows = pq.read_table(out / "runs" / "llm.parquet").to_pylist()
    assert [(r["max_num_seqs"], r["is_stable"]) for r in rows] == [(16, True)]
    assert not (out / "llm").exists()


def test_serving_a_raw_root_answers_like_the_toolkit(built):
    import json
    import urllib.request

    r1, _, _, _ = built
    with running_server(str(r1)) as base:
        get = lambda path: json.loads(urllib.request.urlopen(base + path).read())
        expected = LLMRuns.from_raw_results(r1, stable_only=False)
        runs = get("/v1/llm/runs?stability=all")["runs"]
        assert len(runs) == len(expected)
        fields = list(expected.to_dataframe().columns)
        by_path = {r["results_path"]: r for r in runs}
        for rec in expected:
            row = by_path[rel_to_root(rec._results_path, [r1])]
            for f in fields:
                assert same(getattr(rec, f), row[f]), (f, getattr(rec, f), row[f])
        stable = get("/v1/llm/runs")["runs"]
        assert len(stable) == len(expected.stable())
        ds = get("/v1/datasets")
        assert ds["datasets"][0]["source"] == f"raw:{r1}"
        assert ds["datasets"][0]["unstable_rows"] == len(expected) - len(expected.stable())
        assert sorted(s["reason"] for s in ds["skipped"]) == ["EOF while parsing a list at line 1 column 41", "no valid ITL samples"]
        assert get("/v1/diffusion/runs")["total"] == len(DiffusionRuns.from_raw_results(r1))


def test_rebuild_reparses_only_changed_files(tmp_path):
    import json
    import re

    r1, r2 = make_tree(tmp_path)
    out = tmp_path / "out"
    cmd = [BINARY, "build", str(r1), str(r2), "--out", str(out)]
    first = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    assert re.search(r"25 results files \(25 parsed, 0 unchanged", first), first
    before = (out / "runs" / "llm.parquet").read_bytes()
    second = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    assert re.search(r"\(0 parsed, 25 unchanged", second), second
    assert "0 raw files copied, 44 unchanged" in second
    assert (out / "runs" / "llm.parquet").read_bytes() == before

    # Change one run's energy: only it is parsed again, and its row follows.
    target = next((r1 / "llm").rglob("*max_num_seqs+8+num_request_repeats+1*/results.json"))
    body = json.loads(target.read_text())
    body["steady_state_energy"] = 999.0
    target.write_text(json.dumps(body))
    third = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    assert re.search(r"\(1 parsed, 24 unchanged", third), third
    expected = LLMRuns.from_raw_results(r1, r2, stable_only=False)
    compare(expected, out / "runs" / "llm.parquet", [r1, r2])
    assert 999.0 in [r["steady_state_energy_joules"] for r in pq.read_table(out / "runs" / "llm.parquet").to_pylist()]


def test_fallback_discovery_from_a_run_directory(built, tmp_path):
    """A root that is a .../current/run directory: the fast path finds nothing, so discovery walks
    it and parses paths relative to the benchmark root four levels up (§5.2)."""
    r1, *_ = built
    run_dir = r1 / "llm" / "h100" / "current" / "run"
    cfg = r1 / "configs" / "vllm"
    expected = LLMRuns.from_raw_results(run_dir, config_dir=cfg, stable_only=False)
    out = tmp_path / "out"
    proc = subprocess.run([BINARY, "build", str(run_dir), "--out", str(out), "--llm-config-dir", str(cfg), "--skip-raw"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert len(expected) > 0
    compare(expected, out / "runs" / "llm.parquet", [r1])


def test_task_selection(built, tmp_path):
    r1, r2, *_ = built
    out = tmp_path / "out"
    proc = subprocess.run([BINARY, "build", str(r1), str(r2), "--out", str(out), "--tasks", "gpqa,text-to-video", "--skip-raw"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    llm = LLMRuns.from_raw_results(r1, r2, tasks={"gpqa", "text-to-video"}, stable_only=False)
    diff = DiffusionRuns.from_raw_results(r1, r2, tasks={"gpqa", "text-to-video"})
    assert {r.task for r in llm} == {"gpqa"} and {r.task for r in diff} == {"text-to-video"}
    compare(llm, out / "runs" / "llm.parquet", [r1, r2])
    compare(diff, out / "runs" / "diffusion.parquet", [r1, r2])
