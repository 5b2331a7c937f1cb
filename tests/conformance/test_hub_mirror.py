"""The server as a Hugging Face mirror (`--hub-mirror`): the unmodified toolkit, pointed at it with
HF_ENDPOINT, loads through it what it loads from disk; a server whose source is a hub fetches a
file once for any number of toolkit processes; a token is required when set; refusals are the
hub's (huggingface_hub raises its own exceptions from them)."""

import hashlib
import http.server
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import SAMPLE, running_server

REPO = "ml-energy/benchmark-v3"
# The one run of data/sample with raw files.
RAW = next(p for p in pq.read_table(SAMPLE / "runs" / "llm.parquet", columns=["results_path"]).column(0).to_pylist() if p)


def toolkit(script: str, endpoint: str, *, token: str | None = None, home: str | None = None) -> subprocess.CompletedProcess:
    """`script` in a fresh Python process whose huggingface_hub talks to `endpoint` (HF_ENDPOINT is
    read when huggingface_hub is imported), with its own hub cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env["HF_ENDPOINT"] = endpoint
    env["HF_HOME"] = home or tempfile.mkdtemp(prefix="hf-home-")
    env["HF_HUB_DISABLE_TELEMETRY"] = "1"
    env["HF_HUB_DISABLE_XET"] = "1"
    if token is not None:
        env["HF_TOKEN"] = token
    prelude = "import warnings; warnings.filterwarnings('ignore')\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)], env=env,
                          capture_output=True, text=True, timeout=300)


def get(url: str, headers: dict | None = None, method: str = "GET"):
    req = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.fixture(scope="module")
def mirror():
    with running_server(str(SAMPLE), args=("--hub-mirror",)) as base:
        yield base


COMPARE = f"""
import pandas as pd
from mlenergy.data.records import LLMRuns, DiffusionRuns
SAMPLE = {str(SAMPLE)!r}
REVISION = __REVISION__
hub = LLMRuns.from_hf(revision=REVISION, stable_only=False)
disk = LLMRuns.from_directory(SAMPLE, stable_only=False)
pd.testing.assert_frame_equal(hub.to_dataframe(), disk.to_dataframe())
pd.testing.assert_frame_equal(DiffusionRuns.from_hf(revision=REVISION).to_dataframe(), DiffusionRuns.from_directory(SAMPLE).to_dataframe())
raw_hub = hub.where(lambda r: bool(r._results_path))
raw_disk = disk.where(lambda r: bool(r._results_path))
assert len(raw_hub) == len(raw_disk) == 1, (len(raw_hub), len(raw_disk))
for include in (False, True):
    pd.testing.assert_frame_equal(raw_hub.output_lengths(include_unsuccessful=include), raw_disk.output_lengths(include_unsuccessful=include))
pd.testing.assert_frame_equal(raw_hub.inter_token_latencies(), raw_disk.inter_token_latencies())
for m in ("power.device_instant", "power.device_average", "temperature"):
    pd.testing.assert_frame_equal(raw_hub.timelines(metric=m), raw_disk.timelines(metric=m))
assert raw_hub[0].read_results_json() == raw_disk[0].read_results_json()
print("same", len(hub))
"""


def test_the_toolkit_loads_through_the_mirror_what_it_loads_from_disk(mirror):
    r = toolkit(COMPARE.replace("__REVISION__", "None"), f"{mirror}/hub")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "same 838"


def test_a_pinned_revision(mirror):
    status, headers, body = get(f"{mirror}/hub/api/datasets/{REPO}/revision/main")
    assert status == 200
    info = json.loads(body)
    commit = info["sha"]
    assert len(commit) == 40 and info["id"] == REPO
    assert {"runs/llm.parquet", "runs/diffusion.parquet", RAW} <= {s["rfilename"] for s in info["siblings"]}
    r = toolkit(COMPARE.replace("__REVISION__", repr(commit)), f"{mirror}/hub")
    assert r.returncode == 0, r.stderr[-3000:]
    # The hub's snapshot directory is named by the served commit.
    r = toolkit(f"""
        from huggingface_hub import hf_hub_download
        p = hf_hub_download({REPO!r}, "runs/llm.parquet", repo_type="dataset", revision={commit!r})
        print(p.split("/snapshots/")[1])
    """, f"{mirror}/hub")
    assert r.stdout.strip() == f"{commit}/runs/llm.parquet", r.stderr[-2000:]


def test_files_headers_and_ranges(mirror):
    url = f"{mirror}/hub/datasets/{REPO}/resolve/main/runs/llm.parquet"
    data = (SAMPLE / "runs" / "llm.parquet").read_bytes()
    status, h, body = get(url, method="HEAD")
    assert status == 200 and body == b""
    assert int(h["content-length"]) == len(data)
    assert h["etag"] == f'"{hashlib.sha256(data).hexdigest()}"'
    assert len(h["x-repo-commit"]) == 40
    status, h2, body = get(url)
    assert status == 200 and body == data and h2["etag"] == h["etag"]
    status, h3, body = get(url, {"Range": "bytes=100-199"})
    assert status == 206 and body == data[100:200]
    assert h3["content-range"] == f"bytes 100-199/{len(data)}"
    status, _, body = get(url, {"Range": f"bytes={len(data) - 10}-"})
    assert status == 206 and body == data[-10:]
    status, _, _ = get(url, {"Range": f"bytes={len(data)}-"})
    assert status == 416
    # A revalidation with the file's tag: 304.
    status, _, _ = get(url, {"If-None-Match": h["etag"]})
    assert status == 304


@pytest.mark.parametrize("path,code", [
    (f"/hub/datasets/other/repo/resolve/main/runs/llm.parquet", "RepoNotFound"),
    (f"/hub/datasets/{REPO}/resolve/v9/runs/llm.parquet", "RevisionNotFound"),
    (f"/hub/datasets/{REPO}/resolve/main/runs/none.parquet", "EntryNotFound"),
    (f"/hub/datasets/{REPO}/resolve/main/runs/%2E%2E/%2E%2E/Cargo.toml", "EntryNotFound"),
    (f"/hub/datasets/{REPO}/resolve/main/runs", "EntryNotFound"),
    (f"/hub/api/datasets/other/repo/revision/main", "RepoNotFound"),
    (f"/hub/api/datasets/{REPO}/tree/main/nothing-here", "EntryNotFound"),
])
def test_refusals_are_the_hubs(mirror, path, code):
    status, h, body = get(mirror + path)
    assert status == 404
    assert h["x-error-code"] == code
    assert h["content-type"] == "application/problem+json"
    problem = json.loads(body)
    assert problem["status"] == 404 and problem["detail"]


def test_huggingface_hub_raises_its_own_errors(mirror):
    r = toolkit(f"""
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError, RevisionNotFoundError, RepositoryNotFoundError
        for args, exc in [(({REPO!r}, "runs/none.parquet"), EntryNotFoundError),
                          (({REPO!r}, "runs/llm.parquet", "v9"), RevisionNotFoundError),
                          (("other/repo", "runs/llm.parquet"), RepositoryNotFoundError)]:
            repo, path, *rev = args
            try:
                hf_hub_download(repo, path, repo_type="dataset", revision=rev[0] if rev else None)
            except exc:
                print("raised", exc.__name__)
    """, f"{mirror}/hub")
    assert r.stdout.split("\n")[:3] == ["raised EntryNotFoundError", "raised RevisionNotFoundError", "raised RepositoryNotFoundError"], r.stderr[-2000:]


def test_snapshot_download_lists_and_fetches_every_file(mirror):
    r = toolkit(f"""
        import os
        from huggingface_hub import snapshot_download
        root = snapshot_download({REPO!r}, repo_type="dataset")
        for d, _, files in os.walk(root):
            for f in files:
                print(os.path.relpath(os.path.join(d, f), root))
    """, f"{mirror}/hub")
    assert r.returncode == 0, r.stderr[-3000:]
    got = set(r.stdout.split())
    want = {p.relative_to(SAMPLE).as_posix() for p in SAMPLE.rglob("*") if p.is_file()}
    assert got == want
    status, _, body = get(f"{mirror}/hub/api/datasets/{REPO}/tree/main/runs")
    entries = json.loads(body)
    sizes = {e["path"]: e["size"] for e in entries if e["type"] == "file"}
    assert sizes == {f"runs/{n}": (SAMPLE / "runs" / n).stat().st_size for n in ("llm.parquet", "diffusion.parquet")}


def test_a_token_is_required_when_set():
    with running_server(str(SAMPLE), args=("--hub-mirror", "--mirror-token", "s3cret")) as base:
        script = f"""
            from mlenergy.data.records import DiffusionRuns
            try:
                print(len(DiffusionRuns.from_hf()))
            except Exception as e:
                print(type(e).__name__)
        """
        assert toolkit(script, f"{base}/hub", token="s3cret").stdout.strip() == "1020"
        # Without it the hub's answer is the gated one, which the toolkit explains.
        r = toolkit(script, f"{base}/hub")
        assert r.stdout.strip() == "RuntimeError", r.stderr[-2000:]
        assert toolkit(script, f"{base}/hub", token="wrong").stdout.strip() != "1020"
        status, h, _ = get(f"{base}/hub/datasets/{REPO}/resolve/main/runs/llm.parquet", {"Authorization": "Bearer wrong"})
        assert status == 401 and h["x-error-message"] == "Invalid credentials in Authorization header"


# --- a server whose source is a hub: one upstream GET for any number of toolkit processes ---------


class FakeHub(http.server.ThreadingHTTPServer):
    """A hub serving data/sample as `REPO` at one commit: the revision API and resolve, counting
    the GETs of each file."""

    commit = "0123456789abcdef0123456789abcdef01234567"

    def __init__(self):
        self.gets: dict[str, int] = {}
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), FakeHubHandler)


class FakeHubHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        hub: FakeHub = self.server
        path = urllib.request.url2pathname(self.path.split("?")[0])
        if path in (f"/api/datasets/{REPO}/revision/main", f"/api/datasets/{REPO}/revision/{hub.commit}"):
            return self.reply(200, json.dumps({"id": REPO, "sha": hub.commit, "lastModified": "2026-02-16T00:00:00.000Z"}).encode())
        prefix = f"/datasets/{REPO}/resolve/"
        if path.startswith(prefix):
            rev, _, rel = path[len(prefix):].partition("/")
            file = (SAMPLE / rel).resolve()
            if rev not in ("main", hub.commit) or not file.is_file() or SAMPLE.resolve() not in file.parents:
                return self.reply(404, b'{"error":"Entry not found"}', {"X-Error-Code": "EntryNotFound"})
            with hub.lock:
                hub.gets[rel] = hub.gets.get(rel, 0) + 1
            data = file.read_bytes()
            return self.reply(200, data, {"X-Repo-Commit": hub.commit, "ETag": f'"{hashlib.sha256(data).hexdigest()}"'})
        self.reply(404, b'{"error":"not found"}')

    def reply(self, status, body, headers=None):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def fake_hub():
    hub = FakeHub()
    t = threading.Thread(target=hub.serve_forever, daemon=True)
    t.start()
    yield hub
    hub.shutdown()


def test_toolkit_processes_through_a_hub_backed_server_cause_one_upstream_get(fake_hub, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{fake_hub.server_address[1]}")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "server-hf-home"))
    with running_server(f"hf://datasets/{REPO}", args=("--hub-mirror",)) as base:
        status, h, _ = get(f"{base}/hub/datasets/{REPO}/resolve/main/runs/llm.parquet", method="HEAD")
        assert status == 200 and h["x-repo-commit"] == fake_hub.commit
        script = f"""
            from mlenergy.data.records import LLMRuns
            runs = LLMRuns.from_hf().where(lambda r: bool(r._results_path))
            print(len(runs.inter_token_latencies()))
        """
        procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env={
            **{k: v for k, v in os.environ.items() if not k.startswith("HF_")},
            "HF_ENDPOINT": f"{base}/hub", "HF_HOME": str(tmp_path / f"client-{i}"), "HF_HUB_DISABLE_XET": "1",
        }, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(3)]
        outs = [p.communicate(timeout=300) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert p.returncode == 0, err[-3000:]
        assert len({out for out, _ in outs}) == 1 and int(outs[0][0]) > 100_000
    assert fake_hub.gets.get(RAW) == 1, fake_hub.gets
