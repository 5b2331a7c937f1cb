"""Revisions: every read endpoint answers for any revision of the dataset (a hub commit, branch or
tag, or a local snapshot given with `--snapshot NAME=DIR`), says which snapshot it answered from
(`x-snapshot`, the envelope's `snapshot`, a canonical link pinned to the commit) and compares two
revisions (`/v1/{domain}/changes`); `/croissant` describes a revision for mlcroissant;
`/v1/{domain}/statistics` profiles the filtered runs as pandas does.

A fake hub serves three commits made from data/sample with pyarrow (A: some runs out; B: those back,
others out, values changed; C: more of both, one model's energies divided so that it ranks first,
one pair of task and model gone) and two broken ones (D: an LLM column of the wrong type; E: a
diffusion column missing). Expected answers are computed here from those tables with pandas."""

import collections
import concurrent.futures
import contextlib
import csv
import dataclasses
import functools
import hashlib
import http.server
import io
import json
import math
import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import mlenergy_client as mc

from conftest import SAMPLE, running_server
from test_hub_mirror import toolkit

REPO = "ml-energy/benchmark-v3"
DOMAINS = ("llm", "diffusion")
ENERGY = {"llm": "energy_per_token_joules", "diffusion": "energy_per_generation_joules"}
HEX40 = re.compile(r"[0-9a-f]{40}")
HEX64 = re.compile(r"[0-9a-f]{64}")
IMMUTABLE = "public, max-age=31536000, immutable"


# --- run ids (docs/http-api.md, "Run ids"), derived here from a row's fields ---------------------------------


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._~-]", "_", s)


def _int(v) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(int(v))


def run_id(domain: str, r) -> str:
    """`r` is a mapping of a run's fields."""
    model = r["model_id"].replace("/", "--")
    if domain == "llm":
        s = f"{r['task']}~{model}~{r['gpu_model']}~g{int(r['num_gpus'])}~b{int(r['max_num_seqs'])}~r{_int(r['num_request_repeats'])}"
        if _int(r["seed"]):
            s += f"~seed{_int(r['seed'])}"
    else:
        s = (f"{r['task']}~{model}~{r['gpu_model']}~g{int(r['num_gpus'])}~b{int(r['batch_size'])}~{int(r['height'])}x{int(r['width'])}"
             f"~s{_int(r['inference_steps'])}~u{_int(r['ulysses_degree'])}~r{_int(r['ring_degree'])}")
        if r["use_torch_compile"] is True:
            s += "~tc"
    return _safe(s)


def py(v):
    """A pandas/numpy cell as a plain Python value (None for a missing one)."""
    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# --- the commits --------------------------------------------------------------------------------


@dataclasses.dataclass
class Commit:
    name: str
    sha: str
    date: str  # lastModified
    files: dict  # path -> bytes
    _kept: dict = dataclasses.field(default_factory=dict, repr=False)

    def frame(self, domain: str) -> pd.DataFrame:
        """The commit's runs with their `run_id` (not to be modified)."""
        if ("frame", domain) not in self._kept:
            df = pd.read_parquet(io.BytesIO(self.files[f"runs/{domain}.parquet"]))
            df.insert(0, "run_id", [run_id(domain, r) for r in df.to_dict("records")])
            self._kept[("frame", domain)] = df
        return self._kept[("frame", domain)]

    def records(self, domain: str) -> dict:
        """run_id -> {field: value} (None for missing)."""
        if ("records", domain) not in self._kept:
            df = self.frame(domain)
            self._kept[("records", domain)] = {
                r["run_id"]: {k: py(v) for k, v in r.items() if k != "run_id"} for r in df.to_dict("records")}
        return self._kept[("records", domain)]

    def ids(self, domain: str) -> set:
        return set(self.records(domain))


def _sha(name: str) -> str:
    return hashlib.sha1(f"provenance commit {name}".encode()).hexdigest()


def _parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


class Edit:
    """A sample table as column lists (a row keeps its sample position) and the positions kept."""

    def __init__(self, domain: str, values=None, rows=None):
        self.domain = domain
        self.schema = pq.read_schema(SAMPLE / "runs" / f"{domain}.parquet")
        base = pq.read_table(SAMPLE / "runs" / f"{domain}.parquet").to_pydict()
        self.values = {k: list(v) for k, v in (values or base).items()}
        self.rows = list(range(len(base["task"]))) if rows is None else list(rows)

    def copy(self) -> "Edit":
        return Edit(self.domain, self.values, self.rows)

    def scale(self, column: str, positions, factor: float) -> None:
        for i in positions:
            self.values[column][i] = self.values[column][i] * factor

    def where(self, **eq) -> list:
        """Sample positions (kept or not) whose fields equal `eq`."""
        n = len(self.values["task"])
        return [i for i in range(n) if all(self.values[k][i] == v for k, v in eq.items())]

    def smallest(self, task: str) -> dict:
        """model -> the smallest energy of its kept runs of `task`."""
        best: dict = {}
        for i in self.rows:
            if self.values["task"][i] == task:
                m, e = self.values["model_id"][i], self.values[ENERGY[self.domain]][i]
                best[m] = min(e, best.get(m, math.inf))
        return best

    def models_by_min_energy(self, task: str) -> list:
        """The models of `task` among the kept rows, lowest smallest energy first."""
        best = self.smallest(task)
        return sorted(best, key=best.get)

    def to_first(self, task: str) -> None:
        """The last model of `task`'s ranks scaled to half the first one's smallest energy."""
        best = self.smallest(task)
        first, *_, last = sorted(best, key=best.get)
        self.scale(ENERGY[self.domain], self.where(task=task, model_id=last), 0.5 * best[first] / best[last])

    def table(self) -> pa.Table:
        rows = sorted(set(self.rows))
        return pa.Table.from_pydict({k: [v[i] for i in rows] for k, v in self.values.items()}, schema=self.schema)


# The one LLM run of data/sample with raw files: kept in every commit.
RAW_POSITION = next(i for i, p in enumerate(pq.read_table(SAMPLE / "runs" / "llm.parquet", columns=["results_path"]).column(0).to_pylist()) if p)


@functools.cache
def commits() -> dict:
    llm, dif = Edit("llm"), Edit("diffusion")
    # A: the sample without a few runs.
    a_llm, a_dif = llm.copy(), dif.copy()
    a_out_llm, a_out_dif = [3, 97, 201, 333, 468, 590, 702], [5, 105, 505]
    a_llm.rows = [i for i in a_llm.rows if i not in a_out_llm]
    a_dif.rows = [i for i in a_dif.rows if i not in a_out_dif]
    # B: those back, others out; energies of five LLM runs and three diffusion runs up 10 %, a
    # latency down, one batch size to 0.
    b_llm, b_dif = a_llm.copy(), a_dif.copy()
    b_llm.rows = [i for i in range(len(llm.values["task"])) if i not in (20, 150, 420, 630)]
    b_llm.scale("energy_per_token_joules", [30, 130, 230, 330, 430], 1.1)
    b_llm.values["avg_batch_size"][40] = 0.0
    b_dif.rows = [i for i in range(len(dif.values["task"])) if i not in (10, 210)]
    b_dif.scale("energy_per_generation_joules", [15, 315, 615], 1.1)
    b_dif.scale("batch_latency_s", [15], 0.9)
    # C: one run back, a pair of task and model gone, one gpqa model from last to first, a batch
    # size from 0, an energy to null, a nickname renamed, ...
    c_llm, c_dif = b_llm.copy(), b_dif.copy()
    assert b_llm.values["energy_per_request_joules"][60] is not None and a_llm.values["avg_batch_size"][40]
    c_llm.values["avg_batch_size"][40] = 5.0
    c_llm.values["energy_per_request_joules"][60] = None
    c_llm.scale("energy_per_token_joules", [30], 1.1)
    c_llm.values["p90_itl_ms"][70] += 1.0
    c_llm.to_first("gpqa")
    gone = c_llm.models_by_min_energy("lm-arena-chat")[0]
    c_llm.rows = sorted({*c_llm.rows, 20} - set(c_llm.where(task="lm-arena-chat", model_id=gone)))
    assert {30, 40, 60, 70} <= set(c_llm.rows) and {30, 40, 60, 70} <= set(b_llm.rows)
    c_dif.to_first("text-to-image")
    renamed = collections.Counter(c_dif.values["model_id"][i] for i in c_dif.rows if c_dif.values["task"][i] == "text-to-video").most_common()[-1][0]
    for i in c_dif.where(model_id=renamed):
        c_dif.values["nickname"][i] += " (renamed)"
    c_dif.rows = sorted({*c_dif.rows, 10} - {900})
    for e in (a_llm, a_dif, b_llm, b_dif, c_llm, c_dif):
        assert e.domain != "llm" or RAW_POSITION in e.rows
        # Ranks are unambiguous: no two models of a task share their smallest energy.
        for task in set(e.values["task"]):
            best = e.smallest(task)
            assert len(set(best.values())) == len(best), (e.domain, task)

    out = {}
    for name, date, (l, d) in [("A", "2026-01-12", (a_llm, a_dif)), ("B", "2026-02-16", (b_llm, b_dif)), ("C", "2026-03-09", (c_llm, c_dif))]:
        out[name] = Commit(name, _sha(name), date, {"runs/llm.parquet": _parquet(l.table()), "runs/diffusion.parquet": _parquet(d.table())})
        for domain in DOMAINS:
            assert pq.read_schema(io.BytesIO(out[name].files[f"runs/{domain}.parquet"])) == pq.read_schema(SAMPLE / "runs" / f"{domain}.parquet")
    # D: B with energy_per_token_joules as text; E: B without the diffusion latency column.
    t = b_llm.table()
    i = t.schema.get_field_index("energy_per_token_joules")
    broken = t.set_column(i, pa.field("energy_per_token_joules", pa.string(), nullable=False), pc.cast(t.column(i), pa.string()))
    out["D"] = Commit("D", _sha("D"), "2026-03-10", {"runs/llm.parquet": _parquet(broken), "runs/diffusion.parquet": out["B"].files["runs/diffusion.parquet"]})
    dropped = b_dif.table().drop_columns(["batch_latency_s"])
    out["E"] = Commit("E", _sha("E"), "2026-03-11", {"runs/llm.parquet": out["B"].files["runs/llm.parquet"], "runs/diffusion.parquet": _parquet(dropped)})
    assert len({c.sha for c in out.values()}) == 5
    for x, y in [("A", "B"), ("B", "C")]:
        for domain in DOMAINS:
            assert out[x].files[f"runs/{domain}.parquet"] != out[y].files[f"runs/{domain}.parquet"]
    return out


@pytest.fixture(scope="module")
def at() -> dict:
    """The commits by name: A, B, C; D and E broken."""
    return commits()


# --- the fake hub -------------------------------------------------------------------------------


class FakeHub(http.server.ThreadingHTTPServer):
    """`REPO` at the commits of `commits()`, branches and tags in `refs` (changeable while it
    runs): the revision API, the tree API and resolve. Files other than the run tables are
    data/sample's (the raw files), except the output-length histograms (404). Every request is
    recorded in `requests` as (method, path with query)."""

    def __init__(self, refs: dict):
        self.commits = {c.sha: c for c in commits().values()}
        self.refs = dict(refs)
        self.requests: list = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), FakeHubHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def commit(self, revision: str):
        return self.commits.get(self.refs.get(revision, revision))

    def asked(self) -> int:
        with self.lock:
            return len(self.requests)

    def file(self, commit: Commit, rel: str):
        if rel in commit.files:
            return commit.files[rel]
        if rel.startswith(("runs/", "histograms/")):
            return None
        f = (SAMPLE / rel).resolve()
        return f.read_bytes() if f.is_file() and SAMPLE.resolve() in f.parents else None

    def listing(self, commit: Commit) -> list:
        files = dict(commit.files)
        for p in SAMPLE.rglob("*"):
            rel = p.relative_to(SAMPLE).as_posix()
            if p.is_file() and not rel.startswith(("runs/", "histograms/")):
                files[rel] = p.read_bytes()
        return sorted(files.items())


class FakeHubHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.answer(head=True)

    def do_GET(self):
        self.answer(head=False)

    def answer(self, head: bool):
        hub: FakeHub = self.server
        with hub.lock:
            hub.requests.append((self.command, self.path))
        path = urllib.parse.unquote(self.path.split("?")[0])
        api = f"/api/datasets/{REPO}/"
        resolve = f"/datasets/{REPO}/resolve/"
        if path.startswith(api + "revision/"):
            commit = hub.commit(path[len(api + "revision/"):])
            if commit is None:
                return self.reply(404, b'{"error":"Invalid rev id"}', {"X-Error-Code": "RevisionNotFound"}, head)
            info = {"id": REPO, "sha": commit.sha, "lastModified": f"{commit.date}T00:00:00.000Z",
                    "siblings": [{"rfilename": p} for p, _ in hub.listing(commit)]}
            return self.reply(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, head)
        if path.startswith(api + "tree/"):
            rev, _, prefix = path[len(api + "tree/"):].partition("/")
            commit = hub.commit(rev)
            if commit is None:
                return self.reply(404, b'{"error":"Invalid rev id"}', {"X-Error-Code": "RevisionNotFound"}, head)
            entries = [{"type": "file", "path": p, "size": len(b), "oid": hashlib.sha1(b).hexdigest()}
                       for p, b in hub.listing(commit) if p.startswith(prefix.rstrip("/") + "/" if prefix else "")]
            return self.reply(200, json.dumps(entries).encode(), {"Content-Type": "application/json"}, head)
        if path.startswith(resolve):
            rev, _, rel = path[len(resolve):].partition("/")
            commit = hub.commit(rev)
            if commit is None:
                return self.reply(404, b'{"error":"Invalid rev id"}', {"X-Error-Code": "RevisionNotFound"}, head)
            data = hub.file(commit, rel)
            if data is None:
                return self.reply(404, b'{"error":"Entry not found"}', {"X-Error-Code": "EntryNotFound"}, head)
            digest = hashlib.sha256(data).hexdigest()
            return self.reply(200, data, {"X-Repo-Commit": commit.sha, "ETag": f'"{digest}"',
                                          "X-Linked-Size": str(len(data)), "X-Linked-Etag": f'"{digest}"'}, head)
        self.reply(404, b'{"error":"Repository not found"}', {"X-Error-Code": "RepoNotFound"}, head)

    def reply(self, status, body, headers, head):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)


REFS = {"main": _sha("C"), "v1": _sha("A"), "v2": _sha("B"), "broken": _sha("D")}


def names_of(commit: Commit) -> set:
    """The names the fake hub gives a commit: itself and its branches and tags. A snapshot's
    `revision` is one of them (the name it was loaded by, or the one asked)."""
    return {commit.sha, *(ref for ref, sha in REFS.items() if sha == commit.sha)}


def same_snapshot(one: dict, two: dict, commit: Commit) -> bool:
    """Two snapshot descriptions of `commit`: same commit and content, each named by a name of it."""
    return (one["commit"] == two["commit"] == commit.sha and one["content"] == two["content"]
            and one["revision"] in names_of(commit) and two["revision"] in names_of(commit))


def without_revision(v):
    """A JSON answer with its snapshot's revision name left out."""
    if isinstance(v, dict) and isinstance(v.get("snapshot"), dict):
        return {**v, "snapshot": {k: x for k, x in v["snapshot"].items() if k != "revision"}}
    return v


@contextlib.contextmanager
def fake_hub(refs: dict = REFS):
    hub = FakeHub(refs)
    t = threading.Thread(target=hub.serve_forever, daemon=True)
    t.start()
    try:
        yield hub
    finally:
        hub.shutdown()
        hub.server_close()


@contextlib.contextmanager
def hub_server(hub: FakeHub, revision: str | None = None, *, home, cache=None, args=()):
    """The binary serving `hf://datasets/REPO[@revision]` from `hub`, with its hub cache in `home`
    (HF_HOME) and its raw cache in `cache` (fresh when None)."""
    spec = f"hf://datasets/{REPO}" + (f"@{revision}" if revision else "")
    env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(home)}
    saved = {k: os.environ.get(k) for k in (*env, "HF_TOKEN")}
    with contextlib.ExitStack() as stack:
        os.environ.update(env)
        os.environ.pop("HF_TOKEN", None)
        try:
            base = stack.enter_context(running_server(spec, cache=None if cache is None else str(cache), args=tuple(args)))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        yield base


# --- asking --------------------------------------------------------------------------------------


def get(base: str, path: str, params=(), headers=None):
    """(status, headers as an HTTPMessage, body)."""
    query = urllib.parse.urlencode(list(params.items()) if isinstance(params, dict) else list(params), doseq=True)
    req = urllib.request.Request(base + path + (f"?{query}" if query else ""), headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def ok(base: str, path: str, params=(), headers=None):
    status, h, body = get(base, path, params, headers)
    assert status == 200, (path, params, body[:2000])
    return h, body


def js(base: str, path: str, params=()):
    return json.loads(ok(base, path, params)[1])


def problem(base: str, path: str, status: int, params=()):
    got, h, body = get(base, path, params)
    assert got == status, (path, params, body[:2000])
    assert h["content-type"] == "application/problem+json"
    return json.loads(body)


def x_snapshot(h) -> dict:
    value = h["x-snapshot"]
    assert value is not None, "no x-snapshot header"
    parts = dict(re.findall(r'(\w+)="([^"]*)"', value))
    assert set(parts) == {"revision", "commit", "content"}, value
    assert HEX64.fullmatch(parts["content"]), value
    assert parts["commit"] == "" or HEX40.fullmatch(parts["commit"]), value
    return parts


def canonical(h) -> str:
    links = ",".join(h.get_all("link") or [])
    found = re.findall(r'<([^>]*)>\s*;\s*rel="?canonical"?', links)
    assert len(found) == 1, links
    return found[0]


def same_query(url: str, path: str, params: dict) -> bool:
    u = urllib.parse.urlsplit(url)
    return u.path == path and sorted(urllib.parse.parse_qsl(u.query, keep_blank_values=True)) == sorted(params.items())


def runs(base: str, domain: str, revision: str | None = None, **params) -> list:
    q = {**params, **({"revision": revision} if revision else {})}
    if domain == "llm":
        q.setdefault("stability", "all")
    body = js(base, f"/v1/{domain}/runs", q)
    assert body["total"] == len(body["runs"])
    return body["runs"]


def assert_runs_of(commit: Commit, domain: str, got: list) -> None:
    """`got` (runs of an answer) are exactly the commit's: same ids, every published field equal."""
    want = commit.records(domain)
    assert len(got) == len(want), (commit.name, domain)
    assert {r["run_id"] for r in got} == set(want), (commit.name, domain)
    for r in got:
        w = want[r["run_id"]]
        assert {k: r[k] for k in w} == w, (commit.name, r["run_id"])


# --- servers shared by the module ------------------------------------------------------------------


@pytest.fixture(scope="module")
def hub(at):
    with fake_hub() as h:
        yield h


@pytest.fixture(scope="module")
def main(hub, tmp_path_factory):
    """A server on the hub's `main` (commit C), mirroring the hub too."""
    with hub_server(hub, home=tmp_path_factory.mktemp("hf-main"), args=("--hub-mirror",)) as base:
        yield base


@pytest.fixture(scope="module")
def alone(hub, at, tmp_path_factory):
    """One server started on each of commits A, B and C."""
    with contextlib.ExitStack() as stack:
        yield {n: stack.enter_context(hub_server(hub, at[n].sha, home=tmp_path_factory.mktemp(f"hf-{n}"))) for n in "ABC"}


# --- the fake hub itself (meaningful with any binary) ---------------------------------------------


def test_the_fake_hub_serves_its_commits_to_the_server(hub, at, tmp_path):
    """A server started on commit C of the fake hub serves C's runs, and fetched the run tables
    from the hub at C."""
    with hub_server(hub, at["C"].sha, home=tmp_path / "hf") as base:
        for domain in DOMAINS:
            assert_runs_of(at["C"], domain, runs(base, domain))
    resolved = [p for _, p in hub.requests if p.startswith(f"/datasets/{REPO}/resolve/")]
    assert f"/datasets/{REPO}/resolve/{at['C'].sha}/runs/llm.parquet" in resolved
    assert f"/datasets/{REPO}/resolve/{at['C'].sha}/runs/diffusion.parquet" in resolved


def test_run_ids_derived_here_are_the_servers(api):
    """The run ids this module derives from a row (docs/http-api.md, "Run ids") are those the server gives
    data/sample's runs."""
    for domain in DOMAINS:
        frame = pd.read_parquet(SAMPLE / "runs" / f"{domain}.parquet")
        ours = sorted(run_id(domain, r) for r in frame.to_dict("records"))
        assert ours == sorted(r["run_id"] for r in runs(api.base, domain)) and len(set(ours)) == len(ours)


# --- (1) any revision answers as a server started on it ---------------------------------------------


ENDPOINTS = [
    ("/v1/llm/runs", {}),
    ("/v1/llm/runs", {"task": "gpqa", "gpu_model": "H100", "format": "csv"}),
    ("/v1/diffusion/runs", {}),
    ("/v1/llm/groups", {"by": "task", "agg": "min(energy_per_token_joules),mean(avg_power_watts)"}),
    ("/v1/diffusion/groups", {"by": "task,gpu_model", "agg": "min(energy_per_generation_joules)"}),
    ("/v1/llm/fields", {}),
    ("/v1/diffusion/fields", {}),
    ("/v1/llm/pareto", {"task": "gpqa"}),
    ("/v1/diffusion/pareto", {}),
    ("/v1/llm/best", {"task": "lm-arena-chat", "deadline": "100"}),
    ("/v1/llm/fits/logistic", {"task": "gpqa"}),
    ("/v1/diffusion/fits/logistic", {"task": "text-to-image"}),
    ("/v1/llm/predict", {"model_id": "Qwen/Qwen3-8B", "task": "gpqa", "gpu_model": "H100", "num_gpus": "1", "max_num_seqs": "24,48,512"}),
    ("/v1/llm/statistics", {"fields": "energy_per_token_joules,avg_batch_size,energy_per_request_joules,task"}),
    ("/v1/diffusion/statistics", {"fields": "energy_per_generation_joules,batch_latency_s,nickname"}),
    ("/leaderboard/data/index.json", {}),
    ("/v1/sql", {"q": "SELECT task, count(*) AS n, sum(energy_per_token_joules) AS e, max(avg_batch_size) AS b FROM llm_runs GROUP BY task ORDER BY task"}),
    ("/v1/sql", {"q": "SELECT nickname, min(energy_per_generation_joules) AS e FROM diffusion_runs GROUP BY nickname ORDER BY nickname"}),
    ("/v1/llm/charts/pareto.svg", {"task": "gpqa"}),
    ("/v1/diffusion/charts/pareto.svg", {"task": "text-to-image"}),
]


def decoded(h, body):
    return json.loads(body) if h["content-type"].startswith("application/json") else body


def without_snapshot(v):
    return {k: x for k, x in v.items() if k != "snapshot"} if isinstance(v, dict) else v


@pytest.mark.parametrize("name", "ABC")
@pytest.mark.parametrize("endpoint", range(len(ENDPOINTS)))
def test_a_revision_answers_as_a_server_started_on_it(main, alone, at, name, endpoint):
    """`revision=<commit>` on the server of `main` gives what the server started on that commit
    gives: body, and snapshot member and x-snapshot header up to the name of the revision."""
    path, params = ENDPOINTS[endpoint]
    h1, b1 = ok(main, path, {**params, "revision": at[name].sha})
    h2, b2 = ok(alone[name], path, params)
    assert h1["content-type"] == h2["content-type"]
    one, two = decoded(h1, b1), decoded(h2, b2)
    assert without_revision(one) == without_revision(two)
    s1, s2 = x_snapshot(h1), x_snapshot(h2)
    assert same_snapshot(s1, s2, at[name])
    for v, s in [(one, s1), (two, s2)]:
        if isinstance(v, dict) and "snapshot" in v:
            assert v["snapshot"] == s


@pytest.mark.parametrize("endpoint", range(len(ENDPOINTS)))
def test_the_served_branch_answers_as_its_commit(main, alone, at, endpoint):
    """The server of `main` asked nothing (its branch) answers as the server started on `main`'s
    commit C; only the revision's name differs."""
    path, params = ENDPOINTS[endpoint]
    h1, b1 = ok(main, path, params)
    h2, b2 = ok(alone["C"], path, params)
    one, two = decoded(h1, b1), decoded(h2, b2)
    assert without_revision(one) == without_revision(two)
    s1, s2 = x_snapshot(h1), x_snapshot(h2)
    assert s1["revision"] == "main" and same_snapshot(s1, s2, at["C"])
    for v, s in [(one, s1), (two, s2)]:
        if isinstance(v, dict) and "snapshot" in v:
            assert v["snapshot"] == s


def test_revisions_are_told_apart(main, at):
    """The three commits have three content ids; branch and tag names resolve to their commits."""
    contents = {}
    for name, rev in [("A", "v1"), ("B", "v2"), ("C", "main")]:
        by_name = x_snapshot(ok(main, "/v1/llm/runs", {"revision": rev})[0])
        by_sha = x_snapshot(ok(main, "/v1/llm/runs", {"revision": at[name].sha})[0])
        assert same_snapshot(by_name, by_sha, at[name])
        contents[name] = by_sha["content"]
        assert_runs_of(at[name], "llm", runs(main, "llm", rev))
        assert_runs_of(at[name], "diffusion", runs(main, "diffusion", rev))
    assert len(set(contents.values())) == 3
    # Each commit's own date.
    for name, rev in [("A", "v1"), ("B", at["B"].sha), ("C", None)]:
        index = js(main, "/leaderboard/data/index.json", {"revision": rev} if rev else {})
        assert index["last_updated"] == at[name].date


SNAPSHOT_ENDPOINTS = [
    ("/v1/llm/runs", {"task": "gpqa"}),
    ("/v1/llm/runs", {"task": "gpqa", "format": "arrow"}),
    ("/v1/llm/groups", {"by": "task"}),
    ("/v1/llm/fields", {}),
    ("/v1/diffusion/pareto", {}),
    ("/v1/llm/best", {"task": "gpqa", "deadline": "100"}),
    ("/v1/llm/fits/logistic", {"task": "gpqa"}),
    ("/v1/llm/statistics", {"fields": "energy_per_token_joules"}),
    ("/v1/sql", {"q": "SELECT count(*) AS n FROM llm_runs"}),
    ("/v1/llm/charts/pareto.svg", {"task": "gpqa"}),
    ("/leaderboard/data/index.json", {}),
    ("/explore/llm", {}),
    ("/croissant", {}),
]


@pytest.mark.parametrize("endpoint", range(len(SNAPSHOT_ENDPOINTS)))
def test_every_answer_names_its_snapshot(main, at, endpoint):
    """x-snapshot names the commit of the revision asked; the canonical link is the request with
    `revision=<commit>` and answers the same; an answer asked by commit is immutable, one asked by
    branch is not."""
    path, params = SNAPSHOT_ENDPOINTS[endpoint]
    h, body = ok(main, path, {**params, "revision": "v1"})
    snap = x_snapshot(h)
    assert snap["commit"] == at["A"].sha and snap["revision"] in names_of(at["A"])
    assert IMMUTABLE not in (h["cache-control"] or "")
    link = canonical(h)
    assert same_query(link, path, {**params, "revision": at["A"].sha}), link
    u = urllib.parse.urlsplit(link)
    h2, body2 = ok(main, u.path, urllib.parse.parse_qsl(u.query, keep_blank_values=True))
    assert h2["cache-control"] == IMMUTABLE
    assert same_snapshot(x_snapshot(h2), snap, at["A"])
    if h["content-type"].startswith("application/json"):
        one, two = json.loads(body), json.loads(body2)
        if isinstance(one, dict) and "snapshot" in one:
            assert one["snapshot"] == snap and two["snapshot"] == x_snapshot(h2)
        assert without_revision(one) == without_revision(two)
    elif not h["content-type"].startswith(("text/html", "application/ld+json")):
        # (A page and a Croissant document may link by the name asked.)
        assert body == body2


def test_local_snapshots_by_name(at, tmp_path):
    """`--snapshot NAME=DIR` serves a directory as revision NAME: its runs, a snapshot without a
    commit, a canonical link by its name or content id prefix that answers the same; the served
    directory's canonical link names its content id's prefix and answers the same; /changes
    between two of them."""
    dirs = {}
    for name in "AB":
        d = tmp_path / name
        (d / "runs").mkdir(parents=True)
        for rel, data in at[name].files.items():
            (d / rel).write_bytes(data)
        dirs[name] = d
    with running_server(str(SAMPLE), args=("--snapshot", f"a={dirs['A']}", "--snapshot", f"b={dirs['B']}")) as base:
        for name, rev in [("A", "a"), ("B", "b")]:
            for domain in DOMAINS:
                assert_runs_of(at[name], domain, runs(base, domain, rev))
            h, body = ok(base, "/v1/llm/runs", {"task": "gpqa", "revision": rev})
            snap = x_snapshot(h)
            assert snap["revision"] == rev and snap["commit"] == ""
            assert json.loads(body)["snapshot"] == {"revision": rev, "commit": None, "content": snap["content"]}
            link = canonical(h)
            named = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).query))["revision"]
            # Its name, or a prefix of its content id.
            assert named == rev or (snap["content"].startswith(named) and len(named) >= 8), link
            assert same_query(link, "/v1/llm/runs", {"task": "gpqa", "revision": named})
            h2, body2 = ok(base, "/v1/llm/runs", {"task": "gpqa", "revision": named})
            assert x_snapshot(h2)["content"] == snap["content"]
            assert without_snapshot(json.loads(body2)) == without_snapshot(json.loads(body))
        h, body = ok(base, "/v1/llm/runs", {"task": "gpqa"})
        snap = x_snapshot(h)
        assert snap["commit"] == ""
        link = canonical(h)
        prefix = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).query))["revision"]
        assert snap["content"].startswith(prefix) and len(prefix) >= 8
        assert same_query(link, "/v1/llm/runs", {"task": "gpqa", "revision": prefix})
        h2, body2 = ok(base, "/v1/llm/runs", {"task": "gpqa", "revision": prefix})
        assert x_snapshot(h2)["content"] == snap["content"]
        assert without_snapshot(json.loads(body2)) == without_snapshot(json.loads(body))
        # The three snapshots differ.
        assert len({x_snapshot(ok(base, "/v1/llm/runs", {"revision": r})[0])["content"] for r in ("a", "b", prefix)}) == 3
        check_changes(base, at["A"], at["B"], "a", "b", "llm", {})
        check_changes(base, at["A"], at["B"], "a", "b", "diffusion", {})
        # The explorer's page of the same changes: the counts the API gives, its links, a permalink
        # pinned to the snapshot and a citation of it.
        api = json.loads(ok(base, "/v1/llm/changes", {"from": "a", "to": "b"})[1])
        h, page = ok(base, "/explore/llm/changes", {"from": "a", "to": "b"}, headers={"Accept": "text/html"})
        page = page.decode()
        s = api["summary"]
        assert f"<strong>{s['added']}</strong> runs added, <strong>{s['removed']}</strong> removed, <strong>{s['changed']}</strong> changed" in page
        assert 'href="/v1/llm/changes?from=a&amp;to=b"' in page
        b_id = api["to"]["content"][:16]
        assert 'rel="bookmark"' in page and "@misc{mlenergy_benchmark_v3" in page
        # The explorer of revision b: its own snapshot in the footer, a histogram per numeric facet.
        page = ok(base, "/explore/llm", {"revision": "b"}, headers={"Accept": "text/html"})[1].decode()
        assert f"<code>{b_id}</code>" in page
        assert page.count('<svg class="histogram"') == 2
        assert f"revision={b_id}" in page


# --- (2) changes -----------------------------------------------------------------------------------


def relative(old, new):
    if is_number(old) and is_number(new) and old != 0:
        return (new - old) / abs(old)
    return None


@dataclasses.dataclass
class Diff:
    added: list
    removed: list
    changed: dict  # run_id -> {field: (old, new, relative)}
    task: dict  # run_id -> task
    gpu: dict  # run_id -> gpu_model
    ranks: dict  # (task, model) -> (before, after, moved)


def diff(old: pd.DataFrame, new: pd.DataFrame, domain: str, keep) -> Diff:
    """The changes from `old` to `new` (frames with run_id) among the runs `keep(frame)` selects."""
    o = old[keep(old)].set_index("run_id")
    n = new[keep(new)].set_index("run_id")
    added = sorted(set(n.index) - set(o.index))
    removed = sorted(set(o.index) - set(n.index))
    common = o.index.intersection(n.index)
    changed: dict = {}
    for col in o.columns:
        a, b = o.loc[common, col], n.loc[common, col]
        differ = ~((a.isna() & b.isna()) | (a == b).fillna(False).astype(bool))
        for rid in common[differ.to_numpy()]:
            old_v, new_v = py(a[rid]), py(b[rid])
            changed.setdefault(rid, {})[col] = (old_v, new_v, relative(old_v, new_v))
    both = pd.concat([o, n])
    task = both["task"].groupby(level=0).first().to_dict()
    gpu = both["gpu_model"].groupby(level=0).first().to_dict()

    def rank(f):
        out = {}
        for t, s in f.groupby(["task", "model_id"])[ENERGY[domain]].min().groupby(level=0):
            for i, (_, m) in enumerate(s.sort_values().index, 1):
                out[(t, m)] = i
        return out

    before, after = rank(o), rank(n)
    ranks = {}
    for k in before.keys() | after.keys():
        b, a = before.get(k), after.get(k)
        ranks[k] = (b, a, None if a is None or b is None else b - a)
    return Diff(added, removed, changed, task, gpu, ranks)


def same_json(got, want) -> bool:
    if want is None or got is None:
        return got is None and want is None
    if is_number(want):
        return is_number(got) and got == want
    return got == want


FILTERS = {
    "llm": [
        ({}, lambda f: np.ones(len(f), bool)),
        ({"task": "gpqa"}, lambda f: f.task == "gpqa"),
        ({"task": "lm-arena-chat,gpqa", "gpu_model": "H100"}, lambda f: f.task.isin(["lm-arena-chat", "gpqa"]) & (f.gpu_model == "H100")),
        ({"num_gpus_min": "2"}, lambda f: f.num_gpus >= 2),
    ],
    "diffusion": [
        ({}, lambda f: np.ones(len(f), bool)),
        ({"task": "text-to-image"}, lambda f: f.task == "text-to-image"),
        ({"gpu_model": "B200", "batch_size_max": "4"}, lambda f: (f.gpu_model == "B200") & (f.batch_size <= 4)),
    ],
}


def check_changes(base, old: Commit, new: Commit, rev_from: str, rev_to: str, domain: str, params: dict, keep=None):
    """/changes from `rev_from` to `rev_to` with `params` equals the diff of the two commits'
    tables computed here."""
    keep = keep or (lambda f: np.ones(len(f), bool))
    want = diff(old.frame(domain), new.frame(domain), domain, keep)
    h, body = ok(base, f"/v1/{domain}/changes", {**params, "from": rev_from, "to": rev_to})
    got = json.loads(body)
    assert got["domain"] == domain
    assert HEX64.fullmatch(got["from"]["content"]) and HEX64.fullmatch(got["to"]["content"])
    if got["from"]["commit"] is None:
        assert (got["from"]["revision"], got["to"]["revision"]) == (rev_from, rev_to)
    else:
        assert (got["from"]["commit"], got["to"]["commit"]) == (old.sha, new.sha)
        assert got["from"]["revision"] in names_of(old) and got["to"]["revision"] in names_of(new)

    assert sorted(got["added"]) == want.added
    assert sorted(got["removed"]) == want.removed
    assert len(got["changed"]) == len({c["run_id"] for c in got["changed"]})
    have = {c["run_id"]: c["fields"] for c in got["changed"]}
    assert set(have) == set(want.changed)
    for rid, fields in have.items():
        assert len(fields) == len({f["field"] for f in fields}), (rid, fields)
        assert {f["field"] for f in fields} == set(want.changed[rid]), (rid, fields)
        for f in fields:
            old_v, new_v, rel = want.changed[rid][f["field"]]
            assert same_json(f["old"], old_v) and same_json(f["new"], new_v) and same_json(f["relative_change"], rel), (rid, f, want.changed[rid][f["field"]])

    summary = got["summary"]
    assert (summary["added"], summary["removed"], summary["changed"]) == (len(want.added), len(want.removed), len(want.changed))
    for key, of in [("by_task", want.task), ("by_gpu", want.gpu)]:
        name = "task" if key == "by_task" else "gpu_model"
        expected = collections.defaultdict(lambda: [0, 0, 0])
        for i, ids in enumerate([want.added, want.removed, list(want.changed)]):
            for rid in ids:
                expected[of[rid]][i] += 1
        rows = {r[name]: [r["added"], r["removed"], r["changed"]] for r in summary[key]}
        assert len(rows) == len(summary[key])
        # Groups with nothing to report may be listed or not.
        assert {k: v for k, v in rows.items() if any(v)} == dict(expected), key
    moves = [(rid, f, rel) for rid, fields in want.changed.items() for f, (_, _, rel) in fields.items() if rel is not None]
    largest = summary["largest_moves"]
    if moves:
        assert 0 < len(largest) <= len(moves)
        for m in largest:
            assert m["relative_change"] is not None
            old_v, new_v, rel = want.changed[m["run_id"]][m["field"]]
            assert same_json(m["old"], old_v) and same_json(m["new"], new_v) and m["relative_change"] == rel
        sizes = [abs(m["relative_change"]) for m in largest]
        assert sizes == sorted(sizes, reverse=True)
        listed = {(m["run_id"], m["field"]) for m in largest}
        assert len(listed) == len(largest)
        left = [abs(rel) for rid, f, rel in moves if (rid, f) not in listed]
        assert not left or min(sizes) >= max(left), "largest_moves are not the largest"
    else:
        assert largest == []

    ranks = {(r["task"], r["model_id"]): (r["before"], r["after"], r["moved"]) for r in got["ranks"]}
    assert len(ranks) == len(got["ranks"])
    assert ranks == want.ranks
    return want, h


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("pair", [("A", "B"), ("B", "C"), ("A", "C")])
def test_changes_equal_a_diff_computed_here(main, at, domain, pair):
    """/changes between two commits (asked by commit, tag or branch), with and without run filters:
    added, removed, changed fields with old, new and relative change, the summary and the ranks."""
    names = {"A": ["v1", at["A"].sha], "B": [at["B"].sha, "v2"], "C": ["main", at["C"].sha]}
    for i, (params, keep) in enumerate(FILTERS[domain]):
        rev_from, rev_to = names[pair[0]][i % 2], names[pair[1]][i % 2]
        want, _ = check_changes(main, at[pair[0]], at[pair[1]], rev_from, rev_to, domain, params, keep)
        if not params:
            assert want.added and want.removed and want.changed


def test_changes_see_what_the_commits_were_made_with(main, at):
    """The edits of the commits show: a gpqa model from last to first, a pair gone, a value from
    0 (no relative change), a value to null, a renamed nickname (text)."""
    got = js(main, "/v1/llm/changes", {"from": at["B"].sha, "to": at["C"].sha})
    ranks = {(r["task"], r["model_id"]): r for r in got["ranks"]}
    gpqa = [r for (t, _), r in ranks.items() if t == "gpqa"]
    jumped = [r for r in gpqa if r["after"] == 1 and r["before"] == len(gpqa)]
    assert len(jumped) == 1 and jumped[0]["moved"] == len(gpqa) - 1
    assert [r for (t, _), r in ranks.items() if t == "lm-arena-chat" and r["after"] is None and r["before"] == 1 and r["moved"] is None]
    fields = {(c["run_id"], f["field"]): f for c in got["changed"] for f in c["fields"]}
    from_zero = [f for (_, n), f in fields.items() if n == "avg_batch_size" and f["old"] == 0]
    assert from_zero == [{"field": "avg_batch_size", "old": 0.0, "new": 5.0, "relative_change": None}]
    to_null = [f for (_, n), f in fields.items() if n == "energy_per_request_joules"]
    assert len(to_null) == 1 and to_null[0]["new"] is None and is_number(to_null[0]["old"]) and to_null[0]["relative_change"] is None
    got = js(main, "/v1/diffusion/changes", {"from": "v2", "to": "main"})
    renamed = [f for c in got["changed"] for f in c["fields"] if f["field"] == "nickname"]
    assert renamed and all(f["new"] == f["old"] + " (renamed)" and f["relative_change"] is None for f in renamed)


def test_changes_of_one_commit_by_two_names_are_none(main, at):
    """From a tag to its own commit: nothing added, removed or changed, every rank kept."""
    got = js(main, "/v1/llm/changes", {"from": "v1", "to": at["A"].sha})
    assert got["added"] == got["removed"] == got["changed"] == []
    assert (got["summary"]["added"], got["summary"]["removed"], got["summary"]["changed"]) == (0, 0, 0)
    assert got["ranks"] and all(r["before"] == r["after"] and r["moved"] == 0 for r in got["ranks"])


def _rows(fmt: str, body: bytes) -> list:
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(body.decode())))
    if fmt == "ndjson":
        return [json.loads(line) for line in body.decode().splitlines() if line.strip()]
    if fmt == "arrow":
        return ipc.open_stream(io.BytesIO(body)).read_all().to_pylist()
    return pq.read_table(io.BytesIO(body)).to_pylist()


def _text_is(text, want) -> bool:
    if want is None:
        return text in (None, "")
    if is_number(want):
        return text not in (None, "") and float(text) == want
    return text == str(want)


@pytest.mark.parametrize("fmt", ["csv", "ndjson", "arrow", "parquet"])
def test_changes_as_a_table(main, at, fmt):
    """One row per change: run_id, change, task, gpu_model, field, old and new as text, relative
    change; the rows of the JSON answer's lists."""
    keep = FILTERS["llm"][2][1]
    want = diff(at["A"].frame("llm"), at["C"].frame("llm"), "llm", keep)
    _, body = ok(main, "/v1/llm/changes", {**FILTERS["llm"][2][0], "from": "v1", "to": "main", "format": fmt})
    rows = _rows(fmt, body)
    assert rows and list(rows[0]) == ["run_id", "change", "task", "gpu_model", "field", "old", "new", "relative_change"]
    expected = {}
    for kind, ids in [("added", want.added), ("removed", want.removed)]:
        for rid in ids:
            expected[(rid, kind, None)] = (want.task[rid], want.gpu[rid], None, None, None)
    for rid, fields in want.changed.items():
        for f, (o, n, rel) in fields.items():
            expected[(rid, "changed", f)] = (want.task[rid], want.gpu[rid], o, n, rel)
    got = {}
    for r in rows:
        key = (r["run_id"], r["change"], r["field"] or None)
        assert key not in got, key
        got[key] = r
    assert set(got) == set(expected)
    for key, r in got.items():
        task, gpu, o, n, rel = expected[key]
        assert (r["task"], r["gpu_model"]) == (task, gpu)
        assert _text_is(r["old"], o) and _text_is(r["new"], n), (key, r, o, n)
        if fmt in ("csv",):
            assert _text_is(r["relative_change"], rel), (key, r, rel)
        else:
            assert same_json(r["relative_change"], rel), (key, r, rel)
        if fmt != "csv" and o is not None:
            assert isinstance(r["old"], str)


# --- (3) a restart asks the hub nothing for the commits it holds -------------------------------------


def test_a_restart_asks_the_hub_nothing_for_held_commits(at, tmp_path):
    """With the same raw cache and hub cache, a server started again on commit C answers commit C,
    and commits A and B asked before, without one request to the hub: runs and dates alike."""
    home, cache = tmp_path / "hf", tmp_path / "cache"
    with fake_hub() as hub:
        with hub_server(hub, at["C"].sha, home=home, cache=cache) as base:
            for name in "AB":
                for domain in DOMAINS:
                    assert_runs_of(at[name], domain, runs(base, domain, at[name].sha))
                assert js(base, "/leaderboard/data/index.json", {"revision": at[name].sha})["last_updated"] == at[name].date
        assert hub.asked() > 0
        hub.requests.clear()
        with hub_server(hub, at["C"].sha, home=home, cache=cache) as base:
            for domain in DOMAINS:
                assert_runs_of(at["C"], domain, runs(base, domain))
            for name in "ABC":
                for domain in DOMAINS:
                    assert_runs_of(at[name], domain, runs(base, domain, at[name].sha))
                assert js(base, "/leaderboard/data/index.json", {"revision": at[name].sha})["last_updated"] == at[name].date
                groups = js(base, "/v1/llm/groups", {"by": "task", "revision": at[name].sha})["groups"]
                assert {g["task"]: g["count"] for g in groups} == at[name].frame("llm").task.value_counts().to_dict()
        assert hub.requests == []


# --- (4) a bounded number of snapshots --------------------------------------------------------------


def test_at_most_two_snapshots_answer_three_revisions(at, tmp_path):
    """`--max-snapshots 2` and three revisions asked in turn, then at once: every answer is the
    asked revision's."""
    order = [("A", at["A"].sha), ("B", "v2"), ("C", at["C"].sha), ("A", "v1"), ("C", "main"), ("B", at["B"].sha)]
    with fake_hub() as hub, hub_server(hub, home=tmp_path / "hf", args=("--max-snapshots", "2")) as base:
        for _ in range(3):
            for name, rev in order:
                for domain in DOMAINS:
                    assert_runs_of(at[name], domain, runs(base, domain, rev))
                groups = js(base, "/v1/diffusion/groups", {"by": "task", "agg": "sum(energy_per_generation_joules)", "revision": rev})["groups"]
                frame = at[name].frame("diffusion")
                assert {g["task"]: g["count"] for g in groups} == frame.task.value_counts().to_dict()

        def one(item):
            name, rev, domain = item
            return name, domain, runs(base, domain, rev)

        work = [(n, r, d) for n, r in order for d in DOMAINS] * 2
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            for name, domain, got in pool.map(one, work):
                assert_runs_of(at[name], domain, got)


# --- (5) the mirror serves a revision to the toolkit as the client reads it -----------------------------


TOOLKIT_AT = """
import json
from huggingface_hub import hf_hub_download
from mlenergy.data.records import DiffusionRuns, LLMRuns
rev = {rev!r}
def rows(c):
    return [{{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}} for r in c.to_dataframe().to_dict("records")]
print(json.dumps({{
    "llm": rows(LLMRuns.from_hf(revision=rev)),
    "diffusion": rows(DiffusionRuns.from_hf(revision=rev)),
    "snapshot": hf_hub_download({repo!r}, "runs/llm.parquet", repo_type="dataset", revision=rev).split("/snapshots/")[1],
}}))
"""


def test_the_toolkit_through_the_mirror_and_the_client_read_one_revision(main, at):
    """`from_hf(revision=<B>)` through the server's hub mirror and `from_server(revision=<B>)` give
    the same runs in the same order with the same energies, B's (not the served C's)."""
    sha = at["B"].sha
    r = toolkit(TOOLKIT_AT.format(rev=sha, repo=REPO), f"{main}/hub")
    assert r.returncode == 0, r.stderr[-3000:]
    hub = json.loads(r.stdout)
    assert hub["snapshot"] == f"{sha}/runs/llm.parquet"
    client = {"llm": mc.LLMRuns.from_server(main, revision=sha), "diffusion": mc.DiffusionRuns.from_server(main, revision=sha)}
    for domain in DOMAINS:
        theirs = [(run_id(domain, row), row[ENERGY[domain]]) for row in hub[domain]]
        ours = [(r._run_id, getattr(r, ENERGY[domain])) for r in client[domain]]
        assert ours == theirs
        want = at["B"].frame(domain).set_index("run_id")[ENERGY[domain]]
        assert dict(ours) == want.to_dict()
        assert {rid for rid, _ in ours} != at["C"].ids(domain)


def test_the_client_names_its_revision_in_every_request(main, at):
    """Every request of a collection loaded with `revision` (its rows, filters, raw-derived frames,
    per-run files, the server's questions, SQL, a prefetch) carries it, and the answers are the
    revision's; job polling reads no snapshot. Without `revision` nothing is sent."""
    sha = at["B"].sha
    llm = mc.LLMRuns.from_server(main, revision=sha)
    seen = []
    pool = llm._client._pool
    send = pool.request

    def recording(method, url, *args, **kw):
        seen.append((method, url))
        return send(method, url, *args, **kw)

    pool.request = recording
    frame = at["B"].frame("llm")
    assert len(llm) == len(frame)
    assert len(llm.task("gpqa").gpu_model("H100")) == int(((frame.task == "gpqa") & (frame.gpu_model == "H100")).sum())
    raw = llm.where(lambda r: bool(r._results_path))
    assert len(raw) == 1
    assert len(raw.output_lengths()) > 0 and len(raw.inter_token_latencies()) > 0
    assert raw[0].read_results_json() and len(raw[0].output_lengths()) > 0
    bulk, one = raw.timelines(), raw[0].timelines()
    assert len(one) > 0 and bulk[list(one.columns)].equals(one)
    raw.download_raw_files(progress=False)
    gpqa = llm.task("gpqa")
    assert len(gpqa.pareto()) > 0 and len(gpqa.best(deadline=100)) > 0 and len(gpqa.fits()) > 0
    assert int(llm.sql("SELECT count(*) AS n FROM llm_runs")["n"][0]) == len(frame)
    assert sorted(gpqa.data.energy_per_token_joules) == sorted(frame[frame.task == "gpqa"].energy_per_token_joules)
    assert {r._run_id: r.energy_per_token_joules for r in llm} == frame.set_index("run_id").energy_per_token_joules.to_dict()
    assert seen
    paths = collections.Counter()
    for method, url in seen:
        u = urllib.parse.urlsplit(url)
        q = urllib.parse.parse_qs(u.query)
        paths[u.path.split("/")[-1]] += 1
        if u.path.startswith("/v1/jobs/"):
            assert "revision" not in q, url
        else:
            assert q.get("revision") == [sha], (method, url)
    assert {"runs", "datasets", "output-lengths", "itl", "results.json", "timelines", "timeline", "prefetch", "pareto", "best", "logistic", "sql"} <= set(paths), paths

    dif = mc.DiffusionRuns.from_server(main, revision=at["A"].sha)
    assert {r._run_id for r in dif} == at["A"].ids("diffusion")
    plain = mc.LLMRuns.from_server(main)
    seen.clear()
    plain._client._pool.request = recording
    assert {r._run_id for r in plain} == at["C"].ids("llm")
    assert seen and all("revision=" not in url for _, url in seen)


# --- (6) Croissant ------------------------------------------------------------------------------------


CROISSANT_READ = """
import json, sys, mlcroissant as mlc
ds = mlc.Dataset(jsonld=sys.argv[1])
def plain(v):
    if isinstance(v, bytes):
        return v.decode()
    return v.item() if hasattr(v, "item") else v
out = {}
for rs in ("llm_runs", "diffusion_runs"):
    out[rs] = [{k.rsplit("/", 1)[-1]: plain(v) for k, v in r.items()} for r in ds.records(rs)]
print(json.dumps(out))
"""


def croissant(url: str, tmp) -> dict:
    """mlcroissant in a fresh process (its download cache in `tmp`): the validation of
    `mlcroissant validate`, then every record of both record sets."""
    env = {**os.environ, "CROISSANT_CACHE": str(tmp)}
    v = subprocess.run([sys.executable, "-m", "mlcroissant.scripts.cli", "validate", "--jsonld", url],
                       env=env, capture_output=True, text=True, timeout=300)
    assert v.returncode == 0, v.stderr[-3000:]
    r = subprocess.run([sys.executable, "-c", CROISSANT_READ, url], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def _missing(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def check_croissant(base: str, params: dict, files: dict, tmp) -> None:
    doc = js(base, "/croissant", params)
    assert "http://mlcommons.org/croissant/1.1" in (doc["conformsTo"] if isinstance(doc["conformsTo"], list) else [doc["conformsTo"]])
    objects = [d for d in doc["distribution"] if str(d.get("@type", "")).endswith("FileObject")]
    assert len(objects) == 2
    got = set()
    for d in objects:
        assert d["contentUrl"].startswith(base + "/"), d["contentUrl"]
        _, data = ok(d["contentUrl"], "")
        assert hashlib.sha256(data).hexdigest() == d["sha256"]
        got.add(data)
    assert got == {files["runs/llm.parquet"], files["runs/diffusion.parquet"]}
    sets = {**{rs.get("@id"): rs for rs in doc["recordSet"]}, **{rs.get("name"): rs for rs in doc["recordSet"]}}
    assert {"llm_runs", "diffusion_runs"} <= set(sets)
    url = base + "/croissant" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    records = croissant(url, tmp)
    for domain in DOMAINS:
        columns = pq.read_schema(io.BytesIO(files[f"runs/{domain}.parquet"])).names
        assert [f["name"] for f in sets[f"{domain}_runs"]["field"]] == columns
        recs = records[f"{domain}_runs"]
        assert recs and set(recs[0]) == set(columns)
        api = runs(base, domain, params.get("revision"))
        ours = collections.Counter(tuple(_missing(r[c]) for c in columns) for r in recs)
        theirs = collections.Counter(tuple(_missing(r[c]) for c in columns) for r in api)
        assert ours == theirs


def test_croissant_of_the_served_directory(api, tmp_path):
    """/croissant of data/sample validates with mlcroissant, its files are the served parquet
    files byte for byte, and its records are /runs' rows; `/` asked for JSON-LD is the same."""
    files = {f"runs/{d}.parquet": (SAMPLE / "runs" / f"{d}.parquet").read_bytes() for d in DOMAINS}
    check_croissant(api.base, {}, files, tmp_path)
    h, body = ok(api.base, "/", headers={"Accept": "application/ld+json"})
    assert h["content-type"].startswith("application/ld+json")
    assert json.loads(body) == js(api.base, "/croissant")


def test_croissant_of_a_revision(main, at, tmp_path):
    """/croissant?revision=v1 describes commit A: A's bytes, A's records."""
    check_croissant(main, {"revision": "v1"}, at["A"].files, tmp_path / "a")
    check_croissant(main, {}, at["C"].files, tmp_path / "c")


# --- (7) statistics as pandas computes them ---------------------------------------------------------


STAT_FIELDS = {
    "llm": ["energy_per_token_joules", "avg_power_watts", "avg_batch_size", "max_num_seqs", "num_gpus", "num_request_repeats",
            "task", "gpu_model", "model_id", "results_path", "is_stable"],
    "diffusion": ["energy_per_generation_joules", "batch_latency_s", "batch_size", "num_frames", "inference_steps",
                  "task", "weight_precision", "nickname", "results_path"],
}

STAT_CASES = [
    ("llm", {}, lambda f: f),
    ("llm", {"task": "gpqa"}, lambda f: f[f.task == "gpqa"]),
    ("llm", {"gpu_model": "H100", "max_num_seqs_min": "64"}, lambda f: f[(f.gpu_model == "H100") & (f.max_num_seqs >= 64)]),
    ("diffusion", {}, lambda f: f),
    ("diffusion", {"task": "text-to-video"}, lambda f: f[f.task == "text-to-video"]),
    ("diffusion", {"gpu_model": "B200", "batch_size": "1,2"}, lambda f: f[(f.gpu_model == "B200") & f.batch_size.isin([1, 2])]),
]

TYPES = {"double": "float", "int64": "int", "string": "string_label", "bool": "bool"}


def check_statistics(got: dict, frame: pd.DataFrame, domain: str, fields: list) -> None:
    schema = pq.read_schema(SAMPLE / "runs" / f"{domain}.parquet")
    n = len(frame)
    assert got["num_examples"] == n and got["partial"] is False
    names = [s["column_name"] for s in got["statistics"]]
    assert sorted(names) == sorted(fields) and len(set(names)) == len(names)
    for s in got["statistics"]:
        name, st = s["column_name"], s["column_statistics"]
        col = frame[name]
        kind = TYPES[str(schema.field(name).type)]
        assert s["column_type"] == kind, name
        nulls = int(col.isna().sum())
        assert st["nan_count"] == nulls, name
        assert st["nan_proportion"] in (nulls / n, round(nulls / n, 5)), (name, st["nan_proportion"])
        if kind in ("float", "int"):
            with pd.option_context("compute.use_bottleneck", False):
                d = col.describe()
            assert d["count"] == n - nulls
            for key, want in [("mean", d["mean"]), ("std", d["std"]), ("min", d["min"]), ("median", d["50%"]), ("max", d["max"])]:
                assert st[key] == want, (name, key, st[key], want)
            if kind == "int":
                assert all(isinstance(st[k], int) for k in ("min", "max")), (name, st)
            hist, edges = np.histogram(col.dropna().to_numpy(), bins=10)
            assert st["histogram"]["hist"] == hist.tolist(), name
            assert st["histogram"]["bin_edges"] == edges.tolist(), name
        else:
            counts = col.value_counts()
            assert st["n_unique"] == col.nunique(), name
            want = {(str(bool(k)) if kind == "bool" else k): int(v) for k, v in counts.items()}
            assert st["frequencies"] == want, name


@pytest.mark.parametrize("case", range(len(STAT_CASES)))
def test_statistics_equal_pandas(api, case):
    """/statistics of the filtered runs of data/sample: counts, nulls, mean, std, min, median, max
    and a 10-bin histogram of numbers, distinct values and frequencies of text and booleans, as
    pandas and numpy compute them."""
    domain, params, select = STAT_CASES[case]
    frame = select(pd.read_parquet(SAMPLE / "runs" / f"{domain}.parquet"))
    assert len(frame) > 10
    h, body = ok(api.base, f"/v1/{domain}/statistics", {**params, "fields": ",".join(STAT_FIELDS[domain])})
    got = json.loads(body)
    check_statistics(got, frame, domain, STAT_FIELDS[domain])
    assert got["snapshot"]["content"] == x_snapshot(h)["content"]


def test_statistics_of_a_column_without_values(api):
    """A column null in every run: all null, no mean or extremes; a boolean one has no values."""
    got = js(api.base, "/v1/llm/statistics", {"fields": "mean_itl_ms,seed"})
    for s in got["statistics"]:
        st = s["column_statistics"]
        assert st["nan_count"] == 838 and st["nan_proportion"] == 1.0
        assert all(st[k] is None for k in ("mean", "std", "min", "median", "max")), st
    got = js(api.base, "/v1/diffusion/statistics", {"fields": "use_torch_compile"})
    st = got["statistics"][0]["column_statistics"]
    assert got["statistics"][0]["column_type"] == "bool"
    assert st["nan_count"] == 1020 and st["n_unique"] == 0 and st["frequencies"] == {}


def test_statistics_of_a_revision(main, at):
    """/statistics?revision= profiles that commit's runs."""
    for name, rev in [("A", "v1"), ("B", at["B"].sha)]:
        for domain in DOMAINS:
            got = js(main, f"/v1/{domain}/statistics", {"fields": ",".join(STAT_FIELDS[domain]), "revision": rev})
            check_statistics(got, at[name].frame(domain), domain, STAT_FIELDS[domain])


# --- (8) bad input -------------------------------------------------------------------------------------


def test_an_unknown_revision_is_404(main, api):
    for base, rev in [(main, "nope"), (main, "f" * 40), (api.base, "nope")]:
        p = problem(base, "/v1/llm/runs", 404, {"revision": rev})
        assert p["parameter"] == "revision" and rev in p["detail"]
    p = problem(main, "/v1/diffusion/groups", 404, {"by": "task", "revision": "nope"})
    assert p["parameter"] == "revision"


def test_a_revision_of_another_schema_is_422(main, at):
    """A commit whose LLM table has energy_per_token_joules as text, one whose diffusion table
    lacks a column: 422 naming the file, each time asked."""
    for _ in range(2):
        p = problem(main, "/v1/llm/runs", 422, {"revision": at["D"].sha})
        assert p["parameter"] == "revision" and "llm.parquet" in p["detail"]
        p = problem(main, "/v1/diffusion/runs", 422, {"revision": at["E"].sha})
        assert p["parameter"] == "revision" and "diffusion.parquet" in p["detail"]
    # The served revision still answers.
    assert_runs_of(at["C"], "llm", runs(main, "llm"))


def test_a_failed_load_is_not_kept(at, tmp_path):
    """A branch that was broken or did not exist is asked of the hub again, and answers once the
    hub has it right."""
    with fake_hub() as hub, hub_server(hub, at["C"].sha, home=tmp_path / "hf") as base:
        problem(base, "/v1/llm/runs", 422, {"revision": "broken"})
        before = hub.asked()
        problem(base, "/v1/llm/runs", 422, {"revision": "broken"})
        assert hub.asked() > before
        hub.refs["broken"] = at["A"].sha
        assert_runs_of(at["A"], "llm", runs(base, "llm", "broken"))

        problem(base, "/v1/llm/runs", 404, {"revision": "later"})
        before = hub.asked()
        problem(base, "/v1/llm/runs", 404, {"revision": "later"})
        assert hub.asked() > before
        hub.refs["later"] = at["B"].sha
        assert_runs_of(at["B"], "diffusion", runs(base, "diffusion", "later"))


def test_changes_need_two_revisions(main):
    p = problem(main, "/v1/llm/changes", 400, {"from": "v1", "to": "v1"})
    assert p["parameter"] == "to"
    p = problem(main, "/v1/llm/changes", 400, {"to": "v1"})
    assert p["parameter"] == "from"
    p = problem(main, "/v1/diffusion/changes", 400, {"to": "v1"})
    assert p["parameter"] == "from"


def test_statistics_of_an_unknown_column_is_400(api):
    p = problem(api.base, "/v1/llm/statistics", 400, {"fields": "energy_per_token_joules,bogus"})
    assert p["parameter"] == "fields" and "bogus" in p["detail"]
    p = problem(api.base, "/v1/diffusion/statistics", 400, {"fields": "energy_per_token_joules"})
    assert p["parameter"] == "fields"
