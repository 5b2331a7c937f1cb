#!/usr/bin/env bash
# The Model Context Protocol's official conformance suite (@modelcontextprotocol/conformance,
# from the npm registry) against /mcp of the binary serving data/sample. Every server scenario
# that applies to a read-only data server runs and must pass:
#   server-initialize, ping, tools-list, resources-list, prompts-list, completion-complete,
#   dns-rebinding-protection.
# The others do not apply (the closing note of issue 33 says why): they call the suite's own
# fixtures (tools test_simple_text, test_image_content, test_error_handling ...; resources
# test://static-text ...; prompts test_simple_prompt ...), ask the server to sample, elicit, log
# or report progress (this server sends no requests or notifications to clients), or subscribe to
# resources (a snapshot changes only by a reload, and the server keeps no sessions).
#
# The suite needs Node.js 22 or later (fs.globSync); when the system's node is older, npm installs
# Node 22 from the registry (the `node` package) beside the suite, in $MCP_CONFORMANCE_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bin=${MLENERGY_SERVER_BIN:-target/debug/mlenergy-server}
suite_version=0.1.16
tools=${MCP_CONFORMANCE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mlenergy-server/mcp-conformance-$suite_version}

if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q nodejs npm
fi
entry="$tools/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ ! -f "$entry" ]; then
  mkdir -p "$tools"
  npm install --prefix "$tools" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/conformance@$suite_version" node@22
fi
node="$tools/node_modules/.bin/node"
[ -x "$node" ] || node=node
"$node" -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)' || {
  echo "the MCP conformance suite needs Node.js 22 or later; $node is $("$node" --version)" >&2
  exit 1
}

work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
MLENERGY_LOG=warn "$bin" --bind "127.0.0.1:$port" --data "$root/data/sample" --cache "$work/cache" \
  >"$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 600); do
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1])' \
    "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done

failed=()
cd "$work" # the suite writes its results/ where it runs
for scenario in server-initialize ping tools-list resources-list prompts-list completion-complete \
  dns-rebinding-protection; do
  if "$node" "$entry" server --url "http://127.0.0.1:$port/mcp" --scenario "$scenario" >"$work/$scenario.log" 2>&1; then
    echo "MCP conformance: $scenario passed ($(grep -o 'Passed: [0-9]*/[0-9]*' "$work/$scenario.log"))"
  else
    echo "MCP conformance: $scenario FAILED" >&2
    cat "$work/$scenario.log" >&2
    failed+=("$scenario")
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "MCP conformance scenarios failed: ${failed[*]}" >&2
  exit 1
fi
