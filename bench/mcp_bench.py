#!/usr/bin/env python3
"""The MCP tool call against the REST endpoint it calls, on the same question, same server, same run.

Builds the release binary (unless --skip-build), starts it on data/sample, checks that
`tools/call` of find_runs with the bench's run query (task=gpqa, gpu_model=B200, sorted by
energy per token, 50 runs) answers as structured content exactly the REST answer to
GET /v1/llm/runs with that query, then drives each with wrk (2 threads, 16 connections; the
MCP call as a stateless JSON-RPC POST, protocol 2025-11-25, JSON answers) and prints req/s, p50,
p99, non-2xx answers, the ratio MCP/REST (issue 63's target: an uncached call at most 1.3x the REST time, a rate of at least 0.77), and the private
memory (RssAnon) the server grew over its idle figure while each ran; once with the answer cache
(the default: both answers kept) and once without (--response-cache-bytes 0: every request planned,
encoded, and for MCP parsed and written again). It measures; it asserts nothing about speed.

    python3 bench/mcp_bench.py [--skip-build] [--duration 10] [--connections 16]
"""

import json
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import LUA, ROOT, bench_args, build_release, free_port, sh  # noqa: E402

QUERY = "/v1/llm/runs?task=gpqa&gpu_model=B200&sort=energy_per_token_joules&limit=50"
CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {
        "name": "find_runs",
        "arguments": {"task": "gpqa", "gpu_model": "B200", "sort": ["energy_per_token_joules"], "limit": 50},
    },
}
MCP_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


def rss_anon(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0


def wrk(url, body, headers, duration, connections, pid):
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(LUA)]
    for k, v in headers.items():
        cmd += ["-H", f"{k}: {v}"]
    peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.wait(0.2):
            peak[0] = max(peak[0], rss_anon(pid))

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    out = subprocess.run(cmd + [url], check=True, capture_output=True, text=True,
                         env={"WRK_BODY": body or "", "PATH": "/usr/bin:/bin"}).stdout
    stop.set()
    t.join()
    s = json.loads(out.strip().splitlines()[-1])
    s["rps"] = s["requests"] / (s["duration_us"] / 1e6)
    s["peak_anon"] = peak[0]
    return s


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=16)
    args = ap.parse_args()
    if not shutil.which("wrk"):
        sh("apt-get", "install", "-y", "-qq", "wrk")
    server = build_release(args)
    print(f"\nwrk -t2 -c{args.connections} -d{args.duration}s, the bench's run query (50 of 106 runs), "
          "one machine for server and load")
    for label, extra in [("answer cache on (the default)", []), ("answer cache off (--response-cache-bytes 0)",
                                                                ["--response-cache-bytes", "0"])]:
        measure(server, label, extra, args)


def measure(server, label, extra, args):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([server, "--bind", f"127.0.0.1:{port}", "--data", ROOT / "data/sample", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"{base}/readyz")
                break
            except OSError:
                time.sleep(0.1)
        with urllib.request.urlopen(base + QUERY) as r:
            rest = json.load(r)
        req = urllib.request.Request(base + "/mcp", json.dumps(CALL).encode(), MCP_HEADERS)
        with urllib.request.urlopen(req) as r:
            answer = json.load(r)["result"]
        assert not answer["isError"] and answer["structuredContent"] == rest, "the tool's answer is not the REST answer"
        time.sleep(1)
        idle = rss_anon(proc.pid)
        results = {}
        for name, url, body, headers in [
            ("REST GET /v1/llm/runs", base + QUERY, None, {}),
            ("MCP tools/call find_runs", base + "/mcp", json.dumps(CALL), MCP_HEADERS),
        ]:
            wrk(url, body, headers, 1, args.connections, proc.pid)  # warm-up
            results[name] = wrk(url, body, headers, args.duration, args.connections, proc.pid)
        print(f"\n{label}; idle RssAnon {idle / 2**20:.1f} MiB\n")
        print(f"{'':28} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8} {'KB/answer':>10} {'RssAnon +MiB':>13}")
        for name, s in results.items():
            per = s["bytes"] / max(s["requests"], 1) / 1000
            print(f"{name:28} {s['rps']:9.0f} {s['p50_us'] / 1000:8.2f} {s['p99_us'] / 1000:8.2f} "
                  f"{s['non_2xx'] + s['socket_errors']:8d} {per:10.1f} {(s['peak_anon'] - idle) / 2**20:13.1f}")
        rest_s, mcp_s = results.values()
        print(f"MCP / REST rate: {mcp_s['rps'] / rest_s['rps']:.2f} (target >= 0.77)")
    finally:
        proc.terminate()
        proc.wait(timeout=40)


if __name__ == "__main__":
    main()
