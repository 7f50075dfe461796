#!/usr/bin/env bash
# bench:peer's second peer (`--peer camel`): an Apache Camel route (camel-kafka → the
# aggregator → camel-aws2-s3, examples/bench/peer/camel), built with Maven into a directory of
# its own under ${SLUICE_CACHE:-$HOME/.cache/sluice}, on first use and again whenever its pom or
# source changes (the directory is named by their hash).
#   bash scripts/lib/peer-camel.sh          prints the Java classpath of the built route
#   . scripts/lib/peer-camel.sh; peer_camel same, as a function (for scripts that source it)
# A build counts as complete only once its marker file exists, written after Maven succeeded
# and the classpath was written: a build cut short is removed and redone, never used.
# Needs java and mvn (17+; OpenJDK 17 and Maven 3.8 here) and Maven Central on the first run.
set -euo pipefail

PEER_CAMEL_SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../examples/bench/peer/camel" && pwd)"
PEER_CAMEL_VERSION=4.14.0

peer_camel() {
  local hash dir
  hash=$(cat "$PEER_CAMEL_SOURCE/pom.xml" "$PEER_CAMEL_SOURCE"/src/main/java/sluice/peer/*.java | sha256sum | cut -c1-12)
  dir="${SLUICE_CACHE:-$HOME/.cache/sluice}/camel-s3-archiver-$PEER_CAMEL_VERSION-$hash"
  if [[ ! -f "$dir/.sluice-complete" ]]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "peer-camel: building the Camel $PEER_CAMEL_VERSION route into $dir" >&2
    mvn -q -B -f "$PEER_CAMEL_SOURCE/pom.xml" -Dsluice.build.dir="$dir/build" package >&2
    mvn -q -B -f "$PEER_CAMEL_SOURCE/pom.xml" -Dsluice.build.dir="$dir/build" dependency:build-classpath -Dmdep.outputFile="$dir/dependencies.txt" >&2
    echo "$dir/build/camel-s3-archiver-1.0.0.jar:$(cat "$dir/dependencies.txt")" >"$dir/classpath.txt"
    echo "camel $PEER_CAMEL_VERSION" >"$dir/.sluice-complete"
  fi
  cat "$dir/classpath.txt"
}

# Run as a program (not sourced): print the classpath.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then peer_camel; fi
