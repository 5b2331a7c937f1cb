#!/usr/bin/env python3
"""A revision held beside the served one against the served one, and the first request of a new
revision.

One run: builds the release binary, writes a second snapshot directory (data/sample without its
first LLM runs) and starts mlenergy-server on data/sample with `--snapshot b=DIR`, twice: with the
answer cache (the default) and without it (`--response-cache-bytes 0`: every answer computed).
Then, for each of a few questions (runs of a task, groups, the best configuration, column
statistics), it times over one keep-alive connection the served revision's answer and revision b's
answer in alternation (interleaved, so the machine's drift falls on both alike), after loading b
once. It prints the median per answer of each and their ratio (held / served; 1.00 is the same
cost). Before that, on a fresh server, it times the first request of revision b (which loads it)
and prints the load time that answer reports (`Server-Timing: snapshot-load`) beside the
request's own time and a second request's. Any non-2xx answer is counted and reported as a
failure. It measures; it asserts nothing about speed.

    python3 bench/revisions_bench.py [--rounds 300] [--skip-build]
"""

import http.client
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import OUT, ROOT, bench_args, build_release, start_ours  # noqa: E402

QUESTIONS = [
    "/v1/llm/runs?task=gpqa&fields=run_id,energy_per_token_joules",
    "/v1/llm/groups?by=model_id&agg=min(energy_per_token_joules)",
    "/v1/llm/best?task=gpqa",
    "/v1/diffusion/statistics?task=text-to-image",
]


def second_snapshot():
    """data/sample without its first 20 LLM runs, as a snapshot directory."""
    import shutil

    import pyarrow.parquet as pq

    out = OUT / "revision-b"
    (out / "runs").mkdir(parents=True, exist_ok=True)
    llm = pq.read_table(ROOT / "data/sample/runs/llm.parquet")
    pq.write_table(llm.slice(20), out / "runs/llm.parquet")
    shutil.copy(ROOT / "data/sample/runs/diffusion.parquet", out / "runs/diffusion.parquet")
    return out


def get(conn, path):
    """(seconds, status, headers) of one GET on `conn`."""
    t = time.perf_counter()
    conn.request("GET", path)
    resp = conn.getresponse()
    resp.read()
    return time.perf_counter() - t, resp.status, dict(resp.getheaders())


def with_revision(path, revision):
    return f"{path}{'&' if '?' in path else '?'}revision={revision}"


def first_request(args, snapshot):
    """The first request of revision b on a fresh server: its time, the load time it reports,
    and a second request's time."""
    procs = []
    try:
        base = start_ours(procs, "--snapshot", f"b={snapshot}")
        host, port = base.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port))
        first, status, headers = get(conn, with_revision(QUESTIONS[0], "b"))
        second, status2, _ = get(conn, with_revision(QUESTIONS[0], "b"))
        timing = headers.get("server-timing", "")
        load_ms = float(timing.split("dur=")[1].split(";")[0]) if "dur=" in timing else None
        failures = (not 200 <= status < 300) + (not 200 <= status2 < 300)
        return first, load_ms, second, failures
    finally:
        for p in procs:
            p.terminate()
            p.wait()


def interleaved(base, rounds):
    """Per question: the served revision's and revision b's times, alternating; failures."""
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port))
    failures = 0
    for q in QUESTIONS:
        for path in (q, with_revision(q, "b")):
            _, status, _ = get(conn, path)
            failures += not 200 <= status < 300
    times = {q: ([], []) for q in QUESTIONS}
    for r in range(rounds):
        for q in QUESTIONS:
            pair = [(0, q), (1, with_revision(q, "b"))]
            if r % 2:
                pair.reverse()
            for i, path in pair:
                dt, status, _ = get(conn, path)
                failures += not 200 <= status < 300
                times[q][i].append(dt)
    conn.close()
    return times, failures


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=300)
    args = ap.parse_args()
    build_release(args)
    snapshot = second_snapshot()
    total_failures = 0

    first, load_ms, second, failures = first_request(args, snapshot)
    total_failures += failures
    print("first request of a new revision (loads it):")
    print(f"  request {first * 1000:8.1f} ms   reported load {load_ms if load_ms is not None else float('nan'):8.1f} ms"
          f"   next request {second * 1000:6.2f} ms")

    for label, extra in [("answer cache on", ()), ("answer cache off", ("--response-cache-bytes", "0"))]:
        procs = []
        try:
            base = start_ours(procs, "--snapshot", f"b={snapshot}", *extra)
            times, failures = interleaved(base, args.rounds)
            total_failures += failures
        finally:
            for p in procs:
                p.terminate()
                p.wait()
        print(f"\n{label}: median per answer, served vs held revision b ({args.rounds} interleaved rounds)")
        print(f"  {'question':62} {'served µs':>10} {'held µs':>10} {'held/served':>12}")
        ratios = []
        for q, (served, held) in times.items():
            s, h = statistics.median(served), statistics.median(held)
            ratios.append(h / s)
            print(f"  {q:62} {s * 1e6:10.0f} {h * 1e6:10.0f} {h / s:12.2f}")
        print(f"  median ratio {statistics.median(ratios):.2f}")
    print(f"\nfailures (non-2xx): {total_failures}")


if __name__ == "__main__":
    main()
