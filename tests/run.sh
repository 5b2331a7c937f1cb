#!/usr/bin/env bash
# Every test: the Rust suites (unit, in-process router, black-box binary, data/sample and
# OpenAPI drift), then the conformance suite against the reference toolkit mlenergy-data 0.4.0.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  -r tests/conformance/requirements.txt
cargo test --locked
# cargo test built target/debug/mlenergy-server; the conformance suite runs it.
python3 -m pytest -q tests/conformance
