#!/usr/bin/env bash
# Builds the test control plane and CNI tooling from the Go module proxy into a cache outside
# the repo, reusing whatever is already there. Nothing built here is ever committed.
#
#   etcd, etcdctl            go.etcd.io/etcd/{server,etcdctl}/v3   (wrapper module: upstream go.mod has replaces)
#   kube-apiserver, kubectl  k8s.io/kubernetes/cmd/...             (wrapper module replacing every staging module)
#   cnitool                  github.com/containernetworking/cni/cnitool       (go install)
#   ptp, host-local, portmap, loopback github.com/containernetworking/plugins/... (go install)
#
# Output: prints the bin directory. Environment: BLOCKIPAM_CACHE (default ~/.cache/blockipam),
# K8S_VERSION (v1.37.2), ETCD_VERSION (v3.7.3), CNI_VERSION (v1.3.0), PLUGINS_VERSION (v1.10.0).
# Recipe and pitfalls: docs/control-plane.md. The cache layout, lock and wrapper module are shared with test/cluster/build.sh (build-lib.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=build-lib.sh
source "$here/build-lib.sh"
log() { echo "[control-plane build] $*" >&2; }
build_lock

build_etcd() {
  if have "$BIN/etcd" --version && have "$BIN/etcdctl" version; then return; fi
  local w=$CACHE/gomod/etcd-$ETCD_VERSION t0=$SECONDS
  log "building etcd $ETCD_VERSION (first time only)"
  mkdir -p "$w" && cd "$w"
  go_mod_init example.invalid/etcd-build
  go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION" "go.etcd.io/etcd/etcdctl/v3@$ETCD_VERSION" >&2
  go build -ldflags "-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3 && mv "$BIN/etcd.tmp" "$BIN/etcd"
  go build -ldflags "-s -w" -o "$BIN/etcdctl.tmp" go.etcd.io/etcd/etcdctl/v3 && mv "$BIN/etcdctl.tmp" "$BIN/etcdctl"
  log "etcd built in $((SECONDS - t0)) s"
}

build_kubernetes() {
  if have "$BIN/kube-apiserver" --version && have "$BIN/kubectl" version --client; then return; fi
  local t0=$SECONDS
  log "building kube-apiserver and kubectl $K8S_VERSION (first time only; ~10-20 min on 2 cores)"
  k8s_build kube-apiserver kubectl
  log "kube-apiserver + kubectl built in $((SECONDS - t0)) s"
}

build_cni() {
  if [ -x "$CNI_BIN/cnitool" ] && [ -x "$CNI_BIN/ptp" ] && [ -x "$CNI_BIN/host-local" ] && [ -x "$CNI_BIN/portmap" ] && [ -x "$CNI_BIN/loopback" ]; then return; fi
  local t0=$SECONDS
  log "installing cnitool $CNI_VERSION and ptp/host-local/portmap/loopback $PLUGINS_VERSION"
  GOBIN=$CNI_BIN go install -ldflags "-s -w" "github.com/containernetworking/cni/cnitool@$CNI_VERSION" >&2
  GOBIN=$CNI_BIN go install -ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$PLUGINS_VERSION" \
    "github.com/containernetworking/plugins/plugins/main/ptp@$PLUGINS_VERSION" \
    "github.com/containernetworking/plugins/plugins/ipam/host-local@$PLUGINS_VERSION" \
    "github.com/containernetworking/plugins/plugins/meta/portmap@$PLUGINS_VERSION" \
    "github.com/containernetworking/plugins/plugins/main/loopback@$PLUGINS_VERSION" >&2
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
