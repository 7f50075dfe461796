#!/usr/bin/env bash
# npm run bench:e2e [-- --records N --partitions P --rounds R --ceiling-seconds S --json]   (all flags: -- --help)
#
# Kafka → S3 end to end: starts the local broker and S3 server (scripts/services.sh up),
# sources their .services/*.env, runs examples/bench/e2e.ts on the workspace's sources
# with the repo's Node, and stops the services it started (a service that was already
# running is left running). Service logs go to stderr; with --json, stdout is one line.
# The run is killed after SLUICE_BENCH_TIMEOUT seconds (default 3600); each archiving run
# in it is also bounded (60 s + 0.2 ms per record).
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib/services-for-run.sh
. scripts/lib/run-source.sh
# --help and --completions <shell> need no services: e2e.ts prints them.
case " $* " in *" --help "*|*" -h "*|*" --completions "*|*" --completions="*) exec "$(repo_node)" --conditions=@sluice/source examples/bench/e2e.ts "$@" ;; esac
services_for_run

run_source "${SLUICE_BENCH_TIMEOUT:-3600}" examples/bench/e2e.ts "$@"
