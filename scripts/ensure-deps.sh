#!/usr/bin/env bash
# Installs npm packages when node_modules is missing or older than package-lock.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v node >/dev/null || { echo "[deps] ERROR: Node.js >= 20 is required and 'node' is not on PATH" >&2; exit 1; }
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[deps] installing npm packages (npm ci)..." >&2
  npm ci --no-audit --no-fund --loglevel=error >&2 || { echo "[deps] npm ci failed; falling back to npm install" >&2; npm install --no-audit --no-fund --loglevel=error >&2; }
fi
