#!/usr/bin/env bash
# Installs (once) and starts the real local services on loopback: Postgres, the Temporal
# dev server and Elasticsearch. Idempotent: a service that is already healthy is reused.
#
#   bash scripts/services.sh start [postgres|temporal|elasticsearch ...]
#   bash scripts/services.sh stop  [postgres|temporal|elasticsearch ...]
#   bash scripts/services.sh status
#
# Built tools are cached per user outside the clone, keyed by version, so a fresh clone
# reuses them. Root's cache lives in /var/cache because Elasticsearch refuses to run as
# root and its service user must be able to read the installation.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA="${AGENT_GATEWAY_DATA:-$ROOT/.data}"
LOGS="$DATA/logs"
if [ "$(id -u)" = 0 ]; then DEFAULT_CACHE=/var/cache/agent-gateway; else DEFAULT_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/agent-gateway"; fi
CACHE="${AGENT_GATEWAY_CACHE:-$DEFAULT_CACHE}"

PG_PORT="${PG_PORT:-54329}"
TEMPORAL_VERSION=1.5.1
TEMPORAL_PORT="${TEMPORAL_PORT:-7233}"
TEMPORAL_UI_PORT="${TEMPORAL_UI_PORT:-8233}"
ES_VERSION=8.19.21
ES_PORT="${ES_PORT:-9201}"
ES_USER=agentgw-es
WAIT_SECONDS="${SERVICES_WAIT_SECONDS:-180}"

mkdir -p "$DATA" "$LOGS" "$CACHE"
chmod 755 "$DATA" "$LOGS"

say() { printf '[services] %s\n' "$*" >&2; }
die() { printf '[services] ERROR: %s\n' "$*" >&2; exit 1; }
as_root_or_die() { [ "$(id -u)" = 0 ] || die "$1 must be installed first (this needs root): $2"; }

# wait_for NAME LOGFILE CHECK-COMMAND...
wait_for() {
  local name="$1" log="$2"; shift 2
  local deadline=$((SECONDS + WAIT_SECONDS))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      die "$name did not become healthy within ${WAIT_SECONDS}s; read $log"
    fi
    sleep 1
  done
}

# ---------------------------------------------------------------- Postgres
pg_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$dir" ] && [ -x "$dir/pg_ctl" ] && { echo "$dir"; return; }
  return 1
}
pg_healthy() { pg_isready -h 127.0.0.1 -p "$PG_PORT" -q; }
pg_sql() { runuser -u postgres -- "$(pg_bin)/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAtc "$1"; }

start_postgres() {
  if ! pg_bin >/dev/null; then
    as_root_or_die "PostgreSQL" "apt-get install -y postgresql"
    say "installing PostgreSQL from Debian's packages (apt-get install postgresql)..."
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >"$LOGS/apt-postgresql.log" 2>&1) \
      || die "could not install postgresql; read $LOGS/apt-postgresql.log"
  fi
  local bin; bin=$(pg_bin)
  local pgdata="$DATA/pg"
  if pg_healthy; then say "postgres already running on 127.0.0.1:$PG_PORT"; else
    if [ ! -f "$pgdata/PG_VERSION" ]; then
      say "creating the Postgres cluster in $pgdata"
      mkdir -p "$pgdata"; chown postgres:postgres "$pgdata"; chmod 700 "$pgdata"
      runuser -u postgres -- "$bin/initdb" -D "$pgdata" -U postgres --auth-local=trust --auth-host=trust -E UTF8 >"$LOGS/postgres-initdb.log" 2>&1 \
        || die "postgres initdb failed; read $LOGS/postgres-initdb.log"
    fi
    touch "$LOGS/postgres.log"; chown postgres "$LOGS/postgres.log"
    say "starting postgres on 127.0.0.1:$PG_PORT"
    runuser -u postgres -- "$bin/pg_ctl" -D "$pgdata" -l "$LOGS/postgres.log" -w -t 60 \
      -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k $pgdata -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null \
      || die "postgres did not start; read $LOGS/postgres.log"
    wait_for postgres "$LOGS/postgres.log" pg_healthy
  fi
  # The application role and databases (idempotent).
  pg_sql "DO \$\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='gateway') THEN CREATE ROLE gateway LOGIN PASSWORD 'gateway'; END IF; END\$\$;"
  for db in gateway gateway_test; do
    [ "$(pg_sql "SELECT 1 FROM pg_database WHERE datname='$db'")" = 1 ] || pg_sql "CREATE DATABASE $db OWNER gateway"
  done
}

stop_postgres() {
  local bin; bin=$(pg_bin) || return 0
  [ -f "$DATA/pg/postmaster.pid" ] && runuser -u postgres -- "$bin/pg_ctl" -D "$DATA/pg" -m fast stop >/dev/null 2>&1 || true
}

# ---------------------------------------------------------------- Temporal
TEMPORAL_BIN="$CACHE/temporal-$TEMPORAL_VERSION/temporal"
temporal_healthy() { "$TEMPORAL_BIN" operator cluster health --address "127.0.0.1:$TEMPORAL_PORT" 2>/dev/null | grep -q SERVING; }

build_temporal() {
  [ -x "$TEMPORAL_BIN" ] && return 0
  command -v go >/dev/null || die "the Temporal CLI is built with Go, and 'go' is not on PATH (install Go >= 1.23)"
  say "building the Temporal CLI v$TEMPORAL_VERSION with go install (first time only; takes several minutes)..."
  local tmp="$CACHE/temporal-$TEMPORAL_VERSION.partial"
  rm -rf "$tmp"; mkdir -p "$tmp"
  ( GOBIN="$tmp" GOFLAGS=-mod=mod go install "github.com/temporalio/cli/cmd/temporal@v$TEMPORAL_VERSION" >"$LOGS/temporal-build.log" 2>&1 ) &
  local pid=$!
  while kill -0 $pid 2>/dev/null; do sleep 15; say "  ...still building Temporal ($(wc -l <"$LOGS/temporal-build.log") lines in $LOGS/temporal-build.log)"; done
  wait $pid || die "the Temporal build failed; read $LOGS/temporal-build.log"
  mv "$tmp" "$CACHE/temporal-$TEMPORAL_VERSION"
}

start_temporal() {
  build_temporal
  if temporal_healthy; then say "temporal already running on 127.0.0.1:$TEMPORAL_PORT"; return; fi
  say "starting the Temporal dev server on 127.0.0.1:$TEMPORAL_PORT (UI http://127.0.0.1:$TEMPORAL_UI_PORT)"
  # Latency settings, measured with `npm run bench:runs` (README, Benchmarks):
  # - system.enableActivityEagerExecution: an activity the workflow schedules is handed to the
  #   completing worker in the same round trip instead of through matching (~45 ms each before).
  # - history.{transfer,timer}ProcessorMaxPollRPS: the dev server has one history shard, whose
  #   task queues are read at most 20 times a second by default: ~30 ms before every workflow task.
  # - GOMAXPROCS=1: each request hops across many goroutines; with one P those hand-offs stay on
  #   one thread instead of waking a second one, which is costly on this VM (about 13% less
  #   Temporal CPU per run at 10 sessions, no throughput lost: the server needs ~0.7 core at most).
  GOMAXPROCS=1 nohup "$TEMPORAL_BIN" server start-dev --ip 127.0.0.1 --port "$TEMPORAL_PORT" --ui-port "$TEMPORAL_UI_PORT" \
    --db-filename "$DATA/temporal.db" --log-level warn \
    --sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal \
    --search-attribute ProjectId=Keyword --search-attribute AgentId=Keyword --search-attribute SessionStatus=Keyword \
    --dynamic-config-value frontend.workerHeartbeatsEnabled=false --dynamic-config-value system.enableActivityEagerExecution=true \
    --dynamic-config-value history.transferProcessorMaxPollRPS=2000 --dynamic-config-value history.timerProcessorMaxPollRPS=2000 \
    --dynamic-config-value matching.numTaskqueueReadPartitions=1 --dynamic-config-value matching.numTaskqueueWritePartitions=1 \
    >"$LOGS/temporal.log" 2>&1 &
  echo $! >"$DATA/temporal.pid"
  wait_for temporal "$LOGS/temporal.log" temporal_healthy
}

stop_temporal() {
  if [ -f "$DATA/temporal.pid" ]; then
    local pid; pid=$(cat "$DATA/temporal.pid")
    kill "$pid" 2>/dev/null || true
    # Wait for the exit, so a `start` right after really starts a new server.
    local deadline=$((SECONDS + 30))
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  fi
  rm -f "$DATA/temporal.pid"
}

# ---------------------------------------------------------------- Elasticsearch
ES_HOME="$CACHE/elasticsearch-$ES_VERSION"
es_healthy() { curl -fs "http://127.0.0.1:$ES_PORT/_cluster/health?wait_for_status=yellow&timeout=1s" >/dev/null; }

fetch_elasticsearch() {
  [ -x "$ES_HOME/bin/elasticsearch" ] && return 0
  command -v mvn >/dev/null || die "Elasticsearch is fetched from Maven Central with 'mvn', which is not on PATH (apt-get install maven)"
  command -v java >/dev/null || die "Elasticsearch needs Java 17+, and 'java' is not on PATH"
  say "fetching Elasticsearch $ES_VERSION from Maven Central (first time only; ~110 MB)..."
  local tmp="$CACHE/es-$ES_VERSION.partial"
  rm -rf "$tmp"
  ( cd "$ROOT/scripts/elasticsearch" && mvn -B -q dependency:unpack -Des.version="$ES_VERSION" -Des.dest="$tmp" >"$LOGS/elasticsearch-fetch.log" 2>&1 ) \
    || die "fetching Elasticsearch failed; read $LOGS/elasticsearch-fetch.log"
  mv "$tmp/elasticsearch-$ES_VERSION" "$ES_HOME"; rm -rf "$tmp"
}

java_home() {
  local j; j=$(readlink -f "$(command -v java)"); dirname "$(dirname "$j")"
}

start_elasticsearch() {
  fetch_elasticsearch
  if es_healthy; then say "elasticsearch already running on 127.0.0.1:$ES_PORT"; return; fi
  if [ "$(id -u)" = 0 ]; then
    id "$ES_USER" >/dev/null 2>&1 || useradd --system --shell /usr/sbin/nologin --home-dir /nonexistent "$ES_USER"
    chmod 755 "$CACHE"
  fi
  local esdir="$DATA/es"
  mkdir -p "$esdir/data" "$esdir/logs"
  [ -d "$esdir/config" ] || cp -r "$ES_HOME/config" "$esdir/config"
  touch "$LOGS/elasticsearch.log"
  local runas=()
  if [ "$(id -u)" = 0 ]; then chown -R "$ES_USER" "$esdir" "$LOGS/elasticsearch.log"; runas=(runuser -u "$ES_USER" --); fi
  say "starting elasticsearch $ES_VERSION on 127.0.0.1:$ES_PORT (heap 1 GiB)"
  nohup "${runas[@]}" env ES_PATH_CONF="$esdir/config" ES_JAVA_HOME="$(java_home)" ES_JAVA_OPTS="-Xms512m -Xmx1g" \
    "$ES_HOME/bin/elasticsearch" -E http.port="$ES_PORT" -E http.host=127.0.0.1 -E transport.host=127.0.0.1 \
    -E discovery.type=single-node -E xpack.security.enabled=false -E cluster.routing.allocation.disk.threshold_enabled=false \
    -E path.data="$esdir/data" -E path.logs="$esdir/logs" -E action.destructive_requires_name=false \
    >>"$LOGS/elasticsearch.log" 2>&1 &
  echo $! >"$DATA/elasticsearch.pid"
  wait_for elasticsearch "$LOGS/elasticsearch.log" es_healthy
}

stop_elasticsearch() {
  # Match this clone's node only (its config dir is on the command line), never another clone's.
  local mine="$DATA/es/config"
  pkill -f "$mine" 2>/dev/null || true
  local deadline=$((SECONDS + 30))
  while pgrep -f "$mine" >/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.5; done
  rm -f "$DATA/elasticsearch.pid"
}

status() {
  pg_healthy && echo "postgres       up   127.0.0.1:$PG_PORT" || echo "postgres       down"
  temporal_healthy && echo "temporal       up   127.0.0.1:$TEMPORAL_PORT (UI http://127.0.0.1:$TEMPORAL_UI_PORT)" || echo "temporal       down"
  es_healthy && echo "elasticsearch  up   http://127.0.0.1:$ES_PORT" || echo "elasticsearch  down"
}

cmd="${1:-start}"; shift || true
services=("$@"); [ ${#services[@]} -gt 0 ] || services=(postgres temporal elasticsearch)
case "$cmd" in
  start)
    # Start in parallel: the first-time Temporal build and Elasticsearch fetch overlap.
    pids=()
    for s in "${services[@]}"; do ( "start_$s" ) & pids+=($!); done
    failed=0
    for p in "${pids[@]}"; do wait "$p" || failed=1; done
    [ $failed = 0 ] || die "a service failed to start (see the messages above)"
    ;;
  stop) for s in "${services[@]}"; do "stop_$s"; done ;;
  status) status ;;
  # The Temporal CLI this clone uses (built if missing): tests start their own dev servers with it.
  temporal-cli) build_temporal >&2 && echo "$TEMPORAL_BIN" ;;
  *) die "unknown command '$cmd' (start, stop, status, temporal-cli)" ;;
esac
