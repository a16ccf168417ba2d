#!/usr/bin/env bash
# Instruction-count regression gate. Builds the `icount` workloads (bench/benches/icount.rs),
# runs each scenario under `valgrind --tool=callgrind` at two round counts, and takes
# (Ir(high) − Ir(low)) ÷ (ops(high) − ops(low)): user-space instructions per op, start-up
# cancelled out. Compares them with bench/baseline.json and fails when one grew by more than
# the threshold (default 5 %).
#
#   bench/gate.sh                  # measure and compare (exit 1 on a regression)
#   bench/gate.sh --update         # measure and rewrite bench/baseline.json (commit it with the change
#                                  # that moved the counts, saying why in the message)
#   bench/gate.sh --threshold 3    # another threshold, in percent
#   bench/gate.sh --only list,echo-stateless
#   bench/gate.sh --only gateway   # `portico serve`'s call path: policy → upstream → activity log
#   bench/gate.sh --only gateway-http   # the same call path to an upstream over Streamable HTTP
#
# Needs valgrind and python3. Counts are of one machine's build (compiler, glibc, CPU features
# picked at run time by memcpy and friends): update the baseline on the machine that checks it.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
update=0
threshold=5
only=""
while (($#)); do
    case "$1" in
        --update) update=1; shift ;;
        --threshold) threshold="$2"; shift 2 ;;
        --only) only="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 64 ;;
    esac
done
command -v valgrind >/dev/null || { echo "gate.sh needs valgrind (apt-get install valgrind)" >&2; exit 69; }

. bench/icount-bin.sh
bin=$icount_bin
# The `gateway` scenario's upstream: the bench server, a child process callgrind does not follow
# (only the gateway is counted).
cargo build -q --release -p portico-bench --bin bench-server
export PORTICO_GATE_UPSTREAM="$CARGO_TARGET_DIR/release/bench-server"

exec python3 - "$bin" "$update" "$threshold" "$only" <<'PY'
import json, os, re, subprocess, sys, tempfile
bin, update, threshold, only = sys.argv[1], sys.argv[2] == "1", float(sys.argv[3]), sys.argv[4]
# scenario → (low rounds, high rounds, ops per round)
SCENARIOS = {
    "echo-handshake": (4, 24, 64),
    "echo-2025-06-18": (4, 24, 64),
    "echo-stateless": (4, 24, 64),
    "list": (4, 24, 1),
    "http-stateless": (50, 450, 1),
    "http-handshake": (50, 450, 1),
    "gateway": (4, 24, 64),
    "gateway-list": (4, 24, 1),
    "gateway-big": (4, 24, 1),
    "gateway-http": (20, 120, 1),
}
if only:
    SCENARIOS = {k: v for k, v in SCENARIOS.items() if k in only.split(",")}
path = "bench/baseline.json"
baseline = json.load(open(path)) if os.path.exists(path) else {"instructions_per_op": {}}

def ir(scenario, rounds):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", bin, scenario, str(rounds)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        m = re.search(r"^summary: (\d+)", open(out).read(), re.M)
        return int(m.group(1))

measured = {}
failed = []
print(f"{'scenario':<16} {'Ir/op':>10} {'baseline':>10} {'change':>8}")
for name, (lo, hi, per) in SCENARIOS.items():
    per_op = (ir(name, hi) - ir(name, lo)) / ((hi - lo) * per)
    measured[name] = round(per_op)
    base = baseline["instructions_per_op"].get(name)
    if base:
        change = (per_op - base) / base * 100
        mark = "  REGRESSION" if change > threshold else ""
        if change > threshold:
            failed.append(name)
        print(f"{name:<16} {per_op:>10,.0f} {base:>10,} {change:>+7.1f}%{mark}")
    else:
        print(f"{name:<16} {per_op:>10,.0f} {'–':>10} {'new':>8}")
if update:
    baseline["instructions_per_op"].update(measured)
    baseline["note"] = ("user-space instructions per op (callgrind), from bench/gate.sh; "
                        "update with bench/gate.sh --update on the machine that checks them")
    json.dump(baseline, open(path, "w"), indent=2, sort_keys=True)
    open(path, "a").write("\n")
    print(f"wrote {path}")
elif failed:
    print(f"instruction counts grew more than {threshold} %: {', '.join(failed)}")
    sys.exit(1)
else:
    print(f"ok: no scenario grew more than {threshold} %")
PY
