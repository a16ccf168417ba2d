#!/usr/bin/env bash
# Regenerates crates/portico-cli/order.txt: the functions `portico` runs while it idles beside ten
# upstreams (two ping rounds), then those it runs serving calls over stdio and Streamable HTTP,
# then those of its start-up. The linker puts them next to one another in that order
# (crates/portico-cli/build.rs), and `portico serve` gives back its start-up pages once it serves,
# so an idle gateway keeps a few blocks of its code resident (docs/benchmarks.md, thirteenth and
# fifteenth sessions).
#
#   scripts/order-file.sh                    # the profiles release-lto and release
#   scripts/order-file.sh release-lto        # one profile (the file then holds only its names)
#   scripts/order-file.sh --check            # how many of the listed functions each built binary has
#
# Symbol names carry a hash of the profile, the features, the toolchain and the dependencies'
# versions, so the file lists each profile's names; names a build does not have are skipped by
# the linker. Regenerate after a toolchain or dependency update (--check shows when), and as the
# last step after changing code that goes into `portico`: fat LTO names some local functions with
# a numeric suffix (`….9169`) that moves when the code does. Needs valgrind; takes about three
# minutes per profile after the build.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
out="$root/crates/portico-cli/order.txt"

symbols() { nm --defined-only "$1" | awk '$2 ~ /^[tTwW]$/ { print $3 }' | sort -u; }

if [ "${1:-}" = "--check" ]; then
    [ -f "$out" ] || { echo "no $out" >&2; exit 1; }
    for p in release-lto release; do
        bin="$CARGO_TARGET_DIR/$p/portico"
        [ -x "$bin" ] || continue
        have=$(comm -12 <(sort -u "$out") <(symbols "$bin") | wc -l)
        echo "$p: $have of the $(wc -l < "$out") listed functions are in $bin"
    done
    exit 0
fi

command -v valgrind >/dev/null || { echo "scripts/order-file.sh: needs valgrind" >&2; exit 1; }
profiles=("$@")
[ ${#profiles[@]} -gt 0 ] || profiles=(release-lto release)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Function names in a callgrind profile, in the order they first appear.
names() { grep -oE '^c?fn=\([0-9]+\) .*' "$1" | sed -E 's/^c?fn=\([0-9]+\) //'; }

: > "$work/all"
for p in "${profiles[@]}"; do
    # Apart: built together, the bench's features would be unified into portico's crates, and
    # their symbols would be named for that build, not the one users make.
    cargo build --profile "$p" -p portico-cli --bin portico >&2
    cargo build --profile "$p" -p portico-bench --bins >&2
    bin="$CARGO_TARGET_DIR/$p/portico"
    dir="$CARGO_TARGET_DIR/$p"
    cg=(valgrind --tool=callgrind --demangle=no)
    state="$work/state-$p"

    # Idle: ten upstreams. Callgrind dumps once portico serves (start-up) and again after each of
    # two ping rounds (30 s) of idling, then portico gets SIGTERM.
    {
        printf '[gateway]\nstate_dir = "%s"\n\n' "$state"
        for i in $(seq 1 10); do
            printf '[servers.idle%d]\ncommand = "%s"\nargs = ["upstream", "--tools", "10"]\n\n' "$i" "$dir/bench-gateway"
        done
    } > "$work/idle.toml"
    PORTICO_RELEASE_STARTUP_PAGES=0 "${cg[@]}" --callgrind-out-file="$work/idle-$p.out" "$bin" serve \
        --config "$work/idle.toml" --http 127.0.0.1:0 > /dev/null 2> "$work/idle-$p.err" &
    pid=$!
    for _ in $(seq 1 120); do grep -q 'portico: serving' "$work/idle-$p.err" && break; sleep 0.5; done
    sleep 2
    callgrind_control -d "$pid" > /dev/null
    sleep 35
    callgrind_control -d "$pid" > /dev/null
    sleep 35
    callgrind_control -d "$pid" > /dev/null
    kill -TERM "$pid"
    wait "$pid" || true
    start_dump=$(ls "$work/idle-$p.out".*1 2>/dev/null | head -n 1)
    idle_dump=$(ls "$work/idle-$p.out".*2 2>/dev/null | head -n 1)
    idle_dump2=$(ls "$work/idle-$p.out".*3 2>/dev/null | head -n 1)
    if [ -z "$start_dump" ] || [ -z "$idle_dump" ] || [ -z "$idle_dump2" ]; then
        echo "scripts/order-file.sh: callgrind did not dump the start-up and idle profiles ($p):" >&2
        ls "$work" >&2
        exit 1
    fi

    # Calls: tools/call and tools/list through the gateway, over stdio and over HTTP.
    printf '[gateway]\nstate_dir = "%s"\n\n[policy.defaults]\ntools = "allow"\n\n[servers.bench]\ncommand = "%s"\nargs = ["stdio"]\nprefix = ""\n' \
        "$state" "$dir/bench-server" > "$work/calls.toml"
    "$dir/bench-driver" --duration 4 --warmup 1 --workloads seq,list stdio -- \
        "${cg[@]}" --callgrind-out-file="$work/stdio-$p.out" "$bin" serve --config "$work/calls.toml" \
        > /dev/null 2> "$work/stdio-$p.err"
    "$dir/bench-driver" --duration 4 --warmup 1 --workloads http1 http -- \
        "${cg[@]}" --callgrind-out-file="$work/http-$p.out" "$bin" serve --config "$work/calls.toml" \
        --http '127.0.0.1:{port}' > /dev/null 2> "$work/http-$p.err"
    # bench-driver stops the HTTP server with a signal; callgrind writes its file on the way out.
    for _ in $(seq 1 50); do [ -s "$work/http-$p.out" ] && break; sleep 0.2; done

    symbols "$bin" > "$work/symbols-$p"
    for phase in idle stdio http; do
        # A gateway that did not get to serve would give a profile of its start-up only.
        if [ ! -s "$work/$phase-$p.out" ] || ! grep -q 'portico: serving' "$work/$phase-$p.err"; then
            echo "scripts/order-file.sh: portico did not serve in the $phase run ($p):" >&2
            tail -n 20 "$work/$phase-$p.err" >&2
            exit 1
        fi
    done
    # First the allocator (mimalloc, about 80 KB of code: any allocation may take a slow path the
    # profiled rounds did not, e.g. a fresh page for a size class at a later ping) and the code
    # that runs just after the pages are given back (src/pages.rs, the end of the announcing
    # task; the profile runs with the release off); then what an idle gateway runs, then what
    # serving calls runs, then start-up and shutdown: `portico serve` gives back its start-up
    # pages, and what faults back in is the front of the list.
    {
        grep -E '^_{0,2}mi_|7portico5pages|announce_when_ready|release_startup_pages' "$work/symbols-$p"
        for f in "$idle_dump" "$idle_dump2" "$work/stdio-$p.out" "$work/http-$p.out" "$start_dump" "$work/idle-$p.out"; do
            names "$f"
        done
    } | awk 'NR == FNR { have[$0] = 1; next } ($0 in have) && !seen[$0]++' "$work/symbols-$p" - > "$work/order-$p"
    echo "$p: $(wc -l < "$work/order-$p") functions" >&2
    cat "$work/order-$p" >> "$work/all"
done
awk '!seen[$0]++' "$work/all" > "$out"
echo "wrote $out ($(wc -l < "$out") names)" >&2
