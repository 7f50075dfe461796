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
