#!/usr/bin/env python3
"""The first seconds after a start against once settled (issue 29 item 2): on data/sample with its
one LLM raw file replaced by the large generated run of bench/raw_bench.py (~76 MB results.json),
so that the server has the leaderboard's start-up work to do and a large raw file to read. Two
fresh servers (each with an empty cache): the first is asked at once, the second once /readyz says
its start-up work is done (`leaderboard.compressed`). Each is asked for the large run's ITLs in
Arrow, then in JSON (time, and the growth of private memory, RssAnon, over the idle server while
the answer is sent), then the run query of bench/bench.py under wrk (2 threads, 16 connections)
for the rest of the first 20 seconds after its start (or 10 s once settled). The toolkit's
inter_token_latencies() on the same file, in-process, is the peer of the ITL figures.

    python3 bench/startup_bench.py [--skip-build] [--requests 13000]

It measures; it asserts nothing about speed.
"""

import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench import SERVER, bench_args, build_release, free_port, run_wrk  # noqa: E402
from raw_bench import AnonPeak, big_run, status  # noqa: E402

RUN_QUERY = "/v1/llm/runs?task=gpqa&gpu_model=B200&sort=energy_per_token_joules&limit=50"

TOOLKIT = """
import sys, time, warnings
warnings.simplefilter("ignore")
from mlenergy.data import LLMRuns
runs = LLMRuns.from_raw_results(sys.argv[1], stable_only=False)
start = time.perf_counter()
n = len(runs[0].inter_token_latencies())
print(time.perf_counter() - start, n)
"""


def itl(base, pid, run_id, fmt):
    """(seconds, answer bytes, private memory growth) of the run's ITLs in `fmt`, read in 64 KiB
    chunks as a client that keeps up."""
    before = status(pid, "RssAnon")
    t0 = time.perf_counter()
    with AnonPeak(pid) as anon:
        with urllib.request.urlopen(f"{base}/v1/llm/runs/{run_id}/itl?format={fmt}") as r:
            total = 0
            while chunk := r.read(1 << 16):
                total += len(chunk)
    return time.perf_counter() - t0, total, max(0, anon.peak - before)


def window(label, data, cache, run_id, settle, toolkit_s):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    proc = subprocess.Popen([SERVER, "--bind", f"127.0.0.1:{port}", "--data", str(data), "--cache", str(cache)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1):
                    break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("the server exited while starting")
                time.sleep(0.002)
        ready_s = time.monotonic() - started
        if settle:
            while not json.loads(urllib.request.urlopen(f"{base}/readyz").read())["leaderboard"]["compressed"]:
                time.sleep(0.1)
        settled_s = time.monotonic() - started
        idle_anon = status(proc.pid, "RssAnon")
        lines = [f"{label}: listening {ready_s:.2f} s after the spawn"
                 + (f", start-up work done {settled_s:.1f} s after it" if settle else "")
                 + f"; idle private memory {idle_anon / 1e6:.0f} MB"]
        for fmt in ("arrow", "json"):
            at = time.monotonic() - started
            secs, size, grew = itl(base, proc.pid, run_id, fmt)
            lines.append(f"  ITLs as {fmt} (asked {at:.2f} s after the spawn): {secs * 1000:.0f} ms "
                         f"({toolkit_s / secs:.0f}x the toolkit), {size / 1e6:.0f} MB answer, private memory "
                         f"+{grew / 1e6:.0f} MB while sent")
        left = 20 - (time.monotonic() - started) if not settle else 10
        duration = max(2, int(left))
        at = time.monotonic() - started
        w = run_wrk(base + RUN_QUERY, None, {}, duration, 16)
        bad = w["non_2xx"] + w["socket_errors"]
        lines.append(f"  run query from {at:.1f} s for {duration} s: {w['rps']:.0f} req/s, "
                     f"p99 {w['p99_us'] / 1000:.1f} ms, {bad} non-2xx or failed")
        with urllib.request.urlopen(f"{base}/readyz") as r:
            lb = json.loads(r.read())["leaderboard"]
        lines.append(f"  at the end ({time.monotonic() - started:.1f} s): leaderboard compressed = {lb['compressed']}")
        return lines
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=13000)
    args = ap.parse_args()
    build_release(args)
    if not shutil.which("wrk"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        run_dir = big_run(tmp / "raw", args.requests)
        big = run_dir / "results.json"
        data = tmp / "data"
        shutil.copytree(ROOT / "data" / "sample", data)
        import pyarrow.parquet as pq
        (rel,) = [r["results_path"] for r in pq.read_table(data / "runs" / "llm.parquet").to_pylist()
                  if r["results_path"]]
        shutil.copyfile(big, data / rel)
        out = subprocess.run([sys.executable, "-c", TOOLKIT, str(tmp / "raw")], capture_output=True, text=True,
                             check=True).stdout
        toolkit_s, n_itl = out.split()
        toolkit_s = float(toolkit_s)
        print(f"results.json {big.stat().st_size / 1e6:.0f} MB, {n_itl} ITL samples; "
              f"mlenergy-data inter_token_latencies(): {toolkit_s * 1000:.0f} ms (in-process)")
        # The run id of the replaced file's row, from a server of the copy.
        port = free_port()
        proc = subprocess.Popen([SERVER, "--bind", f"127.0.0.1:{port}", "--data", str(data),
                                 "--cache", str(tmp / "probe")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(3000):
                try:
                    runs = json.loads(urllib.request.urlopen(
                        f"http://127.0.0.1:{port}/v1/llm/runs?fields=run_id,results_path&stability=all").read())
                    break
                except OSError:
                    time.sleep(0.01)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        run_id = next(r["run_id"] for r in runs["runs"] if r["results_path"])
        for label, settle in (("first seconds after a start", False), ("once start-up work is done", True)):
            for line in window(label, data, tmp / f"cache-{settle}", run_id, settle, toolkit_s):
                print(line)


if __name__ == "__main__":
    main()
