"""SQL through real clients, each from its ordinary package: psql (Debian's postgresql-client)
and psycopg and SQLAlchemy over the PostgreSQL wire protocol (--pg-bind), ADBC's Flight SQL
driver over Arrow Flight SQL (--flight-bind). Answers equal the REST endpoints', joins over the
raw-derived tables equal /itl, every forbidden statement kind is refused, each limit stops its
query while another succeeds, and the password and TLS options work."""

import contextlib
import json
import os
import shutil
import subprocess
import threading
import urllib.parse
import urllib.request

import adbc_driver_flightsql.dbapi as flightsql
import psycopg
import pyarrow as pa
import pytest
import sqlalchemy as sa

from conftest import SAMPLE, _free_port, running_server
from test_build import make_tree

PSQL = shutil.which("psql")


def get(base, path, **params):
    url = base + path + ("?" + urllib.parse.urlencode(params, doseq=True) if params else "")
    with urllib.request.urlopen(url) as r:
        return json.loads(r.read())


@contextlib.contextmanager
def sql_server(data, *extra, env=None):
    """The binary with both SQL surfaces on free ports; yields (http base, pg port, flight port)."""
    pg, fl = _free_port(), _free_port()
    args = ("--pg-bind", f"127.0.0.1:{pg}", "--flight-bind", f"127.0.0.1:{fl}",
            "--leaderboard-histograms", "on-request", *extra)
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        with running_server(data, args=args) as base:
            yield base, pg, fl
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    """Generated raw runs (their ITLs are read through the raw path)."""
    root, _ = make_tree(tmp_path_factory.mktemp("sqlraw"))
    with sql_server(f"raw:{root}") as s:
        yield s


@pytest.fixture(scope="module")
def sample():
    with sql_server(str(SAMPLE)) as s:
        yield s


def pg_connect(port, **kw):
    return psycopg.connect(host="127.0.0.1", port=port, user="dash", dbname="mlenergy",
                           connect_timeout=10, **kw)


def flight_connect(port):
    return flightsql.connect(f"grpc://127.0.0.1:{port}")


QUERY = ("SELECT run_id, energy_per_token_joules FROM llm_runs WHERE task = 'gpqa' "
         "AND gpu_model = 'B200' AND is_stable ORDER BY energy_per_token_joules, run_id LIMIT 50")


def rest_rows(base):
    body = get(base, "/v1/llm/runs", task="gpqa", gpu_model="B200",
               sort="energy_per_token_joules,run_id", limit=50, fields="run_id,energy_per_token_joules")
    return [(r["run_id"], r["energy_per_token_joules"]) for r in body["runs"]]


def test_psql_queries_and_catalog(sample):
    assert PSQL, "psql (Debian's postgresql-client) is not installed"
    base, pg, _ = sample
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    common = [PSQL, "-h", "127.0.0.1", "-p", str(pg), "-U", "dash", "-d", "mlenergy", "-X", "-A", "-t", "-F", "|"]
    out = subprocess.run([*common, "-c", QUERY], capture_output=True, text=True, env=env, check=True).stdout
    rows = [line.split("|") for line in out.strip().splitlines()]
    expected = rest_rows(base)
    assert [r[0] for r in rows] == [e[0] for e in expected]
    # Floats as PostgreSQL writes float8 (shortest round trip).
    assert [float(r[1]) for r in rows] == [e[1] for e in expected]
    tables = subprocess.run([*common, "-c", r"\dt"], capture_output=True, text=True, env=env, check=True).stdout
    names = sorted(line.split("|")[1] for line in tables.strip().splitlines())
    assert names == ["diffusion_runs", "llm_itl", "llm_output_lengths", "llm_runs", "timelines"]
    desc = subprocess.run([*common, "-c", r"\d llm_itl"], capture_output=True, text=True, env=env, check=True).stdout
    assert [line.split("|")[:2] for line in desc.strip().splitlines()] == [
        ["run_id", "text"], ["i", "bigint"], ["itl_s", "double precision"]]
    refused = subprocess.run([*common, "-c", "DROP TABLE llm_runs"], capture_output=True, text=True, env=env)
    assert refused.returncode != 0 and "only queries are run" in refused.stderr


def test_psycopg_parameters_and_rest_equality(sample):
    base, pg, _ = sample
    with pg_connect(pg) as c:
        rows = c.execute(QUERY).fetchall()
        assert rows == rest_rows(base)
        got = c.execute("SELECT run_id FROM llm_runs WHERE task = %s AND num_gpus = %s ORDER BY run_id",
                        ("gpqa", 8)).fetchall()
        rest = get(base, "/v1/llm/runs", task="gpqa", num_gpus=8, sort="run_id", fields="run_id", limit=1000)
        assert [r[0] for r in got] == [r["run_id"] for r in rest["runs"]] and got
        n = c.execute("SELECT count(*) FROM diffusion_runs WHERE task = 'text-to-image' AND num_gpus BETWEEN 2 AND 4").fetchone()[0]
        rest = get(base, "/v1/diffusion/runs", task="text-to-image", num_gpus_min=2, num_gpus_max=4, limit=1)
        assert n == rest["total"]
        # The functions drivers call as they connect, in PostgreSQL's form.
        assert c.execute("SELECT version()").fetchone()[0].startswith("PostgreSQL 16.6 (mlenergy-server ")
        assert c.execute("SELECT to_regtype('double precision'), to_regtype('text'), to_regtype('hstore')").fetchone() == (701, 25, None)
        assert json.loads(c.execute("SELECT json_build_object('n', 1, 's', 'x', 'b', true, 'f', 2.5, 'z', NULL)").fetchone()[0]) == {
            "n": 1, "s": "x", "b": True, "f": 2.5, "z": None}
        groups = c.execute("SELECT task, count(*) FROM llm_runs WHERE is_stable GROUP BY task ORDER BY task").fetchall()
        rest = get(base, "/v1/llm/groups", by="task", agg="count")
        assert groups == sorted((g["task"], g["count"]) for g in rest["groups"])


def test_sqlalchemy_lists_tables_and_reads_rows(sample):
    base, pg, _ = sample
    engine = sa.create_engine(f"postgresql+psycopg://dash@127.0.0.1:{pg}/mlenergy")
    try:
        names = sorted(sa.inspect(engine).get_table_names())
        assert names == ["diffusion_runs", "llm_itl", "llm_output_lengths", "llm_runs", "timelines"]
        runs = sa.table("llm_runs", sa.column("run_id"), sa.column("energy_per_token_joules"),
                        sa.column("task"), sa.column("gpu_model"), sa.column("is_stable"))
        q = (sa.select(runs.c.run_id, runs.c.energy_per_token_joules)
             .where(runs.c.task == "gpqa", runs.c.gpu_model == "B200", runs.c.is_stable)
             .order_by(runs.c.energy_per_token_joules, runs.c.run_id).limit(50))
        with engine.connect() as conn:
            assert [tuple(r) for r in conn.execute(q)] == rest_rows(base)
    finally:
        engine.dispose()


def test_adbc_flight_sql_reads_into_pyarrow(sample):
    base, _, fl = sample
    with flight_connect(fl) as conn, conn.cursor() as cur:
        cur.execute(QUERY)
        table = cur.fetch_arrow_table()
        assert table.schema.field("energy_per_token_joules").type == pa.float64()
        assert list(zip(*table.to_pydict().values())) == rest_rows(base)
        cur.execute("SELECT run_id FROM llm_runs WHERE task = ? AND num_gpus = ? ORDER BY run_id", ("gpqa", 8))
        rest = get(base, "/v1/llm/runs", task="gpqa", num_gpus=8, sort="run_id", fields="run_id", limit=1000)
        assert [r[0] for r in cur.fetchall()] == [r["run_id"] for r in rest["runs"]]
        # The HTTP surface's Arrow answer of the same query is the same table.
        with urllib.request.urlopen(base + "/v1/sql?" + urllib.parse.urlencode({"q": QUERY, "format": "arrow"})) as r:
            http = pa.ipc.open_stream(r.read()).read_all()
        assert http.to_pydict() == table.to_pydict()
        objects = conn.adbc_get_objects(depth="tables").read_all().to_pylist()
        tables = sorted(t["table_name"] for c in objects for s in c["catalog_db_schemas"] for t in s["db_schema_tables"])
        assert tables == ["diffusion_runs", "llm_itl", "llm_output_lengths", "llm_runs", "timelines"]
        schema = conn.adbc_get_table_schema("llm_itl")
        assert schema.names == ["run_id", "i", "itl_s"]
        assert conn.adbc_get_info()["vendor_name"] == "mlenergy-server"


REFUSED = [
    "CREATE TABLE t AS SELECT * FROM llm_runs",
    "CREATE VIEW v AS SELECT 1",
    "INSERT INTO llm_runs SELECT * FROM llm_runs",
    "DELETE FROM llm_runs",
    "UPDATE llm_runs SET num_gpus = 1",
    "DROP TABLE llm_runs",
    "COPY llm_runs TO '/tmp/out.csv'",
    "CREATE EXTERNAL TABLE e STORED AS CSV LOCATION '/etc/passwd'",
]


def test_every_forbidden_statement_is_refused_on_both_surfaces(sample):
    _, pg, fl = sample
    with pg_connect(pg, autocommit=True) as c:
        for sql in REFUSED:
            with pytest.raises(psycopg.Error) as e:
                c.execute(sql)
            # DataFusion's CREATE EXTERNAL TABLE is not PostgreSQL syntax: the wire protocol's
            # parser rejects it before planning.
            expected = "42601" if "EXTERNAL" in sql else "25006"
            assert e.value.sqlstate == expected, (sql, e.value)
        for sql in ["SET datafusion.execution.batch_size = 1", "SET datafusion.runtime.memory_limit = '8G'"]:
            with pytest.raises(psycopg.Error) as e:
                c.execute(sql)
            assert e.value.sqlstate == "55P02" and "only these session options" in str(e.value)
        with pytest.raises(psycopg.Error):
            c.execute("SELECT * FROM read_csv('/etc/passwd')")
        # Harmless session options are accepted and shown back.
        c.execute("SET application_name = 'grafana'")
        assert c.execute("SHOW application_name").fetchone()[0] == "grafana"
        assert c.execute("SHOW transaction_read_only").fetchone()[0] == "on"
        assert c.execute("SELECT count(*) FROM llm_runs").fetchone()[0] == 838
    with flight_connect(fl) as conn, conn.cursor() as cur:
        for sql in REFUSED:
            with pytest.raises(Exception) as e:
                cur.execute(sql)
            assert "only queries are run" in str(e.value) or "not supported" in str(e.value), (sql, e.value)
        cur.execute("SELECT count(*) AS n FROM llm_runs")
        assert cur.fetchone()[0] == 838


def test_statements_the_parser_backtracks_on_are_refused_at_once(sample):
    """A chain of dotted names ending in `[` takes sqlparser 2^n steps; the depth bound refuses it
    on every surface (psql's simple protocol, psycopg's extended one, Flight SQL) at once, and the
    server answers the next query."""
    _, pg, fl = sample
    chain = "SELECT " + ".".join(["ab"] * 34) + "["
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    common = [PSQL, "-h", "127.0.0.1", "-p", str(pg), "-U", "dash", "-d", "mlenergy", "-X", "-A", "-t"]
    out = subprocess.run([*common, "-c", chain], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode != 0 and "nests more than 24 levels deep" in out.stderr, out.stderr
    with pg_connect(pg, autocommit=True) as c:
        with pytest.raises(psycopg.Error) as e:
            c.execute(chain + " %s", (1,))
        assert e.value.sqlstate == "54001", e.value
        assert c.execute("SELECT count(*) FROM llm_runs").fetchone()[0] == 838
    with flight_connect(fl) as conn, conn.cursor() as cur:
        with pytest.raises(Exception) as e:
            cur.execute(chain)
        assert "nests more than 24 levels deep" in str(e.value), e.value
        cur.execute("SELECT count(*) AS n FROM llm_runs")
        assert cur.fetchone()[0] == 838


def test_chains_past_the_bound_are_refused_on_every_surface(sample):
    """A chain of 2,000 ORs (built by the parser in a loop, and as deep as it is long) aborted the
    server on a worker's stack; every surface refuses it before it is parsed, naming the bound, and
    the server answers the next query. One within the bound answers as its IN list does."""
    _, pg, fl = sample
    ors = lambda n: "SELECT count(*) FROM llm_runs WHERE " + " OR ".join(f"num_gpus = {i % 9}" for i in range(n))
    in_list = "SELECT count(*) FROM llm_runs WHERE num_gpus IN (" + ", ".join(str(i) for i in range(9)) + ")"
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    common = [PSQL, "-h", "127.0.0.1", "-p", str(pg), "-U", "dash", "-d", "mlenergy", "-X", "-A", "-t"]
    out = subprocess.run([*common, "-c", ors(2000)], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode != 0 and "more than the limit of 1000" in out.stderr, out.stderr
    with pg_connect(pg, autocommit=True) as c:
        with pytest.raises(psycopg.Error) as e:
            c.execute(ors(2000) + " OR num_gpus = %s", (1,))
        assert e.value.sqlstate == "54001" and "more than the limit of 1000" in str(e.value), e.value
        expected = c.execute(in_list).fetchone()[0]
        assert expected > 0
        assert c.execute(ors(300)).fetchone()[0] == expected
    with flight_connect(fl) as conn, conn.cursor() as cur:
        with pytest.raises(Exception) as e:
            cur.execute(ors(2000))
        assert "more than the limit of 1000" in str(e.value), e.value
        cur.execute(ors(300))
        assert cur.fetchone()[0] == expected


def test_joins_over_raw_derived_tables_equal_itl(raw):
    base, pg, fl = raw
    runs = get(base, "/v1/llm/runs", task="video-chat", stability="all", fields="run_id", sort="run_id")["runs"]
    assert runs
    expected = []
    for r in runs:
        expected += [row["itl_s"] for row in get(base, f"/v1/llm/runs/{r['run_id']}/itl")]
    join = ("SELECT i.itl_s FROM llm_runs r JOIN llm_itl i ON r.run_id = i.run_id "
            "WHERE r.task = 'video-chat' ORDER BY r.run_id, i.i")
    with pg_connect(pg) as c:
        assert [row[0] for row in c.execute(join).fetchall()] == expected
        one = runs[0]["run_id"]
        got = c.execute("SELECT itl_s FROM llm_itl WHERE run_id = %s ORDER BY i", (one,)).fetchall()
        assert [g[0] for g in got] == [row["itl_s"] for row in get(base, f"/v1/llm/runs/{one}/itl")]
    with flight_connect(fl) as conn, conn.cursor() as cur:
        cur.execute(join)
        assert cur.fetch_arrow_table().column("itl_s").to_pylist() == expected


SLOW = "SELECT count(*) FROM generate_series(1, 100000000000) a"
MEMORY = "SELECT count(DISTINCT a.run_id || b.run_id) FROM llm_runs a CROSS JOIN llm_runs b"
ROWS = "SELECT * FROM llm_runs a CROSS JOIN (VALUES (1), (2)) v"


def test_each_limit_stops_its_query_while_another_succeeds():
    with sql_server(str(SAMPLE), "--sql-timeout", "800ms", "--sql-memory-bytes", str(1 << 20),
                    "--max-rows", "1000", "--sql-concurrency", "4") as (_, pg, fl):
        quick = "SELECT task, count(*) AS n FROM llm_runs GROUP BY task ORDER BY task"
        with pg_connect(pg, autocommit=True) as c:
            expected = c.execute(quick).fetchall()
        cases = [(SLOW, "57014", "time limit"), (MEMORY, "53200", "memory limit of 1 MiB"),
                 (ROWS, "54000", "row cap of 1000")]
        for sql, state, words in cases:
            errors = []

            def limited():
                try:
                    with pg_connect(pg, autocommit=True) as c:
                        c.execute(sql)
                except psycopg.Error as e:
                    errors.append(e)

            t = threading.Thread(target=limited)
            t.start()
            with pg_connect(pg, autocommit=True) as c:
                assert c.execute(quick).fetchall() == expected
            t.join(30)
            assert len(errors) == 1 and errors[0].sqlstate == state and words in str(errors[0]), (sql, errors)
        # A session's statement_timeout below the server's limit is the one that stops it.
        with pg_connect(pg, autocommit=True) as c:
            c.execute("SET statement_timeout = 100")
            with pytest.raises(psycopg.Error) as e:
                c.execute(SLOW)
            assert e.value.sqlstate == "57014" and "100ms" in str(e.value)
        with flight_connect(fl) as conn, conn.cursor() as cur:
            for sql, words in [(SLOW, "time limit"), (MEMORY, "memory limit of 1 MiB"), (ROWS, "row cap of 1000")]:
                with pytest.raises(Exception) as e:
                    cur.execute(sql)
                    cur.fetchall()
                assert words in str(e.value)
            cur.execute(quick)
            assert cur.fetchall() == expected


def test_password_and_tls(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    with sql_server(str(SAMPLE), "--pg-tls-cert", str(cert), "--pg-tls-key", str(key),
                    env={"MLENERGY_PG_PASSWORD": "s3cret"}) as (_, pg, _fl):
        with pytest.raises(psycopg.OperationalError):
            pg_connect(pg, password="wrong", sslmode="disable").close()
        with pytest.raises(psycopg.OperationalError):
            pg_connect(pg, sslmode="disable").close()
        with pg_connect(pg, password="s3cret", sslmode="require") as c:
            assert c.info.pgconn.ssl_in_use
            assert c.execute("SELECT count(*) FROM llm_runs").fetchone()[0] == 838
        with pg_connect(pg, password="s3cret", sslmode="disable") as c:
            assert not c.info.pgconn.ssl_in_use
            assert c.execute("SELECT 1").fetchone()[0] == 1
