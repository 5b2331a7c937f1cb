#!/usr/bin/env bash
# Schemathesis (issue 19 item 8) against the OpenAPI document the server serves: the binary on a
# free port over a generated raw tree (tests/conformance's generator: LLM and diffusion runs with
# their raw files, so the raw-derived operations reach their logic), every operation, every
# check, with the exceptions of tests/api/schemathesis.toml and a real run id of each domain. A fixed seed keeps CI's run repeatable; ST_SEED, ST_EXAMPLES
# and ST_PHASES change it (a longer hunt: ST_EXAMPLES=200 ST_SEED= bash tests/api/run.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${MLENERGY_SERVER_BIN:-target/debug/mlenergy-server}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
work=$(mktemp -d)
log="$work/server.log"
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
python3 - "$work/tree" <<'PY'
# A small, well-formed tree: a batch sweep of LLM runs with timelines and prometheus files, and
# diffusion runs with timelines.
import random, sys
from pathlib import Path
sys.path.insert(0, "tests/conformance")
import rawgen as g
root = Path(sys.argv[1])
g.llm_config(root / "configs" / "vllm", "gpqa", "org/model-a", "H100")
for i, b in enumerate(["8", "16", "32", "64"]):
    tl = g.timeline(random.Random(i), 1, 0.0, 40.0, steady=(5.0, 35.0))
    g.llm_run(root, max_num_seqs=b, prometheus=g.prom(float(b)), rng_seed=i + 1, timeline=tl)
g.diffusion_config(root / "configs" / "xdit", "text-to-image", "org/diff-a")
for i, b in enumerate([1, 2]):
    tl = g.timeline(random.Random(10 + i), 1, 0.0, 20.0)
    g.diffusion_run(root, rng_seed=20 + i, batch_size=b, timeline=tl,
                    cfg_name=f"batch-{b}+size-1024x1024+steps-20+seed-48105+uly-1+ring-1+tc-False")
PY
MLENERGY_LOG=warn "$bin" --bind "127.0.0.1:$port" --data "raw:$work/tree" --cache "$work/cache" \
  --leaderboard-histograms on-request >"$log" 2>&1 &
server=$!
get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "$1"; }
for _ in $(seq 300); do
  get "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
first_run() {
  get "http://127.0.0.1:$port/v1/$1/runs?limit=1&fields=run_id&sort=run_id$2" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["runs"][0]["run_id"])'
}
LLM_RUN_ID=$(first_run llm "&stability=all")
DIFFUSION_RUN_ID=$(first_run diffusion "")
export LLM_RUN_ID DIFFUSION_RUN_ID
seed=()
if [ -n "${ST_SEED-1}" ]; then seed=(--seed "${ST_SEED:-1}"); fi
# `st` where pip put it on PATH, else the same command through Python.
st=(st)
command -v st >/dev/null 2>&1 ||
  st=(python3 -c 'from schemathesis.cli import schemathesis; schemathesis(prog_name="st")')
# One worker: with two, schemathesis generates in two threads, and CPython 3.11's ast.parse, which
# hypothesis calls to describe a strategy, is not thread-safe ("SystemError: AST constructor
# recursion depth mismatch", reported as an "Inconsistent results" runtime error now and then).
"${st[@]}" --config-file tests/api/schemathesis.toml run "http://127.0.0.1:$port/openapi.json" \
  --workers 1 --max-examples "${ST_EXAMPLES:-25}" "${seed[@]}" \
  --phases "${ST_PHASES:-examples,coverage,fuzzing,stateful}" \
  --suppress-health-check all --no-color
if grep -q "panicked" "$log"; then
  echo "the server panicked:" >&2
  grep -A5 "panicked" "$log" >&2
  exit 1
fi
