#!/usr/bin/env bash
# Builds whereabouts (a CRD-based peer IPAM, for test/bench/plugin-bench.ts) from its Go module
# through a wrapper module, because upstream's go.mod carries a replace directive that
# `go install` refuses (docs/control-plane.md). Cached; prints the binary path.
# Its CRDs ship in the module zip: $(go env GOMODCACHE)/github.com/k8snetworkplumbingwg/whereabouts@VERSION/doc/crds/
set -euo pipefail
VERSION=${WHEREABOUTS_VERSION:-v0.9.2}
CACHE=${BLOCKIPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/blockipam}
OUT=$CACHE/bin/whereabouts-$VERSION
W=$CACHE/gomod/whereabouts-$VERSION
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath
if [ ! -x "$OUT/whereabouts" ]; then
  mkdir -p "$W" "$OUT" && cd "$W"
  [ -f go.mod ] || go mod init example.invalid/wb-build >/dev/null 2>&1
  go mod edit -replace=github.com/gogo/protobuf=github.com/gogo/protobuf@v1.3.2
  go get -tool "github.com/k8snetworkplumbingwg/whereabouts/cmd@$VERSION" >&2
  go build -ldflags "-s -w" -o "$OUT/whereabouts.tmp" github.com/k8snetworkplumbingwg/whereabouts/cmd
  mv "$OUT/whereabouts.tmp" "$OUT/whereabouts"
fi
echo "$OUT/whereabouts"
