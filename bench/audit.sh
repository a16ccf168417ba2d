#!/usr/bin/env bash
# The activity log's numbers (crates/portico-host/tests/audit_bench.rs, in release):
#   - appends to SQLite per second with the default redaction (one caller, and 64 at once);
#   - the latency of lone appends (`append_alone`, one at a time, as a gateway with one call in flight);
#   - a query by tool and 1-day time window over 1M records (target: under 50 ms);
#   - the floor: the same rows inserted again into the same schema by bare rusqlite, 1, 32, 64 and
#     1024 records per transaction (CPU µs per record), beside the log's own cost per record.
#
#   PORTICO_BENCH_FLOOR_DB=/path/audit.db bench/audit.sh   # also the floor for another log's rows
#       (e.g. the gateway's, kept by BENCH_GATEWAY_KEEP=1 bench/gateway.sh --parts stdio), at 1, 4,
#       16, 32, 64 and 1024 records per transaction: with the log's indexes, with its index by tool and time
#       alone, and with the table alone
#
#   bench/audit.sh                                   # 200k appends, 1M records
#   PORTICO_BENCH_APPENDS=50000 PORTICO_BENCH_RECORDS=100000 bench/audit.sh   # quicker
#   PORTICO_BENCH_DIR=/some/disk bench/audit.sh       # where the SQLite files go (default: temp)
#   PORTICO_BENCH_FLOOR=0 bench/audit.sh              # the log alone, without the bare-SQLite floor (quick A/B)
#
# Prints lines starting with BENCH. Needs about 1.5 GB of disk for the 1M-record log.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo test --release -p portico-host --test audit_bench -- --ignored --nocapture --test-threads 1 2>&1 \
    | grep -oE '(BENCH.*|test result.*|thread .* panicked.*)' || { echo "bench/audit.sh: failed" >&2; exit 1; }
