#!/usr/bin/env bash
# Installs blockipam on a test cluster the way the e2e harness does (until the Helm chart
# exists): the plugin executable (`npm run build:plugin`) and the reference ptp / portmap /
# loopback plugins in each node's CNI bin directory, each behind cni-recorder.sh; a conflist
# [ptp with blockipam IPAM, portmap]; the CRDs; a ServiceAccount kube-system/blockipam-plugin
# with the plugin's ClusterRole, whose token is in the plugin's kubeconfig on each node; the
# pool default-ipv4 (10.244.0.0/16, /26 blocks). Waits until every node is Ready.
#
# Usage: install-blockipam.sh ENV_FILE [--cni-version V] [--node NAME]
#   --cni-version  the conflist's cniVersion (default 1.1.0; 1.1.0 brings STATUS)
#   --node         only (re)write NAME's conflist (e.g. to switch one node to 1.0.0); no wait
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
env_file=${1:?usage: install-blockipam.sh ENV_FILE [--cni-version V] [--node NAME]}
shift
version=1.1.0 only=""
while [ $# -gt 0 ]; do
  case $1 in
    --cni-version) version=${2:?}; shift 2 ;;
    --node) only=${2:?}; shift 2 ;;
    *) echo "install-blockipam.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
# shellcheck disable=SC1090
source "$env_file"
RUN=$CLUSTER_RUN_DIR
# shellcheck source=lib.sh
source "$here/lib.sh"
kubectl() { "$CLUSTER_BIN/kubectl" --kubeconfig "$CLUSTER_KUBECONFIG" "$@"; }

conflist() { # conflist NODE
  cat <<JSON
{
  "cniVersion": "$version",
  "name": "k8s-pod-network",
  "plugins": [
    {
      "type": "ptp",
      "mtu": 1400,
      "capabilities": {"io.kubernetes.cri.pod-annotations": true},
      "ipam": {
        "type": "blockipam",
        "nodeName": "$1",
        "kubeconfig": "$RUN/$1/cni/blockipam.kubeconfig",
        "logFile": "$RUN/$1/log/blockipam.log",
        "logLevel": "debug"
      }
    },
    {"type": "portmap", "snat": true, "capabilities": {"portMappings": true}}
  ]
}
JSON
}
write_conflist() { # atomically: containerd watches the directory
  conflist "$1" >"$RUN/$1/cni/net.d/.10-blockipam.conflist"
  mv "$RUN/$1/cni/net.d/.10-blockipam.conflist" "$RUN/$1/cni/net.d/10-blockipam.conflist"
}
if [ -n "$only" ]; then
  write_conflist "$only"
  exit 0
fi

t0=$(date +%s.%N)
exe=$repo/build/plugin/blockipam
if [ ! -x "$exe" ] || [ -n "$(find "$repo/ipam-plugin" "$repo/core" -name '*.ts' -newer "$exe" -print -quit)" ]; then
  log "building the plugin (npm run build:plugin)"
  (cd "$repo" && node_modules/.bin/node scripts/build-plugin.ts >/dev/null)
fi

kubectl apply -f "$repo/crds/" >/dev/null
kubectl wait --for condition=Established --timeout 60s -f "$repo/crds/" >/dev/null
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: blockipam-plugin, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: blockipam-plugin}
rules:
  - apiGroups: [ipam.blockipam.io]
    resources: [ipamblocks]
    verbs: [get, list, watch, create, update, patch, delete]
  - apiGroups: [ipam.blockipam.io]
    resources: [ippools, ipamconfigs, ipreservations]
    verbs: [get, list, watch]
  - apiGroups: [""]
    resources: [pods, namespaces, nodes]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: blockipam-plugin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: blockipam-plugin}
subjects: [{kind: ServiceAccount, name: blockipam-plugin, namespace: kube-system}]
YAML
token=$(kubectl -n kube-system create token blockipam-plugin --duration 48h)
ipamctl() { (cd "$repo" && node_modules/.bin/node cli/main.ts --kubeconfig "$CLUSTER_KUBECONFIG" "$@"); }
kubectl get ippool default-ipv4 >/dev/null 2>&1 || ipamctl pool create default-ipv4 --cidr 10.244.0.0/16 >/dev/null

for n in $CLUSTER_NODES; do
  d=$RUN/$n/cni
  mkdir -p "$d/bin/real" "$RUN/$n/cni-calls"
  cat >"$d/blockipam.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: cluster, cluster: {server: "$CLUSTER_INNER_API_URL", certificate-authority: "$CLUSTER_CA_FILE"}}]
users: [{name: blockipam-plugin, user: {token: "$token"}}]
contexts: [{name: blockipam-plugin, context: {cluster: cluster, user: blockipam-plugin}}]
current-context: blockipam-plugin
KC
  chmod 600 "$d/blockipam.kubeconfig"
  ln -sf "$exe" "$d/bin/real/blockipam"
  for p in ptp portmap loopback; do ln -sf "$CLUSTER_CNI_BIN/$p" "$d/bin/real/$p"; done
  for p in blockipam ptp portmap loopback; do install -m 0755 "$here/cni-recorder.sh" "$d/bin/$p"; done
  write_conflist "$n"
done
for n in $CLUSTER_NODES; do
  kubectl wait --for condition=Ready --timeout 120s "node/$n" >/dev/null || {
    log "$n did not become Ready in 120 s"
    kubectl get node "$n" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.message}{"\n"}{end}' >&2
    exit 1
  }
done
log "blockipam installed (cniVersion $version); nodes Ready after $(python3 -c "import time;print(f'{time.time()-$t0:.1f}')")s"
