#!/usr/bin/env bash
# Acts on a running test cluster (test/cluster/up.sh): a shell or a command inside one of its
# namespaces, and stopping / starting its daemons by their recorded PIDs.
#
#   ctl.sh RUN_DIR exec NS [CMD...]     run CMD (default: an interactive bash) in NS's network +
#                                       mount namespaces; NS = cluster | node-1 | node-2 ...
#   ctl.sh RUN_DIR stop DAEMON          SIGTERM (SIGKILL after 10 s); DAEMON = kubelet-node-1,
#                                       containerd-node-2, scheduler, controller-manager, ...
#   ctl.sh RUN_DIR kill DAEMON          SIGKILL
#   ctl.sh RUN_DIR start DAEMON         start it again with the command it was started with
#   ctl.sh RUN_DIR restart DAEMON       stop, then start
#   ctl.sh RUN_DIR import-image ARCHIVE  import an OCI image archive into every node's containerd
#                                       (`ctr -n k8s.io images import`; pods then use it with
#                                       imagePullPolicy Never or IfNotPresent)
#   ctl.sh RUN_DIR cni-plugins          link the reference plugins ptp, portmap, loopback and
#                                       host-local into every node's CNI bin dir, as a node's OS
#                                       package provides them (for installs by the chart, whose
#                                       agent adds blockipam; install-blockipam.sh does its own)
# Inside `exec`, KUBECONFIG is the admin's (API server at 10.99.0.1:6443), PATH has kubectl and
# ctr, and CONTAINERD is the node's containerd socket: `ctr --address $CONTAINERD -n k8s.io ...`.
# Bad arguments (a missing one, an unknown action or daemon) exit 2 with one line naming it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() {
  echo "ctl.sh: $1" >&2
  echo "usage: ctl.sh RUN_DIR exec|stop|kill|start|restart|import-image|cni-plugins [NS|DAEMON|ARCHIVE] ..." >&2
  exit 2
}
[ $# -ge 1 ] || usage "name the run directory"
[ -d "$1" ] || usage "no run directory $1"
RUN=$(cd "$1" && pwd)
[ $# -ge 2 ] || usage "name an action"
action=$2
case $action in
  exec | stop | kill | start | restart | import-image | cni-plugins) ;;
  *) usage "unknown action $action" ;;
esac
[ "$action" = cni-plugins ] && set -- "$1" "$2" all
[ $# -ge 3 ] || usage "$action needs a namespace, a daemon or an image archive"
target=$3
shift 3
# shellcheck source=lib.sh
source "$here/lib.sh"
case $action in
  stop | kill | start | restart)
    # A daemon is one that up.sh or node.sh spawned (its command is in cmds/): anything else is
    # a typo, not a stopped daemon.
    [ -f "$RUN/cmds/$target" ] ||
      usage "no daemon $target in $RUN (daemons: $(ls "$RUN/cmds" 2>/dev/null | tr '\n' ' ' | sed 's/ $//'))"
    ;;
esac
case $action in
  exec)
    # shellcheck disable=SC1091
    source "$RUN/env"
    cmd=("$@")
    [ ${#cmd[@]} -gt 0 ] || cmd=(bash --norc -i)
    in_ns "$target" env KUBECONFIG="$CLUSTER_INNER_KUBECONFIG" \
      PATH="$CLUSTER_BIN:$CLUSTER_NODE_BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
      CONTAINERD="$RUN/$target/containerd.sock" PS1="[$target \\W]# " "${cmd[@]}"
    ;;
  import-image)
    [ -s "$target" ] || { echo "ctl.sh: no image archive $target" >&2; exit 2; }
    # shellcheck disable=SC1091
    source "$RUN/env"
    for n in $CLUSTER_NODES; do
      "$CLUSTER_NODE_BIN/ctr" --address "$RUN/$n/containerd.sock" -n k8s.io images import \
        --platform linux/amd64 "$target" >"$RUN/logs/import-$n.log" 2>&1 ||
        { echo "ctl.sh: importing $target into $n failed: $(cat "$RUN/logs/import-$n.log")" >&2; exit 1; }
    done
    log "imported $target into $CLUSTER_NODES"
    ;;
  cni-plugins)
    # shellcheck disable=SC1091
    source "$RUN/env"
    for n in $CLUSTER_NODES; do
      for p in ptp portmap loopback host-local; do ln -sfn "$CLUSTER_CNI_BIN/$p" "$RUN/$n/cni/bin/$p"; done
    done
    ;;
  stop) stop "$target" 10 ;;
  kill) pid=$(recorded "$target") && kill -KILL "$pid" && wait_until 10 sh -c "! kill -0 $pid" ;;
  start | restart)
    [ "$action" = start ] || stop "$target" 10
    if recorded "$target" >/dev/null; then echo "ctl.sh: $target is running" >&2; exit 1; fi
    # shellcheck disable=SC1090
    source "$RUN/cmds/$target"
    spawn "$target" "$NS" "${CMD[@]}"
    ;;
esac
