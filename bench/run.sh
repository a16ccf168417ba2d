#!/usr/bin/env bash
# Builds the harness (profile release-lto) and runs every workload against the Portico bench server (both
# eras, stdio and Streamable HTTP) and the raw echo and bare hyper baselines. Extra arguments go to every bench-driver run, e.g.
#   bench/run.sh --duration 10 --json
# `bench/run.sh --compare [ARGS…]` runs bench/compare.sh instead: Portico beside rmcp, one table.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--compare" ]]; then
    shift
    exec bench/compare.sh "$@"
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --profile release-lto -p portico-bench
bin="$CARGO_TARGET_DIR/release-lto"

echo "== machine"
echo "cores: $(nproc) · cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') · kernel: $(uname -r)"

status=0
echo "== raw-echo baseline (the ceiling)"
"$bin/bench-driver" "$@" raw-echo --bin "$bin/raw-echo" || status=$?
echo "== portico bench-server, handshake era (2025-11-25)"
"$bin/bench-driver" "$@" --era handshake stdio -- "$bin/bench-server" stdio || status=$?
echo "== portico bench-server, stateless era (2026-07-28)"
"$bin/bench-driver" "$@" --era stateless stdio -- "$bin/bench-server" stdio || status=$?
echo "== experiment: the same server on non-blocking pipes (bench-server stdio-pipe), handshake era"
"$bin/bench-driver" "$@" --era handshake stdio -- "$bin/bench-server" stdio-pipe || status=$?
echo "== http-echo baseline (bare hyper, the HTTP ceiling)"
"$bin/bench-driver" "$@" --era bare http -- "$bin/http-echo" '{port}' || status=$?
echo "== portico bench-server http, handshake era (one session per connection; then idle-session memory)"
"$bin/bench-driver" "$@" --era handshake http -- "$bin/bench-server" http '{port}' || status=$?
echo "== portico bench-server http, stateless era (2026-07-28)"
"$bin/bench-driver" "$@" --era stateless http -- "$bin/bench-server" http '{port}' || status=$?
exit "$status"
