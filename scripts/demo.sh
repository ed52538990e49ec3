#!/usr/bin/env bash
# The README's main command: blockipam installed like a product on a real local Kubernetes
# cluster, shown working, and torn down.
#   1. builds what a fresh machine lacks (scripts/setup.sh: control plane, kubelet, containerd,
#      Helm, the image — cold about 25-40 min on two busy cores, then cached);
#   2. starts a 3-node cluster (test/cluster/up.sh; torn down at exit, also when killed);
#   3. imports the image (localhost/blockipam:<version>) into every node's containerd and gives
#      each node the reference CNI plugins (ptp, portmap, loopback) as its OS package would;
#   4. `helm install`s charts/blockipam: the agents install the plugin and the conflist on every
#      node, the controller runs two replicas;
#   5. runs a Deployment of 6 pods spread over the nodes and shows which pod got which address
#      from which node's block (scripts/demo-report.ts checks each block is its node's);
#   6. pings from a pod on each node to a pod on the next node (the agents' routes);
#   7. shows `kubectl get ippools` (USED/FREE from the controller), `ipamctl show`, `ipamctl check`;
#   8. deletes the Deployment, `helm uninstall`s, stops the cluster and checks the host is unchanged
#      — unless --keep: then the cluster, blockipam and the Deployment stay, and the commands that
#      remove them are printed.
# Exit 0 only when every step worked. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=""
case ${1:-} in
  "") ;;
  --keep) keep=1 ;;
  *) echo "usage: demo.sh [--keep]   (--keep: leave the cluster up with blockipam installed, for a look around)" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "demo: run as root (the cluster's namespaces and cgroups)" >&2; exit 1; }
t0=$SECONDS
say() { printf '\n== [%3d s] %s\n' $((SECONDS - t0)) "$*"; }
say "blockipam demo. A first run on a fresh machine builds the control plane, kubelet, containerd, Helm and the image from their sources: about 25-40 min on two busy cores, with progress below; later runs take 2-4 min."
# shellcheck source=setup.sh
source scripts/setup.sh
eval "$(bash scripts/build-image.sh)" # IMAGE ARCHIVE DIGEST (cached: returns at once)
eval "$(bash test/tools/build-helm.sh)" # HELM3 HELM4
helm_home=$(mktemp -d /tmp/blockipam-demo-helm.XXXXXX)
helm() {
  HELM_CACHE_HOME=$helm_home/cache HELM_CONFIG_HOME=$helm_home/config HELM_DATA_HOME=$helm_home/data \
    "$HELM3" --kubeconfig "$CLUSTER_KUBECONFIG" "$@"
}

say "starting a 3-node cluster (test/cluster/up.sh: control plane + kubelet/containerd per node; ~30-60 s)"
if [ -n "$keep" ]; then env_file=$(bash test/cluster/up.sh --nodes 3); else env_file=$(bash test/cluster/up.sh --nodes 3 --owner-pid $$); fi
# shellcheck disable=SC1090
source "$env_file"
RUN=$CLUSTER_RUN_DIR
teardown() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$keep" ]; then
    say "the cluster stays up with blockipam installed (--keep): KUBECONFIG=$CLUSTER_KUBECONFIG; a shell on a node: bash test/cluster/ctl.sh $RUN exec node-1"
    echo "remove the demo later with:"
    echo "  $CLUSTER_BIN/kubectl --kubeconfig $CLUSTER_KUBECONFIG -n demo delete deployment demo"
    echo "  $HELM3 --kubeconfig $CLUSTER_KUBECONFIG uninstall blockipam --namespace kube-system"
    echo "or stop the whole cluster (and check the host is unchanged): bash test/cluster/down.sh $RUN"
    rm -rf "$helm_home"
    if [ "$rc" = 0 ]; then say "demo finished: every step worked"; else say "demo FAILED (exit $rc)"; fi
    exit "$rc"
  fi
  say "stopping the cluster and checking that the host is unchanged (test/cluster/down.sh)"
  bash test/cluster/down.sh "$RUN" || rc=1
  rm -rf "$helm_home"
  if [ "$rc" = 0 ]; then say "demo finished: every step worked"; else say "demo FAILED (exit $rc)"; fi
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM
kubectl() { "$CLUSTER_BIN/kubectl" --kubeconfig "$CLUSTER_KUBECONFIG" "$@"; }
show() { echo "\$ $*"; "$@"; }
ipamctl() { build/bin/ipamctl --kubeconfig "$CLUSTER_KUBECONFIG" "$@"; }

say "importing $IMAGE ($(du -m "$ARCHIVE" | cut -f1) MB, $DIGEST) into every node; the reference CNI plugins onto every node"
bash test/cluster/ctl.sh "$RUN" import-image "$ARCHIVE"
bash test/cluster/ctl.sh "$RUN" cni-plugins
show kubectl get nodes

say "helm install blockipam charts/blockipam (agents install the plugin on each node), then wait until every agent and controller is ready"
# The cluster has no kube-proxy: components reach the API server at its address; each node sees
# its CNI dirs at one path (docs/test-cluster.md).
show helm install blockipam charts/blockipam --namespace kube-system \
  --set-string image.tag="${IMAGE##*:}" --set apiServer.host=10.99.0.1 --set apiServer.port=6443 \
  --set cni.binDir="$CLUSTER_NODE_CNI_BIN_DIR" --set cni.confDir="$CLUSTER_NODE_CNI_CONF_DIR" \
  --set cni.mtu=1400 --wait --timeout 5m
# helm --wait counts the DaemonSet ready once all but agent.maxUnavailable (1) agents are, so a
# node's agent may still be starting: wait for every one (and both controllers) before showing them.
show kubectl -n kube-system rollout status daemonset/blockipam-agent --timeout 180s
show kubectl -n kube-system rollout status deployment/blockipam-controller --timeout 180s
show kubectl wait --for condition=Ready --timeout 120s node --all
show kubectl -n kube-system get pods -o wide
echo "\$ ls $CLUSTER_NODE_CNI_BIN_DIR (node-1, as the runtime sees it)"
bash test/cluster/ctl.sh "$RUN" exec node-1 ls -l "$CLUSTER_NODE_CNI_BIN_DIR" "$CLUSTER_NODE_CNI_CONF_DIR"

say "a Deployment of 6 pods spread over the 3 nodes"
kubectl create namespace demo >/dev/null
kubectl -n demo apply -f - <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: demo}
spec:
  replicas: 6
  selector: {matchLabels: {app: demo}}
  template:
    metadata: {labels: {app: demo}}
    spec:
      terminationGracePeriodSeconds: 1
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: demo}}}
      containers:
        - {name: main, image: $CLUSTER_BUSYBOX_IMAGE, imagePullPolicy: Never, command: [sleep, '3600']}
YAML
show kubectl -n demo rollout status deployment/demo --timeout 180s

say "which pod got which address from which node's block"
report=$(node_modules/.bin/node scripts/demo-report.ts "$CLUSTER_BIN/kubectl" "$CLUSTER_KUBECONFIG" demo app=demo)
grep -v '^PAIRS ' <<<"$report"
show kubectl get ipamblocks
read -r -a pairs <<<"$(grep '^PAIRS ' <<<"$report" | cut -d' ' -f2-)"
[ ${#pairs[@]} -eq 6 ] || { echo "demo: expected a pod on each of the 3 nodes, got: ${pairs[*]}" >&2; exit 1; }

say "ping across nodes (the agents' routes to the other nodes' blocks)"
# An agent programs a route within its 10 s period after the other node's block appeared:
# a fresh block may still be unrouted for a few seconds, so each pair gets up to 30 s.
for i in 0 2 4; do
  j=$(((i + 2) % 6))
  echo "\$ kubectl -n demo exec ${pairs[i]} -- ping -c 2 -W 3 ${pairs[j + 1]}"
  for attempt in $(seq 10); do
    if out=$(kubectl -n demo exec "${pairs[i]}" -- ping -c 2 -W 3 "${pairs[j + 1]}" 2>&1); then break; fi
    [ "$attempt" -lt 10 ] || { echo "$out"; echo "demo: ${pairs[i]} cannot reach ${pairs[j + 1]} after 30 s" >&2; exit 1; }
    sleep 1
  done
  echo "$out"
done

say "the pool as the controller reports it (USED/FREE in IPPool.status)"
for _ in $(seq 60); do
  [ "$(kubectl get ippool default-ipv4 -o jsonpath='{.status.allocated}')" = 6 ] && break
  sleep 1
done
show kubectl get ippools
[ "$(kubectl get ippool default-ipv4 -o jsonpath='{.status.allocated}')" = 6 ] ||
  { echo "demo: the controller did not report 6 allocated addresses within 60 s" >&2; exit 1; }

say "ipamctl (the image's multi-call executable, from the host)"
show ipamctl show
show ipamctl check

[ -z "$keep" ] || exit 0 # --keep: the Deployment and the installation stay (teardown says how to remove them)
say "deleting the Deployment; helm uninstall (CRDs and IPAM data stay, as docs/install.md says)"
show kubectl -n demo delete deployment demo --wait=true
kubectl -n demo wait --for=delete pod --all --timeout 120s >/dev/null
show helm uninstall blockipam --namespace kube-system --wait --timeout 2m
show kubectl get ippools
