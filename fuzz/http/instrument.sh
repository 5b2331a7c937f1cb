#!/usr/bin/env bash
# RUSTC_WRAPPER of the HTTP fuzz targets' build (bench/fuzz.sh): libFuzzer's coverage
# instrumentation (cargo-fuzz's flags) on the workspace's own crates and the targets only.
#
# cargo-fuzz instruments every crate; the HTTP targets link DataFusion, tokio, hyper and the rest,
# and libFuzzer scans every instrumented edge's counter after each execution: in that build 55% of
# a query_strings execution was libFuzzer's own CollectFeatures over counters that are not ours.
# What these targets look for is in our crates (parsers, handlers, problem answers); the
# dependencies run at full speed, uninstrumented, and still crash a target if they panic.
set -euo pipefail
rustc=$1
shift
ours=0
prev=""
for arg in "$@"; do
  if [ "$prev" = "--crate-name" ]; then
    case "$arg" in
      mlenergy_server | mlenergy_engine | mlenergy_rawfile | mlenergy_peer | mlenergy_pycompat | query_strings | json_bodies) ours=1 ;;
    esac
  fi
  prev=$arg
done
if [ "$ours" = 1 ]; then
  exec "$rustc" "$@" -Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares \
    -Cllvm-args=-sanitizer-coverage-stack-depth \
    -Cllvm-args=-simplifycfg-branch-fold-threshold=0
fi
exec "$rustc" "$@"
