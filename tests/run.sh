#!/usr/bin/env bash
# Every test: the Rust suites (unit, in-process router, black-box binary, data/sample and
# OpenAPI drift), then the conformance suite against the reference toolkit mlenergy-data 0.4.0 and
# the SQL clients, then the explorer's pages in Chromium (tests/browser), then schemathesis against
# the served OpenAPI document (tests/api/run.sh), then the MCP conformance suite against /mcp
# (tests/mcp/conformance.sh).
#
# The PostgreSQL tests run when MLENERGY_TEST_POSTGRES names a server (a user that may create
# databases); otherwise cargo reports them as ignored, with the reason. MLENERGY_REQUIRE_POSTGRES=1
# (set by .ci/run) makes a missing server an error instead.
set -euo pipefail
cd "$(dirname "$0")/.."

# psql (Debian's postgresql-client) and openssl are real clients of the SQL tests
# (tests/conformance/test_sql_clients.py): installed from Debian's packages when missing.
# Chromium (Debian's package) is the browser of the explorer's tests (tests/browser). apt waits for a
# lock another install holds (.ci/run installs Chromium beside the build).
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
apt_wait=(-o DPkg::Lock::Timeout=900)
if ! command -v psql >/dev/null 2>&1 || ! command -v openssl >/dev/null 2>&1; then
  $sudo apt-get "${apt_wait[@]}" update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get "${apt_wait[@]}" install -y -q postgresql-client openssl
fi

python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  -r tests/conformance/requirements.txt
# The Python client (clients/python), which the conformance suite compares with the toolkit.
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore ./clients/python

ignored=()
if [ -n "${MLENERGY_TEST_POSTGRES:-}" ]; then
  ignored=(-- --include-ignored)
elif [ -n "${MLENERGY_REQUIRE_POSTGRES:-}" ]; then
  echo "MLENERGY_REQUIRE_POSTGRES is set but MLENERGY_TEST_POSTGRES is not" >&2
  exit 1
fi
# Every crate of the workspace: the server and crates/* (each crate's own unit tests).
cargo test --locked --workspace "${ignored[@]}"

# The conformance suite runs the binary `cargo test` built, wherever cargo put it (a shared
# CARGO_TARGET_DIR included); MLENERGY_SERVER_BIN names another one.
if [ -z "${MLENERGY_SERVER_BIN:-}" ]; then
  target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  export MLENERGY_SERVER_BIN="$target_dir/debug/mlenergy-server"
fi
python3 -m pytest -q tests/conformance

# The home page, the explorer and a run's page in headless Chromium (Playwright drives Debian's
# package; it downloads no browser of its own).
if ! command -v chromium >/dev/null 2>&1; then
  $sudo apt-get "${apt_wait[@]}" update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get "${apt_wait[@]}" install -y -q chromium
fi
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  -r tests/browser/requirements.txt
python3 -m pytest -q tests/browser

# Schemathesis against the served OpenAPI document: every operation, every check.
bash tests/api/run.sh

# The Model Context Protocol's conformance suite (npm) against /mcp.
bash tests/mcp/conformance.sh
