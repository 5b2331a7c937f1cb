#!/usr/bin/env python3
"""Throughput and latency of mlenergy-server next to ROAPI and Datasette on the same data.

One run: builds the release binary, starts mlenergy-server on data/sample, exports the same LLM
runs (with run_id) to a parquet file for ROAPI and a SQLite database for Datasette, starts both,
checks every server answers every query sensibly, then drives each (server, query) with wrk
(2 threads, 16 connections) and prints req/s, p50, p99, the ratios to each peer, and our time
from process start to ready. It measures; it asserts nothing about speed.

    python3 bench/bench.py [--duration 10] [--connections 16]
"""

import argparse
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "target" / "release" / "mlenergy-server"
OUT = ROOT / "bench" / "out"
LUA = ROOT / "bench" / "report.lua"
BEST_RUN = "gpqa~openai--gpt-oss-20b~B200~g1~b4096~r21"
# The filtered, sorted query of the list case, as SQL (issue 17's target).
LIST_SQL = (
    "SELECT * FROM llm WHERE task = 'gpqa' AND gpu_model = 'B200' "
    "ORDER BY energy_per_token_joules LIMIT 50"
)
ARGMIN_SQL = (
    "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY task, gpu_model "
    "ORDER BY energy_per_token_joules) AS rn FROM llm) WHERE rn = 1"
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sh(*cmd, **kw):
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run(cmd, check=True, **kw)


def bench_args(description):
    """The common argument parser of the bench scripts (`--skip-build`); `build_release` honours it."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--skip-build", action="store_true", help="use the existing target/release binary")
    return ap


def build_release(args):
    """Build the release binary unless --skip-build; returns its path."""
    if not args.skip_build:
        sh("cargo", "build", "--release", "--locked", cwd=ROOT)
    return SERVER


def ensure_tools():
    if not shutil.which("wrk"):
        sh("apt-get", "install", "-y", "-qq", "wrk")
    missing = [p for p in ("roapi", "datasette") if not shutil.which(p)]
    try:
        import pyarrow  # noqa: F401  (export_peer_data writes the peers' parquet with it)
    except ImportError:
        missing.append("pyarrow")
    if missing:
        sh(sys.executable, "-m", "pip", "install", "--quiet", "--root-user-action=ignore", *missing)


def wait_ready(url, proc, timeout=60):
    """Seconds until `url` answers 200 (polling every 2 ms)."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited while starting: {url}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return time.perf_counter() - start
        except OSError:
            time.sleep(0.002)
    raise RuntimeError(f"not ready: {url}")


def wait_compressed(base, timeout=300):
    """Until the start-up task has compressed the leaderboard's files (it would compete for the CPU)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with urllib.request.urlopen(f"{base}/readyz") as r:
            if json.loads(r.read())["leaderboard"]["compressed"]:
                return
        time.sleep(0.2)


def head_times(base, route):
    """Our server's histogram of the time to an answer's head on `route`: {bound in seconds: count}."""
    counts = {}
    with urllib.request.urlopen(f"{base}/metrics") as r:
        for line in r.read().decode().splitlines():
            if line.startswith("mlenergy_http_request_duration_seconds_bucket{") and f'route="{route}"' in line:
                le = line.split('le="', 1)[1].split('"', 1)[0]
                counts[float(le)] = int(float(line.split()[-1]))
    return counts


def server_p99_ms(before, after):
    """The bucket bound under which 99% of the requests between two histograms had their head made."""
    delta = sorted((le, after[le] - before.get(le, 0)) for le in after)
    total = delta[-1][1] if delta else 0
    for le, n in delta:
        if total and n >= 0.99 * total:
            return le * 1000
    return float("nan")


def fetch(url, body=None, headers=None):
    req = urllib.request.Request(url, data=body.encode() if body else None, headers=headers or {})
    with urllib.request.urlopen(req) as r:
        return r.status, r.read()


def start_ours(procs, *args):
    """The release binary on data/sample with `args`, appended to `procs`, ready: its base URL."""
    port = free_port()
    procs.append(subprocess.Popen([SERVER, "--bind", f"127.0.0.1:{port}", "--data", ROOT / "data/sample", *args],
                                  stdout=subprocess.DEVNULL))
    base = f"http://127.0.0.1:{port}"
    wait_ready(f"{base}/readyz", procs[-1])
    return base


def export_peer_data(base):
    """The same LLM runs (with run_id) as parquet for ROAPI and SQLite for Datasette."""
    import pyarrow.parquet as pq

    OUT.mkdir(parents=True, exist_ok=True)
    parquet_path = OUT / "llm.parquet"
    _, body = fetch(f"{base}/v1/llm/runs?format=parquet")
    parquet_path.write_bytes(body)
    table = pq.read_table(parquet_path)
    db = OUT / "bench.db"
    db.unlink(missing_ok=True)
    con = sqlite3.connect(db)
    types = {"string": "TEXT", "int64": "INTEGER", "double": "REAL", "bool": "INTEGER"}
    cols = [f'"{f.name}" {types[str(f.type)]}' + (" PRIMARY KEY" if f.name == "run_id" else "") for f in table.schema]
    con.execute(f"CREATE TABLE llm ({', '.join(cols)})")
    rows = list(zip(*[table.column(i).to_pylist() for i in range(table.num_columns)]))
    con.executemany(f"INSERT INTO llm VALUES ({', '.join('?' * table.num_columns)})", rows)
    con.commit()
    con.close()
    return parquet_path, db, table.num_rows


def start_peers(procs, parquet_path, db, datasette_args=()):
    """ROAPI over `parquet_path` and Datasette over `db`, appended to `procs`: each one's base URL
    and its time from start to ready."""
    rport, pgport, dport = free_port(), free_port(), free_port()
    roapi = f"http://127.0.0.1:{rport}"
    procs.append(subprocess.Popen(["roapi", "-a", f"127.0.0.1:{rport}", "-p", f"127.0.0.1:{pgport}",
                                   "-t", f"llm={parquet_path}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    roapi_ready = wait_ready(f"{roapi}/api/schema", procs[-1])
    datasette = f"http://127.0.0.1:{dport}"
    procs.append(subprocess.Popen(["datasette", "serve", "-i", str(db), "-h", "127.0.0.1", "-p", str(dport),
                                   *datasette_args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    datasette_ready = wait_ready(f"{datasette}/-/versions.json", procs[-1])
    return (roapi, roapi_ready), (datasette, datasette_ready)


def queries(ours, roapi, datasette):
    q = urllib.parse.quote
    return {
        "list: 2 filters + sort + limit 50": {
            "mlenergy-server": (f"{ours}/v1/llm/runs?task=gpqa&gpu_model=B200&sort=energy_per_token_joules&limit=50", None, {}),
            "roapi": (f"{roapi}/api/tables/llm?{q('filter[task]')}={q(chr(39) + 'gpqa' + chr(39))}&{q('filter[gpu_model]')}={q(chr(39) + 'B200' + chr(39))}&sort=energy_per_token_joules&limit=50", None, {}),
            "datasette": (f"{datasette}/bench/llm.json?task=gpqa&gpu_model=B200&_sort=energy_per_token_joules&_size=50&_shape=array", None, {}),
        },
        "one run by id": {
            "mlenergy-server": (f"{ours}/v1/llm/runs/{BEST_RUN}", None, {}),
            "roapi": (f"{roapi}/api/tables/llm?{q('filter[run_id]')}={q(chr(39) + BEST_RUN + chr(39))}", None, {}),
            "datasette": (f"{datasette}/bench/llm.json?run_id={q(BEST_RUN)}&_shape=array", None, {}),
        },
        "group (task, gpu) with argmin": {
            "mlenergy-server": (f"{ours}/v1/llm/groups?by=task,gpu_model&agg=argmin(energy_per_token_joules)", None, {}),
            "roapi": (f"{roapi}/api/sql", ARGMIN_SQL, {}),
            "datasette": (f"{datasette}/bench.json?sql={q(ARGMIN_SQL)}&_shape=array", None, {}),
        },
        "SQL: filtered, sorted, limit 50": {
            # llm_runs holds unstable runs too; the peers hold the stable ones.
            "mlenergy-server": (f"{ours}/v1/sql?q={q(LIST_SQL.replace(' llm ', ' llm_runs ').replace(' ORDER', ' AND is_stable ORDER'))}", None, {}),
            "roapi": (f"{roapi}/api/sql", LIST_SQL, {}),
            "datasette": (f"{datasette}/bench.json?sql={q(LIST_SQL)}&_shape=array", None, {}),
        },
        "CSV of all LLM runs": {
            "mlenergy-server": (f"{ours}/v1/llm/runs?format=csv", None, {}),
            "roapi": (f"{roapi}/api/tables/llm", None, {"Accept": "application/csv"}),
            "datasette": (f"{datasette}/bench/llm.csv?_size=max", None, {}),
        },
    }


def sanity(name, server, url, body, headers, n_runs):
    """Each server must answer each query with the expected shape before it is timed."""
    status, raw = fetch(url, body, headers)
    assert status == 200, (server, name, status)
    if name.startswith("CSV"):
        lines = raw.decode().strip().splitlines()
        assert len(lines) == n_runs + 1, (server, name, len(lines))
    else:
        doc = json.loads(raw)
        rows = doc
        if isinstance(doc, dict) and "runs" in doc:
            rows = doc["runs"]
        elif isinstance(doc, dict) and "groups" in doc:
            rows = doc["groups"]
        elif isinstance(doc, dict) and "rows" in doc:
            rows = doc["rows"]
        expected = {"list": 50, "one": 1, "group": 10, "sql": 50}[name.split()[0].rstrip(":").lower()]
        assert len(rows if isinstance(rows, list) else [rows]) == expected, (server, name, len(rows))


def run_wrk(url, body, headers, duration, connections):
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(LUA)]
    for k, v in headers.items():
        cmd += ["-H", f"{k}: {v}"]
    env = dict(os.environ, WRK_BODY=body or "")
    out = subprocess.run(cmd + [url], check=True, capture_output=True, text=True, env=env).stdout
    summary = json.loads(out.strip().splitlines()[-1])
    summary["rps"] = summary["requests"] / (summary["duration_us"] / 1e6)
    return summary


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=10, help="seconds per (server, query)")
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--only", default="", help="run only the queries whose name contains this")
    args = ap.parse_args()

    ensure_tools()
    build_release(args)
    procs = []
    try:
        port = free_port()
        ours = f"http://127.0.0.1:{port}"
        p = subprocess.Popen([SERVER, "--bind", f"127.0.0.1:{port}",
                              "--data", ROOT / "data/sample"], stdout=subprocess.DEVNULL)
        procs.append(p)
        ready_s = wait_ready(f"{ours}/readyz", p)
        wait_compressed(ours)
        # The same binary with the encoded-response cache off, to show the uncached cost too.
        nport = free_port()
        nocache = f"http://127.0.0.1:{nport}"
        procs.append(subprocess.Popen([SERVER, "--bind", f"127.0.0.1:{nport}",
                                       "--data", ROOT / "data/sample", "--response-cache-bytes", "0"],
                                      stdout=subprocess.DEVNULL))
        wait_ready(f"{nocache}/readyz", procs[-1])
        wait_compressed(nocache)

        parquet_path, db, n_runs = export_peer_data(ours)
        (roapi, roapi_ready), (datasette, datasette_ready) = start_peers(procs, parquet_path, db)

        mix = {k: v for k, v in queries(ours, roapi, datasette).items() if args.only in k}
        for per_server in mix.values():
            url, body, headers = per_server["mlenergy-server"]
            per_server["mlenergy (no cache)"] = (url.replace(ours, nocache), body, headers)
        for name, per_server in mix.items():
            for server, (url, body, headers) in per_server.items():
                sanity(name, server, url, body, headers, n_runs)

        results = {}
        for name, per_server in mix.items():
            for server, (url, body, headers) in per_server.items():
                run_wrk(url, body, headers, 1, args.connections)  # warm-up
                results[(name, server)] = run_wrk(url, body, headers, args.duration, args.connections)
                r = results[(name, server)]
                print(f"  {name:34s} {server:16s} {r['rps']:10.0f} req/s", flush=True)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=10)

    servers = ["mlenergy-server", "mlenergy (no cache)", "roapi", "datasette"]
    print(f"\nwrk -t2 -c{args.connections} -d{args.duration}s, {n_runs} LLM runs, one machine ({os.cpu_count()} cores) for servers and load\n")
    print(f"{'query':34s} {'server':16s} {'req/s':>10s} {'p50 ms':>8s} {'p99 ms':>8s} {'errors':>7s}")
    for name in mix:
        for s in servers:
            r = results[(name, s)]
            print(f"{name:34s} {s:16s} {r['rps']:10.0f} {r['p50_us'] / 1000:8.2f} {r['p99_us'] / 1000:8.2f} {r['socket_errors'] + r['non_2xx']:7d}")
    print(f"\n{'query':34s} {'x ROAPI':>9s} {'x Datasette':>12s} {'uncached x ROAPI':>17s} {'uncached x Datasette':>21s}")
    for name in mix:
        o = results[(name, "mlenergy-server")]["rps"]
        u = results[(name, "mlenergy (no cache)")]["rps"]
        ro, da = results[(name, "roapi")]["rps"], results[(name, "datasette")]["rps"]
        print(f"{name:34s} {o / ro:9.1f} {o / da:12.1f} {u / ro:17.1f} {u / da:21.1f}")
    print(f"\nstart to ready: mlenergy-server {ready_s * 1000:.0f} ms, ROAPI {roapi_ready * 1000:.0f} ms, Datasette {datasette_ready * 1000:.0f} ms")


if __name__ == "__main__":
    main()
