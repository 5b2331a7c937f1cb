#!/usr/bin/env python3
"""The leaderboard's files and the API's transport next to nginx serving the same bytes from disk.

One run: builds the release binary, starts mlenergy-server on data/sample, writes the 70 leaderboard
files it serves (and the bench's 55 KB run-query answer) to a directory, starts nginx (Debian's
package; installed if missing) on that directory twice, plain and with `gzip on`, checks both serve
byte for byte what we serve, then drives each with the same wrk (2 threads, 16 connections) and
prints req/s, p50 and p99, and our ratio to nginx. Each (case, server) is run --repeats times, the two
servers alternating, and the median run (by req/s) is reported with the range of the repeats: one
run's figure on this machine moves by up to a third between runs (two cores shared by the servers
and the load generator), for nginx and for us alike.

The cases:

  * a page-load mix of the leaderboard files: index.json, each task file once (the tabs), and four
    model files (the detail modals), cycled over all 63 model files;
  * the same mix with `Accept-Encoding: gzip` (nginx compresses per request; we send bytes
    compressed once);
  * revalidations of index.json with its ETag (304s), ours and nginx's;
  * the run query of bench/bench.py (55 KB of JSON) against nginx serving those bytes as a file;
  * the same run query paced: each connection waits 1 ms after an answer before asking again
    (about 12,000 req/s offered, well under what either server answers on this machine). At full
    load four busy threads (wrk's two and the server's two) share two cores, and wrk's p99 is
    mostly the time a thread waits for a core; paced, the p99 is the server's own. With
    MLENERGY_CPU_TURN=100us in this script's environment our worker threads give their core up
    after an answer once they have run 100 µs without a pause (--cpu-turn, off by default), so
    that wrk's threads read it at once. Each run's p99 is printed for both run-query cases: it moves between runs more
    than the rate does.

Both log no line per request (ours MLENERGY_LOG=warn, nginx access_log off). For the run query, the
bound under which 99% of our answers had their head made (our /metrics histogram) is printed beside
wrk's p99. It measures; it asserts nothing about speed.

    python3 bench/leaderboard_bench.py [--duration 10] [--connections 16] [--repeats 3] [--skip-build]
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import (  # noqa: E402
    OUT,
    ROOT,
    bench_args,
    build_release,
    free_port,
    head_times,
    server_p99_ms,
    sh,
    wait_compressed,
    wait_ready,
)

PATHS_LUA = Path(__file__).resolve().parent / "paths.lua"
RUN_QUERY = "/v1/llm/runs?task=gpqa&gpu_model=B200&sort=energy_per_token_joules&limit=50"
# Its route in our /metrics, whose histogram tells the time in the server from the time in wrk.
RUN_ROUTE = "/v1/{domain}/runs"


def ensure_tools():
    missing = [p for p, exe in (("wrk", "wrk"), ("nginx", "nginx")) if not shutil.which(exe)
               and not Path(f"/usr/sbin/{exe}").exists()]
    if missing:
        sh("apt-get", "install", "-y", "-qq", *missing)


def get(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req) as r:
        return r.status, r.headers, r.read()


def write_site(ours, root):
    """The files we serve, written where nginx serves them; returns their URL paths."""
    _, _, index = get(f"{ours}/leaderboard/data/index.json")
    paths = ["/leaderboard/data/index.json"]
    tasks = json.loads(index)["tasks"]
    paths += [f"/leaderboard/data/tasks/{t}.json" for t in tasks]
    models = sorted(p.name for p in (ROOT.parent / "shared/data/leaderboard/models").glob("*.json"))
    paths += [f"/leaderboard/data/models/{m}" for m in models]
    for p in paths:
        _, _, body = get(f"{ours}{p}")
        dest = root / p.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(body)
    _, _, answer = get(f"{ours}{RUN_QUERY}")
    (root / "runquery.json").write_bytes(answer)
    return tasks, models, len(answer)


def page_mix(tasks, models):
    """Page loads: index, each task tab, four model modals; the modals cycle over every model."""
    out = []
    k = 0
    while k < len(models):
        out.append("/leaderboard/data/index.json")
        out += [f"/leaderboard/data/tasks/{t}.json" for t in tasks]
        for _ in range(4):
            out.append(f"/leaderboard/data/models/{models[k % len(models)]}")
            k += 1
    return out


NGINX_CONF = """
worker_processes 2;
daemon off;
user root;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  server {{
    listen 127.0.0.1:{plain};
    root {root};
  }}
  server {{
    listen 127.0.0.1:{gz};
    root {root};
    gzip on;
    gzip_types application/json;
  }}
}}
"""


def start_nginx(root, work):
    plain, gz = free_port(), free_port()
    conf = work / "nginx.conf"
    conf.write_text(NGINX_CONF.format(dir=work, root=root, plain=plain, gz=gz))
    proc = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(work)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(f"http://127.0.0.1:{plain}/runquery.json", proc)
    return proc, f"http://127.0.0.1:{plain}", f"http://127.0.0.1:{gz}"


# The pause of each connection between an answer and its next request in the paced case.
PACED_MS = 1


def run_wrk(base, paths, headers, duration, connections, pause_ms=None):
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(PATHS_LUA)]
    for k, v in headers.items():
        cmd += ["-H", f"{k}: {v}"]
    env = dict(os.environ, WRK_PATHS=",".join(paths))
    if pause_ms is not None:
        env["WRK_DELAY_MS"] = str(pause_ms)
    out = subprocess.run(cmd + [base], check=True, capture_output=True, text=True, env=env).stdout
    summary = json.loads(out.strip().splitlines()[-1])
    summary["rps"] = summary["requests"] / (summary["duration_us"] / 1e6)
    return summary


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=10, help="seconds per (server, case)")
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3, help="runs per (server, case), alternating; the median is reported")
    args = ap.parse_args()
    ensure_tools()
    server = build_release(args)
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="lb-bench-", dir=OUT))
    root = work / "www"
    procs = []
    try:
        port = free_port()
        ours = f"http://127.0.0.1:{port}"
        # No per-request log lines, as nginx below runs with access_log off.
        procs.append(subprocess.Popen([server, "--bind", f"127.0.0.1:{port}", "--data", ROOT / "data/sample",
                                       "--cache", str(work / "cache")], stdout=subprocess.DEVNULL,
                                      env=dict(os.environ, MLENERGY_LOG="warn")))
        wait_ready(f"{ours}/readyz", procs[-1])
        # The start-up task compresses every file in every coding (brotli 11, zstd 19): measure after
        # it, not beside it.
        wait_compressed(ours)
        tasks, models, query_bytes = write_site(ours, root)
        nginx, plain, gz = start_nginx(root, work)
        procs.append(nginx)

        mix = page_mix(tasks, models)
        # The same bytes from both (and the same bytes once decoded, gzip).
        for p in set(mix):
            a, b = get(f"{ours}{p}")[2], get(f"{plain}{p}")[2]
            assert a == b, p
        _, _, q = get(f"{ours}{RUN_QUERY}")
        assert q == get(f"{plain}/runquery.json")[2]
        _, h_ours, _ = get(f"{ours}/leaderboard/data/index.json")
        _, h_nginx, _ = get(f"{plain}/leaderboard/data/index.json")
        gzip = {"Accept-Encoding": "gzip"}
        cases = {
            # name: (ours, nginx's), each (base, paths, headers), and the pause after an answer
            "leaderboard page mix": ([(ours, mix, {}), (plain, mix, {})], None),
            "leaderboard page mix, gzip": ([(ours, mix, gzip), (gz, mix, gzip)], None),
            "304 of index.json": ([
                (ours, ["/leaderboard/data/index.json"], {"If-None-Match": h_ours["ETag"]}),
                (plain, ["/leaderboard/data/index.json"], {"If-None-Match": h_nginx["ETag"]}),
            ], None),
            f"run query ({query_bytes // 1000} KB JSON)": ([(ours, [RUN_QUERY], {}), (plain, ["/runquery.json"], {})], None),
            f"run query, paced ({PACED_MS} ms)": ([(ours, [RUN_QUERY], {}), (plain, ["/runquery.json"], {})], PACED_MS),
        }
        runs = {}
        for name, ((a, b), pause) in cases.items():
            for who, (base, paths, headers) in zip(("mlenergy-server", "nginx"), (a, b)):
                run_wrk(base, paths, headers, 1, args.connections, pause)  # warm-up
            for _ in range(args.repeats):
                for who, (base, paths, headers) in zip(("mlenergy-server", "nginx"), (a, b)):
                    # Our histogram is read around our run query's runs only.
                    times = head_times(base, RUN_ROUTE) if base == ours and paths == [RUN_QUERY] else None
                    r = run_wrk(base, paths, headers, args.duration, args.connections, pause)
                    if times is not None:
                        r["server_p99"] = server_p99_ms(times, head_times(base, RUN_ROUTE))
                    assert r["non_2xx"] == 0 or name.startswith("304"), (name, who, r)
                    runs.setdefault((name, who), []).append(r)
                    print(f"  {name:30s} {who:16s} {r['rps']:10.0f} req/s", flush=True)
        # The median run by req/s (its own p50 and p99), and the range of the repeats.
        results = {k: sorted(v, key=lambda r: r["rps"])[len(v) // 2] for k, v in runs.items()}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=10)

    print(f"\nwrk -t2 -c{args.connections} -d{args.duration}s, median of {args.repeats} runs, one machine ({os.cpu_count()} cores) "
          f"for servers and load; nginx: 2 workers, sendfile, gzip_comp_level 1 (Debian's default)\n")
    print(f"{'case':30s} {'server':16s} {'req/s':>10s} {'range':>15s} {'p50 ms':>8s} {'p99 ms':>8s} {'MB/s':>8s}")
    for name in cases:
        for who in ("mlenergy-server", "nginx"):
            r = results[(name, who)]
            rates = [x["rps"] for x in runs[(name, who)]]
            span = f"{min(rates):.0f}-{max(rates):.0f}"
            mbps = r["bytes"] / (r["duration_us"] / 1e6) / 1e6
            print(f"{name:30s} {who:16s} {r['rps']:10.0f} {span:>15s} {r['p50_us'] / 1000:8.3f} "
                  f"{r['p99_us'] / 1000:8.3f} {mbps:8.1f}")
    print()
    for name, (_, pause) in cases.items():
        if pause is not None:
            continue  # the same offered load for both: its rates say nothing
        ratio = results[(name, "mlenergy-server")]["rps"] / results[(name, "nginx")]["rps"]
        print(f"{name:30s} ours / nginx = {ratio * 100:5.0f}%")
    for name in cases:
        if not name.startswith("run query"):
            continue
        run = results[(name, "mlenergy-server")]
        print(f"\n{name}: wrk's p99 {run['p99_us'] / 1000:.3f} ms (nginx {results[(name, 'nginx')]['p99_us'] / 1000:.3f}), "
              f"of which in the server (its /metrics, time to the answer's head): 99% <= {run['server_p99']:.2f} ms")
        # The tail moves more than the rate between runs: every run's, in the order run.
        for who in ("mlenergy-server", "nginx"):
            each = ", ".join(f"{r['p99_us'] / 1000:.2f}" for r in runs[(name, who)])
            print(f"  p99 of each run, {who:16s} {each} ms")


if __name__ == "__main__":
    main()
