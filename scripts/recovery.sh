#!/usr/bin/env bash
# npm run recovery [-- --backlogs 50000,100000,200000,400000 --json]
#
# Restart recovery on the real services (issue 13, hypothesis 3): examples/soak/recovery.ts
# with the repo's Node; starts the local broker and S3 server (scripts/services.sh up) and
# stops those it started. Killed after SLUICE_RECOVERY_TIMEOUT seconds (default 1800).
set -euo pipefail
cd "$(dirname "$0")/.."
# The help and the completion script, before any service starts.
case " $* " in *" --help "*|*" -h "*|*" --completions "*|*" --completions="*) exec node_modules/.bin/node --conditions=@sluice/source examples/soak/recovery.ts "$@" ;; esac
. scripts/lib/services-for-run.sh
. scripts/lib/run-source.sh
services_for_run
run_source "${SLUICE_RECOVERY_TIMEOUT:-1800}" examples/soak/recovery.ts "$@"
