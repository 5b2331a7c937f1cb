"""Fixtures for the conformance tests: the reference toolkit's collections over data/sample, and
the real server binary on a free port serving the same files."""

import contextlib
import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
from pathlib import Path

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning)

from mlenergy.data import DiffusionRuns, LLMRuns  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    """A tiny client for the server under test."""

    def __init__(self, base: str):
        self.base = base

    def get(self, path: str, **params):
        """GET path with params (lists become repeated parameters); returns (status, headers, body)."""
        query = urllib.parse.urlencode(params, doseq=True)
        url = f"{self.base}{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(url) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def json(self, path: str, **params):
        status, headers, body = self.get(path, **params)
        assert status == 200, body
        return json.loads(body)

    def problem(self, path: str, status: int, **params):
        got, headers, body = self.get(path, **params)
        assert got == status, body
        assert headers["content-type"] == "application/problem+json"
        return json.loads(body)


BINARY = os.environ.get("MLENERGY_SERVER_BIN", str(ROOT / "target" / "debug" / "mlenergy-server"))


class Served(str):
    """A running server's base URL, with its process id (`pid`) for tests that watch it."""

    pid: int


@contextlib.contextmanager
def running_server(data: str, cache: str | None = None, args: tuple[str, ...] = ()):
    """The real binary serving `data` on a free port; yields its base URL. Its cache (where
    derived raw data is persisted) is `cache`, or a fresh directory, so every run reads the raw
    files itself unless a test shares a cache on purpose."""
    with contextlib.ExitStack() as stack:
        if cache is None:
            cache = stack.enter_context(tempfile.TemporaryDirectory())
        yield stack.enter_context(_serve(data, cache, args))


@contextlib.contextmanager
def _serve(data: str, cache: str, args: tuple[str, ...] = ()):
    port = _free_port()
    # A file, not a pipe: nobody drains a pipe while the server runs, and a full one would
    # block the server on its next write.
    errors = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [BINARY, "--bind", f"127.0.0.1:{port}", "--data", data, "--cache", cache, *args],
        stdout=subprocess.DEVNULL,
        stderr=errors,
    )
    base = Served(f"http://127.0.0.1:{port}")
    base.pid = proc.pid
    deadline = time.time() + 60
    try:
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"{base}/readyz") as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None:
                    errors.seek(0)
                    raise RuntimeError(f"server exited: {errors.read().decode()}")
                time.sleep(0.05)
        else:
            raise RuntimeError("server did not become ready")
        yield base
    finally:
        proc.terminate()
        # A stop waits for derived data being persisted (up to 30 s).
        proc.wait(timeout=40)
        errors.close()


@pytest.fixture(scope="session")
def api():
    with running_server(str(SAMPLE)) as base:
        yield Api(base)


@pytest.fixture(scope="session")
def llm():
    return LLMRuns.from_parquet(SAMPLE / "runs" / "llm.parquet", stable_only=True)


@pytest.fixture(scope="session")
def llm_all():
    return LLMRuns.from_parquet(SAMPLE / "runs" / "llm.parquet", stable_only=False)


@pytest.fixture(scope="session")
def diffusion():
    return DiffusionRuns.from_parquet(SAMPLE / "runs" / "diffusion.parquet")
