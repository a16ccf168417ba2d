#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ (cargo-fuzz, libFuzzer; nightly toolchain), one after another,
# each in one process (libFuzzer's default), starting from a scratch copy of
# fuzz/corpus/TARGET (FUZZ_KEEP_CORPUS=1 copies new inputs back; minimize before committing,
# docs/fuzzing.md). A crash stops the script; its input is left in fuzz/artifacts/TARGET/. Once
# fixed, it goes to fuzz/regressions/TARGET/, which the stable test fuzz/checks/tests/corpus.rs
# replays from then on.
#
#   bash scripts/fuzz.sh --smoke        every target for 15 s (CI)
#   bash scripts/fuzz.sh [SECONDS]      every target for SECONDS (default 600)
#   bash scripts/fuzz.sh SECONDS TARGET…  only those targets
#
# Without a nightly toolchain nothing is fuzzed: the script says so loudly and exits 0 (the
# corpus regression test still runs on stable in the test step).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
CARGO_FUZZ_VERSION=0.13.2
# The nightly toolchain to build with (a dated one, if the plain `nightly` is not installed).
tc=${FUZZ_TOOLCHAIN:-nightly}

secs=600
if [ "${1:-}" = "--smoke" ]; then secs=15; shift; elif [ -n "${1:-}" ]; then secs=$1; shift; fi

if ! rustup run "$tc" rustc --version >/dev/null 2>&1; then
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
  echo "!! FUZZING SKIPPED: no nightly toolchain ($tc; cargo-fuzz needs one; none can be downloaded)"
  echo "!! The stable corpus regression test (fuzz/checks/tests/corpus.rs) still runs."
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
  exit 0
fi
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
  echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION (crates.io, --locked)"
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

# The fuzz build has its own target directory (fuzz/target), whatever CI exports.
unset CARGO_TARGET_DIR
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then mapfile -t targets < <(cargo "+$tc" fuzz list); fi

# `-s none`: the code under test is safe Rust (unsafe is forbidden in the workspace), so the
# address sanitizer would only slow the search down. The allocation bound is the targets' own
# counting allocator (portico_fuzz_checks::alloc_bound); RSS is capped at 2 GiB besides.
echo "== building ${#targets[@]} fuzz targets"
cargo "+$tc" fuzz build -s none

for t in "${targets[@]}"; do
  echo "== fuzz $t for ${secs}s"
  mkdir -p "corpus/$t"
  # Fuzz a scratch copy so a smoke run leaves the committed corpus as it is.
  work=$(mktemp -d)
  cp -r "corpus/$t/." "$work/"
  log="$work.log"
  status=0
  cargo "+$tc" fuzz run "$t" "$work" -s none -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1 || status=$?
  grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|Done)|panicked|SUMMARY|Test unit written|ERROR" "$log" || true
  if [ "$status" -ne 0 ]; then tail -n 40 "$log"; fi
  rm -f "$log"
  if [ "${FUZZ_KEEP_CORPUS:-0}" = 1 ]; then cp -n "$work"/* "corpus/$t/" 2>/dev/null || true; fi
  rm -rf "$work"
  if [ "$status" -ne 0 ]; then echo "!! fuzz target $t failed (input in fuzz/artifacts/$t/)"; exit 1; fi
done
echo "== fuzzing done: ${#targets[@]} targets, ${secs}s each"
