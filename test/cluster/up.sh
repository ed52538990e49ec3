#!/usr/bin/env bash
# Starts a multi-node Kubernetes test cluster on this machine, changing nothing on the host
# (docs/test-cluster.md). Run as root.
#
#   cluster namespace (own network + mount namespaces): bridge br0 10.99.0.1/24, etcd,
#     kube-apiserver (Node,RBAC authorization; NodeRestriction and ServiceAccount admission),
#     kube-scheduler, kube-controller-manager
#   node-I (own network + mount namespaces, entered from the cluster's): veth node0 on the
#     bridge at 10.99.0.(10+I), containerd + runc, kubelet with its own client certificate
#     (CN=system:node:node-I, O=system:nodes) and its own cgroup root
#   host: 127.0.0.1:<free port> forwarded to the API server (api-forward.py)
#
# Usage: up.sh [--nodes N] [--owner-pid PID] [--ipv6] [--pod-network kind|gke]
#   --nodes      number of nodes (default 3)
#   --owner-pid  a watchdog tears the cluster down when PID exits (also on SIGKILL of the owner)
#   --ipv6       dual-stack node addresses: br0 also fd00:99::1/64, node-I also fd00:99::(10+I)
#                with a default IPv6 route via the bridge, and the kubelet's --node-ip names
#                both (Node.status.addresses: an IPv4 and an IPv6 InternalIP)
#   --pod-network  the pods' network as kind (kind) or GKE (gke) set it up: kube-controller-manager
#                allocates each node a /24 spec.podCIDR of 10.244.0.0/16, and pod-network.sh
#                writes each node's ptp + host-local conflist on it and the routes between the
#                nodes' podCIDRs; the nodes are then Ready
# Prints the path of an env file (CLUSTER_* variables, shell syntax). Without --pod-network, nodes
# are registered but not Ready until a CNI network config is installed
# (test/cluster/install-blockipam.sh).
# Stop with: down.sh RUN_DIR (recorded PIDs only; then checks that the host is unchanged).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
nodes=3 owner="" ipv6=0 pod_network=""
# Bad arguments exit 2 with one line naming the problem and the usage line.
usage() {
  echo "up.sh: $1" >&2
  echo "usage: up.sh [--nodes N] [--owner-pid PID] [--ipv6] [--pod-network kind|gke]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) [ $# -ge 2 ] || usage "--nodes needs a number"; nodes=$2; shift 2 ;;
    --owner-pid) [ $# -ge 2 ] || usage "--owner-pid needs a PID"; owner=$2; shift 2 ;;
    --ipv6) ipv6=1; shift ;;
    --pod-network) [ $# -ge 2 ] || usage "--pod-network needs kind or gke"; pod_network=$2; shift 2 ;;
    *) usage "unknown argument $1" ;;
  esac
done
[[ $nodes =~ ^[1-9][0-9]?$ ]] || usage "--nodes must be 1-99, got '$nodes'"
[ -z "$owner" ] || { [[ $owner =~ ^[1-9][0-9]*$ ]] && kill -0 "$owner" 2>/dev/null; } ||
  usage "--owner-pid must be the PID of a live process, got '$owner'"
case $pod_network in "" | kind | gke) ;; *) usage "--pod-network must be kind or gke, got '$pod_network'" ;; esac
[ "$(id -u)" = 0 ] || { echo "up.sh: run as root (namespaces, cgroups)" >&2; exit 1; }

# Build first (it may wait for another run's build): nothing is started yet.
eval "$(bash "$here/build.sh" all)"
RUN=$(mktemp -d /tmp/blockipam-cluster.XXXXXX)
ID=${RUN##*.}
CGROUP_TOP=blockipam-cluster.$ID
DAEMON_PATH=$NODE_BIN:$BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# shellcheck source=lib.sh
source "$here/lib.sh"
# shellcheck source=node.sh
source "$here/node.sh"
echo "$CGROUP_TOP" >"$RUN/cgroup-top"
starttime $$ >"$RUN/started" # processes started before this are never swept by down.sh
bash "$here/host-state.sh" snapshot "$RUN/host-before"
t0=$(date +%s.%N)
trap 'bash "$here/down.sh" "$RUN" >&2' EXIT
trap 'exit 130' INT TERM
log "starting in run dir $RUN (tear down by hand with: bash $here/down.sh $RUN)"
# The watchdog tears the cluster down when the owner exits (SIGKILL included). Without
# --owner-pid it watches this script until the start has finished (RUN/up-done), so a start
# killed half-way leaves nothing running; a cluster that started is then held open.
setsid bash -c 'while [ -d "$2" ]; do
    if [ -n "$1" ]; then kill -0 "$1" 2>/dev/null || break
    else [ -f "$2/up-done" ] && exit 0; kill -0 "$4" 2>/dev/null || break; fi
    sleep 1
  done; [ -d "$2" ] && bash "$3" "$2"' \
  watchdog "$owner" "$RUN" "$here/down.sh" $$ >/dev/null 2>&1 </dev/null &
record watchdog $!
fail() {
  log "$*"
  local f
  for f in "$RUN"/logs/*.log; do [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 15 "$f" >&2; }; done
  exit 1
}

# --- PKI (P-256: RSA-2048 keys took seconds each on a busy machine) -------------------------
mkdir -p "$RUN/pki"
(
  cd "$RUN/pki"
  ec() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "$@" 2>/dev/null; }
  ec -x509 -keyout ca.key -out ca.crt -days 2 -subj /CN=blockipam-cluster-ca
  cert() { # cert NAME SUBJECT EXTENSIONS — one after another: -CAcreateserial races on ca.srl
    ec -keyout "$1.key" -out "$1.csr" -subj "$2"
    printf '%b\n' "$3" >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  }
  client='extendedKeyUsage=clientAuth'
  cert apiserver /CN=kube-apiserver "extendedKeyUsage=serverAuth\nsubjectAltName=IP:10.99.0.1,IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
  cert admin "/O=system:masters/CN=blockipam-admin" "$client"
  cert scheduler /CN=system:kube-scheduler "$client"
  cert controller-manager /CN=system:kube-controller-manager "$client"
  for i in $(seq "$nodes"); do cert "node-$i" "/O=system:nodes/CN=system:node:node-$i" "$client"; done
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out sa.key 2>/dev/null
  openssl pkey -in sa.key -pubout -out sa.pub 2>/dev/null
  chmod 600 ./*.key
)
# kubeconfig FILE SERVER CERT: client-certificate kubeconfig for $RUN/pki/CERT.{crt,key}.
kubeconfig() {
  cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
  - name: cluster
    cluster: {server: "$2", certificate-authority: "$RUN/pki/ca.crt"}
users:
  - name: $3
    user: {client-certificate: "$RUN/pki/$3.crt", client-key: "$RUN/pki/$3.key"}
contexts:
  - name: $3
    context: {cluster: cluster, user: $3}
current-context: $3
KC
  chmod 600 "$1"
}
printf 'nameserver 127.0.0.1\n' >"$RUN/resolv.conf"
{ printf '127.0.0.1 localhost\n10.99.0.1 cluster\n'; for i in $(seq "$nodes"); do printf '10.99.0.%s node-%s\n' $((10 + i)) "$i"; done; } >"$RUN/hosts"

# --- the cluster namespace and its control plane --------------------------------------------
anchor cluster - 'mount -n -t tmpfs tmpfs /run; mount -n --bind "$0/hosts" /etc/hosts; ip link set lo up; ip link add br0 type bridge; ip addr add 10.99.0.1/24 dev br0; ip link set br0 up'
# nodad: the address is usable at once (duplicate address detection would hold it ~1 s)
[ "$ipv6" = 0 ] || in_ns cluster ip -6 addr add fd00:99::1/64 dev br0 nodad
inner=https://10.99.0.1:6443
spawn etcd cluster "$BIN/etcd" --name cluster --data-dir "$RUN/etcd" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster cluster=http://127.0.0.1:2380 --unsafe-no-fsync --log-level warn
wait_until 30 in_ns cluster curl -fsS http://127.0.0.1:2379/health || fail "etcd did not become healthy in 30 s"
spawn apiserver cluster "$BIN/kube-apiserver" \
  --etcd-servers=http://127.0.0.1:2379 --bind-address=0.0.0.0 --advertise-address=10.99.0.1 --secure-port=6443 \
  --cert-dir="$RUN/pki" --tls-cert-file="$RUN/pki/apiserver.crt" --tls-private-key-file="$RUN/pki/apiserver.key" \
  --client-ca-file="$RUN/pki/ca.crt" \
  --kubelet-client-certificate="$RUN/pki/apiserver-kubelet-client.crt" --kubelet-client-key="$RUN/pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --service-account-issuer="$inner" --service-account-key-file="$RUN/pki/sa.pub" \
  --service-account-signing-key-file="$RUN/pki/sa.key" \
  --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true --profiling=false
python3 "$here/api-forward.py" "$RUN/api.port" "$(pid_of_ns cluster)" 10.99.0.1:6443 \
  >"$RUN/logs/api-forward.log" 2>&1 </dev/null &
record api-forward $!
# 60 s: python3 start-up alone took >10 s at load 70-80 on 2 cores (it failed there twice)
wait_until 60 test -s "$RUN/api.port" || fail "the API forwarder did not start within 60 s (see logs/api-forward.log)"
API_URL=https://127.0.0.1:$(cat "$RUN/api.port")
kubeconfig "$RUN/admin.kubeconfig" "$API_URL" admin
kubeconfig "$RUN/admin-inner.kubeconfig" "$inner" admin
kubeconfig "$RUN/scheduler.kubeconfig" "$inner" scheduler
kubeconfig "$RUN/controller-manager.kubeconfig" "$inner" controller-manager
kubectl() { "$BIN/kubectl" --kubeconfig "$RUN/admin.kubeconfig" "$@"; }
wait_until 120 kubectl get --raw /readyz || fail "kube-apiserver did not become ready in 120 s"
# With --pod-network the node IPAM controller gives each Node a /24 spec.podCIDR, the flags
# kind's kubeadm config passes (GKE's nodes get a /24 podCIDR of the cluster range too).
node_cidrs=()
[ -z "$pod_network" ] || node_cidrs=(--allocate-node-cidrs=true --cluster-cidr=10.244.0.0/16 --node-cidr-mask-size=24)
# --leader-elect=false (as hack/local-up-cluster.sh): one instance of each, and with leader
# election on, a renewal that misses its 10 s deadline under load ends the process for good
# (seen: kube-scheduler "Leaderelection lost" at load ~100 in the 300-pod churn, pods left
# unscheduled; an earlier re-create stall, ReplicaSets counting pods that were gone, looked like
# kube-controller-manager lost the same way — not confirmed).
spawn scheduler cluster "$BIN/kube-scheduler" --kubeconfig="$RUN/scheduler.kubeconfig" \
  --authentication-kubeconfig="$RUN/scheduler.kubeconfig" --authorization-kubeconfig="$RUN/scheduler.kubeconfig" \
  --leader-elect=false --bind-address=127.0.0.1
spawn controller-manager cluster "$BIN/kube-controller-manager" --kubeconfig="$RUN/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$RUN/controller-manager.kubeconfig" \
  --authorization-kubeconfig="$RUN/controller-manager.kubeconfig" --bind-address=127.0.0.1 \
  --service-account-private-key-file="$RUN/pki/sa.key" --root-ca-file="$RUN/pki/ca.crt" \
  --use-service-account-credentials=true --controllers='*' \
  --cluster-signing-cert-file="$RUN/pki/ca.crt" --cluster-signing-key-file="$RUN/pki/ca.key" \
  --flex-volume-plugin-dir="$RUN/flex-volume" --leader-elect=false "${node_cidrs[@]}"
cp_seconds=$(python3 -c "import time;print(f'{time.time()-$t0:.1f}')")

# --- nodes ------------------------------------------------------------------------------------
names=()
for i in $(seq "$nodes"); do
  start_node "$i"
  names+=("node-$i")
done
for n in "${names[@]}"; do
  wait_until 60 kubectl get node "$n" || fail "$n did not register in 60 s"
done
wait_until 30 kubectl -n default get serviceaccount default || fail "the default ServiceAccount did not appear"
elapsed=$(python3 -c "import time;print(f'{time.time()-$t0:.1f}')")

cat >"$RUN/env" <<ENV
CLUSTER_RUN_DIR=$RUN
CLUSTER_ID=$ID
CLUSTER_NODES="${names[*]}"
CLUSTER_NODE_IPS="$(for i in $(seq "$nodes"); do printf '10.99.0.%s ' $((10 + i)); done | sed 's/ $//')"
CLUSTER_IPV6=$ipv6
CLUSTER_POD_NETWORK=$pod_network
CLUSTER_NODE_IPV6S="$([ "$ipv6" = 0 ] || for i in $(seq "$nodes"); do printf 'fd00:99::%s ' $((10 + i)); done | sed 's/ $//')"
CLUSTER_API_URL=$API_URL
CLUSTER_INNER_API_URL=$inner
CLUSTER_KUBECONFIG=$RUN/admin.kubeconfig
CLUSTER_INNER_KUBECONFIG=$RUN/admin-inner.kubeconfig
CLUSTER_CA_FILE=$RUN/pki/ca.crt
CLUSTER_BIN=$BIN
CLUSTER_CNI_BIN=$CNI_BIN
CLUSTER_NODE_BIN=$NODE_BIN
CLUSTER_NODE_CNI_BIN_DIR=$NODE_CNI_DIR/bin
CLUSTER_NODE_CNI_CONF_DIR=$NODE_CNI_DIR/net.d
CLUSTER_PAUSE_IMAGE=$PAUSE_IMAGE
CLUSTER_BUSYBOX_IMAGE=$BUSYBOX_IMAGE
CLUSTER_CONTROL_PLANE_SECONDS=$cp_seconds
CLUSTER_STARTUP_SECONDS=$elapsed
ENV
[ -z "$pod_network" ] || bash "$here/pod-network.sh" "$RUN/env" "$pod_network" || fail "pod-network.sh $pod_network failed"
trap - EXIT INT TERM
: >"$RUN/up-done"
log "${#names[@]} nodes registered in ${elapsed}s (control plane ${cp_seconds}s); API $API_URL; run dir $RUN"
echo "$RUN/env"
