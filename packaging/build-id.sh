#!/usr/bin/env bash
# Prints the build id baked into braid's Rust (BRAID_BUILD, read by braid_wire::version::BUILD):
# $BRAID_BUILD when set (an image or package build names its own), else the source's git
# commit (12 hex digits), else "unknown". No time, no host name: the same source, the same id.
set -euo pipefail
if [[ -n ${BRAID_BUILD:-} ]]; then
  echo "$BRAID_BUILD"
elif commit=$(git -C "$(dirname "$0")/.." rev-parse --short=12 HEAD 2>/dev/null); then
  echo "$commit"
else
  echo unknown
fi
