#!/usr/bin/env bash
# Builds what the multi-node test cluster (test/cluster/up.sh) adds to the control plane, into
# the cache outside the repo, reusing whatever is already there. Nothing built is committed.
#
#   kubelet, kube-scheduler,        k8s.io/kubernetes/cmd/...  — the SAME wrapper module as
#   kube-controller-manager         kube-apiserver (build-lib.sh), so the Go build cache is shared
#   containerd, ctr,                github.com/containerd/containerd/v2/cmd/...  (go install,
#   containerd-shim-runc-v2         CGO_ENABLED=0, -tags "no_btrfs no_devmapper no_zfs")
#   runc                            Debian's `runc` package, `apt-get download` + unpacked (not installed)
#   loopback CNI plugin             with the CNI plugins (test/control-plane/build.sh cni)
#   pause image                     test/cluster/images/pause.go, static, one-layer OCI archive
#   busybox image                   Debian's `busybox-static`, `apt-get download`, one-layer OCI archive
#
# Runs the control-plane build first (etcd, kube-apiserver, kubectl, CNI plugins). Progress goes
# to stderr; stdout gets KEY=VALUE lines (BIN, CNI_BIN, NODE_BIN, IMAGES, PAUSE_IMAGE,
# BUSYBOX_IMAGE). Environment: as build-lib.sh, plus CONTAINERD_VERSION (v2.4.2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bash "$repo/test/control-plane/build.sh" all >/dev/null
# shellcheck source=../control-plane/build-lib.sh
source "$repo/test/control-plane/build-lib.sh"
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
NODE_BIN=$CACHE/bin/node-containerd-$CONTAINERD_VERSION
IMAGES=$CACHE/images
# Bump when pause.go or the image recipe changes (the archive name carries it).
PAUSE_VERSION=1
BUSYBOX_VERSION=1.35.0
PAUSE_IMAGE=localhost/blockipam-test/pause:$PAUSE_VERSION
BUSYBOX_IMAGE=localhost/blockipam-test/busybox:$BUSYBOX_VERSION
NODE=$repo/node_modules/.bin/node
mkdir -p "$NODE_BIN" "$IMAGES"
log() { echo "[cluster build] $*" >&2; }
build_lock

build_kube_node() {
  if have "$BIN/kubelet" --version && have "$BIN/kube-scheduler" --version &&
    have "$BIN/kube-controller-manager" --version; then return; fi
  local t0=$SECONDS
  log "building kubelet, kube-scheduler, kube-controller-manager $K8S_VERSION (first time only)"
  k8s_build kubelet kube-scheduler kube-controller-manager
  log "kubelet + kube-scheduler + kube-controller-manager built in $((SECONDS - t0)) s"
}

build_containerd() {
  if have "$NODE_BIN/containerd" --version && have "$NODE_BIN/ctr" --version &&
    [ -x "$NODE_BIN/containerd-shim-runc-v2" ]; then return; fi
  local t0=$SECONDS m=github.com/containerd/containerd/v2
  log "building containerd, ctr, containerd-shim-runc-v2 $CONTAINERD_VERSION (first time only)"
  GOBIN=$NODE_BIN go install -tags "no_btrfs no_devmapper no_zfs" \
    -ldflags "-s -w -X $m/version.Version=$CONTAINERD_VERSION -X $m/version.Revision=module-proxy" \
    "$m/cmd/containerd@$CONTAINERD_VERSION" "$m/cmd/ctr@$CONTAINERD_VERSION" \
    "$m/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" >&2
  log "containerd built in $((SECONDS - t0)) s"
}

# A Debian package's files, unpacked into DIR (apt-get download: nothing is installed).
deb_unpack() { # deb_unpack PACKAGE DIR
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && { apt-get download -q "$1" >&2 2>/dev/null || { apt-get update -qq >&2 && apt-get download -q "$1" >&2; }; })
  dpkg-deb -x "$tmp"/"$1"_*.deb "$2"
  rm -rf "$tmp"
}

build_runc() {
  if have "$NODE_BIN/runc" --version; then return; fi
  local t0=$SECONDS tmp
  log "unpacking Debian's runc"
  tmp=$(mktemp -d)
  deb_unpack runc "$tmp"
  install -m 0755 "$tmp/usr/sbin/runc" "$NODE_BIN/runc.tmp" && mv "$NODE_BIN/runc.tmp" "$NODE_BIN/runc"
  rm -rf "$tmp"
  log "runc $("$NODE_BIN/runc" --version | head -1 | awk '{print $3}') ready in $((SECONDS - t0)) s"
}

build_images() {
  local pause=$IMAGES/pause-$PAUSE_VERSION.oci.tar busybox=$IMAGES/busybox-$BUSYBOX_VERSION.oci.tar t0=$SECONDS tmp
  if [ ! -s "$pause" ]; then
    log "building the pause image"
    tmp=$(mktemp -d)
    mkdir -p "$tmp/rootfs"
    (cd "$here/images" && go build -ldflags "-s -w" -o "$tmp/rootfs/pause" pause.go)
    "$NODE" "$here/oci-image.ts" --rootfs "$tmp/rootfs" --name "$PAUSE_IMAGE" --out "$pause" \
      --entrypoint '["/pause"]' >/dev/null
    rm -rf "$tmp"
  fi
  if [ ! -s "$busybox" ]; then
    log "building the busybox image from Debian's busybox-static"
    tmp=$(mktemp -d)
    deb_unpack busybox-static "$tmp/deb"
    mkdir -p "$tmp/rootfs/bin" "$tmp/rootfs/tmp" "$tmp/rootfs/etc"
    install -m 0755 "$tmp/deb/bin/busybox" "$tmp/rootfs/bin/busybox"
    local a
    for a in $("$tmp/rootfs/bin/busybox" --list); do
      [ "$a" = busybox ] || ln -s busybox "$tmp/rootfs/bin/$a"
    done
    printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$tmp/rootfs/etc/passwd"
    printf 'root:x:0:\nnobody:x:65534:\n' >"$tmp/rootfs/etc/group"
    "$NODE" "$here/oci-image.ts" --rootfs "$tmp/rootfs" --name "$BUSYBOX_IMAGE" --out "$busybox" \
      --cmd '["/bin/sh"]' --env PATH=/bin >/dev/null
    rm -rf "$tmp"
  fi
  [ $((SECONDS - t0)) -eq 0 ] || log "images ready in $((SECONDS - t0)) s"
}

what=${1:-all}
case $what in
  all) build_kube_node; build_containerd; build_runc; build_images ;;
  kube) build_kube_node ;;
  containerd) build_containerd; build_runc ;;
  images) build_images ;;
  *) log "usage: build.sh [all|kube|containerd|images]"; exit 2 ;;
esac
cat <<OUT
BIN=$BIN
CNI_BIN=$CNI_BIN
NODE_BIN=$NODE_BIN
IMAGES=$IMAGES
PAUSE_IMAGE=$PAUSE_IMAGE
PAUSE_ARCHIVE=$IMAGES/pause-$PAUSE_VERSION.oci.tar
BUSYBOX_IMAGE=$BUSYBOX_IMAGE
BUSYBOX_ARCHIVE=$IMAGES/busybox-$BUSYBOX_VERSION.oci.tar
OUT
