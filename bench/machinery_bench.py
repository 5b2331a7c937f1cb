#!/usr/bin/env python3
"""Each piece of speed machinery, on against off (`--plain <piece>` or its own switch), on its workload.

Issue 63: a piece earns its place with a paired gain of at least 1.2x on the workload it serves;
under that it goes, simpler code winning a tie. For each piece this starts the release binary on
data/sample twice, the piece on in one and off in the other, waits until both have compressed the
leaderboard's files (work that would compete), checks the two answer the piece's request alike
(JSON-equal), then drives them in turn with wrk (2 threads, 16 connections, one machine for server
and load), three runs each (one run here moves by up to a third), and prints the median req/s of
each, their ratio, and the non-2xx answers of each (any is a failure of the run). It measures; it
asserts nothing about speed.

    python3 bench/machinery_bench.py [--skip-build] [--duration 5] [--runs 3] [--piece NAME ...]
"""

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import bench_args, build_release, fetch, run_wrk, sh, start_ours, wait_compressed  # noqa: E402

QUERY = "/v1/llm/runs?task=gpqa&gpu_model=B200&sort=energy_per_token_joules&limit=50"
MCP_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}
FIND_RUNS = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "tools/call",
    "params": {"name": "find_runs", "arguments": {
        "task": "gpqa", "gpu_model": "B200", "sort": ["energy_per_token_joules"], "limit": 50}},
})
SQL = json.dumps({"sql": "SELECT task, gpu_model, avg(energy_per_token_joules) AS e FROM llm_runs "
                         "WHERE num_gpus >= 1 GROUP BY task, gpu_model ORDER BY e"})
NO_ANSWER_CACHE = ["--response-cache-bytes", "0"]

# (piece, workload, request (path, body, headers), arguments of both servers, arguments of "off")
PIECES = [
    ("answer-cache", "REST run query, repeated", (QUERY, None, {}), [], NO_ANSWER_CACHE),
    ("mcp-cache", "MCP find_runs, repeated", ("/mcp", FIND_RUNS, MCP_HEADERS), [], ["--plain", "mcp-cache"]),
    ("mcp-direct", "MCP find_runs, nothing kept", ("/mcp", FIND_RUNS, MCP_HEADERS), NO_ANSWER_CACHE,
     ["--plain", "mcp-direct"]),
    ("cells", "REST run query, nothing kept", (QUERY, None, {}), NO_ANSWER_CACHE, ["--plain", "cells"]),
    ("kept", "REST run query, repeated", (QUERY, None, {}), [], ["--plain", "kept"]),
    ("precompressed", "REST run query in br, repeated", (QUERY, None, {"accept-encoding": "br"}), [],
     ["--plain", "precompressed"]),
    ("sql-plans", "SQL aggregate, nothing kept", ("/v1/sql", SQL, {"content-type": "application/json"}),
     NO_ANSWER_CACHE + ["--max-costly-in-flight", "64"], ["--sql-plans", "0"]),
]


def answer(base, path, body, headers):
    """The decoded JSON answer (asked for in the identity coding), a tool call's result alone."""
    headers = {k: v for k, v in headers.items() if k != "accept-encoding"}
    status, data = fetch(base + path, body, headers)
    assert status == 200, f"{path}: {status}"
    v = json.loads(data)
    if isinstance(v, dict) and "id" in v and "result" in v:
        v = v["result"]
    return v


def measure(piece, args):
    name, workload, (path, body, headers), both, off = piece
    rates = {"on": [], "off": []}
    failures = {"on": 0, "off": 0}
    procs = []
    try:
        bases = {variant: start_ours(procs, *extra) for variant, extra in (("on", both), ("off", both + off))}
        for base in bases.values():
            wait_compressed(base)  # the leaderboard's files, compressed at start, would compete
        answers = {variant: answer(base, path, body, headers) for variant, base in bases.items()}
        assert answers["on"] == answers["off"], f"{name}: the answers differ with the piece on and off"
        for base in bases.values():
            run_wrk(base + path, body, headers, 1, args.connections)  # warm-up
        for _ in range(args.runs):
            for variant, base in bases.items():
                s = run_wrk(base + path, body, headers, args.duration, args.connections)
                rates[variant].append(s["rps"])
                failures[variant] += s["non_2xx"] + s["socket_errors"]
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=40)
    on, off_rate = statistics.median(rates["on"]), statistics.median(rates["off"])
    print(f"{name:14} {workload:32} {on:9.0f} {off_rate:9.0f} {on / off_rate:7.2f} "
          f"{failures['on']:5d} {failures['off']:5d}", flush=True)


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--piece", action="append", choices=sorted({p[0] for p in PIECES}), help="only these pieces")
    args = ap.parse_args()
    if not shutil.which("wrk"):
        sh("apt-get", "install", "-y", "-qq", "wrk")
    build_release(args)
    print(f"\nwrk -t2 -c{args.connections} -d{args.duration}s, median of {args.runs} interleaved runs "
          "each, req/s; one machine for server and load\n")
    print(f"{'piece':14} {'workload':32} {'on':>9} {'off':>9} {'on/off':>7} {'fail':>5} {'fail':>5}")
    for piece in PIECES:
        if not args.piece or piece[0] in args.piece:
            measure(piece, args)


if __name__ == "__main__":
    main()
