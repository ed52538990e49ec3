#!/usr/bin/env bash
# Gives a test cluster's pods the network kind or GKE gives them, on the nodes' spec.podCIDR
# (allocated by kube-controller-manager: up.sh --pod-network, which runs this):
#
#   each node   the reference ptp, host-local, portmap and loopback in its CNI bin dir
#               (ctl.sh cni-plugins) and a conflist [ptp with host-local IPAM on its podCIDR,
#               portmap] at cniVersion 0.3.1, as kindnetd writes it
#   every node  a route to each other node's podCIDR via that node's address on the bridge:
#               what kindnetd programs (no kindnetd runs; these routes are static)
#
#   kind  10-kindnet.conflist, network "kindnet", host-local dataDir /run/cni-ipam-state
#   gke   10-gke-ptp.conflist, network "gke-pod-network", host-local's default dataDir
#         (/var/lib/cni/networks)
# Both dataDirs are the node's own (node.sh): /run is its tmpfs, /var/lib/cni its run dir's
# cni-cache. Idempotent: run again (e.g. after a node re-registered), it rewrites the conflists
# and replaces the routes. Waits until every node has a podCIDR, then until every node is Ready.
#
# Usage: pod-network.sh ENV_FILE kind|gke
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() {
  echo "pod-network.sh: $1" >&2
  echo "usage: pod-network.sh ENV_FILE kind|gke" >&2
  exit 2
}
[ $# -eq 2 ] || usage "name the env file and the shape"
[ -f "$1" ] || usage "no env file $1"
case $2 in
  kind) network=kindnet file=10-kindnet.conflist data_dir=' "dataDir": "/run/cni-ipam-state",' ;;
  gke) network=gke-pod-network file=10-gke-ptp.conflist data_dir="" ;;
  *) usage "the shape must be kind or gke, got '$2'" ;;
esac
# shellcheck disable=SC1090
source "$1"
RUN=$CLUSTER_RUN_DIR
# shellcheck source=lib.sh
source "$here/lib.sh"
kubectl() { "$CLUSTER_BIN/kubectl" --kubeconfig "$CLUSTER_KUBECONFIG" "$@"; }
# The harness's pod MTU, as in install-blockipam.sh (kindnetd takes its node interface's).
mtu=1400

pod_cidr() { kubectl get node "$1" -o jsonpath='{.spec.podCIDR}'; }
has_pod_cidr() { [ -n "$(pod_cidr "$1")" ]; }

conflist() { # conflist POD_CIDR
  cat <<JSON
{
  "cniVersion": "0.3.1",
  "name": "$network",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "ipam": {"type": "host-local",$data_dir "routes": [{"dst": "0.0.0.0/0"}], "ranges": [[{"subnet": "$1"}]]},
      "mtu": $mtu
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
}

t0=$(date +%s.%N)
read -r -a nodes <<<"$CLUSTER_NODES"
read -r -a ips <<<"$CLUSTER_NODE_IPS"
cidrs=()
for n in "${nodes[@]}"; do
  wait_until 60 has_pod_cidr "$n" || { log "$n got no spec.podCIDR in 60 s"; exit 1; }
  cidrs+=("$(pod_cidr "$n")")
done
bash "$here/ctl.sh" "$RUN" cni-plugins
for i in "${!nodes[@]}"; do
  d=$RUN/${nodes[$i]}/cni/net.d
  conflist "${cidrs[$i]}" >"$d/.$file" # atomically: containerd watches the directory
  mv "$d/.$file" "$d/$file"
  for j in "${!nodes[@]}"; do
    [ "$i" = "$j" ] || in_ns "${nodes[$i]}" ip route replace "${cidrs[$j]}" via "${ips[$j]}"
  done
done
for n in "${nodes[@]}"; do
  kubectl wait --for condition=Ready --timeout 120s "node/$n" >/dev/null || {
    log "$n did not become Ready in 120 s"
    exit 1
  }
done
log "pod network $2 ($network) on podCIDRs ${cidrs[*]}; nodes Ready after $(python3 -c "import time;print(f'{time.time()-$t0:.1f}')")s"
