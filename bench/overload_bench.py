#!/usr/bin/env python3
"""Overload and reload under load (issue 19's targets), with oha as an open-loop load generator.

1. The run query (the filtered, sorted list of bench.py) unloaded: p99 at a tenth of the
   saturating rate.
2. The saturating rate: oha closed-loop with 64 connections, the highest req/s the server gives.
3. 60 s at twice that rate (oha -q, with latency correction, 512 connections) against a server
   with --max-in-flight 4 (the server on one core, oha on the other; no response cache, so each
   request is computed): the status counts (200, and 503 shed on purpose; anything else is a
   failure), oha's connection errors, the p99 of the accepted (2xx) requests against the unloaded
   p99, and the private memory (RssAnon) sampled every second, second 10 against second 60.
4. A reload under the same load: 20 s at twice the rate against a copy of data/sample; at 10 s
   runs/llm.parquet is rewritten without its last row and POST /v1/admin/reload is sent; a
   separate client polls X-Snapshot-Id every 20 ms. Reported: what oha saw (no request dropped:
   no connection error, only 200 and 503), how long the reload took, and the time from the reload's
   answer (the new data loaded) to the first answer carrying the new snapshot id.

    python3 bench/overload_bench.py [--skip-build] [--duration 60] [--max-in-flight 16]

It measures; it asserts nothing about speed. oha comes from crates.io (cargo install oha).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench import bench_args, build_release, free_port, sh, wait_ready  # noqa: E402
from raw_bench import AnonPeak  # noqa: E402

QUERY = "/v1/llm/runs?task=gpqa&gpu=B200&sort=energy_per_token_joules&limit=50"


def ensure_oha():
    if not shutil.which("oha"):
        sh("cargo", "install", "oha", "--locked")


def oha(url, *args):
    """oha's JSON summary of one run."""
    # On a core of its own (the server has the other), waiting for the requests in flight at the
    # end rather than counting them as errors.
    out = subprocess.run(
        [*pin(1), "oha", "--no-tui", "--output-format", "json", "--stats-success-breakdown",
         "--wait-ongoing-requests-after-deadline", *args, url],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def pin(core):
    """`taskset -c core` where there are two cores or more and taskset is there, else nothing."""
    if (os.cpu_count() or 1) >= 2 and shutil.which("taskset"):
        return ["taskset", "-c", str(core)]
    return []


def ms(v):
    return f"{v * 1000:.2f} ms" if v is not None else "-"


def serve(binary, data, max_in_flight):
    port = free_port()
    # The run query computed every time (no response cache), so that the server, on one core, is
    # what saturates rather than the load generator.
    proc = subprocess.Popen(
        [*pin(0), binary, "--bind", f"127.0.0.1:{port}", "--data", str(data), "--max-in-flight",
         str(max_in_flight), "--response-cache-bytes", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={"MLENERGY_LOG": "warn", "PATH": "/usr/bin:/bin"},
    )
    base = f"http://127.0.0.1:{port}"
    wait_ready(f"{base}/readyz", proc)
    return proc, base


def accepted_p99(summary):
    """p99 of the successful (2xx) requests, from --stats-success-breakdown."""
    p = summary.get("latencyPercentilesSuccessful") or summary["latencyPercentiles"]
    return p.get("p99")


def report_load(name, summary):
    codes = summary.get("statusCodeDistribution", {})
    errors = summary.get("errorDistribution", {})
    total = sum(codes.values()) + sum(errors.values())
    print(f"{name}: {total} requests, status {codes}, connection errors {errors or 'none'}")
    unexpected = {c: n for c, n in codes.items() if c not in ("200", "503")}
    print(f"  only 200 and deliberate 503: {'yes' if not unexpected and not errors else f'NO {unexpected} {errors}'}")
    print(f"  accepted (2xx) p50 {ms((summary.get('latencyPercentilesSuccessful') or {}).get('p50'))}, "
          f"p99 {ms(accepted_p99(summary))}; req/s {summary['summary']['requestsPerSec']:.0f}")


def snapshot_id(base):
    with urllib.request.urlopen(f"{base}/v1/llm/runs?limit=1&fields=run_id") as r:
        return r.headers["x-snapshot-id"]


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--max-in-flight", type=int, default=4)
    args = ap.parse_args()
    binary = build_release(args)
    ensure_oha()

    proc, base = serve(binary, ROOT / "data" / "sample", args.max_in_flight)
    url = base + QUERY
    try:
        oha(url, "-z", "3s", "-c", "16")  # warm: the answer is cached after the first request
        # Closed loop with as many connections as the server takes at once: all answered, none
        # shed, so this is what it sustains.
        closed = oha(url, "-z", "10s", "-c", str(args.max_in_flight))
        sat = closed["summary"]["requestsPerSec"]
        print(f"saturating rate (closed loop, {args.max_in_flight} connections): {sat:.0f} req/s, "
              f"status {closed.get('statusCodeDistribution')}")
        light = oha(url, "-z", "10s", "-c", "4", "-q", str(max(1, int(sat / 10))), "--latency-correction")
        unloaded = accepted_p99(light)
        print(f"unloaded p99 (a tenth of that rate): {ms(unloaded)}")

        rate = int(2 * sat)
        with AnonPeak(proc.pid, interval=1.0) as rss:
            heavy = oha(url, "-z", f"{args.duration}s", "-c", "512", "-q", str(rate), "--latency-correction")
        report_load(f"{args.duration} s at {rate} req/s (2x), --max-in-flight {args.max_in_flight}", heavy)
        p99 = accepted_p99(heavy)
        print(f"  accepted p99 / unloaded p99: {p99 / unloaded:.2f} (target <= 3)")
        at = [r for t, r in rss.samples if t >= 10]
        if at:
            first, last, lo, hi = at[0], at[-1], min(at), max(at)
            print(f"  RssAnon from second 10 to {args.duration}: {first / 2**20:.1f} -> {last / 2**20:.1f} MiB "
                  f"(min {lo / 2**20:.1f}, max {hi / 2**20:.1f}; spread {(hi - lo) / first:.1%}, target <= 10%)")
    finally:
        proc.terminate()
        proc.wait()

    # Reload under load.
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        shutil.copytree(ROOT / "data" / "sample", data)
        proc, base = serve(binary, data, args.max_in_flight)
        url = base + QUERY
        try:
            before = snapshot_id(base)
            seen = {}

            def poll():
                while "at" not in seen:
                    try:
                        sid = snapshot_id(base)
                    except OSError as e:
                        seen.setdefault("errors", []).append(str(e))
                        continue
                    if sid != before:
                        seen["at"] = time.monotonic()
                        seen["id"] = sid
                    time.sleep(0.02)

            def reload_at(delay):
                time.sleep(delay)
                import pyarrow.parquet as pq

                table = pq.read_table(data / "runs" / "llm.parquet")
                pq.write_table(table.slice(0, table.num_rows - 1), data / "runs" / "llm.parquet.new")
                (data / "runs" / "llm.parquet.new").rename(data / "runs" / "llm.parquet")
                started = time.monotonic()
                req = urllib.request.Request(f"{base}/v1/admin/reload", method="POST")
                with urllib.request.urlopen(req) as r:
                    seen["reload_status"] = r.status
                seen["loaded"] = time.monotonic()
                seen["reload_s"] = seen["loaded"] - started

            poller = threading.Thread(target=poll, daemon=True)
            reloader = threading.Thread(target=reload_at, args=(10,), daemon=True)
            poller.start()
            reloader.start()
            during = oha(url, "-z", "20s", "-c", "512", "-q", str(rate), "--latency-correction")
            reloader.join()
            poller.join(timeout=5)
            report_load(f"reload under 20 s at {rate} req/s", during)
            lag = (seen["at"] - seen["loaded"]) * 1000 if "at" in seen and "loaded" in seen else None
            print(f"  reload answered {seen.get('reload_status')} in {seen.get('reload_s', 0) * 1000:.0f} ms; "
                  f"snapshot {before} -> {seen.get('id')}; first answer with the new id "
                  f"{'never' if lag is None else f'{lag:.0f} ms'} after the reload's answer "
                  f"(negative: seen before the answer arrived; target <= 1 s); "
                  f"poller errors: {len(seen.get('errors', []))}")
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
