# Sourced by test/cluster/up.sh: one node = its own network + mount namespace (entered from the
# cluster's), a veth into the cluster bridge, its own cgroup root, containerd and kubelet.
# Sandbox pitfalls behind each setting: docs/test-cluster.md "Why each setting".

# Values kubelet writes to host-global sysctls at start (pkg/kubelet/cm setupKernelTunables);
# inside the node they are files bind-mounted over /proc/sys, so kubelet finds them set.
kubelet_sysctls='vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1 kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000'

# Where each node sees its own CNI bin and conf dirs besides $RUN/node-I/cni/{bin,net.d} (the
# paths containerd is configured with): the same path on every node, for the chart's hostPaths.
NODE_CNI_DIR=/var/lib/node/cni

# node_mounts: the anchor's script (sh; $0 = RUN, $1 = node name). mount -n: libmount would
# otherwise write /run/mount/utab before /run is the node's own tmpfs.
node_mounts() {
  local s='d="$0/$1"; mount -n -t tmpfs tmpfs /run; mount -n -t tmpfs tmpfs /var/lib'
  s+='; mkdir -p /var/lib/cni; mount -n --bind "$d/cni-cache" /var/lib/cni'
  s+='; mount -n --bind "$d/log" /var/log; mount -n --bind "$d/hosts" /etc/hosts'
  # The node's CNI dirs also at one path on every node (a DaemonSet's hostPath is the same on
  # all nodes): $NODE_CNI_DIR/{bin,net.d}, inside the node's own tmpfs /var/lib.
  s+="; mkdir -p $NODE_CNI_DIR/bin $NODE_CNI_DIR/net.d"
  s+="; mount -n --bind \"\$d/cni/bin\" $NODE_CNI_DIR/bin; mount -n --bind \"\$d/cni/net.d\" $NODE_CNI_DIR/net.d"
  s+='; for f in "$d"/sysctl/*; do mount -n --bind "$f" "/proc/sys/$(basename "$f" | tr . /)"; done'
  s+='; ip link set lo up'
  echo "$s"
}

# cgroup_root_create NAME: /blockipam-cluster.ID/NAME in every v1 hierarchy (cpuset needs its
# cpus/mems copied down or no task may join).
cgroup_root_create() {
  local h d
  for h in /sys/fs/cgroup/*/; do
    [ "$(stat -f -c %T "$h")" = cgroupfs ] || continue
    for d in "$h$CGROUP_TOP" "$h$CGROUP_TOP/$1"; do
      mkdir -p "$d"
      if [ -e "$h/cpuset.cpus" ]; then
        cat "$(dirname "$d")/cpuset.cpus" >"$d/cpuset.cpus"
        cat "$(dirname "$d")/cpuset.mems" >"$d/cpuset.mems"
      fi
    done
  done
}

containerd_config() { # containerd_config NODE_DIR
  cat <<TOML
version = 3
root = "$1/containerd"
state = "/run/containerd"
imports = []

[grpc]
  address = "$1/containerd.sock"
[ttrpc]
  address = "$1/containerd.sock.ttrpc"

[plugins.'io.containerd.internal.v1.opt']
  path = "$1/opt"
[plugins.'io.containerd.nri.v1.nri']
  disable = true
[plugins.'io.containerd.cri.v1.images']
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"
[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = false
  cdi_spec_dirs = []
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["$1/cni/bin"]
    conf_dir = "$1/cni/net.d"
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$NODE_BIN/runc"
        SystemdCgroup = false
[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
TOML
}

kubelet_config() { # kubelet_config NODE_DIR NODE_IP NAME
  cat <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_TOP/$3
containerRuntimeEndpoint: unix://$1/containerd.sock
address: $2
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $RUN/pki/ca.crt}
authorization: {mode: AlwaysAllow}
resolvConf: $RUN/resolv.conf
volumePluginDir: $1/volume-plugins
podLogsDir: $1/pod-logs
failSwapOn: false
# The images cannot be pulled again (no registry): never collect them, never evict for disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 10Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
serializeImagePulls: false
YAML
}

# start_node INDEX: node-INDEX at 10.99.0.(10+INDEX); with ipv6=1 (up.sh --ipv6) also at
# fd00:99::(10+INDEX), both given to the kubelet as its node IPs (two InternalIPs).
start_node() {
  local i=$1 name="node-$1" ip="10.99.0.$((10 + $1))" d="$RUN/node-$1" kv node_ips
  mkdir -p "$d"/{cni-cache,log,sysctl,cni/bin,cni/net.d,pod-logs,volume-plugins,kubelet,containerd,opt}
  printf '127.0.0.1 localhost\n%s %s\n' "$ip" "$name" >"$d/hosts"
  for kv in $kubelet_sysctls; do echo "${kv#*=}" >"$d/sysctl/$(echo "${kv%%=*}" | tr / .)"; done
  anchor "$name" cluster "$(node_mounts)"
  in_ns cluster ip link add "vn$i" type veth peer name node0 netns "$(pid_of_ns "$name")"
  in_ns cluster ip link set "vn$i" master br0 up
  in_ns "$name" ip addr add "$ip/24" dev node0
  in_ns "$name" ip link set node0 up
  in_ns "$name" ip route add default via 10.99.0.1
  node_ips=$ip
  if [ "${ipv6:-0}" = 1 ]; then
    in_ns "$name" ip -6 addr add "fd00:99::$((10 + i))/64" dev node0 nodad
    in_ns "$name" ip -6 route add default via fd00:99::1
    node_ips="$ip,fd00:99::$((10 + i))"
  fi
  cgroup_root_create "$name"
  containerd_config "$d" >"$d/containerd.toml"
  kubelet_config "$d" "$ip" "$name" >"$d/kubelet.yaml"
  kubeconfig "$d/kubelet.kubeconfig" "https://10.99.0.1:6443" "$name"
  spawn "containerd-$name" "$name" "$NODE_BIN/containerd" --config "$d/containerd.toml"
  wait_until 30 "$NODE_BIN/ctr" --address "$d/containerd.sock" version || fail "containerd on $name did not answer in 30 s"
  local img
  for img in "$PAUSE_ARCHIVE" "$BUSYBOX_ARCHIVE"; do
    "$NODE_BIN/ctr" --address "$d/containerd.sock" -n k8s.io images import --platform linux/amd64 "$img" \
      >"$RUN/logs/import.log" 2>&1 || fail "importing $img into $name failed: $(cat "$RUN/logs/import.log")"
  done
  spawn "kubelet-$name" "$name" "$BIN/kubelet" --config "$d/kubelet.yaml" \
    --kubeconfig "$d/kubelet.kubeconfig" --root-dir "$d/kubelet" --hostname-override "$name" \
    --node-ip "$node_ips" --v=2
}
