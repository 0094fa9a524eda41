#!/usr/bin/env bash
# A private PostgreSQL and Redis on 127.0.0.1 for the production profile: what .ci/run starts for the
# production-profile tests, and what a developer can start to run them (or to try the profile) locally.
#
#   deploy/production/services.sh start   # starts both from $LEAF_LIVE_SERVICES_DIR, creating them on first use
#   deploy/production/services.sh fresh   # a throwaway pair: wipes the directory first (what .ci/run uses)
#   . "${LEAF_LIVE_SERVICES_DIR:-/tmp/leaf_live_services}/env"   # exports DAGSTER_PG_*, LEAF_LIVE_CELERY_*, LEAF_LIVE_PROD_TESTS=1
#   . "${LEAF_LIVE_SERVICES_DIR:-/tmp/leaf_live_services}/inbox.env"   # LEAF_LIVE_INBOX + PGPASSWORD: the
#                                 # submission service's inbox in database leaf_live_inbox (production profile)
#   deploy/production/services.sh stop    # stops both (idempotent; keeps the data)
#
# `start` keeps an existing cluster: the runs, event logs and schedules in PostgreSQL and the queued Celery
# tasks in Redis survive a stop, a crash or a reboot (PostgreSQL with fsync on; Redis with its append-only
# file, fsync every second). `fresh` builds a new cluster with fsync off and Redis in memory only: fast, and
# nothing survives, which is what tests want. Both first stop whatever an earlier start left in the same
# directory (even after a crash). Nothing listens beyond 127.0.0.1.
# Installs the Debian packages `postgresql` and `redis-server` when they are missing and we are root
# (CI runs as root on a clean clone); PostgreSQL refuses to run as root, so as root the server runs as
# the `postgres` system user the package creates.
set -euo pipefail

DIR="${LEAF_LIVE_SERVICES_DIR:-${TMPDIR:-/tmp}/leaf_live_services}"
PG_PORT="${LEAF_LIVE_PG_PORT:-55432}"
REDIS_PORT="${LEAF_LIVE_REDIS_PORT:-56379}"
PG_USER=leaf_live
PG_DB=leaf_live
INBOX_DB=leaf_live_inbox  # the submission service's inbox (LEAF_LIVE_INBOX), beside the Dagster storage
# Local throwaway credentials (the cluster lives in $DIR and dies with `stop`); not a secret anywhere else.
PG_PASSWORD="${LEAF_LIVE_PG_PASSWORD:-leaf-live-local}"
REDIS_PASSWORD="${LEAF_LIVE_REDIS_PASSWORD:-leaf-live-local}"

say() { echo "services: $*" >&2; }
die() { say "$*"; exit 1; }

pg_bindir() {
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
  [ -n "$d" ] && [ -x "$d/initdb" ] && { echo "$d"; return; }
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return; }
  return 1
}

as_pg() {  # run a PostgreSQL server binary as a non-root user
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

install_missing() {
  local pkgs=()
  pg_bindir >/dev/null || pkgs+=(postgresql)
  command -v redis-server >/dev/null 2>&1 || pkgs+=(redis-server)
  [ ${#pkgs[@]} -eq 0 ] && return
  [ "$(id -u)" = 0 ] || die "missing ${pkgs[*]}: install them (apt-get install ${pkgs[*]}) or run as root"
  say "installing ${pkgs[*]} (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "${pkgs[@]}" >/dev/null
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stop() {
  local bin
  if [ -f "$DIR/pg/postmaster.pid" ] && bin="$(pg_bindir)"; then
    as_pg "$bin/pg_ctl" -D "$DIR/pg" -m fast -w -t 30 stop >/dev/null 2>&1 \
      || as_pg "$bin/pg_ctl" -D "$DIR/pg" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  if [ -f "$DIR/redis.pid" ]; then
    local pid
    pid="$(cat "$DIR/redis.pid")"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$DIR/redis.pid"
  fi
}

start() {  # $1 = keep (durable, reuses an existing cluster) | fresh (throwaway)
  local mode="$1" bin created=0 fsync=on redis_durable=(--appendonly yes --appendfsync everysec)
  install_missing
  bin="$(pg_bindir)" || die "PostgreSQL binaries not found"
  stop
  for p in "$PG_PORT" "$REDIS_PORT"; do
    port_busy "$p" && die "127.0.0.1:$p is taken by another process (set LEAF_LIVE_PG_PORT / LEAF_LIVE_REDIS_PORT)"
  done
  if [ "$mode" = fresh ]; then
    rm -rf "$DIR"
    fsync=off
    redis_durable=(--appendonly no)
  fi
  if [ ! -f "$DIR/pg/PG_VERSION" ]; then
    [ "$mode" = keep ] && [ -d "$DIR" ] && [ -n "$(ls -A "$DIR/pg" 2>/dev/null)" ] \
      && die "$DIR/pg is not a PostgreSQL cluster; move it away or run '$0 fresh'"
    mkdir -p "$DIR/pg" "$DIR/sock"
    chmod 700 "$DIR"
    printf '%s\n' "$PG_PASSWORD" >"$DIR/pgpass.init"
    if [ "$(id -u)" = 0 ]; then
      chmod 711 "$DIR"
      chown postgres:postgres "$DIR/pg" "$DIR/sock" "$DIR/pgpass.init"
    fi
    as_pg "$bin/initdb" -D "$DIR/pg" -U "$PG_USER" --pwfile="$DIR/pgpass.init" --auth=scram-sha-256 \
      -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
    rm -f "$DIR/pgpass.init"
    created=1
  fi
  mkdir -p "$DIR/sock"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$DIR/sock"
  as_pg "$bin/pg_ctl" -D "$DIR/pg" -l "$DIR/sock/postgres.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $DIR/sock -c max_connections=200 -c fsync=$fsync" start >/dev/null \
    || { cat "$DIR/sock/postgres.log" >&2; die "PostgreSQL did not start"; }
  for _ in $(seq 60); do
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
    sleep 0.5
  done
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" || die "PostgreSQL is not accepting connections"
  [ "$created" = 1 ] && PGPASSWORD="$PG_PASSWORD" "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" "$PG_DB"
  # the inbox database: created once, also in a cluster kept from before it existed
  if [ "$(PGPASSWORD="$PG_PASSWORD" "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d "$PG_DB" -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '$INBOX_DB'")" != 1 ]; then
    PGPASSWORD="$PG_PASSWORD" "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" "$INBOX_DB"
  fi

  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --requirepass "$REDIS_PASSWORD" --save '' \
    "${redis_durable[@]}" --daemonize yes --dir "$DIR" --pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log"
  for _ in $(seq 60); do
    [ "$(REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] && break
    sleep 0.25
  done
  [ "$(REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] \
    || { cat "$DIR/redis.log" >&2; die "Redis is not answering"; }

  cat >"$DIR/env" <<ENV
export LEAF_LIVE_PROD_TESTS=1
export DAGSTER_PG_HOST=127.0.0.1
export DAGSTER_PG_PORT=$PG_PORT
export DAGSTER_PG_USERNAME=$PG_USER
export DAGSTER_PG_PASSWORD=$PG_PASSWORD
export DAGSTER_PG_DB=$PG_DB
export LEAF_LIVE_CELERY_BROKER=redis://:$REDIS_PASSWORD@127.0.0.1:$REDIS_PORT/0
export LEAF_LIVE_CELERY_BACKEND=redis://:$REDIS_PASSWORD@127.0.0.1:$REDIS_PORT/1
ENV
  # separate from env: sourcing it moves every command's inbox to PostgreSQL (the tests keep theirs apart)
  cat >"$DIR/inbox.env" <<ENV
export LEAF_LIVE_INBOX=postgresql://$PG_USER@127.0.0.1:$PG_PORT/$INBOX_DB
export PGPASSWORD=$PG_PASSWORD
ENV
  local kept="kept cluster"
  [ "$created" = 1 ] && kept="new cluster"
  say "PostgreSQL on 127.0.0.1:$PG_PORT (db $PG_DB, user $PG_USER; $kept, fsync $fsync), Redis on" \
    "127.0.0.1:$REDIS_PORT (${redis_durable[*]}); env in $DIR/env, the inbox ($INBOX_DB) in $DIR/inbox.env"
}

case "${1:-}" in
  start) start keep ;;
  fresh) start fresh ;;
  stop) stop; say "stopped" ;;
  *) echo "usage: $0 start|fresh|stop" >&2; exit 2 ;;
esac
