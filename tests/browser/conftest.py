"""The real server binary on data/sample, and Debian's Chromium driven by Playwright (headless, no
download of Playwright's own browsers). Every page a test opens records its console errors, its
uncaught exceptions and every request it makes, so a test can assert there were none and that no
request left the server."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("MLENERGY_SERVER_BIN", str(ROOT / "target" / "debug" / "mlenergy-server"))
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
# Screenshots of every run, for a person to look at (not compared: fonts differ between machines).
SHOTS = Path(os.environ.get("BROWSER_SHOTS", ROOT / "bench" / "out" / "browser"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def base():
    port = _free_port()
    cache = tempfile.TemporaryDirectory()
    errors = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [BINARY, "--bind", f"127.0.0.1:{port}", "--data", str(ROOT / "data" / "sample"), "--cache", cache.name],
        stdout=subprocess.DEVNULL,
        stderr=errors,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/readyz") as r:
                if r.status == 200:
                    break
        except OSError:
            if proc.poll() is not None:
                errors.seek(0)
                raise RuntimeError(f"server exited: {errors.read().decode()}")
            if time.time() > deadline:
                raise RuntimeError("server did not become ready")
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(timeout=40)
    cache.cleanup()


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


class Watched:
    """A page with what it logged and asked for."""

    def __init__(self, page):
        self.page = page
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))

    def shot(self, name: str):
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, path
        return path


@pytest.fixture
def watched(browser, base):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    w = Watched(context.new_page())
    yield w
    context.close()
    assert w.errors == [], w.errors
    outside = [u for u in w.requests if not (u.startswith(base + "/") or u == base)]
    assert outside == [], outside
