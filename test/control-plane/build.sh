#!/usr/bin/env bash
# Builds the test control plane and CNI tooling from the Go module proxy into a cache outside
# the repo, reusing whatever is already there. Nothing built here is ever committed.
#
#   etcd, etcdctl            go.etcd.io/etcd/{server,etcdctl}/v3   (wrapper module: upstream go.mod has replaces)
#   kube-apiserver, kubectl  k8s.io/kubernetes/cmd/...             (wrapper module replacing every staging module)
#   cnitool                  github.com/containernetworking/cni/cnitool       (go install)
#   ptp, host-local, portmap github.com/containernetworking/plugins/...       (go install)
#
# Output: prints the bin directory. Environment: BLOCKIPAM_CACHE (default ~/.cache/blockipam),
# K8S_VERSION (v1.37.2), ETCD_VERSION (v3.7.3), CNI_VERSION (v1.3.0), PLUGINS_VERSION (v1.10.0).
# Recipe and pitfalls: docs/control-plane.md.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}
CNI_VERSION=${CNI_VERSION:-v1.3.0}
PLUGINS_VERSION=${PLUGINS_VERSION:-v1.10.0}
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
CACHE=${BLOCKIPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/blockipam}
BIN=$CACHE/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION
CNI_BIN=$CACHE/bin/cni-$CNI_VERSION-plugins-$PLUGINS_VERSION
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath

log() { echo "[control-plane build] $*" >&2; }
mkdir -p "$BIN" "$CNI_BIN" "$CACHE/gomod"

# One build at a time per cache (parallel test runs on one machine share it).
exec 9>"$CACHE/.build.lock"
flock 9

have() { [ -x "$1" ] && "$1" "${@:2}" >/dev/null 2>&1; }

build_etcd() {
  if have "$BIN/etcd" --version && have "$BIN/etcdctl" version; then return; fi
  local w=$CACHE/gomod/etcd-$ETCD_VERSION t0=$SECONDS
  log "building etcd $ETCD_VERSION (first time only)"
  mkdir -p "$w" && cd "$w"
  [ -f go.mod ] || go mod init example.invalid/etcd-build >/dev/null 2>&1
  go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION" "go.etcd.io/etcd/etcdctl/v3@$ETCD_VERSION" >&2
  go build -ldflags "-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3 && mv "$BIN/etcd.tmp" "$BIN/etcd"
  go build -ldflags "-s -w" -o "$BIN/etcdctl.tmp" go.etcd.io/etcd/etcdctl/v3 && mv "$BIN/etcdctl.tmp" "$BIN/etcdctl"
  log "etcd built in $((SECONDS - t0)) s"
}

build_kubernetes() {
  if have "$BIN/kube-apiserver" --version && have "$BIN/kubectl" version --client; then return; fi
  local w=$CACHE/gomod/k8s-$K8S_VERSION t0=$SECONDS
  local staging=v0.${K8S_VERSION#v1.}
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  log "building kube-apiserver and kubectl $K8S_VERSION (first time only; ~10-20 min on 2 cores)"
  mkdir -p "$w" && cd "$w"
  [ -f go.mod ] || go mod init example.invalid/k8s-build >/dev/null 2>&1
  # The staging list comes from the published go.mod of k8s.io/kubernetes (its ./staging replaces).
  local kmod
  kmod=$(cd "$(mktemp -d)" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\([^"]*\)".*/\1/p')
  local mods
  mods=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#\1#p' "$kmod" | sort -u)
  [ -n "$mods" ] || { log "could not read the staging module list from $kmod"; exit 1; }
  local m
  for m in $mods; do go mod edit -replace="$m=$m@$staging"; done
  go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" "k8s.io/kubernetes/cmd/kubectl@$K8S_VERSION" >&2
  local ldf="-s -w" p date
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=$date"
  done
  go build -tags selinux,notest -ldflags "$ldf" -o "$BIN/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$BIN/kube-apiserver.tmp" "$BIN/kube-apiserver"
  go build -tags selinux,notest -ldflags "$ldf" -o "$BIN/kubectl.tmp" k8s.io/kubernetes/cmd/kubectl
  mv "$BIN/kubectl.tmp" "$BIN/kubectl"
  log "kube-apiserver + kubectl built in $((SECONDS - t0)) s"
}

build_cni() {
  if [ -x "$CNI_BIN/cnitool" ] && [ -x "$CNI_BIN/ptp" ] && [ -x "$CNI_BIN/host-local" ] && [ -x "$CNI_BIN/portmap" ]; then return; fi
  local t0=$SECONDS
  log "installing cnitool $CNI_VERSION and ptp/host-local/portmap $PLUGINS_VERSION"
  GOBIN=$CNI_BIN go install -ldflags "-s -w" "github.com/containernetworking/cni/cnitool@$CNI_VERSION" >&2
  GOBIN=$CNI_BIN go install -ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$PLUGINS_VERSION" \
    "github.com/containernetworking/plugins/plugins/main/ptp@$PLUGINS_VERSION" \
    "github.com/containernetworking/plugins/plugins/ipam/host-local@$PLUGINS_VERSION" \
    "github.com/containernetworking/plugins/plugins/meta/portmap@$PLUGINS_VERSION" >&2
  log "CNI tools installed in $((SECONDS - t0)) s"
}

what=${1:-all}
case $what in
  all) build_etcd; build_kubernetes; build_cni ;;
  control-plane) build_etcd; build_kubernetes ;;
  cni) build_cni ;;
  *) log "usage: build.sh [all|control-plane|cni]"; exit 2 ;;
esac
echo "BIN=$BIN"
echo "CNI_BIN=$CNI_BIN"
