#!/usr/bin/env bash
# npm run scaleout [-- --instances 3 --json]
#
# Scale-out on a real consumer group (issue 30): examples/soak/scaleout.ts with the repo's
# Node; builds the S3 adapter (its `sluice audit` reads the bucket at the end), starts the
# local broker and S3 server (scripts/services.sh up) and stops those it started. Killed after
# SLUICE_SCALEOUT_TIMEOUT seconds (default 1800).
set -euo pipefail
cd "$(dirname "$0")/.."
# The help and the completion script, before any service starts.
case " $* " in *" --help "*|*" -h "*|*" --completions "*|*" --completions="*) exec node_modules/.bin/node --conditions=@sluice/source examples/soak/scaleout.ts "$@" ;; esac
npx turbo run build --filter=@sluice/adapter-s3 --output-logs=errors-only >&2
. scripts/lib/services-for-run.sh
. scripts/lib/run-source.sh
services_for_run
run_source "${SLUICE_SCALEOUT_TIMEOUT:-1800}" examples/soak/scaleout.ts "$@"
