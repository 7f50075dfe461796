#!/usr/bin/env bash
# Starts / stops the real services the integration tests need, on 127.0.0.1 only:
# an S3-compatible server (scripts/s3-server.sh) and an Apache Kafka broker
# (scripts/kafka-broker.sh), and toxiproxy (scripts/toxiproxy.sh), the network shaper in
# front of the S3 server for the calibration tests. Each installs itself on first use (cached under
# ${SLUICE_CACHE:-$HOME/.cache/sluice}) and writes its endpoints to .services/*.env.
#   bash scripts/services.sh up|down|status
# Not here: the SASL_SSL broker (scripts/kafka-sasl.sh) and S3 over HTTPS (scripts/s3-tls.sh),
# started on demand by the tests that need them (scripts/lib/LazyService.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:-status}
mkdir -p .services
run() {
  local script=$1
  if [ -f "$script" ]; then bash "$script" "$cmd"; fi
}
case "$cmd" in
  up|status|install)
    run scripts/s3-server.sh
    run scripts/kafka-broker.sh
    run scripts/toxiproxy.sh
    ;;
  down)
    # Stop each even if one fails; the on-demand ones too, should a test run that
    # started them have ended before its teardown (they are not started by `up`).
    run scripts/s3-tls.sh || true
    run scripts/kafka-sasl.sh || true
    run scripts/toxiproxy.sh || true
    run scripts/kafka-broker.sh || true
    run scripts/s3-server.sh || true
    ;;
  *) echo "usage: $0 up|down|status|install" >&2; exit 2 ;;
esac
