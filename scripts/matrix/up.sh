#!/usr/bin/env bash
# Starts a real Synapse (PyPI matrix-synapse, SQLite) for the Matrix integration tests, on
# 127.0.0.1 at a free port, without federation, with the shared-secret registration API on and
# rate limits raised. Idempotent: installs once into tests/matrix/venv (git-ignored; the pinned,
# hashed requirements are tests/matrix/requirements.lock), and if the server it recorded answers
# it only prints its details.
#
#   scripts/matrix/up.sh           # last stdout line: SYNAPSE_URL=http://127.0.0.1:PORT
#   . tests/matrix/run/env         # SYNAPSE_URL, SYNAPSE_PID, SYNAPSE_SECRET_FILE, SYNAPSE_LOG
#   scripts/matrix/down.sh         # stops it again
#
# Environment (optional): SYNAPSE_HEALTH_TIMEOUT (seconds, default 120).
set -euo pipefail

UV_VERSION=0.13.9
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
root=$repo/tests/matrix
run=$root/run
venv=$root/venv
data=$root/data
lock=$root/requirements.lock
health_timeout=${SYNAPSE_HEALTH_TIMEOUT:-120}
export UV_CACHE_DIR=$root/cache/uv
export SSL_CERT_FILE=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
# What the install marker records: a changed lock file reinstalls.
INSTALL_ID="uv=$UV_VERSION lock=$(sha256sum "$lock" | cut -c1-16)"

log() { echo "matrix-up: $*" >&2; }
record() { printf '%s=%q\n' "$1" "$2" >>"$run/env"; }
die() { log "error: $*"; exit 1; }
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
healthy() { [ -n "$1" ] && curl -sf -m 5 "$1/_matrix/client/versions" >/dev/null 2>&1; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

mkdir -p "$root"
exec 9>"$root/.lock"
flock -w 600 9 || die "another up.sh/down.sh holds $root/.lock"

# --- already running? ------------------------------------------------------------------------
if [ -f "$run/env" ]; then
  # shellcheck disable=SC1091
  . "$run/env"
  if alive "${SYNAPSE_PID:-}" && healthy "${SYNAPSE_URL:-}"; then
    log "already running (pid $SYNAPSE_PID)"
    cat "$run/env"
    echo "SYNAPSE_URL=$SYNAPSE_URL"
    exit 0
  fi
  log "recorded server is not answering; stopping its leftovers"
  flock -u 9
  "$here/down.sh" >&2
  flock -w 600 9 || die "cannot re-take $root/.lock"
fi

start=$SECONDS
# --- install (once) --------------------------------------------------------------------------
if [ "$(cat "$venv/.handoff-installed" 2>/dev/null)" != "$INSTALL_ID" ]; then
  log "installing matrix-synapse into $venv (first time: under a minute)"
  command -v python3 >/dev/null || die "python3 (3.10 or later) with venv is needed"
  rm -rf "$venv" "$root/tools"
  python3 -m venv "$root/tools" || die "python3 -m venv failed (install python3-venv)"
  "$root/tools/bin/pip" install --quiet "uv==$UV_VERSION"
  uv=$root/tools/bin/uv
  "$uv" venv --quiet --python python3 "$venv"
  VIRTUAL_ENV=$venv "$uv" pip install --quiet --require-hashes -r "$lock"
  echo "$INSTALL_ID" >"$venv/.handoff-installed"
  log "installed in $((SECONDS - start)) s"
fi

# --- configuration ---------------------------------------------------------------------------
mkdir -p "$run" "$data"
rm -f "$run/env"
secret_file=$root/registration_secret
[ -s "$secret_file" ] || (umask 077 && python3 -c 'import secrets; print(secrets.token_hex(32))' >"$secret_file")
secret=$(cat "$secret_file")
if [ ! -s "$data/signing.key" ]; then
  "$venv/bin/python" -m synapse._scripts.generate_signing_key -o "$data/signing.key" ||
    die "cannot generate the signing key"
fi
big='{per_second: 10000, burst_count: 100000}'
# The free port is only free when asked: another process may bind it before Synapse does, so a
# start that loses it is retried on a new port.
for attempt in 1 2 3; do
port=$(free_port)
url=http://127.0.0.1:$port
cat >"$data/homeserver.yaml" <<YAML
server_name: localhost
pid_file: $run/synapse.pid
public_baseurl: $url/
listeners:
  - port: $port
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: $data/homeserver.db
log_config: $data/log.yaml
media_store_path: $data/media
signing_key_path: $data/signing.key
registration_shared_secret: "$secret"
enable_registration: false
report_stats: false
trusted_key_servers: []
suppress_key_server_warning: true
federation_domain_whitelist: []
presence:
  enabled: false
url_preview_enabled: false
enable_metrics: false
rc_message: $big
rc_registration: $big
rc_login:
  address: $big
  account: $big
  failed_attempts: $big
rc_joins:
  local: $big
  remote: $big
rc_joins_per_room: $big
rc_invites:
  per_room: $big
  per_user: $big
  per_issuer: $big
rc_admin_redaction: $big
rc_3pid_validation: $big
rc_room_creation: $big
rc_presence:
  per_user: $big
YAML
cat >"$data/log.yaml" <<YAML
version: 1
formatters:
  plain:
    format: '%(asctime)s %(levelname)s %(name)s: %(message)s'
handlers:
  file:
    class: logging.FileHandler
    filename: $run/synapse.log
    formatter: plain
root:
  level: WARNING
  handlers: [file]
disable_existing_loggers: false
YAML

# --- Synapse ---------------------------------------------------------------------------------
(
  cd "$data"
  exec setsid "$venv/bin/python" -m synapse.app.homeserver -c "$data/homeserver.yaml" \
    </dev/null >"$run/synapse.out" 2>&1 9>&-
) &
pid=$!
record SYNAPSE_PID "$pid"
record SYNAPSE_URL "$url"
record SYNAPSE_SECRET_FILE "$secret_file"
record SYNAPSE_LOG "$run/synapse.log"

deadline=$((SECONDS + health_timeout))
lost_port=0
until healthy "$url"; do
  if ! alive "$pid"; then
    if [ "$attempt" -lt 3 ] && grep -qs "Address already in use" "$run/synapse.out" "$run/synapse.log"; then
      log "port $port was taken before Synapse bound it; retrying on another"
      lost_port=1
      break
    fi
    tail -40 "$run/synapse.out" "$run/synapse.log" >&2 2>/dev/null || true
    rm -f "$run/env"
    die "synapse exited during start-up (logs: $run/synapse.out, $run/synapse.log)"
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    flock -u 9
    "$here/down.sh" >&2 || true
    die "synapse not answering after $health_timeout s"
  fi
  sleep 0.3
done
[ "$lost_port" = 1 ] || break
rm -f "$run/env" "$run/synapse.log"
done
log "up in $((SECONDS - start)) s (pid $pid)"
cat "$run/env"
echo "SYNAPSE_URL=$url"
