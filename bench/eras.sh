#!/usr/bin/env bash
# The stateless era (2026-07-28) against the handshake era, with the floor in the same run.
#
# Runs `bench-driver` over stdio in both eras against the bench server (Portico) and against
# `raw-echo` (the floor: `bench/src/floor.rs`, which answers each era's echo with the same bytes
# as the bench server and does nothing else), alternating servers and eras for each round. Prints
# the median of each figure and, per workload:
#   - each server's stateless ÷ handshake calls/s;
#   - the floor's extra server CPU per call in the stateless era (what the era's bytes cost
#     the least server);
#   - "reach": the calls/s ratio a server could get at best if it paid Portico's handshake-era
#     CPU per call plus only that extra, H ÷ (H + extra floor CPU), when the server is the
#     bottleneck. A target above the reach is out of reach for Portico's handshake cost.
#
#   bench/eras.sh                         # 3 rounds, 4 s per workload
#   bench/eras.sh --rounds 5 --duration 2 --workloads seq,pipe64,pipe1024
#   bench/eras.sh --pin                   # driver on CPU 0, server on CPU 1 (taskset)
#   bench/eras.sh --icount                # also instructions per echo (callgrind, as bench/gate.sh
#                                         # counts them): echo-handshake, echo-stateless and the
#                                         # floor's floor-handshake, floor-stateless
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
rounds=3
duration=4
workloads=seq,pipe64,pipe1024
pin=0
icount=0
while (($#)); do
    case "$1" in
        --rounds) rounds="$2"; shift 2 ;;
        --duration) duration="$2"; shift 2 ;;
        --workloads) workloads="$2"; shift 2 ;;
        --pin) pin=1; shift ;;
        --icount) icount=1; shift ;;
        *) echo "unknown argument $1" >&2; exit 64 ;;
    esac
done
cargo build -q --release -p portico-bench --bin bench-driver --bin bench-server --bin raw-echo
bin="$CARGO_TARGET_DIR/release"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ((icount)); then
    command -v valgrind >/dev/null || { echo "--icount needs valgrind (apt-get install valgrind)" >&2; exit 69; }
    . bench/icount-bin.sh
    counter=$icount_bin
    for s in echo-handshake echo-stateless floor-handshake floor-stateless; do
        for r in 4 24; do
            echo "icount $s $r" >&2
            valgrind --tool=callgrind --callgrind-out-file="$out/cg.$s.$r" "$counter" "$s" "$r" >/dev/null 2>&1
        done
    done
fi
drv=() srv=()
if ((pin)); then
    command -v taskset >/dev/null || { echo "--pin needs taskset (util-linux)" >&2; exit 69; }
    drv=(taskset -c 0) srv=(taskset -c 1)
fi
for r in $(seq 1 "$rounds"); do
    for server in bench-server raw-echo; do
        cmd=("$bin/$server")
        [[ $server == bench-server ]] && cmd+=(stdio)
        for era in handshake stateless; do
            echo "round $r: $server, $era era" >&2
            "${drv[@]}" "$bin/bench-driver" --duration "$duration" --warmup 1 --workloads "$workloads" \
                --era "$era" --json stdio -- "${srv[@]}" "${cmd[@]}" > "$out/$r.$server.$era.json"
        done
    done
done
python3 - "$out" "$rounds" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
fig = {}  # (server, era, workload) -> list of figures
for name in sorted(n for n in os.listdir(out) if n.endswith(".json")):
    _, server, era, _ = name.split(".")
    for f in json.load(open(os.path.join(out, name)))["figures"]:
        if f.get("void"):
            sys.exit(f"{name}: {f['workload']} void: {f['void']}")
        fig.setdefault((server, era, f["workload"]), []).append(f)
med = lambda xs, k: statistics.median(x[k] for x in xs)
workloads = sorted({w for (_, _, w) in fig}, key=lambda w: (w != "seq", len(w), w))
print(f"medians of {rounds} rounds; CPU in µs per call (user+system)")
print(f"{'workload':<10}{'server':<14}{'era':<11}{'calls/s':>11}{'p99 µs':>9}{'srv CPU':>9}{'drv CPU':>9}")
for w in workloads:
    for server in ("bench-server", "raw-echo"):
        for era in ("handshake", "stateless"):
            xs = fig[(server, era, w)]
            print(f"{w:<10}{server:<14}{era:<11}{med(xs, 'calls_per_s'):>11.0f}{med(xs, 'p99_us'):>9.1f}"
                  f"{med(xs, 'server_cpu_us_per_call'):>9.2f}{med(xs, 'driver_cpu_us_per_call'):>9.2f}")
print()
print(f"{'workload':<10}{'Portico s÷h':>12}{'floor s÷h':>11}{'floor extra CPU':>17}{'reach':>8}")
for w in workloads:
    ratio = lambda s: med(fig[(s, "stateless", w)], "calls_per_s") / med(fig[(s, "handshake", w)], "calls_per_s")
    extra = med(fig[("raw-echo", "stateless", w)], "server_cpu_us_per_call") - med(fig[("raw-echo", "handshake", w)], "server_cpu_us_per_call")
    h = med(fig[("bench-server", "handshake", w)], "server_cpu_us_per_call")
    print(f"{w:<10}{ratio('bench-server'):>12.2f}{ratio('raw-echo'):>11.2f}{extra:>14.2f} µs{h / (h + extra):>8.2f}")
counts = {}
for name in os.listdir(out):
    if name.startswith("cg."):
        _, scenario, r = name.split(".")
        total = next(int(l.split()[1]) for l in open(os.path.join(out, name)) if l.startswith(("summary:", "totals:")))
        counts.setdefault(scenario, {})[int(r)] = total
if counts:
    ir = {s: (c[24] - c[4]) / (20 * 64) for s, c in counts.items()}
    h, s, fh, fs = ir["echo-handshake"], ir["echo-stateless"], ir["floor-handshake"], ir["floor-stateless"]
    print()
    print("instructions per echo (client and server, in-process):")
    print(f"  Portico: handshake {h:,.0f}, stateless {s:,.0f}, h÷s {h / s:.2f}")
    print(f"  floor:   handshake {fh:,.0f}, stateless {fs:,.0f}, h÷s {fh / fs:.2f}, extra {fs - fh:,.0f}")
    print(f"  reach: Portico's handshake count plus the floor's extra, h÷(h+extra) = {h / (h + fs - fh):.2f}")
PY
