"""The documentation holds: README.md and every page under docs/.

- Every relative link resolves to a file of the repository, and its `#anchor` to a heading of
  that file (as GitHub makes anchors) or an explicit `<a id>`.
- Every `sh` block runs as pasted with bash against a server started on the embedded dataset
  (`localhost:8080` pointed at it): every curl call in it must get a 2xx answer (curl's
  --fail-with-body is added by a shell function, so the lines stay as written). The same server
  speaks the PostgreSQL wire and Flight SQL, and holds a second revision `old` (`--snapshot`), so
  the psql and `changes` examples run too. A command the test cannot run (a build, another
  server, paths of your own) is written in a `text` block; the README's first block, the two
  set-up commands, is the one `sh` block not run here (CI runs both).
- Every `python` block runs against the same server, and every `json` block parses.
"""

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from conftest import ROOT, SAMPLE, _free_port, running_server

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```", flags=re.S | re.M)


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def blocks(lang: str) -> list[tuple[str, int, str]]:
    """(page, index on the page, text) of every fenced block of `lang`."""
    out = []
    for page in PAGES:
        found = [m.group(2) for m in FENCE.finditer(page.read_text()) if m.group(1) == lang]
        out.extend((rel(page), i, b) for i, b in enumerate(found))
    return out


def prose(text: str) -> str:
    """`text` without its fenced blocks and inline code (where a link is not a link)."""
    text = FENCE.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, links reduced to their text, characters other
    than letters, digits, `-`, `_` and spaces dropped, spaces made `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = page.read_text()
    out: set[str] = set(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", text))
    seen: dict[str, int] = {}
    for line in FENCE.sub("", text).splitlines():
        m = re.match(r"^#{1,6} (.+?)\s*#*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def links() -> list[tuple[str, str]]:
    return [(rel(p), target) for p in PAGES for target in LINK.findall(prose(p.read_text()))]


def test_the_slug_is_githubs():
    assert slug("GET /v1/{domain}/runs/{run_id}") == "get-v1domainrunsrun_id"
    assert slug("Filters (`/runs` and `/groups`)") == "filters-runs-and-groups"
    assert slug("The server as a [Hugging Face](x) mirror") == "the-server-as-a-hugging-face-mirror"


def test_every_page_is_reachable_from_the_indexes():
    """Each page under docs/ is linked from docs/README.md or README.md."""
    linked = set()
    for index in (ROOT / "README.md", ROOT / "docs" / "README.md"):
        for target in LINK.findall(prose(index.read_text())):
            path = target.split("#", 1)[0]
            if path and "://" not in path:
                linked.add((index.parent / path).resolve())
    missing = [rel(p) for p in PAGES[1:] if p.resolve() not in linked and p.name != "README.md"]
    assert missing == []


@pytest.mark.parametrize("page,target", links(), ids=lambda v: str(v)[:70])
def test_every_relative_link_and_anchor_resolves(page, target):
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        return  # https:, mailto: and the like leave the repository.
    path, _, anchor = target.partition("#")
    source = ROOT / page
    dest = (source.parent / path).resolve() if path else source
    assert dest.is_relative_to(ROOT), f"{page}: {target} leaves the repository"
    assert dest.exists(), f"{page}: {target} names no file"
    if anchor:
        assert dest.suffix == ".md", f"{page}: {target} has an anchor in a file that is not a page"
        assert anchor in anchors(dest), f"{page}: {target}: no heading or <a id> {anchor!r} in {rel(dest)}"


def test_the_reference_is_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 160
    for page in ("docs/README.md", "docs/reference/http.md", "docs/reference/flags.md"):
        assert f"]({page})" in readme, page


def runs_curl(block: str) -> bool:
    return bool(re.search(r"(^|\$\(|\s)curl ", block, flags=re.M))


SH = blocks("sh")
RUN_SH = [b for b in SH if not (b[0] == "README.md" and b[1] == 0)]


def test_the_shell_examples_are_many_and_all_run():
    """Every `sh` block but the README's set-up commands is an example this module runs: it calls
    curl or psql."""
    assert [b for b in RUN_SH if not runs_curl(b[2]) and "psql " not in b[2]] == []
    readme = [b for b in RUN_SH if b[0] == "README.md"]
    assert len(readme) >= 3
    assert len(RUN_SH) >= 20
    assert sum(len(re.findall(r"\bcurl ", b[2])) for b in RUN_SH) >= 60


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The embedded dataset on a free port, with the PostgreSQL wire, Flight SQL and a second
    revision `old`: the LLM runs with the last twenty left out and the energy of the first five
    raised by a tenth."""
    old = tmp_path_factory.mktemp("old")
    (old / "runs").mkdir()
    llm = pq.read_table(SAMPLE / "runs" / "llm.parquet")
    llm = llm.slice(0, llm.num_rows - 20)
    energy = llm.column("energy_per_token_joules").to_pylist()
    energy = [e * 1.1 if i < 5 and e is not None else e for i, e in enumerate(energy)]
    i = llm.schema.get_field_index("energy_per_token_joules")
    llm = llm.set_column(i, llm.schema.field(i), pc.cast(energy, llm.schema.field(i).type))
    pq.write_table(llm, old / "runs" / "llm.parquet")
    (old / "runs" / "diffusion.parquet").write_bytes((SAMPLE / "runs" / "diffusion.parquet").read_bytes())
    pg, flight = _free_port(), _free_port()
    args = ("--pg-bind", f"127.0.0.1:{pg}", "--flight-bind", f"127.0.0.1:{flight}", "--snapshot", f"old={old}")
    with running_server(str(SAMPLE), args=args) as base:
        yield {"port": base.rsplit(":", 1)[1], "pg": pg, "flight": flight}


def pointed(text: str, server: dict) -> str:
    """An example's text with the addresses it names pointed at the test's server."""
    for host in ("localhost:8080", "127.0.0.1:8080"):
        text = text.replace(host, f"127.0.0.1:{server['port']}")
    text = text.replace("127.0.0.1:50051", f"127.0.0.1:{server['flight']}")
    return re.sub(r"-p 5432\b", f"-p {server['pg']}", text)


@pytest.mark.parametrize("page,index,block", RUN_SH, ids=lambda v: str(v).strip().splitlines()[0][:60] if isinstance(v, str) else str(v))
def test_shell_example_runs_as_pasted(server, page, index, block):
    script = (
        "set -euo pipefail\n"
        # Every curl call fails on a non-2xx answer; its output is not needed.
        'curl() { command curl -sS --fail-with-body "$@"; }\n'
        + pointed(block, server)
    )
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, f"{page} #{index}:\n{block}\n--- stdout\n{proc.stdout[-2000:]}\n--- stderr\n{proc.stderr[-2000:]}"
        # Files the examples ask curl to write are there.
        for name in re.findall(r"-o (\S+\.(?:parquet|svg))", block):
            assert (Path(cwd) / name).stat().st_size > 0, name


PYTHON = blocks("python")


def test_the_python_examples_are_there():
    pages = {b[0] for b in PYTHON}
    assert {"README.md", "docs/python.md", "docs/mcp.md", "docs/sql.md"} <= pages


@pytest.mark.parametrize("page,index,block", PYTHON, ids=lambda v: str(v).strip().splitlines()[0][:60] if isinstance(v, str) else str(v))
def test_python_example_runs(server, page, index, block):
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run(
            [sys.executable, "-c", pointed(block, server)], cwd=cwd, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, f"{page} #{index}:\n{block}\n--- stdout\n{proc.stdout[-2000:]}\n--- stderr\n{proc.stderr[-3000:]}"
        assert proc.stdout.strip(), f"{page} #{index} printed nothing"


@pytest.mark.parametrize("page,index,block", blocks("json"), ids=lambda v: str(v)[:40])
def test_json_example_parses(page, index, block):
    json.loads(block)
