#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests, from Debian's packages (installed with apt-get when
# missing: CI runs as root on a fresh machine). Its data lives in a temp dir, it listens on
# 127.0.0.1 on a free port with trust authentication (and fsync off: nothing in it is kept),
# and runs as the `postgres` user when started by root (initdb refuses root).
#
#   scripts/postgres.sh start            # prints PGDIR=<dir> and PGURL=postgres://postgres@127.0.0.1:<port>/postgres
#   scripts/postgres.sh stop DIR         # stops it; the data stays
#   scripts/postgres.sh start-again DIR  # starts it again, same port
#   scripts/postgres.sh kill DIR         # SIGKILLs the server and all its processes (a crash)
#   scripts/postgres.sh destroy DIR      # stops it and removes DIR
#
# Exit 69 when PostgreSQL is missing and cannot be installed (not root).
set -euo pipefail

find_bin() {
    local d
    d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && echo "$d"
    return 0
}

pg_bin() {
    local bin
    bin="$(find_bin)"
    if [ -n "$bin" ]; then
        echo "$bin"
        return
    fi
    if [ "$(id -u)" != 0 ]; then
        echo "postgres.sh: PostgreSQL is not installed, and only root may install it (apt-get install postgresql)" >&2
        exit 69
    fi
    echo "postgres.sh: installing Debian's postgresql" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 || true
    apt-get install -y -qq --no-install-recommends postgresql >&2
    bin="$(find_bin)"
    if [ -z "$bin" ]; then
        echo "postgres.sh: no initdb after installing postgresql" >&2
        exit 69
    fi
    echo "$bin"
}

# Runs a command as the postgres user when we are root.
as_pg() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

free_port() {
    local p
    for _ in $(seq 1 100); do
        p=$((20000 + RANDOM % 30000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return
        fi
    done
    echo "postgres.sh: no free port" >&2
    exit 1
}

run() {
    local bin="$1" dir="$2" port
    port="$(cat "$dir/port")"
    if ! as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off" start >/dev/null; then
        echo "postgres.sh: postgres did not start:" >&2
        tail -n 20 "$dir/postgres.log" >&2 || true
        exit 1
    fi
}

cmd="${1:-}"
case "$cmd" in
    start)
        bin="$(pg_bin)"
        dir="$(mktemp -d "${TMPDIR:-/tmp}/portico-pg.XXXXXX")"
        chmod 755 "$dir"
        if [ "$(id -u)" = 0 ]; then
            chown postgres: "$dir"
        fi
        if ! as_pg "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --no-sync >"$dir/initdb.log" 2>&1; then
            echo "postgres.sh: initdb failed:" >&2
            cat "$dir/initdb.log" >&2
            exit 1
        fi
        free_port >"$dir/port"
        run "$bin" "$dir"
        echo "PGDIR=$dir"
        echo "PGURL=postgres://postgres@127.0.0.1:$(cat "$dir/port")/postgres"
        ;;
    stop)
        dir="${2:?usage: postgres.sh stop DIR}"
        as_pg "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
        ;;
    kill)
        dir="${2:?usage: postgres.sh kill DIR}"
        pid="$(head -n 1 "$dir/data/postmaster.pid")"
        # Freeze the postmaster so it cannot restart its children, kill them, then it: no
        # process of the cluster runs on, nothing is shut down cleanly.
        kill -STOP "$pid"
        pkill -KILL -P "$pid" || true
        kill -KILL "$pid"
        for _ in $(seq 1 200); do
            kill -0 "$pid" 2>/dev/null || pgrep -P "$pid" >/dev/null || break
            sleep 0.05
        done
        ;;
    start-again)
        dir="${2:?usage: postgres.sh start-again DIR}"
        run "$(pg_bin)" "$dir"
        ;;
    destroy)
        dir="${2:?usage: postgres.sh destroy DIR}"
        case "$dir" in
            "${TMPDIR:-/tmp}"/portico-pg.*) ;;
            *) echo "postgres.sh: $dir is not a cluster this script made" >&2; exit 64 ;;
        esac
        if [ -f "$dir/data/postmaster.pid" ]; then
            as_pg "$(pg_bin)/pg_ctl" -D "$dir/data" -m immediate -w -t 60 stop >/dev/null 2>&1 || true
        fi
        rm -rf "$dir"
        ;;
    *)
        echo "usage: postgres.sh start | stop DIR | kill DIR | start-again DIR | destroy DIR" >&2
        exit 64
        ;;
esac
