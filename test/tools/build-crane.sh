#!/usr/bin/env bash
# Builds crane (go-containerregistry's registry client) from the Go module proxy into the cache
# outside the repo, skipping it when the version is there. Nothing built here is committed.
# docs/install.md pushes the image with `crane push` (an OCI layout to a registry, no container
# daemon), and test/cluster/install-guide.int.test.ts also runs `crane registry serve` as the
# reader's registry (an in-memory OCI registry on loopback).
#
#   crane   github.com/google/go-containerregistry/cmd/crane   (go install)
#
# Output: stdout gets CRANE=<path>; progress goes to stderr.
# Environment: BLOCKIPAM_CACHE (default ~/.cache/blockipam), CRANE_VERSION (v0.22.1). Its own
# lock (.crane-build.lock): two runs never build it at once.
set -euo pipefail
CRANE_VERSION=${CRANE_VERSION:-v0.22.1}
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
CACHE=${BLOCKIPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/blockipam}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath
log() { echo "[crane build] $*" >&2; }
mkdir -p "$CACHE/bin"
exec 8>"$CACHE/.crane-build.lock"
if ! flock -n 8; then
  echo "[crane build] waiting for another run's build to finish ($CACHE/.crane-build.lock)" >&2
  flock 8
fi
dir=$CACHE/bin/crane-$CRANE_VERSION
if [ -x "$dir/crane" ] && "$dir/crane" version 2>/dev/null | grep -qx "${CRANE_VERSION#v}"; then
  echo "CRANE=$dir/crane"
  exit 0
fi
t0=$SECONDS
log "building crane $CRANE_VERSION (first time only)"
rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
GOBIN=$dir.tmp go install \
  -ldflags "-w -s -X github.com/google/go-containerregistry/cmd/crane/cmd.Version=${CRANE_VERSION#v}" \
  "github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION" >&2
rm -rf "$dir" && mv "$dir.tmp" "$dir"
log "crane $CRANE_VERSION built in $((SECONDS - t0)) s"
echo "CRANE=$dir/crane"
