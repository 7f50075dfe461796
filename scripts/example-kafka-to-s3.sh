#!/usr/bin/env bash
# npm run example:kafka-to-s3 [-- --records N --partitions P --record-bytes B --max-seconds S
#                                --until-committed --prometheus-port PORT --linger-seconds S]
#
# The Kafka → S3 archiver as an operator runs it (examples/kafka-to-s3/): starts the local
# broker and S3 server (scripts/services.sh up), creates a topic and a bucket, produces
# --records records (default 200000) so there is something to archive, then runs the
# archiver in follow mode with its Prometheus endpoint (the URL is printed, by default
# http://127.0.0.1:9464/metrics) until --max-seconds (default 120) have passed or, with
# --until-committed, until every produced record is committed; then it drains and prints
# its metrics. SIGTERM / SIGINT to this script drain the archiver too (forwarded once).
# Services it started are stopped at the end; one that was already running is left running.
#
# Environment:
#   SLUICE_PROMETHEUS_PORT   default of --prometheus-port (9464; 0 = any free port)
#   SLUICE_S3_PORT, SLUICE_KAFKA_PORT, SLUICE_KAFKA_CONTROLLER_PORT   service ports (see services.sh)
#   SLUICE_SERVICES_ROOT     run the service scripts from a copy under this folder, so their
#                            state (pid files, env files, logs) goes to $SLUICE_SERVICES_ROOT/.services
#                            instead of the repo's .services/ (for a second set of services
#                            beside one already running); unset: the repo's scripts, as bench:e2e
#   SLUICE_EXAMPLE_TIMEOUT   hard bound on the whole run, seconds (default: --max-seconds + 600)
set -euo pipefail
cd "$(dirname "$0")/.."

records=200000
partitions=4
record_bytes=150
max_seconds=120
until_committed=0
prom_port=${SLUICE_PROMETHEUS_PORT:-9464}
linger=0
drain_seconds=30
usage() { sed -n '2,3p' "$0" | sed 's/^# //' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --records) records=${2:?}; shift 2 ;;
    --partitions) partitions=${2:?}; shift 2 ;;
    --record-bytes) record_bytes=${2:?}; shift 2 ;;
    --max-seconds) max_seconds=${2:?}; shift 2 ;;
    --until-committed) until_committed=1; shift ;;
    --prometheus-port) prom_port=${2:?}; shift 2 ;;
    --linger-seconds) linger=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "example-kafka-to-s3: unknown option $1" >&2; usage ;;
  esac
done
for n in "$records" "$partitions" "$record_bytes" "$max_seconds" "$prom_port" "$linger"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "example-kafka-to-s3: expected a whole number, got '$n'" >&2; exit 2; }
done
deadline=$((SECONDS + ${SLUICE_EXAMPLE_TIMEOUT:-$((max_seconds + 600))}))
left() { local s=$((deadline - SECONDS)); echo $((s > 1 ? s : 1)); }

# The service scripts keep their state in <their repo root>/.services: a copy rooted
# elsewhere keeps it apart from the repo's.
root=$PWD
if [[ -n ${SLUICE_SERVICES_ROOT:-} ]]; then
  root=$SLUICE_SERVICES_ROOT
  mkdir -p "$root/scripts"
  cp scripts/services.sh scripts/s3-server.sh scripts/kafka-broker.sh "$root/scripts/"
  rm -rf "$root/scripts/kafka"
  cp -r scripts/kafka "$root/scripts/kafka"
fi
svc() { bash "$root/scripts/$1" "$2"; }

# Which services were up before: only the others are stopped at the end.
s3_was_up=0
kafka_was_up=0
. "$root/scripts/lib/service-running.sh"
service_running "$root/scripts/s3-server.sh" && s3_was_up=1 # running, healthy or not: not ours to stop
service_running "$root/scripts/kafka-broker.sh" && kafka_was_up=1
archiver=""
stop_started() {
  if [[ -n $archiver ]] && kill -0 "$archiver" 2>/dev/null; then kill -KILL "$archiver" 2>/dev/null || true; fi
  if [[ $kafka_was_up == 0 ]]; then svc kafka-broker.sh down >&2 || true; fi
  if [[ $s3_was_up == 0 ]]; then svc s3-server.sh down >&2 || true; fi
}
trap stop_started EXIT
# Until the archiver runs, a signal just ends the script (the EXIT trap stops the services).
trap 'exit 130' INT
trap 'exit 143' TERM

# The two services the archiver needs (services.sh up would start toxiproxy too).
timeout "$(left)" bash "$root/scripts/s3-server.sh" up >&2
timeout "$(left)" bash "$root/scripts/kafka-broker.sh" up >&2
set -a
for f in "$root"/.services/*.env; do [ -f "$f" ] && . "$f"; done
set +a

node=node_modules/.bin/node
[[ -x $node ]] || node=node
id="$(date +%Y%m%d-%H%M%S)-$$"
topic="orders-$id"
bucket="kafka-to-s3-example-$id"
echo "example-kafka-to-s3: producing $records records into $topic ($partitions partitions) …" >&2
timeout "$(left)" "$node" --conditions=@sluice/source examples/kafka-to-s3/produce.ts "$topic" "$bucket" \
  --records "$records" --partitions "$partitions" --record-bytes "$record_bytes" >/dev/null

args=(--name orders-archiver --prometheus-port "$prom_port" --max-seconds "$max_seconds" --drain-seconds "$drain_seconds" --linger-seconds "$linger" --print-metrics)
[[ $until_committed == 1 ]] && args+=(--until-committed "$records")
echo "example-kafka-to-s3: archiving $topic → s3://$bucket for at most ${max_seconds} s$([[ $until_committed == 1 ]] && echo " or until all $records records are committed"); Ctrl-C / SIGTERM drains" >&2
# timeout: the archiver's own bound is --max-seconds plus its drain; this is the backstop.
# A signal to timeout is passed on to the archiver (which drains) and arms the kill-after.
timeout --kill-after=$((drain_seconds + 15)) "$(left)" "$node" --conditions=@sluice/source examples/kafka-to-s3/main.ts "$topic" "$bucket" "${args[@]}" &
archiver=$!
forwarded=0
forward() {
  if [[ $forwarded == 0 ]]; then
    forwarded=1
    echo "example-kafka-to-s3: $1: draining the archiver …" >&2
    kill -TERM "$archiver" 2>/dev/null || true
  fi
}
trap 'forward SIGINT' INT
trap 'forward SIGTERM' TERM
status=0
while :; do
  if wait "$archiver"; then status=0; else status=$?; fi
  kill -0 "$archiver" 2>/dev/null || break  # else: wait was interrupted by a signal; the archiver is draining
done
archiver=""
if [[ $status == 124 || $status == 137 ]]; then
  echo "example-kafka-to-s3: the archiver did not finish in time (exit $status)" >&2
elif [[ $status != 0 ]]; then
  echo "example-kafka-to-s3: the archiver failed (exit $status)" >&2
fi
exit "$status"
