#!/usr/bin/env bash
# Stops the Synapse scripts/matrix/up.sh started, by the pid it recorded in tests/matrix/run/env,
# and waits for it to exit. Keeps the install and the database. Safe when nothing runs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)/tests/matrix
run=$root/run

log() { echo "matrix-down: $*" >&2; }

mkdir -p "$root"
exec 9>"$root/.lock"
flock -w 600 9 || { log "another up.sh/down.sh holds $root/.lock"; exit 1; }

# Whether pid $1 is alive and its command line is Synapse's (guards against a reused pid).
ours() {
  [ -n "$1" ] && kill -0 "$1" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q -- synapse.app.homeserver
}

SYNAPSE_PID=''
if [ -f "$run/env" ]; then
  # shellcheck disable=SC1091
  . "$run/env"
fi
if ours "$SYNAPSE_PID"; then
  log "stopping synapse (pid $SYNAPSE_PID)"
  # up.sh starts it in its own session: TERM the group.
  kill -TERM -- "-$SYNAPSE_PID" 2>/dev/null || kill -TERM "$SYNAPSE_PID" 2>/dev/null || true
  for _ in $(seq 300); do
    kill -0 "$SYNAPSE_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$SYNAPSE_PID" 2>/dev/null; then
    log "synapse did not exit in 30 s; killing it"
    kill -KILL -- "-$SYNAPSE_PID" 2>/dev/null || kill -KILL "$SYNAPSE_PID" 2>/dev/null || true
  fi
fi
rm -f "$run/env"
log "stopped"
