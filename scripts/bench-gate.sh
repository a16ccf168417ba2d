#!/usr/bin/env bash
# The instruction-count regression gate (bench/gate.sh), run by hand rather than in .ci/run:
# it needs a release build of the workspace and the bench crate (about 10 minutes on 2 cores
# from a cold cache, twice the 5 minutes .ci/run could give it), and its counts are of one
# machine's build (glibc picks memcpy variants by CPU, valgrind hides SHA-NI from sha2), so
# bench/baseline.json is updated on the machine that checks it.
#
#   scripts/bench-gate.sh                  # every scenario, the gateway's call path included
#   scripts/bench-gate.sh --only gateway   # one scenario
set -euo pipefail
exec bash "$(dirname "$0")/../bench/gate.sh" "$@"
