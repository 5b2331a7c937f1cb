#!/usr/bin/env python3
"""Predictions (issue 31): the release server on data/sample, fresh each run.

- fit: the first /v1/llm/predict after start (the predictor is fitted then, on the snapshot's
  838 stable LLM runs: a ridge regression per field, left out model by model for its intervals,
  and the sweeps left out run by run), and the first /predict/quality (the held-out figures);
- warm: /v1/llm/predict of one configuration, a distinct one each request (a batch size not asked
  before, so the answer cache never answers), sequentially from one client: median and p99 of the
  round trip;
- peer: the same prediction computed in this process with numpy from the method as documented
  (tests/conformance/test_predict.py's ridge, fitted once here) for a model not in the snapshot,
  the regression path: the ratio is ours (HTTP round trip) over numpy's (a function call).

    python3 bench/predict_bench.py [--skip-build] [--requests 2000]

It measures; it asserts nothing about speed.
"""

import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
from bench import bench_args, build_release, free_port, wait_ready  # noqa: E402

QUERY = (
    "/v1/llm/predict?model_id=me/new&total_params_billions=20&activated_params_billions=3"
    "&architecture=MoE&weight_precision=fp8&task=lm-arena-chat&gpu_model=B200&num_gpus=2&max_num_seqs={b}"
)


def get(url):
    t0 = time.perf_counter()
    with urllib.request.urlopen(url) as r:
        body = r.read()
        assert r.status == 200, r.status
    return time.perf_counter() - t0, body


def main():
    parser = bench_args(__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    server = build_release(args)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [str(server), "--bind", f"127.0.0.1:{port}", "--data", str(ROOT / "data" / "sample")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_ready(f"{base}/readyz", proc)
        first, _ = get(base + QUERY.format(b=64))
        quality, _ = get(f"{base}/v1/llm/predict/quality")
        quality_d, _ = get(f"{base}/v1/diffusion/predict/quality")
        times = []
        for i in range(args.requests):
            t, body = get(base + QUERY.format(b=100 + i))
            times.append(t)
        rows = json.loads(body)
        assert rows[0]["method"] == "regression"
    finally:
        proc.terminate()
        proc.wait()

    import numpy as np
    from test_predict import LLM, design, ridge, runs

    d = runs("llm")
    f = ridge(design(d, LLM), np.log(d.energy_per_token_joules.values))
    levels = {c: sorted(d[c].unique()) for c in LLM["cats"]}

    def numpy_predict(b):
        lb = np.log2(b)
        v = [1, np.log(3), np.log(20), lb, 1.0, lb * lb]
        for c, val in zip(LLM["cats"], ["lm-arena-chat", "B200", "fp8", "MoE"]):
            v += [1.0 if level == val else 0.0 for level in levels[c][1:]]
        return float(np.exp(f(np.array(v))))

    peer = []
    for i in range(args.requests):
        t0 = time.perf_counter()
        numpy_predict(100 + i)
        peer.append(time.perf_counter() - t0)
    ours_med = statistics.median(times)
    peer_med = statistics.median(peer)
    q = sorted(times)
    print(f"first /v1/llm/predict after start (fits the LLM predictor): {first * 1e3:.1f} ms")
    print(f"first /v1/llm/predict/quality: {quality * 1e3:.1f} ms; diffusion's (fits it): {quality_d * 1e3:.1f} ms")
    print(
        f"warm /predict of one configuration, {args.requests} distinct requests: median {ours_med * 1e3:.3f} ms, "
        f"p99 {q[int(0.99 * len(q))] * 1e3:.3f} ms"
    )
    print(
        f"peer (numpy, in process, one prediction of one field): median {peer_med * 1e3:.3f} ms; "
        f"ours/peer {ours_med / peer_med:.2f} (ours: five fields with four intervals each, over HTTP)"
    )


if __name__ == "__main__":
    main()
