#!/usr/bin/env python3
"""SQL over the wire protocols: psql's \\timing of the bench's filtered, sorted query over the
PostgreSQL wire protocol (issue 17's target: median warm <= 2 ms), next to the same query in a
real PostgreSQL server holding the same table (Debian's, on this machine, if it runs), and the
same query through ADBC's Flight SQL driver into pyarrow, next to /v1/sql?format=arrow over HTTP; and psycopg
sending one statement with distinct parameters (the extended protocol: the plan cache's case) to both servers.

    python3 bench/sql_wire_bench.py [--skip-build] [--runs 200] [--pg-url postgres://...]

It measures; it asserts nothing about speed.
"""

import csv
import io
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, SERVER, bench_args, build_release, free_port, wait_compressed, wait_ready  # noqa: E402

QUERY = ("SELECT * FROM llm_runs WHERE task = 'gpqa' AND gpu_model = 'B200' "
         "ORDER BY energy_per_token_joules LIMIT 50")


def psql_times(args, runs):
    """psql's \\timing of QUERY run `runs` times in one session (the first is dropped: warm)."""
    script = "\\timing on\n\\o /dev/null\n" + (QUERY + ";\n") * (runs + 1)
    out = subprocess.run(["psql", "-X", "-q", *args], input=script, capture_output=True, text=True,
                         check=True, env={"PGCONNECT_TIMEOUT": "10", "PATH": "/usr/bin:/bin"})
    times = [float(m) for m in re.findall(r"Time: ([0-9.]+) ms", out.stdout + out.stderr)]
    assert len(times) == runs + 1, out.stderr[-2000:]
    return times[1:]


DISTINCT_SQL = ("SELECT run_id, energy_per_token_joules, median_itl_ms FROM llm_runs "
                "WHERE task = %s AND max_num_seqs >= %s AND num_gpus <= %s "
                "ORDER BY energy_per_token_joules, run_id LIMIT 20")


def distinct_rate(conninfo, n):
    """psycopg (extended protocol, server-side parameters) sending `n` queries of DISTINCT_SQL with
    seeded distinct parameters in one session, one after another: queries a second and p99 ms."""
    import psycopg

    rng = random.Random(7)
    tasks = ["gpqa", "lm-arena-chat", "sourcegraph-fim", "image-chat", "video-chat"]
    params = [(rng.choice(tasks), rng.choice([1, 8, 16, 32, 64, 128, 256, 512]), rng.choice([1, 2, 4, 8]))
              for _ in range(n + 50)]
    with psycopg.connect(conninfo, autocommit=True) as conn, conn.cursor() as cur:
        rows = 0
        for p in params[:50]:
            cur.execute(DISTINCT_SQL, p)
            rows += len(cur.fetchall())
        lat = []
        start = time.perf_counter()
        for p in params[50:]:
            t0 = time.perf_counter()
            cur.execute(DISTINCT_SQL, p)
            rows += len(cur.fetchall())
            lat.append((time.perf_counter() - t0) * 1000)
        elapsed = time.perf_counter() - start
    return n / elapsed, statistics.quantiles(lat, n=100)[-1], rows


def bench_database(url):
    """A database of its own on the server `url` names (its user may create databases)."""
    exists = subprocess.run(["psql", url, "-XAtc", "SELECT 1 FROM pg_database WHERE datname = 'mlenergy_bench'"],
                            capture_output=True, text=True, check=True).stdout.strip()
    if not exists:
        subprocess.run(["psql", url, "-Xqc", "CREATE DATABASE mlenergy_bench"], check=True)
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/mlenergy_bench"))


def load_into_postgres(url, base):
    """The llm_runs table (every column, as /v1/sql's CSV has it) into a PostgreSQL database."""
    with urllib.request.urlopen(base + "/v1/sql?" + urllib.parse.urlencode(
            {"q": "SELECT * FROM llm_runs", "format": "csv"})) as r:
        text = r.read().decode()
    header = next(csv.reader(io.StringIO(text)))
    with urllib.request.urlopen(base + "/v1/sql?" + urllib.parse.urlencode(
            {"q": "SELECT * FROM llm_runs LIMIT 0", "format": "json"})) as r:
        types = {c["name"]: c["type"] for c in json.loads(r.read())["columns"]}
    pg = {"Utf8": "text", "Int64": "bigint", "Float64": "double precision", "Boolean": "boolean"}
    cols = ", ".join(f'"{h}" {pg.get(types[h], "text")}' for h in header)
    ddl = f"DROP TABLE IF EXISTS llm_runs; CREATE TABLE llm_runs ({cols});"
    subprocess.run(["psql", url, "-X", "-q", "-c", ddl], check=True)
    subprocess.run(["psql", url, "-X", "-q", "-c", "\\copy llm_runs FROM STDIN WITH (FORMAT csv, HEADER true)"],
                   input=text, text=True, check=True)
    subprocess.run(["psql", url, "-X", "-q", "-c", "ANALYZE llm_runs"], check=True)


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--distinct", type=int, default=2000, help="psycopg queries with distinct parameters")
    ap.add_argument("--pg-url", default="postgres://mlenergy:mlenergy@127.0.0.1:5432/postgres",
                    help="a PostgreSQL server to hold the same table as the peer")
    args = ap.parse_args()
    if not shutil.which("psql"):
        sys.exit("psql is needed (Debian's postgresql-client)")
    build_release(args)
    port, pg_port, fl_port = free_port(), free_port(), free_port()
    proc = subprocess.Popen([SERVER, "--bind", f"127.0.0.1:{port}", "--pg-bind", f"127.0.0.1:{pg_port}",
                             "--flight-bind", f"127.0.0.1:{fl_port}", "--data", str(ROOT / "data" / "sample")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={"MLENERGY_LOG": "warn", "PATH": "/usr/bin:/bin"})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"{base}/readyz", proc)
        wait_compressed(base)
        ours = psql_times(["-h", "127.0.0.1", "-p", str(pg_port), "-U", "bench", "-d", "mlenergy"], args.runs)
        print(f"psql \\timing over mlenergy-server's wire protocol: median {statistics.median(ours):.3f} ms, "
              f"p90 {statistics.quantiles(ours, n=10)[-1]:.3f} ms ({args.runs} warm runs)")
        try:
            url = bench_database(args.pg_url)
            load_into_postgres(url, base)
            theirs = psql_times([url], args.runs)
            ours_rate, ours_p99, ours_rows = distinct_rate(
                f"host=127.0.0.1 port={pg_port} user=bench dbname=mlenergy", args.distinct)
            theirs_rate, theirs_p99, theirs_rows = distinct_rate(url, args.distinct)
            assert ours_rows == theirs_rows, (ours_rows, theirs_rows)
            print(f"psycopg, {args.distinct} queries with distinct parameters in one session: mlenergy-server "
                  f"{ours_rate:.0f}/s (p99 {ours_p99:.2f} ms), PostgreSQL {theirs_rate:.0f}/s (p99 {theirs_p99:.2f} ms): "
                  f"ours / PostgreSQL = {ours_rate / theirs_rate:.2f} (issue 34's target: at least 0.5)")
            print(f"psql \\timing over PostgreSQL {subprocess.run(['psql', url, '-XAtc', 'SHOW server_version'], capture_output=True, text=True).stdout.strip()} "
                  f"(same table, no index): median {statistics.median(theirs):.3f} ms; "
                  f"ours / PostgreSQL = {statistics.median(ours) / statistics.median(theirs):.2f}")
        except (subprocess.CalledProcessError, FileNotFoundError) as e:
            print(f"(no PostgreSQL peer: {e})")
        try:
            import adbc_driver_flightsql.dbapi as flightsql
        except ImportError:
            print("(adbc-driver-flightsql not installed: no Flight SQL figure)")
            return
        with flightsql.connect(f"grpc://127.0.0.1:{fl_port}") as conn, conn.cursor() as cur:
            flight = []
            for _ in range(args.runs + 1):
                t0 = time.perf_counter()
                cur.execute(QUERY)
                cur.fetch_arrow_table()
                flight.append((time.perf_counter() - t0) * 1000)
        http = []
        for i in range(args.runs + 1):
            # A new query text each time (a trailing comment): the HTTP answer cache would
            # otherwise answer it without running it, which the wire protocols never do.
            url = base + "/v1/sql?" + urllib.parse.urlencode({"q": f"{QUERY} -- {i}", "format": "arrow"})
            t0 = time.perf_counter()
            urllib.request.urlopen(url).read()
            http.append((time.perf_counter() - t0) * 1000)
        print(f"Flight SQL (ADBC, execute + fetch into pyarrow): median {statistics.median(flight[1:]):.3f} ms; "
              f"/v1/sql?format=arrow over HTTP (urllib): median {statistics.median(http[1:]):.3f} ms")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
