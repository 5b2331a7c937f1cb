"""Fitted models against mlenergy-data 0.4.0's LogisticModel and ITLMixtureModel.

Logistic: for every (model_id, task, gpu_model, num_gpus) group of data/sample with two or more
batch sizes, x = log2 of the sorted batch sizes (at least 1) and y the per-batch median of the
field, as the toolkit's users build it; our fit must equal the toolkit's (parameters within 1e-9
relative, or the very same grid point). ITL mixture: without subsampling, within 1e-6 of the
toolkit's fit of the same samples; with subsampling and for sample_avg (whose random streams are
not numpy's) statistically: the draws' moments against the analytic ones."""

import json
import math
import urllib.request
from collections import defaultdict

import numpy as np
import pytest

from conftest import SAMPLE
from mlenergy.data import DiffusionRuns, LLMRuns
from mlenergy.data.modeling import ITLMixtureModel, LogisticModel

LLM_FIELDS = ["avg_power_watts", "median_itl_ms", "output_throughput_tokens_per_sec"]
DIFFUSION_FIELDS = ["avg_power_watts", "batch_latency_s", "throughput_generations_per_sec"]
RUN = "video-chat~Qwen--Qwen3-VL-30B-A3B-Instruct~H100~g2~b8~r1"


def close(a, b, rel):
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


def toolkit_sweeps(runs, batch_field, fields):
    """{(model_id, task, gpu_model, num_gpus, field): (x, y, LogisticModel)} for groups with two or
    more batch sizes."""
    groups = defaultdict(list)
    for r in runs:
        groups[(r.model_id, r.task, r.gpu_model, r.num_gpus)].append(r)
    out = {}
    for key, rs in groups.items():
        for f in fields:
            by_batch = defaultdict(list)
            for r in rs:
                b, v = getattr(r, batch_field), getattr(r, f)
                if b is not None and v is not None and not (isinstance(v, float) and math.isnan(v)):
                    by_batch[int(b)].append(float(v))
            batches = sorted(by_batch)
            if len(batches) < 2:
                continue
            x = np.log2(np.maximum(np.array(batches, dtype=float), 1.0))
            y = np.array([float(np.median(by_batch[b])) for b in batches])
            out[key + (f,)] = (x, y, LogisticModel.fit(x, y))
    return out


def toolkit_mse(x, y, x0, k):
    """The mean squared error the toolkit's fit computes at one grid point (numpy's lstsq)."""
    z = x - x0
    s = 1.0 / (1.0 + np.exp(-k * z))
    coeff, *_ = np.linalg.lstsq(np.column_stack((np.ones_like(x), s)), y, rcond=None)
    return float(np.mean((y - (float(coeff[0]) + float(coeff[1]) * s)) ** 2))


def check_sweeps(api, domain, runs, batch_field, fields):
    """Our fit is the toolkit's: the same parameters within 1e-9, or the same grid point. Where
    several grid points fit equally well to within rounding (two batch sizes fit exactly at every
    point; saturated steps fit alike), which one wins depends on the last bits of LAPACK's
    answer; there our point must be as good by the toolkit's own computation (its mse within
    1e-9 of the variance of y from the toolkit's best), and such ties must stay a small
    minority."""
    want = toolkit_sweeps(runs, batch_field, fields)
    assert len(want) > 50
    rows = api.json(f"/v1/{domain}/fits/logistic", y=fields)
    ours = {(r["model_id"], r["task"], r["gpu_model"], r["num_gpus"], r["y"]): r for r in rows}
    ties = 0
    for key, (x, y, m) in want.items():
        r = ours[key]
        assert r["n"] == len(x) and not r["degenerate"] or len(x) < 2, (key, r)
        if all(close(r[p], getattr(m, p), 1e-9) for p in ("L", "x0", "k", "b0")):
            continue
        if r["x0"] == m.x0 and r["k"] == m.k:
            continue
        best = toolkit_mse(x, y, m.x0, m.k)
        at_ours = toolkit_mse(x, y, r["x0"], r["k"])
        assert abs(at_ours - best) <= 1e-9 * float(np.var(y)), (key, r, m, at_ours, best)
        ties += 1
    assert ties <= 0.1 * len(want), f"{ties} ties of {len(want)} fits"


def test_llm_logistic_fits_equal_the_toolkits(api, llm):
    check_sweeps(api, "llm", llm, "max_num_seqs", LLM_FIELDS)


def test_diffusion_logistic_fits_equal_the_toolkits(api, diffusion):
    check_sweeps(api, "diffusion", diffusion, "batch_size", DIFFUSION_FIELDS)


def test_posted_logistic_fit_and_eval_equal_the_toolkits(api):
    batches = [8, 16, 32, 64, 128, 256]
    y = [200, 250, 320, 400, 480, 530]
    got = post(api, "/v1/models/logistic/fit", {"batch": batches, "y": y})
    m = LogisticModel.fit(np.log2(batches), np.array(y, dtype=float))
    for p in ("L", "x0", "k", "b0"):
        assert close(got[p], getattr(m, p), 1e-9), p
    ev = post(api, "/v1/models/logistic/eval", {**{p: got[p] for p in ("L", "x0", "k", "b0")}, "batch": [0, 1, 96, 128.7]})
    for b, v in zip([0, 1, 96, 128.7], ev["values"]):
        assert close(v, m.eval(b), 1e-12)
    ev = post(api, "/v1/models/logistic/eval", {**{p: got[p] for p in ("L", "x0", "k", "b0")}, "x": [2.5, 7.0]})
    assert close(ev["derivatives"][1], m.deriv_wrt_x(7.0), 1e-12)


def post(api, path, body):
    req = urllib.request.Request(f"{api.base}{path}", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def sample_itls():
    runs = [r for r in LLMRuns.from_directory(SAMPLE, stable_only=False) if r._results_path]
    assert len(runs) == 1
    return np.array(runs[0].inter_token_latencies())


def test_the_itl_mixture_of_every_sample_equals_the_toolkits(api):
    x = sample_itls()
    m = ITLMixtureModel.fit(x)
    row = api.json(f"/v1/llm/runs/{RUN}/itl-mixture", max_samples="all")[0]
    assert row["n"] == row["n_samples"] == len(x)
    for k, v in m.to_dict().items():
        assert close(row[k], v, 1e-6), (k, row[k], v)
    mean, var = m.mean_var()
    assert close(row["mean_s"], mean, 1e-6) and close(row["variance_s2"], var, 1e-6)
    # The same through the fit endpoint, from the samples themselves.
    got = post(api, "/v1/models/itl-mixture/fit", {"samples": x.tolist()})
    for k, v in m.to_dict().items():
        assert close(got[k], v, 1e-6), k


def test_subsampled_fits_agree_with_the_toolkits_statistically(api):
    """2048 of the run's ~117k samples drawn without replacement: the fitted mixture's mean varies
    from draw to draw with either random stream. Over 12 seeds each, our means and the toolkit's
    have the same average within 3 standard errors of the difference, and every fit used 2048."""
    x = sample_itls()
    theirs = [ITLMixtureModel.fit(x, max_samples=2048, seed=s).mean_var()[0] for s in range(12)]
    ours = []
    for s in range(12):
        row = api.json(f"/v1/llm/runs/{RUN}/itl-mixture", seed=str(s))[0]
        assert row["n"] == 2048
        ours.append(row["mean_s"])
    se = math.sqrt(np.var(theirs, ddof=1) / 12 + np.var(ours, ddof=1) / 12)
    assert abs(np.mean(ours) - np.mean(theirs)) <= 3 * se + 1e-12, (np.mean(ours), np.mean(theirs), se)
    # The full-data mean is what both estimate.
    full = ITLMixtureModel.fit(x).mean_var()[0]
    assert abs(np.mean(ours) - full) <= 0.05 * full


@pytest.mark.parametrize("n_replicas", [5, 30, 31, 200])
def test_sample_avg_draws_have_the_analytic_moments(api, n_replicas):
    params = {"loc": 0.005, "pi_steady": 0.7, "sigma_steady": 0.3, "scale_steady": 0.01,
              "pi_stall": 0.3, "sigma_stall": 0.5, "scale_stall": 0.03}
    m = ITLMixtureModel(**params)
    mean, var = m.mean_var()
    draws = np.array(post(api, "/v1/models/itl-mixture/sample",
                          {**params, "n_replicas": n_replicas, "draws": 50000, "seed": 3})["draws"])
    se = math.sqrt(var / n_replicas / len(draws))
    assert abs(draws.mean() - mean) <= 5 * se, (draws.mean(), mean)
    assert close(draws.var(), var / n_replicas, 0.06), (draws.var(), var / n_replicas)
    # numpy's own draws, for scale: the same moments.
    rng = np.random.default_rng(3)
    theirs = np.array([m.sample_avg(n_replicas=n_replicas, rng=rng) for _ in range(5000)])
    assert abs(theirs.mean() - mean) <= 5 * math.sqrt(var / n_replicas / len(theirs))
