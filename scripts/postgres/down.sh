#!/usr/bin/env bash
# Stops the cluster scripts/postgres/up.sh started (by the pid it recorded in run/env) and
# deletes its temporary data directory. Safe to run when nothing is running.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
state=$(realpath -m -- "${PG_STATE_DIR:-$repo/tests/postgres}")
run=$state/run

log() { echo "postgres-down: $*" >&2; }

[ -f "$run/env" ] || exit 0
mkdir -p "$state"
exec 9>"$state/.lock"
flock -w 120 9 || { log "another up.sh/down.sh holds $state/.lock"; exit 1; }
# shellcheck disable=SC1091
. "$run/env"

# Only the recorded postmaster (guard against a reused pid: its command line names the data dir).
if [ -n "${PG_PID:-}" ] && kill -0 "$PG_PID" 2>/dev/null &&
  tr '\0' ' ' <"/proc/$PG_PID/cmdline" 2>/dev/null | grep -q -- "$PG_DATA"; then
  log "stopping PostgreSQL (pid $PG_PID)"
  # SIGINT = PostgreSQL's "fast" shutdown: disconnects clients, then exits.
  kill -INT "$PG_PID" 2>/dev/null || true
  for _ in $(seq 300); do
    kill -0 "$PG_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$PG_PID" 2>/dev/null && kill -KILL "$PG_PID" 2>/dev/null || true
fi
case "${PG_TMP:-}" in
  */handoff-pg.*) rm -rf -- "$PG_TMP" ;;
esac
rm -f "$run/env"
