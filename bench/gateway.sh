#!/usr/bin/env bash
# The gateway beside a direct call: builds portico (the CLI) and the bench harness in the
# release-lto profile, then runs bench-gateway, which makes the same `echo` tool call directly to
# the bench server and through `portico serve` (that server its one upstream, prefix ""), over
# stdio and over Streamable HTTP, at 1 and 64 in flight, beside the raw round trip of the same
# transport, and measures the gateway's memory (10 idle upstreams, per downstream HTTP session).
# Prints one table per transport, the memory figures and the targets. Bounded: with the defaults
# (3 s per row after 1 s warmup, 1 round) it takes about two and a half minutes (the memory part
# waits 70 s for the gateway to settle); every process it starts is
# stopped at the end. Extra arguments go to bench-gateway, e.g.
#   bench/gateway.sh --rounds 3               # three interleaved rounds, medians (docs/benchmarks.md)
#   bench/gateway.sh --parts stdio,memory     # only some parts (stdio, http, memory)
#   bench/gateway.sh --era stateless          # the driver in the 2026-07-28 era
#   bench/gateway.sh --no-audit               # the gateway's activity log off ([audit] enabled = false)
#   bench/gateway.sh --place split            # driver and upstream on CPU 0, the gateway (relay, direct
#                                             # server) on CPU 1; --place one: every process on CPU 0
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
# Apart, so that `portico` is the binary users build (features not unified with the bench's).
cargo build --profile release-lto -p portico-cli --bin portico
cargo build --profile release-lto -p portico-bench
bin="$CARGO_TARGET_DIR/release-lto"

echo "== machine"
echo "cores: $(nproc) · cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') · kernel: $(uname -r)"
if git rev-parse --git-dir >/dev/null 2>&1; then
    echo "== gateway vs direct (commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates bench || echo ', with local changes'))"
else
    echo "== gateway vs direct"
fi
exec "$bin/bench-gateway" --bin "$bin" --portico "$bin/portico" "$@"
