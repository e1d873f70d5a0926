#!/usr/bin/env bash
# `npm start`: installs what is missing, starts Postgres, Temporal and Elasticsearch,
# migrates, starts the provider simulator, the api, the platform api and the worker,
# then prints where everything is. Ctrl-C stops what this script started.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/ensure-deps.sh

# Remember which services were already up, so Ctrl-C stops only what we started.
already_up=$(bash scripts/services.sh status | awk '$2=="up"{print $1}')
bash scripts/services.sh start

export ENVIRONMENT="${ENVIRONMENT:-development}"
mkdir -p .data/logs
npx tsx src/bin/migrate.ts

pids=()
start_process() { # name, script
  echo "[start] starting $1 (log: .data/logs/$1.log)" >&2
  # node itself (not an npx wrapper) is the child, so stop_all's kill reaches the process
  # and its graceful shutdown also when this script is stopped by a signal rather than Ctrl-C.
  node --import tsx "$2" >".data/logs/$1.log" 2>&1 &
  pids+=($!)
}
for bin in simulator api platform worker; do
  [ -f "src/bin/$bin.ts" ] && start_process "$bin" "src/bin/$bin.ts"
done

stop_all() {
  trap - INT TERM
  echo; echo "[start] stopping..." >&2
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  for s in postgres temporal elasticsearch; do
    grep -qx "$s" <<<"$already_up" || bash scripts/services.sh stop "$s"
  done
  exit 0
}
trap stop_all INT TERM

# Wait for the api to answer, then make sure development credentials exist.
for _ in $(seq 1 120); do curl -fs "http://127.0.0.1:${PORT:-8080}/healthz" >/dev/null && break; sleep 0.5; done
curl -fs "http://127.0.0.1:${PORT:-8080}/healthz" >/dev/null || { echo "[start] ERROR: the api did not start; read .data/logs/api.log" >&2; stop_all; }
[ -f src/bin/admin.ts ] && npx tsx src/bin/admin.ts dev-credentials >/dev/null

cat <<INFO

  API              http://127.0.0.1:${PORT:-8080}   (GET /readyz reports each service)
  Platform API     http://127.0.0.1:${PLATFORM_PORT:-8081}
  Provider sim     http://127.0.0.1:${SIMULATOR_PORT:-8090}
  Temporal UI      http://127.0.0.1:8233
  Elasticsearch    http://127.0.0.1:9201
  Postgres         postgres://gateway:gateway@127.0.0.1:54329/gateway
  Dev credentials  .data/dev-credentials.json  (account, project with credits, an 'all' API key)
  Logs             .data/logs/

  Press Ctrl-C to stop what this command started.
INFO
[ -f .data/dev-credentials.json ] && cat .data/dev-credentials.json && echo
wait
