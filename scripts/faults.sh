#!/usr/bin/env bash
# npm run faults [-- --only NAME[,NAME…] --smoke --json]
#
# Faults of the dependencies, for real (issue 27): examples/faults/main.ts on the repo's Node.
# Starts its own S3 server, broker and toxiproxy in .services/faults/ on ports of their own
# (SLUICE_FAULTS_S3_PORT 19100, SLUICE_FAULTS_KAFKA_PORT 19192 + controller 19193,
# SLUICE_FAULTS_TOXIPROXY_PORT 18574; the proxy in front of S3 on SLUICE_FAULTS_PROXY_PORT
# 18580; the 3-node cluster of broker-node-kill on base SLUICE_FAULTS_CLUSTER_BASE_PORT 29610),
# since the faults kill and restart them: the instances `npm test` shares are never touched.
# Stops them on exit. Killed after SLUICE_FAULTS_TIMEOUT seconds (default 3600).
set -euo pipefail
cd "$(dirname "$0")/.."
# The help and the completion script, before any service starts.
case " $* " in *" --help "*|*" -h "*|*" --completions"*) exec node_modules/.bin/node --conditions=@sluice/source examples/faults/main.ts "$@" ;; esac
. scripts/lib/run-source.sh
export SLUICE_SERVICES_DIR="$PWD/.services/faults"
export SLUICE_S3_PORT="${SLUICE_FAULTS_S3_PORT:-19100}"
export SLUICE_KAFKA_PORT="${SLUICE_FAULTS_KAFKA_PORT:-19192}"
export SLUICE_KAFKA_CONTROLLER_PORT="${SLUICE_FAULTS_KAFKA_CONTROLLER_PORT:-19193}"
export SLUICE_TOXIPROXY_PORT="${SLUICE_FAULTS_TOXIPROXY_PORT:-18574}"
export SLUICE_FAULTS_PROXY_PORT="${SLUICE_FAULTS_PROXY_PORT:-18580}"
export SLUICE_KAFKA_CLUSTER_BASE_PORT="${SLUICE_FAULTS_CLUSTER_BASE_PORT:-29610}"
mkdir -p "$SLUICE_SERVICES_DIR"
stop() {
  bash scripts/kafka-cluster.sh down >/dev/null 2>&1 || true
  # The authentication faults' own (faults/Auth.ts stops what it starts; a run that failed may not have).
  bash scripts/kafka-sasl.sh down >/dev/null 2>&1 || true
  bash scripts/s3-tls.sh down >/dev/null 2>&1 || true
  bash scripts/toxiproxy.sh down >&2 || true
  bash scripts/kafka-broker.sh down >&2 || true
  bash scripts/s3-server.sh down >&2 || true
}
trap stop EXIT
bash scripts/s3-server.sh up >&2
bash scripts/kafka-broker.sh up >&2
bash scripts/toxiproxy.sh up >&2
set -a
for f in "$SLUICE_SERVICES_DIR"/*.env; do [ -f "$f" ] && . "$f"; done
set +a
run_source "${SLUICE_FAULTS_TIMEOUT:-3600}" examples/faults/main.ts "$@"
