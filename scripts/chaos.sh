#!/usr/bin/env bash
# npm run chaos [-- --runs 20 --records 3000000 --seed 7 --json]
#
# SIGKILL chaos on the real services (issue 13 item 5): examples/soak/chaos.ts with the
# repo's Node; starts the local broker and S3 server (scripts/services.sh up) and stops
# those it started. Killed after SLUICE_CHAOS_TIMEOUT seconds (default 1800).
set -euo pipefail
cd "$(dirname "$0")/.."
# The help and the completion script, before any service starts.
case " $* " in *" --help "*|*" -h "*|*" --completions "*|*" --completions="*) exec node_modules/.bin/node --conditions=@sluice/source examples/soak/chaos.ts "$@" ;; esac
. scripts/lib/services-for-run.sh
. scripts/lib/run-source.sh
services_for_run
run_source "${SLUICE_CHAOS_TIMEOUT:-1800}" examples/soak/chaos.ts "$@"
