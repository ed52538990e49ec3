#!/usr/bin/env bash
# Builds calico-ipam (Calico's CNI IPAM plugin, Kubernetes-datastore mode; a peer for
# test/bench/plugin-bench.ts and test/bench/churn-bench.ts) from its Go module through a
# wrapper module, because upstream's go.mod carries replace directives that `go install`
# refuses (docs/control-plane.md). Cached; takes a lock; prints the directory holding
# `calico` and its `calico-ipam` symlink on stdout, progress lines on stderr.
#
#   bash test/bench/plugin-build-calico.sh API_SOURCE_TARBALL
#
# API_SOURCE_TARBALL: the source of github.com/projectcalico/api at release-v3.28
# (b73eae267bfa), which the Go module proxy does not serve as a zip; the build replaces the
# module with it unpacked. Exit 3 when the tarball is absent (the benchmarks then skip calico).
# The Go module proxy serves github.com/projectcalico/calico only at its latest pseudo-version,
# a release-v3.28 commit after v3.28.5: the v3.28 line. ~6 min cold on two busy cores, 47 MB.
# Its CRDs ship in the module zip: $(go env GOMODCACHE)/github.com/projectcalico/calico@VERSION/libcalico-go/config/crd/
set -euo pipefail
TARBALL=${1:?usage: plugin-build-calico.sh API_SOURCE_TARBALL}
VERSION=${CALICO_VERSION:-v1.11.0-cni-plugin.0.20250813170300-a0db560f0520}
API_REV=b73eae26
# Calico's go.mod pins the Kubernetes staging modules to ./staging paths; these are the
# published versions of the same release (v1.29), which the v3.28 line builds against.
K8S_STAGING=v0.29.15
K8S_VERSION=v1.29.15
KNFTABLES=v0.0.17-0.20240627140917-8d2660d78107
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
CACHE=${BLOCKIPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/blockipam}
OUT=$CACHE/bin/calico-$VERSION-api-$API_REV
W=$CACHE/gomod/calico-$VERSION
SRC=$CACHE/src/projectcalico-api-$API_REV
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath
log() { echo "[calico build] $*" >&2; }

if [ -x "$OUT/calico" ] && [ -L "$OUT/calico-ipam" ]; then echo "$OUT"; exit 0; fi
if [ ! -f "$TARBALL" ]; then
  log "the projectcalico/api source $TARBALL is absent: not building calico-ipam"
  exit 3
fi
mkdir -p "$CACHE/gomod" "$CACHE/src" "$OUT"
exec 9>"$CACHE/.calico-build.lock"
if ! flock -n 9; then
  log "another calico build holds $CACHE/.calico-build.lock; waiting for it"
  flock 9
fi
if [ -x "$OUT/calico" ] && [ -L "$OUT/calico-ipam" ]; then echo "$OUT"; exit 0; fi

t0=$SECONDS
log "building calico-ipam $VERSION (the v3.28 line; first time only, ~6 min on 2 cores)"
if [ ! -f "$SRC/go.mod" ]; then
  rm -rf "$SRC.tmp" && mkdir -p "$SRC.tmp"
  tar -xzf "$TARBALL" -C "$SRC.tmp"
  mv "$SRC.tmp" "$SRC"
  log "unpacked projectcalico/api into $SRC"
fi
mkdir -p "$W" && cd "$W"
[ -f go.mod ] || go mod init example.invalid/calico-build >/dev/null 2>&1
go mod edit -replace="github.com/projectcalico/api=$SRC"
for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api \
  csi-translation-lib endpointslice kube-aggregator kube-controller-manager kube-proxy \
  kube-scheduler kubectl kubelet legacy-cloud-providers metrics mount-utils \
  pod-security-admission sample-apiserver; do
  go mod edit -replace="k8s.io/$m=k8s.io/$m@$K8S_STAGING"
done
go mod edit -replace="k8s.io/kubernetes=k8s.io/kubernetes@$K8S_VERSION"
go mod edit -replace="sigs.k8s.io/knftables=sigs.k8s.io/knftables@$KNFTABLES"
log "resolving modules (go get -tool)"
go get -tool "github.com/projectcalico/calico/cni-plugin/cmd/calico@$VERSION" >&2
log "modules resolved after $((SECONDS - t0)) s; compiling"
go build -ldflags "-s -w -X main.VERSION=$VERSION" -o "$OUT/calico.tmp" \
  github.com/projectcalico/calico/cni-plugin/cmd/calico
mv "$OUT/calico.tmp" "$OUT/calico"
# The one binary acts as calico-ipam when invoked under that name (cni-plugin/cmd/calico/calico.go).
ln -sfn calico "$OUT/calico-ipam"
log "calico-ipam built in $((SECONDS - t0)) s: $OUT"
echo "$OUT"
