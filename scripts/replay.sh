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

s3_was_up=0
toxiproxy_was_up=0
bash scripts/s3-server.sh status >/dev/null 2>&1 && s3_was_up=1
bash scripts/toxiproxy.sh status >/dev/null 2>&1 && toxiproxy_was_up=1
stop_started() {
  if [[ $toxiproxy_was_up == 0 ]]; then bash scripts/toxiproxy.sh down >&2 || true; fi
  if [[ $s3_was_up == 0 ]]; then bash scripts/s3-server.sh down >&2 || true; fi
}
trap stop_started EXIT
bash scripts/s3-server.sh up >&2
bash scripts/toxiproxy.sh up >&2
set -a
. .services/s3.env
. .services/toxiproxy.env
set +a

. scripts/lib/run-source.sh
run_source "${SLUICE_REPLAY_TIMEOUT:-1800}" examples/replay/main.ts "$@"
