#!/usr/bin/env bash
# npm run soak -- --rate R --duration D [--source synthetic|kafka] [--sink memory|s3] [--json]
#
# A soak in real time (examples/soak/main.ts on the workspace's sources, with the repo's
# Node): records offered at R records/s for D, sampled every second into
# reports/soak-<time>/ (samples.csv, soak.svg, pipeline.svg, summary.md, result.json).
# With --source kafka or --sink s3 it starts the local broker and S3 server
# (scripts/services.sh up), sources their .services/*.env, and stops afterwards the
# services it started (one that was already running is left running). Service logs go
# to stderr; with --json the last stdout line is one JSON object.
# The run is killed after SLUICE_SOAK_TIMEOUT seconds (default: the duration + 300 s).
# Ports: SLUICE_S3_PORT, SLUICE_KAFKA_PORT, SLUICE_KAFKA_CONTROLLER_PORT (see services.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

needs_services=0
duration=""
prev=""
for arg in "$@"; do
  case "$prev" in
    --source) [[ $arg == kafka ]] && needs_services=1 ;;
    --sink) [[ $arg == s3 ]] && needs_services=1 ;;
    --duration) duration=$arg ;;
  esac
  case "$arg" in
    --source=kafka|--sink=s3) needs_services=1 ;;
    --duration=*) duration=${arg#--duration=} ;;
  esac
  prev=$arg
done

# Seconds of the duration (60, 60s, 5m, 1h); unknown forms leave the default timeout.
seconds=0
case "$duration" in
  *[0-9]s|*[0-9]) seconds=${duration%s} ;;
  *[0-9]m) seconds=$(( ${duration%m} * 60 )) ;;
  *[0-9]h) seconds=$(( ${duration%h} * 3600 )) ;;
esac
[[ $seconds =~ ^[0-9]+$ ]] || seconds=3600
timeout_seconds=${SLUICE_SOAK_TIMEOUT:-$(( seconds + 300 ))}

if [[ $needs_services == 1 ]]; then
  . scripts/lib/services-for-run.sh
  services_for_run
fi

. scripts/lib/run-source.sh
run_source "$timeout_seconds" examples/soak/main.ts "$@"
