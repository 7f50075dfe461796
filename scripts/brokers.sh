#!/usr/bin/env bash
# npm run brokers -- [--scenario NAME]... [--duration 120] [--phase-seconds 20] [--json]
#
# Broker-side scenarios on real Kafka (issue 13 item 6): examples/brokers/main.ts with the
# repo's Node, against a 3-node KRaft cluster (scripts/kafka-cluster.sh) and the local S3
# server (scripts/s3-server.sh), both on 127.0.0.1. Starts them, exports their
# .services/*.env, and stops on exit only those it started (one already running is left
# running). Service logs go to stderr; with --json the last stdout line is one JSON object.
# Killed after SLUICE_BROKERS_TIMEOUT seconds (default 3600).
# Ports: SLUICE_S3_PORT (S3), SLUICE_KAFKA_CLUSTER_BASE_PORT (cluster: BASE+1..BASE+13).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/run-source.sh
. scripts/lib/service-running.sh
node=$(repo_node)
# The help and the completion script, before anything starts.
case " $* " in *" --help "*|*" -h "*|*" --completions"*) exec "$node" --conditions=@sluice/source examples/brokers/main.ts "$@" ;; esac
# A usage error before anything starts (exit 2).
"$node" --conditions=@sluice/source -e '
  import("./examples/brokers/Options.ts").then((o) => {
    try { o.parse(process.argv.slice(1)) } catch (e) { if (!(e instanceof o.UsageError)) throw e; console.error(`${e.message}\n\n${o.command.help}`); process.exit(2) }
  })' -- "$@"

s3_was_up=0
cluster_was_up=0
service_running scripts/s3-server.sh && s3_was_up=1 # running, healthy or not: not ours to stop
bash scripts/kafka-cluster.sh status >/dev/null 2>&1 && cluster_was_up=1
stop_started() {
  if [[ $cluster_was_up == 0 ]]; then bash scripts/kafka-cluster.sh down >&2 || true; fi
  if [[ $s3_was_up == 0 ]]; then bash scripts/s3-server.sh down >&2 || true; fi
}
trap stop_started EXIT
bash scripts/s3-server.sh up >&2
bash scripts/kafka-cluster.sh up >&2
set -a
. .services/s3.env
. .services/kafka-cluster.env
set +a
run_source "${SLUICE_BROKERS_TIMEOUT:-3600}" examples/brokers/main.ts "$@"
