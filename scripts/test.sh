#!/usr/bin/env bash
# The whole test suite: build, start the real services, run every test, stop the
# services. A test that needs a service it cannot reach fails; none is skipped.
#
# Each phase is stamped on stderr with the seconds since the start and bounded, so
# a stall fails naming its phase (CI allows 90 min in all; the suite takes ~30).
set -euo pipefail
cd "$(dirname "$0")/.."
# The phases' bounds, each several times its measured length here (warm caches):
SERVICES_UP_SECONDS=2400 # 10 s warm; the first, cold install builds two Go servers and fetches Kafka (~6 min)
BUILD_SECONDS=900        # ~20 s
VITEST_SECONDS=4200      # ~30 min on 2 cores with another process busy
start=$(date +%s)
stamp() { echo "test.sh: [+$(( $(date +%s) - start ))s] $*" >&2; }
stamp "services up (bound ${SERVICES_UP_SECONDS}s)"
trap 'stamp "services down"; bash scripts/services.sh down' EXIT
timeout --kill-after=30 "$SERVICES_UP_SECONDS" bash scripts/services.sh up \
  || { status=$?; stamp "services up failed (exit $status; 124 = over its bound)"; exit "$status"; }
set -a
for f in .services/*.env; do [ -f "$f" ] && . "$f"; done
set +a
stamp "build + typecheck (bound ${BUILD_SECONDS}s)"
timeout --kill-after=30 "$BUILD_SECONDS" npx turbo run build typecheck --output-logs=errors-only \
  || { status=$?; stamp "build + typecheck failed (exit $status; 124 = over its bound)"; exit "$status"; }
results=.services/vitest-results.json
status=0
rm -f "$results"
stamp "vitest (bound ${VITEST_SECONDS}s)"
timeout --kill-after=60 "$VITEST_SECONDS" npx vitest run --reporter=default --reporter=json --outputFile.json="$results" "$@" || status=$?
stamp "vitest ended (exit $status; 124 = over its bound)"
# One plain closing line for CI ("N passed, N failed"), from vitest's JSON report.
# A skipped or todo test fails the run (a test that needs a service must fail
# without it, never skip), naming every such test. It reports the skips of a
# file whose beforeAll hook failed, too: vitest marks its tests skipped.
summary_js='
const path = require("node:path")
const r = require(process.argv[1])
const notRun = []
for (const file of r.testResults ?? []) {
  for (const t of file.assertionResults ?? []) {
    if (t.status !== "passed" && t.status !== "failed") notRun.push(`${t.status}: ${path.relative(process.cwd(), file.name)} > ${t.fullName}`)
  }
}
const skipped = r.numPendingTests ?? 0
const todo = r.numTodoTests ?? 0
console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (skipped + todo > 0 ? `, ${skipped} skipped, ${todo} todo` : ""))
if (skipped + todo > 0 || notRun.length > 0) {
  console.error(`FAIL: ${skipped} skipped and ${todo} todo tests; every test must run (a test that needs a service fails without it):`)
  for (const line of notRun) console.error(`  ${line}`)
  process.exit(1)
}
'
if [ -f "$results" ]; then
  node -e "$summary_js" "$PWD/$results" || status=1
else
  echo "FAIL: vitest wrote no JSON report ($results)" >&2
  status=1
fi
exit "$status"
