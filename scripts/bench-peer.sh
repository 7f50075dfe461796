#!/usr/bin/env bash
# npm run bench:peer [-- --records N --partitions P --rounds R --peer quix|camel --peer-defaults --sluice-from bundle|sources --json]   (all flags: -- --help)
#
# Sluice against a real peer archiver, Quix Streams' S3FileSink, on the local services:
# installs the peer once into a cached virtualenv (scripts/lib/peer-venv.sh:
# quixstreams[s3]==3.28.1 under ${SLUICE_CACHE:-~/.cache/sluice}), starts the local broker
# and S3 server (as bench-e2e.sh does; a service already running is left running),
# sources their .services/*.env, and runs examples/bench/peer.ts on the workspace's
# sources with SLUICE_PEER_PYTHON set to the venv's interpreter. Logs go to stderr; with
# --json, stdout's last line is the summary. The run is killed after
# SLUICE_BENCH_TIMEOUT seconds (default 3600); each archiving run in it is also bounded
# (120 s + 0.5 ms per record).
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib/run-source.sh
# --help and --completions <shell> need neither the peer nor the services: peer.ts prints them.
case " $* " in *" --help "*|*" -h "*|*" --completions "*|*" --completions="*) exec "$(repo_node)" --conditions=@sluice/source examples/bench/peer.ts "$@" ;; esac
# --trouble reads Sluice's bucket back with `sluice audit` (the S3 adapter's bin, from dist).
case " $* " in *" --trouble "*|*" --trouble="*) npx turbo run build --filter=@sluice/adapter-s3 --output-logs=errors-only >&2 ;; esac
# The throughput rounds run Sluice's archiver from its one-file build (examples/bundle/build.ts,
# a few seconds), unless --sluice-from sources.
case " $* " in
  *" --trouble "*|*" --trouble="*|*" --sluice-from sources "*|*" --sluice-from=sources "*) ;;
  *) npm run -s bundle -w @sluice/examples >&2 ;;
esac
. scripts/lib/services-for-run.sh
# Before the services: an install or a build that fails leaves nothing running. The peer
# is Quix Streams (a cached virtualenv); the Camel route is built with Maven into the cache
# (scripts/lib/peer-camel.sh) when the line names it
# (--peer camel, or camel among the trouble run's --contenders). The virtualenv is left out
# only for the rounds against Camel.
case " $* " in
  *camel*)
    . scripts/lib/peer-camel.sh
    SLUICE_PEER_CAMEL_CLASSPATH="$(peer_camel)"
    export SLUICE_PEER_CAMEL_CLASSPATH ;;
esac
case " $* " in
  *" --peer camel "*|*" --peer=camel "*) ;;
  *)
    . scripts/lib/peer-venv.sh
    SLUICE_PEER_PYTHON="$(peer_venv)"
    export SLUICE_PEER_PYTHON ;;
esac
services_for_run

run_source "${SLUICE_BENCH_TIMEOUT:-3600}" examples/bench/peer.ts "$@"
