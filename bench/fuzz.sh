#!/usr/bin/env bash
# The fuzz targets of fuzz/ and fuzz/http/ (issue 19 item 7), each for a number of executions with libFuzzer
# through cargo-fuzz (stable toolchain: RUSTC_BOOTSTRAP=1, --sanitizer none):
#
#   bash bench/fuzz.sh                 # every target, 10 million executions each (the target)
#   FUZZ_RUNS=20000 FUZZ_QUICK_BUILD=1 FUZZ_SEED=1 bash bench/fuzz.sh # a short bounded run, as .ci/run
#   (FUZZ_SEED fixes libFuzzer's seed, so CI explores the same inputs each time; 0, the default, is random)
#   FUZZ_TARGETS="raw_results raw_paths" bash bench/fuzz.sh
#   FUZZ_TARGETS=sql_functions FUZZ_RUNS=1000000 bash bench/fuzz.sh   # issue 62's run
#   (FUZZ_RUNS_<target>=N overrides FUZZ_RUNS for one target)
#
# Seeds: small results.json documents of the raw format's shapes, results paths of both domains,
# query strings and model bodies (written to corpus/<target>/ of the target's package, fuzz/ or
# fuzz/http/, on first use; libFuzzer adds what it finds there). A finding stops its target with
# the input saved under artifacts/<target>/ of its package and makes the script exit non-zero. It prints executions and exec/s
# per target; it asserts nothing about speed. Two targets run at a time (one per core).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
out="$(cd .. && pwd)/bench/out"
runs=${FUZZ_RUNS:-10000000}
# Two cargo-fuzz packages: the readers' targets in fuzz/ link only the small crates they exercise
# (mlenergy-rawfile, mlenergy-peer, and mlenergy-engine without its `datafusion` feature: no query
# engine, 143 crates, ~70 s in CI's quick build); the HTTP targets in fuzz/http/ link the whole
# server. Each is named with --fuzz-dir (cargo-fuzz would take fuzz/ from any directory below it);
# both build in one target directory.
readers="raw_results raw_paths peer_json"
http="query_strings json_bodies sql_functions"
# The two HTTP targets first, as a pair: they are the slow ones (CI's quick build: 49 s and 21 s
# for 20,000 executions, the readers 2 to 39 s).
targets=${FUZZ_TARGETS:-$http $readers}
package_of() { case " $http " in *" $1 "*) echo http ;; *) echo . ;; esac; }
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
# Development profile (Cargo.toml of each package: dependencies optimised, debug assertions on).
# FUZZ_QUICK_BUILD=1 (CI's short run) builds the dependencies unoptimised instead, in a target
# directory of its own: a quicker build, slower executions.
build=(--dev --sanitizer none)
target_dir=target
if [ -n "${FUZZ_QUICK_BUILD:-}" ]; then
  mkdir -p .cargo
  printf '[profile.dev.package."*"]\nopt-level = 0\n' >.cargo/config.toml
  trap 'rm -rf .cargo' EXIT
  build+=(--target-dir target/quick)
  target_dir=target/quick
fi
triple=$(rustc -vV | sed -n 's/^host: //p')
# The HTTP targets are built by cargo itself with libFuzzer's instrumentation on our crates only
# (http/instrument.sh, a RUSTC_WRAPPER; cargo-fuzz instruments every crate, and libFuzzer's scan
# of DataFusion's and tokio's edge counters after each execution was more than half of it), and
# run as cargo-fuzz runs them: the binary, its corpus, artifacts under http/artifacts/<target>/.
build_http() {
  RUSTC_WRAPPER="$PWD/http/instrument.sh" RUSTFLAGS="--cfg fuzzing -Cdebug-assertions" \
    cargo build --manifest-path http/Cargo.toml --bins --target "$triple" --target-dir "$target_dir"
}
for package in . http; do
  wanted=""
  for t in $targets; do [ "$(package_of "$t")" = "$package" ] && wanted=1; done
  if [ -n "$wanted" ]; then
    start=$SECONDS
    if [ "$package" = http ]; then build_http; else cargo fuzz build --fuzz-dir "$PWD/$package" "${build[@]}"; fi
    echo "fuzz build of $package: $((SECONDS - start)) s"
  fi
done

python3 - <<'PY'
import json
from pathlib import Path

HTTP = {"query_strings", "json_bodies", "sql_functions"}

def put(target, name, data):
    d = (Path("http") if target in HTTP else Path(".")) / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    if not p.exists():
        p.write_bytes(data if isinstance(data, bytes) else data.encode())

records = [
    {"success": True, "output_len": 3, "itl": [0.012, 0.0, 0.013]},
    {"success": False, "output_len": None, "itl": []},
    {"success": True, "output_len": 2, "itl": [0.5, 1e-3], "prompt": "}]{\"x\""},
]
timeline = {"power": {"device_instant": {"0": [[0.0, 100.5], [1.0, 300.25]], "1": [[0.5, 90.0]]}}}
put("raw_results", "compact", json.dumps({"results": records, "timeline": timeline}))
put("raw_results", "indented", json.dumps({"model_id": "a/b", "results": records, "timeline": timeline}, indent=2))
put("raw_results", "diffusion", json.dumps({"timeline": timeline, "batch_size": 4}))
put("raw_results", "not_objects", json.dumps({"results": [1, "x", None, {"itl": "no"}]}))
put("raw_paths", "llm", "llm/h100/current/run/llm/gpqa/results/org/model/H100/num_gpus+1+max_num_seqs+8+seed+48105/results.json")
put("raw_paths", "diffusion", "diffusion/b200/current/run/diffusion/text-to-image/org/m/batch-1+size-1024x1024+steps-20+seed-48105/results.json")
put("raw_paths", "climb", "llm/../../etc/./passwd")
put("raw_paths", "windows", "C:\\x\\..\\y")
put("peer_json", "lem", json.dumps({"experiment_id": "0001_c0", "total_energy_j": 82004.5708, "process_results": [
    {"process_index": 0, "gpu_id": -1, "ok": True, "none": None, "latency_measurements": {"ttft_ms": [249.719, 1e-3, 2E+5, -0.5]}}]}, indent=2))
put("peer_json", "edges", '[-0, 12345678901234567890, 1e400, "a\\u00e9\\n", {"k": 1, "k": [2]}, 0.1000000000000000055511151231257827021181583404541015625]')
# query_strings: the first byte picks the endpoint (see the target).
put("query_strings", "runs", b"\x00task=gpqa&gpu=B200&sort=-energy_per_token_joules&limit=5&fields=run_id,task")
put("query_strings", "groups", b"\x03by=model_id,num_gpus&agg=mean(energy_per_token_joules),argmin")
put("query_strings", "best", b"\x05latency=median_itl&deadline=0.5&per=task,gpu_model")
put("query_strings", "timeline", b"\x0dmetric=power.device_instant&per_gpu=true&every=1s&format=csv")
put("query_strings", "sql", b"\x19q=SELECT%20task%2C%20count(*)%20FROM%20llm_runs%20GROUP%20BY%201")
# Chains of operators past the bound (2,000 ORs, 3,000 `=`), which overflowed a worker's stack, and one at it.
put("query_strings", "sql_or_chain", b"\x19q=SELECT%20count(*)%20FROM%20llm_runs%20WHERE%20" + b"%20OR%20".join(b"num_gpus=%d" % i for i in range(2000)))
put("query_strings", "sql_or_chain_at_bound", b"\x19q=SELECT%20count(*)%20FROM%20llm_runs%20WHERE%20" + b"%20OR%20".join(b"num_gpus=%d" % i for i in range(497)))
put("query_strings", "sql_eq_chain", b"\x19q=SELECT%20" + b"=".join([b"num_gpus"] * 3000) + b"%20FROM%20llm_runs")
# json_bodies: the first byte picks the endpoint and content type (see the target).
put("json_bodies", "logistic_fit", b"\x00" + json.dumps({"x": [3, 4, 5, 6, 7], "y": [1.0, 1.8, 2.6, 3.1, 3.3]}).encode())
put("json_bodies", "logistic_eval", b"\x01" + json.dumps({"params": {"L": 3.4, "x0": 4.6, "k": 1.1, "b0": 0.1}, "batch": [8, 16]}).encode())
put("json_bodies", "mixture_fit", b"\x02" + json.dumps({"samples": [0.01, 0.012, 0.011, 0.2, 0.013, 0.0119]}).encode())
# sql_functions: bytes choose functions, arguments and the statement's shape (see the target).
put("sql_functions", "zeros", bytes(16))
put("sql_functions", "mixed", bytes(range(0, 256, 7)))
put("json_bodies", "sql", b"\x04" + json.dumps({"sql": "SELECT * FROM llm_runs WHERE num_gpus = $1", "params": [2]}).encode())
PY

status=0
run_one() {
  local t=$1 log="$out/fuzz-$1.log" package
  package=$(package_of "$1")
  mkdir -p "$out"
  local start=$SECONDS
  local run=(cargo fuzz run --fuzz-dir "$PWD/$package" "${build[@]}" "$t" "$package/corpus/$t" --)
  if [ "$package" = http ]; then
    mkdir -p "http/artifacts/$t"
    run=("$target_dir/$triple/debug/$t" -artifact_prefix="http/artifacts/$t/" "http/corpus/$t")
  fi
  # FUZZ_RUNS_<target> sets one target's count (CI's short run gives the SQL target fewer: each of
  # its executions plans and runs a query).
  local count_var="FUZZ_RUNS_$t"
  if "${run[@]}" -runs="${!count_var:-$runs}" -seed="${FUZZ_SEED:-0}" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1; then
    local execs
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    echo "$t: $execs executions in $((SECONDS - start)) s, $(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?') exec/s, no finding"
  else
    echo "$t: FINDING (or failure), see bench/out/fuzz-$t.log and fuzz/$package/artifacts/$t/" >&2
    tail -30 "$log" >&2
    return 1
  fi
}
set -- $targets
while [ $# -gt 0 ]; do
  run_one "$1" & first=$!
  second=""
  if [ $# -gt 1 ]; then run_one "$2" & second=$!; fi
  wait "$first" || status=1
  if [ -n "$second" ]; then wait "$second" || status=1; fi
  shift $(( $# > 1 ? 2 : 1 ))
done
exit $status
