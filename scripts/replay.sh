#!/usr/bin/env bash
# npm run replay -- SCENARIO [--policy SPEC] [--scale X] [--cell-seconds S] [--json]
#
# A scenario replayed in real time against the real S3 server behind toxiproxy
# (examples/replay/main.ts on the workspace's sources, with the repo's Node). Starts the
# S3 server and toxiproxy when they are not running and stops afterwards the ones it
# started. The run is killed after SLUICE_REPLAY_TIMEOUT seconds (default 1800).
# Ports: SLUICE_S3_PORT, SLUICE_TOXIPROXY_PORT.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/run-source.sh
# The help and the completion script, before any service starts.
case " $* " in *" --help "*|*" -h "*|*" --completions"*) exec "$(repo_node)" --conditions=@sluice/source examples/replay/main.ts "$@" ;; esac

. scripts/lib/ensure-services.sh
ensure_services s3-server toxiproxy
set -a
. .services/s3.env
. .services/toxiproxy.env
set +a

run_source "${SLUICE_REPLAY_TIMEOUT:-1800}" examples/replay/main.ts "$@"
