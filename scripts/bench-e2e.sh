#!/usr/bin/env bash
# npm run bench:e2e [-- --records N --partitions P --rounds R --ceiling-seconds S --json]
#
# Kafka → S3 end to end: starts the local broker and S3 server (scripts/services.sh up),
# sources their .services/*.env, runs examples/bench/e2e.ts on the workspace's sources
# with the repo's Node, and stops the services it started (a service that was already
# running is left running). Service logs go to stderr; with --json, stdout is one line.
# The run is killed after SLUICE_BENCH_TIMEOUT seconds (default 3600); each archiving run
# in it is also bounded (60 s + 0.2 ms per record).
set -euo pipefail
cd "$(dirname "$0")/.."

# Which services were up before: only the others are stopped at the end.
s3_was_up=0
kafka_was_up=0
bash scripts/s3-server.sh status >/dev/null 2>&1 && s3_was_up=1
bash scripts/kafka-broker.sh status >/dev/null 2>&1 && kafka_was_up=1

stop_started() {
  if [[ $s3_was_up == 0 && $kafka_was_up == 0 ]]; then
    bash scripts/services.sh down >&2 || true
  else
    if [[ $kafka_was_up == 0 ]]; then bash scripts/kafka-broker.sh down >&2 || true; fi
    if [[ $s3_was_up == 0 ]]; then bash scripts/s3-server.sh down >&2 || true; fi
  fi
}
trap stop_started EXIT

bash scripts/services.sh up >&2
set -a
for f in .services/*.env; do [ -f "$f" ] && . "$f"; done
set +a

node=node_modules/.bin/node
[[ -x $node ]] || node=node
timeout --kill-after=30 "${SLUICE_BENCH_TIMEOUT:-3600}" "$node" --conditions=@sluice/source examples/bench/e2e.ts "$@"
