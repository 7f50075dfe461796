#!/usr/bin/env bash
# The whole test suite: build, start the real services, run every test, stop the
# services. A test that needs a service it cannot reach fails; none is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh up
trap 'bash scripts/services.sh down' EXIT
set -a
for f in .services/*.env; do [ -f "$f" ] && . "$f"; done
set +a
npx turbo run build typecheck --output-logs=errors-only
results=.services/vitest-results.json
status=0
rm -f "$results"
npx vitest run --reporter=default --reporter=json --outputFile.json="$results" "$@" || status=$?
# One plain closing line for CI ("N passed, N failed"), from vitest's JSON report.
if [ -f "$results" ]; then
  node -e 'const r = require(process.argv[1]); console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (r.numPendingTests ? `, ${r.numPendingTests} skipped` : ""))' "$PWD/$results"
fi
exit "$status"
