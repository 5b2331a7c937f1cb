"""Every `curl` example of the README runs as pasted against the embedded dataset: each shell block
that holds a curl line is run by bash, with `localhost:8080` pointed at a started server, and every
curl in it must get a 2xx answer (curl's --fail-with-body is added to each call by a shell function,
so the lines themselves stay as written)."""

import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE, running_server


def curl_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    return [b for b in blocks if re.search(r"^\s*curl ", b, flags=re.M) or "$(curl" in b]


def test_the_readme_has_curl_examples():
    blocks = curl_blocks()
    assert len(blocks) >= 3
    assert sum(len(re.findall(r"\bcurl ", b)) for b in blocks) >= 20


@pytest.fixture(scope="module")
def server():
    with running_server(str(SAMPLE)) as base:
        yield base


@pytest.mark.parametrize("block", curl_blocks(), ids=lambda b: b.strip().splitlines()[0][:60])
def test_readme_block_runs_as_pasted(server, block):
    port = server.rsplit(":", 1)[1]
    script = (
        "set -euo pipefail\n"
        # Every curl call fails on a non-2xx answer; its output is not needed.
        'curl() { command curl -sS --fail-with-body "$@"; }\n'
        + block.replace("localhost:8080", f"localhost:{port}")
    )
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{block}\n--- stdout\n{proc.stdout[-2000:]}\n--- stderr\n{proc.stderr[-2000:]}"
        # Files the examples ask curl to write are there.
        for name in re.findall(r"-o (\S+\.parquet)", block):
            assert (Path(cwd) / name).stat().st_size > 0, name
