#!/usr/bin/env python3
"""Fitted-model speed, next to mlenergy-data 0.4.0 in the same run:

* every logistic fit of data/sample (each (model_id, task, gpu_model, num_gpus) group of the
  stable LLM runs; power, median ITL, throughput and energy per token): one cold
  `GET /v1/llm/fits/logistic` against the toolkit's `LogisticModel.fit` of the same groups;
* one ITL mixture fit of 2,048 samples (`POST /v1/models/itl-mixture/fit`, server-side time from
  repeated requests) against `ITLMixtureModel.fit`;
* the mixture of the sample's raw LLM run, cold, against the ITL request itself, cold.

    python3 bench/models_bench.py [--skip-build] [--repeats 5]

It measures; it asserts nothing about speed.
"""

import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench import SERVER, bench_args, build_release, free_port, wait_ready  # noqa: E402

SAMPLE = ROOT / "data" / "sample"
FIELDS = ["avg_power_watts", "median_itl_ms", "output_throughput_tokens_per_sec", "energy_per_token_joules"]
RUN = "video-chat~Qwen--Qwen3-VL-30B-A3B-Instruct~H100~g2~b8~r1"


def toolkit_fits():
    import warnings

    import numpy as np
    from mlenergy.data import LLMRuns
    from mlenergy.data.modeling import LogisticModel

    warnings.simplefilter("ignore")
    runs = LLMRuns.from_parquet(SAMPLE / "runs" / "llm.parquet")
    start = time.perf_counter()
    groups = defaultdict(list)
    for r in runs:
        groups[(r.model_id, r.task, r.gpu_model, r.num_gpus)].append(r)
    n = 0
    for rs in groups.values():
        for f in FIELDS:
            by_batch = defaultdict(list)
            for r in rs:
                v = getattr(r, f)
                if v is not None and not math.isnan(v):
                    by_batch[r.max_num_seqs].append(v)
            batches = sorted(by_batch)
            x = np.log2(np.maximum(np.array(batches, dtype=float), 1.0))
            y = np.array([float(np.median(by_batch[b])) for b in batches])
            LogisticModel.fit(x, y)
            n += 1
    return time.perf_counter() - start, n


def timed_get(url):
    start = time.perf_counter()
    with urllib.request.urlopen(url) as r:
        body = r.read()
    return time.perf_counter() - start, body


def timed_post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        r.read()
    return time.perf_counter() - start


def serve(cache):
    port = free_port()
    proc = subprocess.Popen([str(SERVER), "--bind", f"127.0.0.1:{port}", "--data", str(SAMPLE), "--cache", cache],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    wait_ready(f"{base}/readyz", proc)
    return proc, base


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    build_release(args)
    ours, theirs, n_fits = [], [], 0
    mix_cold, itl_cold = [], []
    for _ in range(args.repeats):
        # A fresh cache each time: nothing persisted from the run before.
        with tempfile.TemporaryDirectory() as cache:
            proc, base = serve(cache)
            try:
                q = "&".join(f"y={f}" for f in FIELDS)
                t, body = timed_get(f"{base}/v1/llm/fits/logistic?{q}")
                n_fits = len(json.loads(body))
                ours.append(t)
                itl_cold.append(timed_get(f"{base}/v1/llm/runs/{RUN}/itl?format=arrow")[0])
            finally:
                proc.terminate()
                proc.wait()
        with tempfile.TemporaryDirectory() as cache:
            proc, base = serve(cache)
            try:
                mix_cold.append(timed_get(f"{base}/v1/llm/runs/{RUN}/itl-mixture")[0])
                # 2,048 samples of the run, posted: the fit alone.
                import numpy as np
                from mlenergy.data import LLMRuns
                from mlenergy.data.modeling import ITLMixtureModel
                run = [r for r in LLMRuns.from_directory(SAMPLE, stable_only=False) if r._results_path][0]
                x = np.array(run.inter_token_latencies())
                sub = x[np.random.default_rng(0).choice(len(x), 2048, replace=False)].tolist()
                posts = [timed_post(f"{base}/v1/models/itl-mixture/fit", {"samples": sub}) for _ in range(20)]
                start = time.perf_counter()
                for _ in range(20):
                    ITLMixtureModel.fit(np.array(sub))
                tk_mix = (time.perf_counter() - start) / 20
            finally:
                proc.terminate()
                proc.wait()
        t, n = toolkit_fits()
        theirs.append(t)
    ms = lambda v: f"{min(v) * 1e3:.1f}-{statistics.median(v) * 1e3:.1f}-{max(v) * 1e3:.1f} ms"
    print(f"logistic: {n_fits} fits of data/sample in one request, cold (min-median-max over {args.repeats}): {ms(ours)}")
    print(f"  mlenergy-data, the same {n} fits: {min(theirs):.1f}-{statistics.median(theirs):.1f}-{max(theirs):.1f} s")
    ratios = [t / o for t, o in zip(theirs, ours)]
    print(f"  speed-up per run: {', '.join(f'{r:.0f}x' for r in ratios)} (median {statistics.median(ratios):.0f}x)")
    print(f"itl-mixture of 2048 samples, POST round trip (20 requests): {ms(posts)}; toolkit fit alone {tk_mix * 1e3:.1f} ms")
    print(f"itl-mixture of the sample run, cold: {ms(mix_cold)}; the ITL request itself, cold: {ms(itl_cold)}")
    print(f"  mixture over ITL request (median): {statistics.median(mix_cold) / statistics.median(itl_cold) - 1:+.0%}")


if __name__ == "__main__":
    main()
