#!/usr/bin/env bash
# Starts a throw-away PostgreSQL cluster for the PgStore tests: 127.0.0.1 only, a free port,
# its data directory in a fresh temporary directory, trust authentication for user `postgres`.
# Uses Debian's PostgreSQL (/usr/lib/postgresql/*/bin) or PG_BIN if set.
#
#   scripts/postgres/up.sh        # last stdout line: HANDOFF_TEST_DATABASE_URL=postgres://...
#   . tests/postgres/run/env      # HANDOFF_TEST_DATABASE_URL, PG_PID, PG_DATA, PG_LOG
#   scripts/postgres/down.sh      # stops it and deletes its data
#
# PG_STATE_DIR (default tests/postgres) holds run/env; a second instance uses another one.
# Works as root (PostgreSQL then runs as PG_USER, default nobody) and as an ordinary user.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
state=$(realpath -m -- "${PG_STATE_DIR:-$repo/tests/postgres}")
run=$state/run

log() { echo "postgres-up: $*" >&2; }
die() { log "error: $*"; exit 1; }

if [ -z "${PG_BIN:-}" ]; then
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
fi
[ -n "$PG_BIN" ] && [ -x "$PG_BIN/pg_ctl" ] && [ -x "$PG_BIN/initdb" ] ||
  die "no PostgreSQL binaries (install Debian's postgresql, or set PG_BIN)"

mkdir -p "$run"
exec 9>"$state/.lock"
flock -w 120 9 || die "another up.sh/down.sh holds $state/.lock"

# Already running: print its URL again.
if [ -f "$run/env" ]; then
  # shellcheck disable=SC1091
  . "$run/env"
  if [ -n "${PG_PID:-}" ] && kill -0 "$PG_PID" 2>/dev/null &&
    "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; then
    log "already running (pid $PG_PID)"
    echo "HANDOFF_TEST_DATABASE_URL=$HANDOFF_TEST_DATABASE_URL"
    exit 0
  fi
  log "recorded cluster is not running; starting a new one"
  flock -u 9
  "$here/down.sh" >&2 || true
  flock -w 120 9 || die "cannot re-take $state/.lock"
fi

# PostgreSQL refuses to run as root.
if [ "$(id -u)" = 0 ]; then
  pg_user=${PG_USER:-nobody}
  as_pg() { runuser -u "$pg_user" -- "$@"; }
else
  pg_user=$(id -un)
  as_pg() { "$@"; }
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/handoff-pg.XXXXXX")
chmod 755 "$tmp"
data=$tmp/data
mkdir -p "$data"
[ "$(id -u)" = 0 ] && chown "$pg_user" "$tmp" "$data"
chmod 700 "$data"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg "$PG_BIN/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
  >"$tmp/initdb.log" 2>&1 || { cat "$tmp/initdb.log" >&2; rm -rf "$tmp"; die "initdb failed"; }
# The socket goes into the temp dir too (the default /var/run/postgresql may not be writable);
# fsync off: the cluster is thrown away.
as_pg "$PG_BIN/pg_ctl" -D "$data" -l "$tmp/postgres.log" -w -t 60 -o \
  "-c listen_addresses=127.0.0.1 -p $port -k $tmp -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
  start >&2 9>&- || { cat "$tmp/postgres.log" >&2; rm -rf "$tmp"; die "pg_ctl start failed"; }
pid=$(head -1 "$data/postmaster.pid")
url="postgres://postgres@127.0.0.1:$port/postgres"
{
  printf 'PG_PID=%q\n' "$pid"
  printf 'PG_PORT=%q\n' "$port"
  printf 'PG_TMP=%q\n' "$tmp"
  printf 'PG_DATA=%q\n' "$data"
  printf 'PG_LOG=%q\n' "$tmp/postgres.log"
  printf 'PG_BIN=%q\n' "$PG_BIN"
  printf 'HANDOFF_TEST_DATABASE_URL=%q\n' "$url"
} >"$run/env"
log "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (pid $pid, data $data)"
echo "HANDOFF_TEST_DATABASE_URL=$url"
