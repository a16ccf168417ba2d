# Sourced by bench/gate.sh and bench/eras.sh: builds the `icount` bench (bench/benches/icount.rs)
# and sets `icount_bin` to its executable, or exits 70 if there is none.
icount_bin=$(cargo bench -p portico-bench --bench icount --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "icount" and m.get("executable"):
        print(m["executable"])')
[[ -x "$icount_bin" ]] || { echo "could not build the icount bench" >&2; exit 70; }
