#!/usr/bin/env python3
"""The Python client and the hub mirror against the reference toolkit, in the same process, same
files, same run:

1. `inter_token_latencies()` over every run of a generated raw tree (40 LLM runs, 400 requests
   each) through the client (the server derives, Arrow moves the frame) against the toolkit's
   `from_raw_results` collection, cold (the server reads each file once) and warm;
2. `to_dataframe()` of data/sample's 838 runs through the client, cold and warm;
3. the unmodified toolkit's `LLMRuns.from_hf()` through the mirror against `from_directory` on the
   same files, warm (the hub cache filled by a first call).

    python3 bench/client_bench.py [--skip-build] [--runs 40] [--requests 400]

It measures; it asserts nothing about speed. Medians of --repeat calls.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
sys.path.insert(0, str(ROOT / "bench"))
import rawgen as g  # noqa: E402
from bench import bench_args, build_release, free_port, wait_ready  # noqa: E402


def serve(binary, data, *extra):
    port = free_port()
    cache = tempfile.mkdtemp(prefix="client-bench-cache-")
    proc = subprocess.Popen([str(binary), "--bind", f"127.0.0.1:{port}", "--data", str(data), "--cache", cache, *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    wait_ready(f"{base}/readyz", proc)
    return proc, base


def timed(f, repeat):
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        out.append(time.perf_counter() - start)
    return out


def make_tree(root: Path, runs: int, requests: int) -> None:
    cfg = root / "configs" / "vllm"
    for m in range(runs // 8 or 1):
        g.llm_config(cfg, "gpqa", f"org/model-{m}", "H100")
    for i in range(runs):
        g.llm_run(root, model_id=f"org/model-{i // 8}", max_num_seqs=str(2 ** (i % 8)), n_requests=requests,
                  tokens=(200, 800), prometheus=g.prom(float(2 ** (i % 8))), rng_seed=i)


def main():
    ap = bench_args(__doc__)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    binary = build_release(args)
    import mlenergy_client as mc
    from mlenergy.data.records import LLMRuns

    print("== 1. inter_token_latencies() over every run of a generated raw tree")
    root = Path(tempfile.mkdtemp(prefix="client-bench-raw-"))
    make_tree(root, args.runs, args.requests)
    size = sum(p.stat().st_size for p in root.rglob("results.json"))
    proc, base = serve(binary, f"raw:{root}")
    try:
        theirs = LLMRuns.from_raw_results(root, stable_only=False)
        ours = mc.LLMRuns.from_server(base, stable_only=False)
        start = time.perf_counter()
        n_ours = len(ours.inter_token_latencies())
        cold = time.perf_counter() - start
        t_theirs = timed(lambda: theirs.inter_token_latencies(), args.repeat)
        t_ours = timed(lambda: mc.LLMRuns.from_server(base, stable_only=False).inter_token_latencies(), args.repeat)
        n_theirs = len(theirs.inter_token_latencies())
        assert n_ours == n_theirs, (n_ours, n_theirs)
        print(f"   {len(theirs)} runs, {size / 1e6:.1f} MB of results.json, {n_ours:,} ITL samples")
        print(f"   toolkit (files parsed in process, warm page cache): median {statistics.median(t_theirs) * 1000:.1f} ms")
        print(f"   client, first call (server reads the files):        {cold * 1000:.1f} ms")
        print(f"   client, warm (a new collection each call):          median {statistics.median(t_ours) * 1000:.1f} ms")
        print(f"   ratio (toolkit / client, warm): {statistics.median(t_theirs) / statistics.median(t_ours):.1f}x; cold: {statistics.median(t_theirs) / cold:.1f}x")
    finally:
        proc.terminate()
        proc.wait()

    print("== 2. to_dataframe() of data/sample's 838 LLM runs")
    proc, base = serve(binary, ROOT / "data" / "sample", "--hub-mirror")
    try:
        fresh = timed(lambda: mc.LLMRuns.from_server(base).to_dataframe(), args.repeat)
        kept = mc.LLMRuns.from_server(base)
        kept.to_dataframe()
        warm = timed(lambda: kept.to_dataframe(), args.repeat)
        disk = timed(lambda: LLMRuns.from_directory(ROOT / "data" / "sample").to_dataframe(), args.repeat)
        print(f"   client, a new collection each call (one /runs request): median {statistics.median(fresh) * 1000:.1f} ms")
        print(f"   client, the same collection (rows kept):                 median {statistics.median(warm) * 1000:.1f} ms")
        print(f"   toolkit from_directory + to_dataframe:                   median {statistics.median(disk) * 1000:.1f} ms")

        print("== 3. the unmodified toolkit's from_hf() through the mirror, warm, against from_directory")
        home = tempfile.mkdtemp(prefix="client-bench-hf-")
        script = textwrap.dedent(f"""
            import statistics, sys, time, warnings
            warnings.simplefilter("ignore")
            from mlenergy.data.records import LLMRuns
            LLMRuns.from_hf()
            def t(f):
                out = []
                for _ in range({args.repeat * 4}):
                    s = time.perf_counter(); f(); out.append(time.perf_counter() - s)
                return statistics.median(out)
            hub = t(lambda: LLMRuns.from_hf())
            disk = t(lambda: LLMRuns.from_directory({str(ROOT / 'data' / 'sample')!r}))
            print(hub, disk)
        """)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        env.update(HF_ENDPOINT=f"{base}/hub", HF_HOME=home, HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1")
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        hub, disk = map(float, out.stdout.split())
        print(f"   from_hf() through the mirror: median {hub * 1000:.1f} ms; from_directory: {disk * 1000:.1f} ms;"
              f" from_hf / from_directory = {hub / disk:.2f}")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
