#!/usr/bin/env bash
# Portico beside rmcp (the official Rust MCP SDK, bench/rmcp/, its own workspace): builds both in
# release, runs bench-driver against Portico's bench-server and rmcp-bench-server one after the
# other with the same settings, and prints one table.
#
#   bench/compare.sh                         # handshake era, 3 s per workload after 1 s warmup
#   bench/compare.sh --era stateless         # the 2026-07-28 era instead
#   bench/compare.sh --rmcp stdio            # only rmcp's stdio() (default: stdio and stdio-pipes)
#   bench/compare.sh --workloads seq,pipe64  # other arguments go to every bench-driver run
#
# rmcp is served two ways: `stdio` is rmcp's `transport::stdio()` (Tokio's stdin/stdout, what its
# README and examples use); `stdio-pipes` is its `transport::stdio_pipes()` (non-blocking pipes, as
# Portico's `stdio()` uses when stdin/stdout are pipes). Ratios are Portico ÷ rmcp calls/s.
# Builds use $CARGO_TARGET_DIR (default target/) for Portico and $RMCP_TARGET_DIR (default
# target/rmcp/) for rmcp. Needs python3 for the table.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
rmcp_target="${RMCP_TARGET_DIR:-$CARGO_TARGET_DIR/rmcp}"

era=handshake
rmcp_modes=(stdio stdio-pipes)
has_duration=0
driver_args=()
while (($#)); do
    case "$1" in
        --era) era="$2"; shift 2 ;;
        --rmcp) IFS=, read -r -a rmcp_modes <<<"$2"; shift 2 ;;
        --duration) has_duration=1; driver_args+=("$1" "$2"); shift 2 ;;
        *) driver_args+=("$1"); shift ;;
    esac
done
((has_duration)) || driver_args+=(--duration 3)

cargo build --release -p portico-bench
(cd bench/rmcp && CARGO_TARGET_DIR="$rmcp_target" cargo build --release)
bin="$CARGO_TARGET_DIR/release"
rbin="$rmcp_target/release"
rmcp_version=$(awk '/^name = "rmcp"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' bench/rmcp/Cargo.lock)

echo "== machine"
echo "cores: $(nproc) · cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') · kernel: $(uname -r) · load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== rmcp $rmcp_version · era $era · driver args: ${driver_args[*]}"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
run() { # name, server command…
    local name=$1; shift
    echo "-- $name" >&2
    "$bin/bench-driver" "${driver_args[@]}" --era "$era" --json stdio -- "$@" >"$out/$name.json" || status=$?
}
run portico "$bin/bench-server" stdio
names=(portico)
for mode in "${rmcp_modes[@]}"; do
    run "rmcp-$mode" "$rbin/rmcp-bench-server" "$mode"
    names+=("rmcp-$mode")
done

python3 - "$out" "${names[@]}" <<'PY'
import json, sys
out, names = sys.argv[1], sys.argv[2:]
runs = {n: json.load(open(f"{out}/{n}.json")) for n in names}
def fig(n, w):
    return next((f for f in runs[n]["figures"] if f["workload"] == w), None)
def rate(f):
    if f is None: return "–"
    if f["void"]: return "VOID"
    return f"{f['calls_per_s']:,.0f}"
def cpu(f):
    return "–" if f is None or f["void"] else f"{f['server_cpu_us_per_call']:,.2f}"
def ratio(a, b):
    if a is None or b is None or a["void"] or b["void"] or not b["calls_per_s"]: return "–"
    return f"{a['calls_per_s'] / b['calls_per_s']:.2f}×"
rmcps = names[1:]
head = ["workload", "Portico calls/s"]
for n in rmcps: head += [f"{n} calls/s", "ratio"]
head += ["Portico CPU µs/call"] + [f"{n} CPU µs/call" for n in rmcps]
print("| " + " | ".join(head) + " |")
print("|---|" + "---:|" * (len(head) - 1))
for f in runs["portico"]["figures"]:
    w = f["workload"]
    row = [w, rate(f)]
    for n in rmcps: row += [rate(fig(n, w)), ratio(f, fig(n, w))]
    row += [cpu(f)] + [cpu(fig(n, w)) for n in rmcps]
    print("| " + " | ".join(row) + " |")
print()
print("ratio = Portico calls/s ÷ rmcp calls/s; CPU = server user+system time per call")
for n in names:
    notes = [f"{f['workload']}: {f['void'] or f['note']}" for f in runs[n]["figures"] if f["void"] or f["note"]]
    if notes: print(f"{n}: " + "; ".join(notes))
PY
exit "$status"
