"""The predictor's held-out figures (GET /v1/{domain}/predict/quality) recomputed here from
data/sample's parquet with numpy, from the method as documented (docs/predictions.md, "Predict and plan",
crates/engine/src/models/predict.rs), and its predictions checked against it:

- regression: per field, ridge regression of ln(field) on [1, ln activated, ln total, log2 batch,
  log2 GPUs, (log2 batch)^2, indicators of each categorical level but the first (sorted)], columns
  standardised (population std) over the training runs, penalty 3 on all but the intercept; each
  run predicted by the fit without its model;
- sweep: a run predicted from the other runs of its (model, task, GPU, GPU count): ln(field) per
  batch size (median of repeats) linear in log2 batch between the neighbours, extended along the
  nearest two beyond them; interpolated and extended kept apart;
- intervals: split conformal, the ceil((n+1)·level)-th smallest |ln residual|; coverage with the
  residuals of the held-out run's model left out of the calibration;
- EcoLogits: (1.1665e-6·exp(-0.011206·batch)·active + 4.0529e-5) Wh per token and GPU, × GPUs.

LLM: the stable runs; diffusion: every run."""

import math

import numpy as np
import pandas as pd
import pytest

from conftest import SAMPLE

LLM = dict(
    batch="max_num_seqs",
    targets=["energy_per_token_joules", "avg_power_watts", "median_itl_ms", "output_throughput_tokens_per_sec", "p90_itl_ms"],
    cats=["task", "gpu_model", "weight_precision", "architecture"],
)
DIFFUSION = dict(
    batch="batch_size",
    targets=["energy_per_generation_joules", "batch_latency_s", "avg_power_watts", "throughput_generations_per_sec"],
    cats=["task", "gpu_model", "weight_precision"],
)
LEVELS = (0.8, 0.95)


def runs(domain):
    d = pd.read_parquet(SAMPLE / "runs" / f"{domain}.parquet")
    if "is_stable" in d:
        d = d[d.is_stable == True]  # noqa: E712
    return d.reset_index(drop=True)


def design(d, spec):
    lb = np.log2(np.maximum(d[spec["batch"]].astype(float), 1))
    cols = [
        np.ones(len(d)),
        np.log(d.activated_params_billions.astype(float)),
        np.log(d.total_params_billions.astype(float)),
        lb,
        np.log2(np.maximum(d.num_gpus.astype(float), 1)),
        lb * lb,
    ]
    for c in spec["cats"]:
        for level in sorted(d[c].unique())[1:]:
            cols.append((d[c] == level).astype(float).values)
    return np.column_stack(cols)


def ridge(x, y, lam=3.0):
    mu = x.mean(0)
    sd = x.std(0)
    mu[0], sd[0] = 0.0, 1.0
    sd[sd == 0] = 1.0
    z = (x - mu) / sd
    pen = np.eye(x.shape[1]) * lam
    pen[0, 0] = 0
    w = np.linalg.solve(z.T @ z + pen, z.T @ y)
    return lambda b: ((b - mu) / sd) @ w


def conformal(res, level):
    r = np.sort(np.abs(res))
    k = math.ceil((len(r) + 1) * level)
    return math.inf if k > len(r) else r[k - 1]


def sweep_residuals(d, spec, target):
    """{method: [(row, ln residual)]} of each run predicted from the rest of its sweep."""
    out = {"sweep_interpolated": [], "sweep_extended": []}
    y = np.log(d[target].astype(float).values)
    key = d.model_id + "|" + d.task + "|" + d.gpu_model + "|" + d.num_gpus.astype(float).astype(str)
    for i in range(len(d)):
        same = (key == key[i]).to_numpy(copy=True)
        same[i] = False
        by = {}
        for j in np.nonzero(same)[0]:
            by.setdefault(float(d[spec["batch"]][j]), []).append(y[j])
        if len(by) < 2:
            continue
        pts = sorted((math.log2(max(b, 1)), float(np.median(v))) for b, v in by.items())
        x = math.log2(max(float(d[spec["batch"]][i]), 1))
        xs = [p[0] for p in pts]
        line = lambda a, b: a[1] + (b[1] - a[1]) / (b[0] - a[0]) * (x - a[0])  # noqa: E731
        if x < xs[0]:
            pred, m = line(pts[0], pts[1]), "sweep_extended"
        elif x > xs[-1]:
            pred, m = line(pts[-2], pts[-1]), "sweep_extended"
        else:
            k = next(k for k, v in enumerate(xs) if v >= x)
            pred = pts[k][1] if xs[k] == x else line(pts[k - 1], pts[k])
            m = "sweep_interpolated"
        out[m].append((i, pred - y[i]))
    return out


def expected_quality(domain, spec):
    d = runs(domain)
    x = design(d, spec)
    rows = {}
    for target in spec["targets"]:
        y = np.log(d[target].astype(float).values)
        res = {"regression": []}
        for m in sorted(d.model_id.unique()):
            out = (d.model_id == m).values
            f = ridge(x[~out], y[~out])
            res["regression"] += [(i, f(x[i])[()] - y[i]) for i in np.nonzero(out)[0]]
        res.update(sweep_residuals(d, spec, target))
        for method, rr in res.items():
            models = np.array([d.model_id[i] for i, _ in rr])
            r = np.array([v for _, v in rr])
            cover = np.array(
                [[abs(r[k]) <= conformal(r[models != models[k]], lv) for lv in LEVELS] for k in range(len(r))]
            )
            scopes = [("all", None)] + [("gpu_model", v) for v in sorted(d.gpu_model.unique())]
            scopes += [("task", v) for v in sorted(d.task.unique())]
            for scope, value in scopes:
                pick = np.ones(len(r), bool) if scope == "all" else np.array([d[scope][i] == value for i, _ in rr])
                if not pick.any():
                    continue
                rel = np.abs(np.exp(r[pick]) - 1)
                rows[(target, method, scope, value)] = dict(
                    runs=int(pick.sum()),
                    models=len(set(models[pick])),
                    median_rel_error=float(np.percentile(rel, 50)),
                    p90_rel_error=float(np.percentile(rel, 90)),
                    coverage80=float(cover[pick, 0].mean()),
                    coverage95=float(cover[pick, 1].mean()),
                )
    if domain == "llm":
        wh = (1.1665e-6 * np.exp(-0.011206 * d.max_num_seqs) * d.activated_params_billions + 4.0529e-5) * d.num_gpus
        rel = np.abs(wh * 3600 / d.energy_per_token_joules - 1).values
        rows[("energy_per_token_joules", "ecologits", "all", None)] = dict(
            runs=len(d),
            models=d.model_id.nunique(),
            median_rel_error=float(np.percentile(rel, 50)),
            p90_rel_error=float(np.percentile(rel, 90)),
            coverage80=None,
            coverage95=None,
        )
    return rows


@pytest.mark.parametrize("domain,spec", [("llm", LLM), ("diffusion", DIFFUSION)])
def test_quality_figures_recomputed(api, domain, spec):
    got = {(r["field"], r["method"], r["scope"], r["value"]): r for r in api.json(f"/v1/{domain}/predict/quality")}
    want = expected_quality(domain, spec)
    for key, w in want.items():
        assert key in got, key
        g = got[key]
        assert (g["runs"], g["models"]) == (w["runs"], w["models"]), key
        for f in ("median_rel_error", "p90_rel_error", "coverage80", "coverage95"):
            if w[f] is None:
                assert g[f] is None, (key, f)
            else:
                assert g[f] == pytest.approx(w[f], rel=1e-9, abs=1e-12), (key, f)
    # Every row the server reports is one recomputed here (EcoLogits' per-scope rows aside).
    extra = [k for k in got if k not in want and not (k[1] == "ecologits" and k[2] != "all")]
    assert extra == []


def test_intervals_cover_held_out_runs_as_claimed(api):
    """Cross-conformal coverage over all LLM runs is near the level claimed, for each method."""
    rows = api.json("/v1/llm/predict/quality")
    for r in rows:
        if r["scope"] != "all" or r["method"] == "ecologits":
            continue
        assert 0.70 <= r["coverage80"] <= 0.90, r
        assert 0.88 <= r["coverage95"] <= 0.99, r


def test_a_prediction_is_the_regression_or_the_sweep_recomputed(api):
    d = runs("llm")
    x = design(d, LLM)
    y = np.log(d.energy_per_token_joules.values)
    f = ridge(x, y)
    # A model not in the snapshot: the regression fitted on every run.
    row = api.json(
        "/v1/llm/predict",
        model_id="someone/new-model",
        total_params_billions=20,
        activated_params_billions=3,
        architecture="MoE",
        weight_precision="fp8",
        task="lm-arena-chat",
        gpu_model="B200",
        num_gpus=2,
        max_num_seqs=96,
    )
    assert len(row) == 1 and row[0]["method"] == "regression"
    lb = math.log2(96)
    v = [1, math.log(3), math.log(20), lb, 1.0, lb * lb]
    for c, val in zip(LLM["cats"], ["lm-arena-chat", "B200", "fp8", "MoE"]):
        v += [1.0 if level == val else 0.0 for level in sorted(d[c].unique())[1:]]
    assert row[0]["energy_per_token_joules"] == pytest.approx(math.exp(f(np.array(v))), rel=1e-9)
    assert row[0]["measured_run_id"] is None
    # A measured configuration: its sweep at a measured batch size gives the measurement.
    r = d.iloc[0]
    got = api.json(
        "/v1/llm/predict",
        model_id=r.model_id,
        task=r.task,
        gpu_model=r.gpu_model,
        num_gpus=int(r.num_gpus),
        max_num_seqs=int(r.max_num_seqs),
    )[0]
    same = d[(d.model_id == r.model_id) & (d.task == r.task) & (d.gpu_model == r.gpu_model) & (d.num_gpus == r.num_gpus)]
    if same.max_num_seqs.nunique() >= 2:
        assert got["method"] == "sweep_interpolated"
        want = float(np.exp(np.median(np.log(same[same.max_num_seqs == r.max_num_seqs].energy_per_token_joules))))
        assert got["energy_per_token_joules"] == pytest.approx(want, rel=1e-12)
    assert got["measured_run_id"] is not None
    assert got["energy_per_token_joules_lo80"] < got["energy_per_token_joules"] < got["energy_per_token_joules_hi80"]
    assert got["energy_per_token_joules_lo95"] < got["energy_per_token_joules_lo80"]


@pytest.mark.parametrize("domain", ["llm", "diffusion"])
def test_energy_rating_recomputed(api, domain):
    """AI Energy Score's rating (huggingface/AIEnergyScore index.md): the energy range of a task's
    runs (LLM: within size class A <= 20 B, B <= 66 B, C > 66 B total parameters) in five equal
    bands, 5 stars for the lowest; LLM: stable runs only."""
    d = runs(domain)
    energy = "energy_per_token_joules" if domain == "llm" else "energy_per_generation_joules"
    if domain == "llm":
        cls = np.where(d.total_params_billions <= 20, "A", np.where(d.total_params_billions <= 66, "B", "C"))
        d["group"] = d.task + "|" + cls
    else:
        d["group"] = d.task
    lo = d.groupby("group")[energy].transform("min")
    hi = d.groupby("group")[energy].transform("max")
    width = (hi - lo) / 5
    band = np.where(width > 0, np.minimum(np.floor((d[energy] - lo) / width.where(width > 0, 1)), 4), 0)
    d["want"] = (5 - band).astype(int)
    # Matched by configuration and energy rather than by order.
    fields = ["task", "model_id", "gpu_model", "num_gpus", LLM["batch"] if domain == "llm" else "batch_size", energy]
    rows = api.json(f"/v1/{domain}/runs", fields=",".join(fields + ["energy_rating"]))["runs"]
    index = {tuple(r[f] for f in fields): r["energy_rating"] for r in rows}
    assert len(index) == len(rows) == len(d)
    for _, r in d.iterrows():
        k = tuple(r[f].item() if hasattr(r[f], "item") else r[f] for f in fields)
        assert index[k] == r["want"], (k, index[k], r["want"])
