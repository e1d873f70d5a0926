#!/usr/bin/env bash
# `npm test`: installs what is missing, starts the real services, then runs every test:
# unit and integration in parallel, then the disruptive tests (which stop and restart
# shared services) on their own. Exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/ensure-deps.sh || exit 1
bash scripts/services.sh start || exit 1

mkdir -p .data/test-results && rm -f .data/test-results/*.json
export NODE_OPTIONS="${NODE_OPTIONS:-} --max-old-space-size=4096"
status=0
npx jest --selectProjects unit integration --json --outputFile=.data/test-results/main.json "$@" || status=1
if [ $# -eq 0 ]; then
  npx jest --selectProjects disruptive --runInBand --json --outputFile=.data/test-results/disruptive.json || status=1
fi

# One plain summary line for CI, summed over both runs.
node -e '
  const fs = require("fs");
  let passed = 0, failed = 0, skipped = 0;
  for (const f of ["main", "disruptive"]) {
    const p = `.data/test-results/${f}.json`;
    if (!fs.existsSync(p)) continue;
    const r = JSON.parse(fs.readFileSync(p, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests + r.numRuntimeErrorTestSuites; skipped += r.numPendingTests;
  }
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
'
exit $status
