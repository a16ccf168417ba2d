#!/usr/bin/env bash
# Portico beside rmcp (the official Rust MCP SDK, bench/rmcp/, its own workspace): builds both in
# the release-lto profile, runs bench-driver against Portico's bench-server and rmcp-bench-server with the same
# settings, interleaved (Portico, rmcp, Portico, … for --rounds rounds), and prints one table per
# transport and era with the median of the rounds and the ratio Portico ÷ rmcp.
#
#   bench/compare.sh                          # everything: stdio + HTTP, 1 round, 3 s per workload after 1 s warmup
#   bench/compare.sh --rounds 3               # three interleaved rounds, medians (what docs/benchmarks.md reports)
#   bench/compare.sh --transport http         # only HTTP (or stdio)
#   bench/compare.sh --era stateless          # stdio in the 2026-07-28 era (HTTP always runs both eras)
#   bench/compare.sh --rmcp stdio             # stdio: only rmcp's stdio() (default: stdio and stdio-pipes)
#   bench/compare.sh --pin                    # the driver on CPU 0, each server on CPU 1 (taskset), as in a
#                                             # container limited to one core; each table is followed by its tails
#   bench/compare.sh --transport http --threads   # HTTP also on a connection thread per CPU
#   bench/compare.sh --profile release        # both sides built with plain `--release` (what #18's figures
#                                             # used, with --pin) instead of release-lto
#   bench/compare.sh --duration 5 --sessions 2000   # other arguments go to every bench-driver run
#
# stdio: rmcp is served two ways: `stdio` is rmcp's `transport::stdio()` (Tokio's stdin/stdout,
# what its README and examples use); `stdio-pipes` is its `transport::stdio_pipes()` (non-blocking
# pipes, as Portico's `stdio()` uses when stdin/stdout are pipes).
# HTTP: Portico's `bench-server http PORT` (StreamableHttp::serve) against rmcp's
# StreamableHttpService on axum: `rmcp-bench-server http PORT` (session mode) in the handshake era,
# `http-stateless PORT` (stateless, JSON responses) in the 2026-07-28 era; `http-echo` (bare hyper)
# is the ceiling, in the same rounds. With --threads, also "Portico, threads" (`bench-server
# http-threads PORT`: each connection on one of a connection thread per CPU) and its ceiling
# (`http-echo PORT --threads`). `sessions` compares KB of server RSS per idle session (ratio =
# rmcp ÷ Portico, how many times less Portico uses).
# Both are built with the `release-lto` profile (fat LTO, one codegen unit; the same in both
# workspaces) unless --profile says otherwise. Builds use $CARGO_TARGET_DIR (default target/) for
# Portico and $RMCP_TARGET_DIR (default target/rmcp/) for rmcp. Needs python3.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
rmcp_target="${RMCP_TARGET_DIR:-$CARGO_TARGET_DIR/rmcp}"

era=handshake
rmcp_modes=stdio,stdio-pipes
transport=all
rounds=1
pin=()
threads=()
profile=release-lto
has_duration=0
driver_args=()
while (($#)); do
    case "$1" in
        --era) era="$2"; shift 2 ;;
        --rmcp) rmcp_modes="$2"; shift 2 ;;
        --transport) transport="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --pin) pin=(--pin); shift ;;
        --threads) threads=(--threads); shift ;;
        --profile) profile="$2"; shift 2 ;;
        --duration) has_duration=1; driver_args+=("$1" "$2"); shift 2 ;;
        *) driver_args+=("$1"); shift ;;
    esac
done
((has_duration)) || driver_args+=(--duration 3)

case "$profile" in release | release-lto) ;; *) echo "--profile: release or release-lto" >&2; exit 64 ;; esac
cargo build --profile "$profile" -p portico-bench
(cd bench/rmcp && CARGO_TARGET_DIR="$rmcp_target" cargo build --profile "$profile")
rmcp_version=$(awk '/^name = "rmcp"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' bench/rmcp/Cargo.lock)

echo "== machine"
echo "cores: $(nproc) · cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') · kernel: $(uname -r) · load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== rmcp $rmcp_version · profile $profile · stdio era $era · $rounds round(s) · ${pin:+pinned (driver CPU 0, server CPU 1) · }driver args: ${driver_args[*]}"

exec python3 bench/compare.py --bin "$CARGO_TARGET_DIR/$profile" --rbin "$rmcp_target/$profile" --era "$era" \
    --rmcp "$rmcp_modes" --transport "$transport" --rounds "$rounds" "${pin[@]}" "${threads[@]}" -- "${driver_args[@]}"
