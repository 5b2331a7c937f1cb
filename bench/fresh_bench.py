#!/usr/bin/env python3
"""Fresh queries: a stream of distinct queries, none answered before, to mlenergy-server, ROAPI and Datasette.

Dashboards and notebooks do not repeat a URL: each refresh or cell changes a filter. This builds the
release binary (unless --skip-build), serves data/sample, exports the same LLM runs to ROAPI
(parquet) and Datasette (SQLite) as bench/bench.py does, and draws one stream of distinct questions
(seeded): a random task, a batch-size range, a largest GPU count, a GPU model or
any, and a page size (1 to 100), "the
runs of this task with a batch size in this range on at most this many GPUs, lowest energy per token
first, this many". Each server gets the same stream in
its own syntax:

  SQL:  ours   GET /v1/sql?q=SELECT ... WHERE task = '...' AND max_num_seqs >= ... AND max_num_seqs <= ...
               AND num_gpus <= ... ORDER BY energy_per_token_joules, run_id LIMIT ...
        Datasette  GET /bench.json?sql=(the same SELECT)&_shape=array
  REST: ours   GET /v1/llm/runs?task=...&max_num_seqs_min=...&max_num_seqs_max=...&num_gpus_max=...&sort=energy_per_token_joules&limit=...
        ROAPI  GET /api/tables/llm?filter[task]='...'&filter[max_num_seqs]gte=...&filter[max_num_seqs]lte=...&filter[num_gpus]lte=...&sort=...&limit=...
        Datasette  GET /bench/llm.json?task=...&max_num_seqs__gte=...&max_num_seqs__lte=...&num_gpus__lte=...&_sort=...&_size=...

The stream is long enough that no question repeats within a run at today's rates (wrk's two threads
each walk their own half of it; a question asked again would be counted in the cache-hits column). Our
servers run without the answer cache (--response-cache-bytes 0: every answer computed, which /metrics'
answer counts confirm), one of them also without the SQL plan cache (--sql-plans 0); a third runs with
the default settings, as deployed (the answer cache on: every new answer is kept, and under a stream of
distinct questions the cache evicts without pause). Each (server, question kind) is driven by wrk (2 threads, 16 connections)
after the first 2,000 questions of another stream warmed it; req/s, p50, p99 and non-2xx answers are
printed with the ratios. For our servers, "server p99" is the bound of the /metrics histogram bucket
under which 99% of the timed requests had the head of their answer made (time in the handler and its
layers, not in the sockets or the run queues): wrk's p99 minus it is waiting for a core on a machine
whose two are shared by servers and load. It measures; it asserts nothing about speed.

    python3 bench/fresh_bench.py [--skip-build] [--duration 10] [--connections 16]
"""

import json
import os
import random
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import (  # noqa: E402
    ROOT,
    SERVER,
    bench_args,
    build_release,
    ensure_tools,
    export_peer_data,
    free_port,
    head_times,
    server_p99_ms,
    start_peers,
    wait_compressed,
    wait_ready,
)

PATHS_LUA = Path(__file__).resolve().parent / "paths.lua"
TASKS = ["gpqa", "lm-arena-chat", "sourcegraph-fim", "image-chat", "video-chat"]
BATCHES = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 4096]
GPUS = [1, 2, 4, 8]
MODELS = ["", "H100", "B200"]


def stream(seed, n):
    """n distinct questions (task, smallest and largest batch, most GPUs, page size), seeded."""
    rng = random.Random(seed)
    seen, out = set(), []
    while len(out) < n:
        lo, hi = sorted((rng.choice(BATCHES), rng.choice(BATCHES)))
        q = (rng.choice(TASKS), lo, hi, rng.choice(GPUS), rng.choice(MODELS), rng.randint(1, 100))
        if q not in seen:
            seen.add(q)
            out.append(q)
    return out


def sql_of(table, task, lo, hi, gpus, gpu, limit, stable):
    where = (f"task = '{task}' AND max_num_seqs >= {lo} AND max_num_seqs <= {hi} AND num_gpus <= {gpus}"
             + (f" AND gpu_model = '{gpu}'" if gpu else "") + (" AND is_stable" if stable else ""))
    return (f"SELECT run_id, model_id, gpu_model, num_gpus, max_num_seqs, energy_per_token_joules, median_itl_ms "
            f"FROM {table} WHERE {where} ORDER BY energy_per_token_joules, run_id LIMIT {limit}")


def paths(kind, server, qs):
    q = urllib.parse.quote
    out = []
    for task, lo, hi, gpus, gpu, limit in qs:
        if kind == "sql" and server.startswith("mlenergy"):
            out.append(f"/v1/sql?q={q(sql_of('llm_runs', task, lo, hi, gpus, gpu, limit, True))}")
        elif kind == "sql" and server == "datasette":
            out.append(f"/bench.json?sql={q(sql_of('llm', task, lo, hi, gpus, gpu, limit, False))}&_shape=array")
        elif kind == "rest" and server.startswith("mlenergy"):
            out.append(f"/v1/llm/runs?task={task}&max_num_seqs_min={lo}&max_num_seqs_max={hi}&num_gpus_max={gpus}"
                       + (f"&gpu_model={gpu}" if gpu else "") + f"&sort=energy_per_token_joules&limit={limit}")
        elif kind == "rest" and server == "roapi":
            out.append(f"/api/tables/llm?{q('filter[task]')}={q(chr(39) + task + chr(39))}"
                       f"&{q('filter[max_num_seqs]gte')}={lo}&{q('filter[max_num_seqs]lte')}={hi}"
                       f"&{q('filter[num_gpus]lte')}={gpus}"
                       + (f"&{q('filter[gpu_model]')}={q(chr(39) + gpu + chr(39))}" if gpu else "")
                       + f"&sort=energy_per_token_joules&limit={limit}")
        elif kind == "rest" and server == "datasette":
            out.append(f"/bench/llm.json?task={task}&max_num_seqs__gte={lo}&max_num_seqs__lte={hi}"
                       f"&num_gpus__lte={gpus}" + (f"&gpu_model={gpu}" if gpu else "")
                       + f"&_sort=energy_per_token_joules&_size={limit}&_shape=array")
    return out


def rows_of(raw):
    doc = json.loads(raw)
    if isinstance(doc, list):
        return len(doc)
    for k in ("runs", "rows"):
        if k in doc:
            return len(doc[k])
    return None


def run_wrk(base, lines, duration, connections):
    with tempfile.NamedTemporaryFile("w", suffix=".paths", delete=False) as f:
        f.write("\n".join(lines))
        name = f.name
    try:
        cmd = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(PATHS_LUA), base]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                             env=dict(os.environ, WRK_PATHS_FILE=name)).stdout
    finally:
        os.unlink(name)
    s = json.loads(out.strip().splitlines()[-1])
    s["rps"] = s["requests"] / (s["duration_us"] / 1e6)
    return s


def cache_hits(base):
    with urllib.request.urlopen(f"{base}/metrics") as r:
        for line in r.read().decode().splitlines():
            if line.startswith('mlenergy_http_answers_total{kind="cache"}'):
                return int(float(line.split()[-1]))
    return 0


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--stream", type=int, default=250_000,
                    help="questions in the timed stream (of 330,000 possible)")
    args = ap.parse_args()
    ensure_tools()
    build_release(args)
    procs = []
    try:
        port = free_port()
        ours = f"http://127.0.0.1:{port}"
        # No answer cache: every answer is computed, a question asked again too.
        procs.append(subprocess.Popen([SERVER, "--bind", f"127.0.0.1:{port}", "--data", ROOT / "data/sample",
                                       "--response-cache-bytes", "0"], stdout=subprocess.DEVNULL))
        wait_ready(f"{ours}/readyz", procs[-1])
        # The same binary planning every SQL query anew (--sql-plans 0): the plan cache's share.
        nport = free_port()
        noplans = f"http://127.0.0.1:{nport}"
        procs.append(subprocess.Popen([SERVER, "--bind", f"127.0.0.1:{nport}", "--data", ROOT / "data/sample",
                                       "--response-cache-bytes", "0", "--sql-plans", "0"], stdout=subprocess.DEVNULL))
        wait_ready(f"{noplans}/readyz", procs[-1])
        # The same binary with the default settings (answer cache on).
        dport = free_port()
        defaults = f"http://127.0.0.1:{dport}"
        procs.append(subprocess.Popen([SERVER, "--bind", f"127.0.0.1:{dport}", "--data", ROOT / "data/sample"],
                                      stdout=subprocess.DEVNULL))
        wait_ready(f"{defaults}/readyz", procs[-1])
        parquet_path, db, _ = export_peer_data(ours)
        (roapi, _), (datasette, _) = start_peers(procs, parquet_path, db,
                                                 ("--setting", "sql_time_limit_ms", "5000"))
        # Each of ours compresses the leaderboard's files after start-up (seconds of CPU); a timed
        # run beside that work measures the start-up, not the question.
        for base in (ours, noplans, defaults):
            wait_compressed(base)
        bases = {"mlenergy-server": ours, "mlenergy (plans off)": noplans, "mlenergy (defaults)": defaults,
                 "roapi": roapi, "datasette": datasette}

        warm = stream(1, 2000)
        timed = stream(2, args.stream)
        # The same questions answer the same rows everywhere (the peers hold the stable runs).
        for question in timed[:20]:
            counts = {}
            for kind, servers in (("sql", ["mlenergy-server", "mlenergy (plans off)", "mlenergy (defaults)", "datasette"]),
                                  ("rest", ["mlenergy-server", "mlenergy (defaults)", "roapi", "datasette"])):
                for s in servers:
                    path = paths(kind, s, [question])[0]
                    with urllib.request.urlopen(bases[s] + path) as r:
                        counts[(kind, s)] = rows_of(r.read())
            assert len(set(counts.values())) == 1, (question, counts)

        results = {}
        for kind, servers in (("sql", ["mlenergy-server", "mlenergy (plans off)", "mlenergy (defaults)", "datasette"]),
                              ("rest", ["mlenergy-server", "mlenergy (defaults)", "roapi", "datasette"])):
            for s in servers:
                run_wrk(bases[s], paths(kind, s, warm), 2, args.connections)
                mine = s.startswith("mlenergy")
                route = "/v1/sql" if kind == "sql" else "/v1/{domain}/runs"
                before = cache_hits(bases[s]) if mine else 0
                times = head_times(bases[s], route) if mine else None
                r = run_wrk(bases[s], paths(kind, s, timed), args.duration, args.connections)
                r["cache_hits"] = cache_hits(bases[s]) - before if mine else None
                r["server_p99"] = server_p99_ms(times, head_times(bases[s], route)) if mine else None
                results[(kind, s)] = r
                print(f"  {kind} {s:16s} {r['rps']:9.0f} req/s", flush=True)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=10)

    print(f"\nwrk -t2 -c{args.connections} -d{args.duration}s over a stream of {args.stream} distinct questions "
          f"(seeded), one machine ({os.cpu_count()} cores) for servers and load\n")
    print(f"{'kind':5s} {'server':22s} {'req/s':>9s} {'p50 ms':>8s} {'p99 ms':>8s} {'non-2xx':>8s} {'cache hits':>11s} "
          f"{'server p99 ms':>14s}")
    for (kind, s), r in results.items():
        hits = "" if r["cache_hits"] is None else str(r["cache_hits"])
        inside = "" if r["server_p99"] is None else f"<= {r['server_p99']:.2f}"
        print(f"{kind:5s} {s:22s} {r['rps']:9.0f} {r['p50_us'] / 1000:8.2f} {r['p99_us'] / 1000:8.2f} "
              f"{r['non_2xx'] + r['socket_errors']:8d} {hits:>11s} {inside:>14s}")
    o = results[("sql", "mlenergy-server")]["rps"]
    print(f"\nSQL: {o / results[('sql', 'datasette')]['rps']:.1f}x Datasette (target >= 10, p99 <= 5 ms); "
          f"{o / results[('sql', 'mlenergy (plans off)')]['rps']:.2f}x our own without the plan cache")
    o = results[("rest", "mlenergy-server")]["rps"]
    print(f"REST: {o / results[('rest', 'roapi')]['rps']:.1f}x ROAPI (target >= 20, p99 <= 3 ms), "
          f"{o / results[('rest', 'datasette')]['rps']:.1f}x Datasette's table view")
    for kind in ("sql", "rest"):
        d = results[(kind, "mlenergy (defaults)")]
        print(f"{kind.upper()} with the default settings (answer cache on): {d['rps']:.0f} req/s, "
              f"{d['rps'] / results[(kind, 'mlenergy-server')]['rps']:.2f}x the same without it, "
              f"{d['cache_hits']} of {d['requests']} answered from it")


if __name__ == "__main__":
    main()
