"""The Python client (clients/python, `mlenergy_client`) against mlenergy-data 0.4.0: every
collection method and per-run method gives what the toolkit gives on the same data, on
data/sample (the published rows) and on a generated raw tree served directly (the raw-derived
frames), including the filters' edge cases, group keys and ordering."""

import contextlib
import dataclasses
import io
import math
import random
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mlenergy_client as mc
from mlenergy.data.modeling import ITLMixtureModel, LogisticModel
from mlenergy.data.records import DiffusionRuns, LLMRuns

import rawgen as g
from conftest import ROOT, SAMPLE, running_server
from test_build import make_tree, rel_to_root


def public(run) -> dict:
    return {f.name: getattr(run, f.name) for f in dataclasses.fields(run) if not f.name.startswith("_")}


def same_value(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b and type(a) is type(b)


def assert_same_runs(ours, theirs, paths=None):
    """Same records in the same order, field by field (types included); `paths` maps the toolkit's
    absolute raw paths to the relative ones the server names."""
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        pa_, pb = public(a), public(b)
        assert list(pa_) == list(pb)
        for k in pa_:
            assert same_value(pa_[k], pb[k]), (k, pa_[k], pb[k])
        if paths is not None:
            assert a._results_path == paths(b._results_path)
            if hasattr(b, "_prometheus_path"):
                want = paths(b._prometheus_path) if b._prometheus_path else b._prometheus_path
                assert a._prometheus_path == want


# --- data/sample: the published rows -------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_url():
    with running_server(str(SAMPLE)) as base:
        yield base


@pytest.fixture(scope="module")
def ours(sample_url):
    return mc.LLMRuns.from_server(sample_url, stable_only=False), mc.DiffusionRuns.from_server(sample_url)


@pytest.fixture(scope="module")
def theirs():
    return (
        LLMRuns.from_parquet(SAMPLE / "runs" / "llm.parquet", stable_only=False),
        DiffusionRuns.from_parquet(SAMPLE / "runs" / "diffusion.parquet"),
    )


def test_loaded_collections_are_the_toolkits(ours, theirs):
    for a, b in zip(ours, theirs):
        assert_same_runs(a, b)
        assert repr(a) == repr(b)
        assert repr(a[0]) == repr(b[0])
        assert dataclasses.astuple(a[0]) == dataclasses.astuple(b[0])
        pd.testing.assert_frame_equal(a.to_dataframe(), b.to_dataframe())


def test_stable_only_is_the_default(sample_url):
    a = mc.LLMRuns.from_server(sample_url)
    b = LLMRuns.from_parquet(SAMPLE / "runs" / "llm.parquet")
    assert_same_runs(a, b)
    with pytest.raises(ValueError, match="stable_only=True"):
        a.unstable()
    with pytest.raises(ValueError, match="stable_only=True"):
        a.task("gpqa").unstable()


FILTERS = [
    ("task", lambda r: r.task("gpqa")),
    ("two tasks", lambda r: r.task("gpqa", "lm-arena-chat")),
    ("chained", lambda r: r.task("gpqa", "image-chat").gpu_model("B200").task("gpqa")),
    ("no value", lambda r: r.task()),
    ("empty string", lambda r: r.task("")),
    ("unknown value", lambda r: r.gpu_model("h100")),
    ("not a string", lambda r: r.task(3)),
    ("model", lambda r: r.model_id("Qwen/Qwen3-8B", "Qwen/Qwen3-14B")),
    ("nickname", lambda r: r.nickname("Qwen 3 14B")),
    ("precision", lambda r: r.precision("fp8")),
    ("architecture", lambda r: r.architecture("MoE")),
    ("exact count", lambda r: r.num_gpus(1)),
    ("float count", lambda r: r.num_gpus(2.0, 4)),
    ("numpy count", lambda r: r.num_gpus(np.int64(8))),
    ("fraction", lambda r: r.num_gpus(1.5)),
    ("range", lambda r: r.num_gpus(min=2)),
    ("range zero", lambda r: r.num_gpus(min=0, max=1)),
    ("batch range", lambda r: r.max_num_seqs(min=16, max=128)),
    ("batch exact", lambda r: r.max_num_seqs(128, 256)),
    ("range then exact", lambda r: r.max_num_seqs(min=64).max_num_seqs(32, 64, 512)),
    ("ranges meet", lambda r: r.max_num_seqs(min=64).max_num_seqs(max=128)),
    ("ranges miss", lambda r: r.max_num_seqs(min=256).max_num_seqs(max=128)),
    ("stable", lambda r: r.stable()),
    ("where", lambda r: r.where(lambda x: x.total_params_billions > 70)),
    ("where then filter", lambda r: r.where(lambda x: x.num_gpus > 1).task("gpqa").num_gpus(min=4)),
    ("filter after rows", lambda r: (len(r.task("gpqa")), r.task("gpqa").gpu_model("H100"))[1]),
    ("sum", lambda r: r.gpu_model("H100") + r.gpu_model("B200")),
]


@pytest.mark.parametrize("name,select", FILTERS, ids=[f[0] for f in FILTERS])
def test_filters(ours, theirs, name, select):
    a, b = select(ours[0]), select(theirs[0])
    assert_same_runs(a, b)
    assert bool(a) == bool(b) and repr(a) == repr(b)
    pd.testing.assert_frame_equal(a.to_dataframe(), b.to_dataframe())


DIFFUSION_FILTERS = [
    ("task", lambda r: r.task("text-to-video")),
    ("batch", lambda r: r.batch_size(1, 4)),
    ("batch range", lambda r: r.batch_size(min=2, max=8).num_gpus(min=2)),
    ("precision", lambda r: r.precision("bfloat16").gpu_model("H100")),
    ("where", lambda r: r.where(lambda x: x.is_text_to_image and x.height >= 1024)),
]


@pytest.mark.parametrize("name,select", DIFFUSION_FILTERS, ids=[f[0] for f in DIFFUSION_FILTERS])
def test_diffusion_filters(ours, theirs, name, select):
    a, b = select(ours[1]), select(theirs[1])
    assert_same_runs(a, b)
    pd.testing.assert_frame_equal(a.to_dataframe(), b.to_dataframe())


def test_filter_errors(ours, theirs):
    for r in (ours[0], theirs[0]):
        with pytest.raises(ValueError, match="Cannot combine exact values with min/max range"):
            r.num_gpus(1, min=1)
        with pytest.raises(TypeError, match=re.escape("max_num_seqs() requires at least one argument")):
            r.max_num_seqs()
        with pytest.raises(AttributeError):
            r.group_by("no_such_field")
    with pytest.raises(TypeError, match=re.escape("batch_size() requires at least one argument")):
        ours[1].batch_size()


def test_memoised_filters_and_sequence_behaviour(ours, theirs):
    a, b = ours[0], theirs[0]
    assert a.task("gpqa") is a.task("gpqa")
    assert a.group_by("task") is a.group_by("task")
    assert a.where(bool) is not a.where(bool)
    assert dataclasses.astuple(a[-1]) == dataclasses.astuple(b[-1])
    assert isinstance(a[1:4], tuple) and [dataclasses.astuple(r) for r in a[1:4]] == [dataclasses.astuple(r) for r in b[1:4]]
    assert [r.model_id for r in a][:50] == [r.model_id for r in b][:50]
    assert not a.task("none") and not b.task("none")
    s = a.task("gpqa") + a.task("gpqa")
    assert len(s) == 2 * len(a.task("gpqa"))
    assert s._stable_only is False
    key = lambda r: r.energy_per_token_joules  # noqa: E731
    assert dataclasses.astuple(min(a.task("gpqa"), key=key)) == dataclasses.astuple(min(b.task("gpqa"), key=key))


@pytest.mark.parametrize("fields", [(), ("task",), ("model_id", "max_num_seqs"), ("gpu_model", "task", "num_gpus")])
def test_group_keys_and_order(ours, theirs, fields):
    ga, gb = ours[0].group_by(*fields), theirs[0].group_by(*fields)
    assert list(ga) == list(gb)
    for k in ga:
        assert_same_runs(ga[k], gb[k])
    gd, ge = ours[1].group_by(*fields[:1]), theirs[1].group_by(*fields[:1])
    assert list(gd) == list(ge)


def test_data_columns(ours):
    a = ours[0].task("gpqa")
    assert a.data.energy_per_token_joules == [r.energy_per_token_joules for r in a]
    assert a.data.task == ["gpqa"] * len(a)
    with pytest.raises(AttributeError, match="energy_per_token_joules"):
        a.data.energy_per_token


def test_server_errors_carry_the_problem(ours):
    with pytest.raises(mc.InvalidRequestError) as e:
        ours[0].task("gpqa").best(deadline=-1)
    assert e.value.status == 400
    assert e.value.slug == "invalid_parameter"
    assert e.value.parameter == "deadline"
    assert isinstance(e.value, ValueError)


def test_beyond_the_toolkit(ours, sample_url):
    gpqa = ours[0].task("gpqa").stable()
    best = gpqa.best(deadline=50)
    assert len(best) > 0
    # Each answer is the energy-optimal stable gpqa run of its model among those within 50 ms.
    for _, row in best.iterrows():
        pool = [r for r in gpqa.model_id(row["model_id"]) if r.median_itl_ms <= 50]
        assert row["energy_per_token_joules"] == min(r.energy_per_token_joules for r in pool)
    pareto = gpqa.pareto()
    assert len(pareto) > 0 and set(pareto["run_id"]) <= {r._run_id for r in gpqa}
    fits = ours[1].task("text-to-image").fits(y="avg_power_watts")
    assert len(fits) > 0
    q = gpqa.sql("SELECT count(*) AS n FROM llm_runs WHERE task = 'gpqa' AND is_stable")
    assert int(q["n"][0]) == len(gpqa)
    # A collection no filter describes is named by its run ids.
    few = gpqa.where(lambda r: r.num_gpus == 1 and r.max_num_seqs >= 128)
    assert 0 < len(few) <= 80
    assert set(few.pareto()["run_id"]) <= {r._run_id for r in few}


# --- a generated raw tree: the raw-derived frames and per-run methods --------------------------


def aligned(theirs, ours, r1, cls):
    """The toolkit's records in the server's order. Both sort by the toolkit's key (§5.6); its ties
    (runs differing only in seed or repeats) keep the toolkit's discovery order and the server's
    a documented tiebreak, so the toolkit's collection is put in ours to compare frames."""
    by_path = {rel_to_root(r._results_path, [r1]): r for r in theirs}
    assert len(by_path) == len(theirs) == len(ours)
    return cls([by_path[r._results_path] for r in ours])


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    base = tmp_path_factory.mktemp("clientraw")
    r1, _ = make_tree(base)
    # Runs with timelines (make_tree's have none): two models, two tasks, and diffusion runs.
    rng = random.Random(11)
    cfg, dcfg = r1 / "configs" / "vllm", r1 / "configs" / "xdit"
    for task in ("gpqa", "lm-arena-chat"):
        for model in ("org/timed-a", "org/timed-b"):
            g.llm_config(cfg, task, model, "H100")
            for i, (gpus, batch) in enumerate([(1, 8), (2, 16), (4, 16)]):
                start = 1_700_000_000.0 + 100 * i + 0.123
                tl = g.timeline(rng, gpus, start, start + 12, steady=(round(start + 2.05, 6), round(start + 10.0, 6)))
                g.llm_run(r1, task=task, model_id=model, num_gpus=str(gpus), max_num_seqs=str(batch),
                          prometheus=g.prom(float(batch)), rng_seed=40 + i, timeline=tl, n_requests=40)
    g.diffusion_config(dcfg, "text-to-video", "org/video-a")
    for i, cfg_name in enumerate(["batch-1+size-480x832+steps-50+seed-48105+uly-4+ring-2+tc-False",
                                  "batch-2+size-480x832+steps-50+seed-48105+uly-2+ring-1+tc-False"]):
        start = 1_700_100_000.0 + 1000 * i
        g.diffusion_run(r1, task="text-to-video", model_id="org/video-a", cfg_name=cfg_name, video=True,
                        rng_seed=60 + i, timeline=g.timeline(rng, 8 if i == 0 else 2, start, start + 10))
    with running_server(f"raw:{r1}") as url:
        llm = LLMRuns.from_raw_results(r1, stable_only=False)
        diff = DiffusionRuns.from_raw_results(r1)
        ours_llm = mc.LLMRuns.from_server(url, stable_only=False)
        ours_diff = mc.DiffusionRuns.from_server(url)
        llm_aligned = aligned(llm, ours_llm, r1, lambda rs: LLMRuns(rs, _stable_only=False))
        yield r1, url, llm_aligned, aligned(diff, ours_diff, r1, DiffusionRuns), (llm, diff)


def test_raw_tree_collections(raw):
    r1, url, llm, diff, (llm_own, diff_own) = raw
    a = mc.LLMRuns.from_server(url, stable_only=False)
    rel = lambda p: rel_to_root(p, [r1])  # noqa: E731
    assert_same_runs(a, llm, rel)
    assert_same_runs(mc.DiffusionRuns.from_server(url), diff, rel)
    pd.testing.assert_frame_equal(a.to_dataframe(), llm.to_dataframe())
    # The order is the toolkit's sort; only ties may be ordered differently.
    key = lambda r: (r.task, r.model_id, r.gpu_model, r.num_gpus, r.max_num_seqs)  # noqa: E731
    assert [key(r) for r in a] == [key(r) for r in llm_own]
    dkey = lambda r: (r.task, r.model_id, r.gpu_model, r.num_gpus, r.batch_size)  # noqa: E731
    assert [dkey(r) for r in mc.DiffusionRuns.from_server(url)] == [dkey(r) for r in diff_own]
    stable = mc.LLMRuns.from_server(url)
    assert_same_runs(stable, llm.stable(), rel)
    assert len(stable) == len(LLMRuns.from_raw_results(r1))


def outcome(f):
    """What `f()` gives: a frame, or the kind of error it raises (the toolkit raises ValueError for a
    run whose raw file lacks what is asked; so must the client)."""
    try:
        return f()
    except ValueError as e:
        return ValueError


def frames_for(runs, include):
    return {
        "output_lengths": outcome(lambda: runs.output_lengths(include_unsuccessful=include)),
        "itl": outcome(lambda: runs.inter_token_latencies()),
        **{m: outcome(lambda m=m: runs.timelines(metric=m)) for m in ("power.device_instant", "power.device_average", "temperature")},
    }


TIMED = lambda r: r.model_id("org/timed-a", "org/timed-b")  # noqa: E731
SELECTIONS = [
    ("all", lambda r: r),
    ("task", lambda r: r.task("lm-arena-chat")),
    ("empty", lambda r: r.task("nothing")),
    ("where", lambda r: r.where(lambda x: x.max_num_seqs >= 16)),
    ("sum, reversed", lambda r: r.task("lm-arena-chat") + r.task("gpqa") + r.task("lm-arena-chat")),
    ("group", lambda r: r.group_by("task")["gpqa"]),
    ("timed", TIMED),
    ("timed, by gpus", lambda r: TIMED(r).num_gpus(min=2)),
    ("timed, sum", lambda r: TIMED(r).task("lm-arena-chat") + TIMED(r).task("gpqa")),
    ("timed, where", lambda r: TIMED(r).where(lambda x: x.num_gpus != 2)),
    ("timed, group", lambda r: TIMED(r).group_by("model_id", "task")[("org/timed-b", "gpqa")]),
]


@pytest.mark.parametrize("name,select", SELECTIONS, ids=[s[0] for s in SELECTIONS])
def test_bulk_frames(raw, name, select):
    r1, url, llm, _, _ = raw
    ours = select(mc.LLMRuns.from_server(url, stable_only=False))
    theirs = select(llm)
    for include in (False, True):
        a, b = frames_for(ours, include), frames_for(theirs, include)
        for k in a:
            if a[k] is ValueError or b[k] is ValueError:
                assert a[k] is b[k], (k, a[k], b[k])
            else:
                pd.testing.assert_frame_equal(a[k], b[k], check_exact=True, obj=k)
    if name.startswith("timed"):
        assert isinstance(a["power.device_instant"], pd.DataFrame) and len(a["power.device_instant"]) > 0


DIFFUSION_SELECTIONS = [
    ("all", lambda r: r),
    ("video", lambda r: r.task("text-to-video")),
    ("video, reversed", lambda r: r.task("text-to-video").batch_size(2) + r.task("text-to-video").batch_size(1)),
    ("video, where", lambda r: r.where(lambda x: x.is_text_to_video and x.num_gpus == 8)),
]


@pytest.mark.parametrize("name,select", DIFFUSION_SELECTIONS, ids=[s[0] for s in DIFFUSION_SELECTIONS])
def test_diffusion_timelines(raw, name, select):
    r1, url, _, diff, _ = raw
    ours, theirs = select(mc.DiffusionRuns.from_server(url)), select(diff)
    for m in ("power.device_instant", "temperature"):
        a, b = outcome(lambda: ours.timelines(metric=m)), outcome(lambda: theirs.timelines(metric=m))
        if a is ValueError or b is ValueError:
            assert a is b, (m, a, b)
        else:
            assert len(a) > 0
            pd.testing.assert_frame_equal(a, b, check_exact=True)
    with pytest.raises(ValueError):
        ours.timelines(metric="power.memory_average")


def test_per_run_methods(raw):
    r1, url, llm, diff, _ = raw
    ours = mc.LLMRuns.from_server(url, stable_only=False)
    def same_outcome(f, g):
        a, b = outcome(f), outcome(g)
        if isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame):
            pd.testing.assert_frame_equal(a, b, check_exact=True)
        else:
            assert a == b or a is b, (a, b)

    timed = 0
    for a, b in zip(ours, llm):
        same_outcome(a.output_lengths, b.output_lengths)
        same_outcome(lambda: a.output_lengths(include_unsuccessful=True), lambda: b.output_lengths(include_unsuccessful=True))
        same_outcome(a.inter_token_latencies, b.inter_token_latencies)
        assert a.read_results_json() == b.read_results_json()
        assert a.read_results_json() is a.read_results_json()
        if b._prometheus_path and Path(b._prometheus_path).exists():
            assert a.read_prometheus_json() == b.read_prometheus_json()
        else:
            with pytest.raises((ValueError, FileNotFoundError)):
                a.read_prometheus_json()
        for m in ("power.device_instant", "temperature"):
            same_outcome(lambda: a.timelines(metric=m), lambda: b.timelines(metric=m))
        timed += isinstance(outcome(a.timelines), pd.DataFrame)
    assert timed == 12
    for a, b in zip(mc.DiffusionRuns.from_server(url), diff):
        assert a.read_results_json() == b.read_results_json()
        same_outcome(lambda: a.timelines(metric="temperature"), lambda: b.timelines(metric="temperature"))


def test_download_raw_files_is_a_server_prefetch(raw):
    r1, url, llm, _, _ = raw
    runs = mc.LLMRuns.from_server(url, stable_only=False).task("gpqa")
    assert runs.download_raw_files(progress=False) is runs
    few = runs.where(lambda r: r.max_num_seqs == 16)
    assert few.download_raw_files(progress=False) is few
    d = mc.DiffusionRuns.from_server(url)
    assert d.download_raw_files(progress=False) is d


# --- the models ----------------------------------------------------------------------------------


def test_models(sample_url):
    mc.LLMRuns.from_server(sample_url)  # the models' server
    x = np.log2([8, 16, 32, 64, 128, 256])
    y = [200, 250, 320, 400, 480, 530]
    a, b = mc.LogisticModel.fit(x, y), LogisticModel.fit(x, y)
    # The same grid point; L and b0 within the last bits of LAPACK's least squares (test_models.py).
    assert (a.x0, a.k) == (b.x0, b.k)
    assert all(abs(getattr(a, p) - getattr(b, p)) <= 1e-9 * abs(getattr(b, p)) for p in ("L", "b0"))
    # Evaluation is the toolkit's formula, bit for bit, on the same parameters.
    same = LogisticModel.from_dict(a.to_dict())
    for batch in (0, 1, 96, 128, 1000):
        assert a.eval(batch=batch) == same.eval(batch=batch)
    assert a.deriv_wrt_x(5.5) == same.deriv_wrt_x(5.5) and a.eval_x(-3.0) == same.eval_x(-3.0)
    assert mc.LogisticModel.from_dict(a.to_dict()) == a
    assert list(a.to_dict()) == list(b.to_dict())
    assert mc.LogisticModel.fit([], []).to_dict() == LogisticModel.fit(np.array([]), np.array([])).to_dict()
    assert mc.LogisticModel.fit([3.0], [7.0]).to_dict() == LogisticModel.fit(np.array([3.0]), np.array([7.0])).to_dict()

    samples = np.random.default_rng(0).exponential(0.02, size=500)
    for max_samples, seed in ((2048, 0), (100, 3), (None, 0)):
        m = mc.ITLMixtureModel.fit(samples, max_samples=max_samples, seed=seed)
        n = ITLMixtureModel.fit(samples, max_samples=max_samples, seed=seed)
        # The same subset (drawn by the client with numpy's generator); the EM within 1e-6
        # (test_models.py): its sums carry their last bits through 80 iterations.
        for k, v in n.to_dict().items():
            assert abs(m.to_dict()[k] - v) <= 1e-6 * abs(v), (max_samples, k)
        assert list(m.to_dict()) == list(n.to_dict())
    # Moments and draws are the toolkit's formulas on the same parameters, bit for bit, and a
    # seeded generator draws the same numbers.
    same = ITLMixtureModel(**m.to_dict())
    assert m.mean_var() == same.mean_var()
    for k in (0, 1, 7, 30, 31, 180):
        got = m.sample_avg(n_replicas=k, rng=np.random.default_rng(k))
        want = same.sample_avg(n_replicas=k, rng=np.random.default_rng(k))
        assert got == want or (math.isnan(got) and math.isnan(want))
    prefixed = {f"itl_mix_{k}": v for k, v in m.to_dict().items()}
    assert mc.ITLMixtureModel.from_dict(prefixed) == m
    assert mc.ITLMixtureModel.from_dict(pd.Series(m.to_dict())) == m


# --- docs/python.md's example: the same printout through the client -----------------------------


def docs_python() -> str:
    text = (ROOT / "docs" / "python.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    example = [b for b in blocks if "from mlenergy_client import" in b and "from_server(" in b]
    assert example, "docs/python.md has no client example"
    return example[0]


def run_printing(code: str, namespace: dict) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<docs/python.md>", "exec"), namespace)
    return out.getvalue()


def test_the_docs_example_prints_what_the_toolkit_prints(sample_url):
    code = docs_python()
    ours = run_printing(code.replace('"http://127.0.0.1:8080"', repr(sample_url)), {})
    toolkit = (
        code.replace("from mlenergy_client import", "from mlenergy.data.records import")
        .replace("from mlenergy_client.modeling import", "from mlenergy.data.modeling import")
        .replace('LLMRuns.from_server("http://127.0.0.1:8080")', f"LLMRuns.from_parquet({str(SAMPLE / 'runs' / 'llm.parquet')!r})")
        .replace('DiffusionRuns.from_server("http://127.0.0.1:8080")', f"DiffusionRuns.from_parquet({str(SAMPLE / 'runs' / 'diffusion.parquet')!r})")
    )
    assert "from_server" not in toolkit
    theirs = run_printing(toolkit, {})
    assert len(ours.splitlines()) >= 10
    assert ours == theirs
