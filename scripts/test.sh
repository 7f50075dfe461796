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
npx vitest run "$@"
