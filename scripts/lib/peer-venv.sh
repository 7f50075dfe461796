#!/usr/bin/env bash
# The peer archiver of `npm run bench:peer`: Quix Streams with its S3 sink, pinned, in a
# virtualenv of its own under ${SLUICE_CACHE:-$HOME/.cache/sluice}, installed on first use.
#   bash scripts/lib/peer-venv.sh         prints the venv's python (installs it first if needed)
#   . scripts/lib/peer-venv.sh; peer_venv same, as a function (for scripts that source it)
# A venv counts as complete only once its marker file exists, written after pip succeeded:
# an install cut short (Ctrl-C, no network) is removed and redone on the next run, never used.
# Needs python3 (3.9+; 3.11 here) with its venv module, and PyPI reachable on the first run.
set -euo pipefail

# Pinned exactly, so the peer's figures name one version; bench peer.ts reports it.
PEER_QUIX_VERSION=3.28.1
PEER_VENV="${SLUICE_CACHE:-$HOME/.cache/sluice}/venv-quixstreams-$PEER_QUIX_VERSION"
# Written after pip succeeded; holds the requirement installed.
PEER_VENV_MARKER="$PEER_VENV/.sluice-complete"

peer_venv() {
  if [[ ! -f "$PEER_VENV_MARKER" ]]; then
    rm -rf "$PEER_VENV"
    mkdir -p "$(dirname "$PEER_VENV")"
    echo "peer-venv: installing quixstreams[s3]==$PEER_QUIX_VERSION into $PEER_VENV" >&2
    python3 -m venv "$PEER_VENV" >&2
    "$PEER_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
      "quixstreams[s3]==$PEER_QUIX_VERSION" >&2
    # The import the peer app makes, checked before the venv is declared complete.
    "$PEER_VENV/bin/python" -c "import quixstreams.sinks.community.file.s3" >&2
    echo "quixstreams[s3]==$PEER_QUIX_VERSION" >"$PEER_VENV_MARKER"
  fi
  echo "$PEER_VENV/bin/python"
}

# Run as a program (not sourced): print the interpreter's path.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then peer_venv; fi
