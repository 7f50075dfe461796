# Sourced. `await_healthy SECONDS PID CHECK [ARGS...]` waits up to SECONDS for
# the health check CHECK to succeed while process PID lives, and succeeds when it
# does; it fails at once when PID exits, and at the deadline.
#
# For an `up` that finds its service's process running but not answering. A
# health probe is bounded at 2–5 s (curl -m 2, a 5 s Metadata request), and on a
# loaded machine a live, healthy service can miss it, or one another test file
# just started can still be starting. `up` then killed and restarted the service
# under the test files using it (kafka-broker.sh, kafka-sasl.sh, s3-tls.sh),
# refused it (s3-server.sh) or started a second one on its port (toxiproxy.sh).
# Now it waits for it the same time it would give a fresh start, and only a
# service still not answering then is treated as broken.
await_healthy() {
  local seconds=$1 pid=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    kill -0 "$pid" 2>/dev/null || return 1
    ((SECONDS < deadline)) || return 1
    sleep 0.25
  done
}
