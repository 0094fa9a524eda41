#!/usr/bin/env bash
# A private PostgreSQL and Redis on 127.0.0.1 for the production profile: what .ci/run starts for the
# production-profile tests, and what a developer can start to run them (or to try the profile) locally.
#
#   deploy/production/services.sh start   # (re)creates both in $LEAF_LIVE_SERVICES_DIR, waits until ready
#   . "${LEAF_LIVE_SERVICES_DIR:-/tmp/leaf_live_services}/env"   # exports DAGSTER_PG_*, LEAF_LIVE_CELERY_*, LEAF_LIVE_PROD_TESTS=1
#   deploy/production/services.sh stop    # stops both (idempotent)
#
# Idempotent: `start` first stops whatever an earlier start left in the same directory (even after a
# crash), then builds a fresh cluster, so reruns never see old runs. Nothing listens beyond 127.0.0.1.
# Installs the Debian packages `postgresql` and `redis-server` when they are missing and we are root
# (CI runs as root on a clean clone); PostgreSQL refuses to run as root, so as root the server runs as
# the `postgres` system user the package creates.
set -euo pipefail

DIR="${LEAF_LIVE_SERVICES_DIR:-${TMPDIR:-/tmp}/leaf_live_services}"
PG_PORT="${LEAF_LIVE_PG_PORT:-55432}"
REDIS_PORT="${LEAF_LIVE_REDIS_PORT:-56379}"
PG_USER=leaf_live
PG_DB=leaf_live
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

start() {
  install_missing
  local bin
  bin="$(pg_bindir)" || die "PostgreSQL binaries not found"
  stop
  for p in "$PG_PORT" "$REDIS_PORT"; do
    port_busy "$p" && die "127.0.0.1:$p is taken by another process (set LEAF_LIVE_PG_PORT / LEAF_LIVE_REDIS_PORT)"
  done
  rm -rf "$DIR"
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
  as_pg "$bin/pg_ctl" -D "$DIR/pg" -l "$DIR/sock/postgres.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $DIR/sock -c max_connections=200 -c fsync=off" start >/dev/null \
    || { cat "$DIR/sock/postgres.log" >&2; die "PostgreSQL did not start"; }
  for _ in $(seq 60); do
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
    sleep 0.5
  done
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" || die "PostgreSQL is not accepting connections"
  PGPASSWORD="$PG_PASSWORD" "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" "$PG_DB"

  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --requirepass "$REDIS_PASSWORD" --save '' \
    --appendonly no --daemonize yes --dir "$DIR" --pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log"
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
  say "PostgreSQL on 127.0.0.1:$PG_PORT (db $PG_DB, user $PG_USER), Redis on 127.0.0.1:$REDIS_PORT; env in $DIR/env"
}

case "${1:-}" in
  start) start ;;
  stop) stop; say "stopped" ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
