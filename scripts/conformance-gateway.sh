#!/usr/bin/env bash
# The official MCP conformance suite through the gateway: every server scenario against
# `portico serve --http 127.0.0.1:PORT` whose config has one upstream, `conformance-server
# --stdio`, with `prefix = ""` (tool and prompt names unchanged). Prints one line per suite run
# and "conformance-gateway: N passed, M failed".
#
# Same pinned suites and the same four server runs as the direct stage of
# scripts/conformance.sh (which calls this script at its end; it also runs alone, installing the
# suite the same way). conformance/gateway-expected-failures.yml lists the scenarios (or
# `scenario:check-id`) a gateway cannot reproduce, each with its reason; anything else failing,
# or a listed entry passing, fails this script.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=.ci-cache/conformance
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"

if [ ! -x "$dir/node_modules/.bin/node" ] || [ ! -f "$dir/node_modules/conf20/dist/index.js" ] || [ ! -f "$dir/node_modules/conf16/dist/index.js" ]; then
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --silent \
    node@22.23.3 \
    conf16@npm:@modelcontextprotocol/conformance@0.1.16 \
    conf20@npm:@modelcontextprotocol/conformance@0.2.0-alpha.12 || { echo "conformance-gateway: npm install failed"; exit 1; }
fi
node="$root/$dir/node_modules/.bin/node"
suite16="$root/$dir/node_modules/conf16/dist/index.js"
suite20="$root/$dir/node_modules/conf20/dist/index.js"
expected="$root/conformance/gateway-expected-failures.yml"
[ -f "$expected" ] || { echo "conformance-gateway: missing $expected"; exit 1; }

cargo build -q -p portico-conformance --bin conformance-server || exit 1
cargo build -q -p portico-cli --bin portico || exit 1
bin="$CARGO_TARGET_DIR/debug"

# The config, the gateway's state and its log live in a temporary directory.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/portico-conformance-gateway.XXXXXX")
gateway_pid=
upstream_pids=
cleanup() {
  if [ -n "$gateway_pid" ]; then
    upstream_pids="$upstream_pids $(pgrep -P "$gateway_pid")"
    # SIGTERM: the gateway stops its upstream and exits; SIGKILL if it has not after 10 s.
    kill "$gateway_pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$gateway_pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$gateway_pid" 2>/dev/null; then
      echo "conformance-gateway: note: the gateway did not exit within 10 s of SIGTERM; killed"
      kill -9 "$gateway_pid" 2>/dev/null
    fi
    wait "$gateway_pid" 2>/dev/null
    # An upstream the gateway left behind (it should have stopped it).
    for pid in $upstream_pids; do
      if kill -0 "$pid" 2>/dev/null; then
        echo "conformance-gateway: note: the upstream (pid $pid) outlived the gateway; killed"
        kill -9 "$pid" 2>/dev/null
      fi
    done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/portico.toml" <<EOF
# Written by scripts/conformance-gateway.sh: the conformance fixtures behind the gateway.
[gateway]
state_dir = "$tmp/state"

# Every call goes through as it would directly: the policy's defaults would ask a person
# about tool calls and sampling, and there is nobody to ask here.
[policy.defaults]
tools = "allow"
sampling = "allow"

[servers.conformance]
command = "$bin/conformance-server"
args = ["--stdio"]
prefix = ""
EOF

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin/portico" serve --config "$tmp/portico.toml" --http "127.0.0.1:$port" 2>"$tmp/gateway.log" &
gateway_pid=$!
# The gateway listens at once and says what it serves once its upstream has started.
for _ in $(seq 1 600); do
  grep -q 'portico: serving' "$tmp/gateway.log" 2>/dev/null && break
  kill -0 "$gateway_pid" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q 'from 1/1 servers' "$tmp/gateway.log"; then
  echo "conformance-gateway: the gateway did not serve its upstream:"
  sed 's/^/    /' "$tmp/gateway.log"
  exit 1
fi
upstream_pids=$(pgrep -P "$gateway_pid" -f conformance-server)
url="http://localhost:$port/mcp"

passed=0; failed=0; checks_passed=0; checks_failed=0; status=0
out_dir="$dir/results-gateway"; rm -rf "$out_dir"; mkdir -p "$out_dir"

# run LABEL ARGS...: runs the suite, counts scenario lines (✓/✗) and the check totals.
run() {
  local label=$1; shift
  local log="$out_dir/${label//\//_}.log"
  "$node" "$@" --expected-failures "$expected" >"$log" 2>&1
  local code=$?
  local p f totals
  p=$(grep -c '^✓' "$log"); f=$(grep -c '^✗' "$log")
  totals=$(grep -Eo 'Total: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  if [ -n "$totals" ]; then
    checks_passed=$((checks_passed + $(echo "$totals" | awk '{print $2}')))
    checks_failed=$((checks_failed + $(echo "$totals" | awk '{print $4}')))
  fi
  passed=$((passed + p)); failed=$((failed + f))
  printf '%-44s %3d scenarios passed, %3d failed  (%s)%s\n' "$label" "$p" "$f" "${totals:-no totals}" "$([ $code -ne 0 ] && echo '  UNEXPECTED')"
  if [ $code -ne 0 ]; then
    status=1
    # The suite's verdict: unexpected failures and stale entries.
    sed 's/\x1b\[[0-9;]*m//g' "$log" | sed -n '/^Unexpected failures/,/^$/p; /^Stale baseline entries/,/^$/p' | sed '/^$/d; s/^/    /'
    grep -q '^=== SUMMARY ===\|^Total:' "$log" || tail -5 "$log" | sed 's/^/    /'
  fi
}

echo "== server scenarios through the gateway ($url; upstream: conformance-server --stdio)"
run gateway-server-0.1.16-all            "$suite16" server --url "$url" --suite all
run gateway-server-0.2.0-req-2025-11-25  "$suite20" server --url "$url" --requirements 2025-11-25
run gateway-server-0.2.0-req-2026-07-28  "$suite20" server --url "$url" --requirements 2026-07-28
run gateway-server-0.2.0-all             "$suite20" server --url "$url" --suite all

if ! kill -0 "$gateway_pid" 2>/dev/null; then
  echo "conformance-gateway: the gateway exited during the run:"
  tail -20 "$tmp/gateway.log" | sed 's/^/    /'
  status=1
fi

echo
echo "conformance-gateway: $passed passed, $failed failed (scenario runs, expected failures included; checks: $checks_passed passed, $checks_failed failed)"
exit $status
