#!/usr/bin/env bash
# Tears down a test cluster started by up.sh, then proves the host is as it was.
#
#   1. kubelets (SIGTERM, SIGKILL after 10 s), so nothing restarts a container;
#   2. every process in the cluster's cgroups (pods: pause and containers), SIGKILL;
#   3. containerd, then every process left in a node's network namespace (shims), node anchors;
#   4. controller-manager, scheduler, kube-apiserver, etcd, the API forwarder, the cluster anchor;
#   5. the cgroup tree /blockipam-cluster.<id> in every hierarchy;
#   6. host-state.sh compare of the snapshot up.sh took before starting anything with one taken
#      now; any difference (or a process of the run still alive) fails with exit 1 and keeps
#      RUN_DIR for inspection. Otherwise RUN_DIR is removed (unless --keep).
# Progress: one line on stderr per daemon it stops, per group of processes it kills, for the
# cgroup tree, the host check and the run directory it removes.
# Only recorded PIDs (checked against their start time), processes inside the run's own
# namespaces and processes inside its own cgroups are signalled — never anything by name.
# Usage: down.sh RUN_DIR [--keep]
set -u
here=$(cd "$(dirname "$0")" && pwd)
RUN=${1:?usage: down.sh RUN_DIR [--keep]}
[ -d "$RUN" ] || exit 0
RUN=$(cd "$RUN" && pwd)
# Only a run directory of up.sh is ever torn down (and removed): its name and the marker up.sh
# writes before it starts anything. Anything else (a typo, "." from a failed `dirname "$env"`) is
# refused with nothing touched.
case ${RUN##*/} in
  blockipam-cluster.*) ;;
  *) echo "down.sh: $RUN is not a test-cluster run directory (blockipam-cluster.*): refused" >&2; exit 2 ;;
esac
[ -f "$RUN/started" ] || { echo "down.sh: $RUN has no 'started' marker of up.sh: refused" >&2; exit 2; }
# shellcheck source=lib.sh
source "$here/lib.sh"
ID=${RUN##*.}
top=$(cat "$RUN/cgroup-top" 2>/dev/null || echo "blockipam-cluster.$ID")
since=$(cat "$RUN/started" 2>/dev/null || echo 0)

# PIDs in the run's cgroups (pods).
in_cgroups() { find /sys/fs/cgroup/*/"$top" -name cgroup.procs -exec cat {} + 2>/dev/null; }
# PIDs in the run's cgroups, or in one of its network namespaces and started after up.sh.
ours() {
  in_cgroups
  local inodes p
  inodes=$(cat "$RUN"/ns/*.netns 2>/dev/null | tr '\n' ' ')
  [ -n "$inodes" ] || return 0
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = $$ ] && continue
    case " $inodes " in *" $(stat -L -c %i "/proc/$p/ns/net" 2>/dev/null) "*) ;; *) continue ;; esac
    [ "$(starttime "$p")" -ge "$since" ] 2>/dev/null && echo "$p"
  done
}
kill_ours() { # kill_ours [in_cgroups] WHAT: SIGKILL to ours (or to those in the cgroups only)
  local p pids
  pids=$("${1:-ours}" | sort -u)
  [ -n "$pids" ] || return 0
  log "killing $(echo "$pids" | wc -l) process(es) $2"
  for p in $pids; do kill -KILL "$p" 2>/dev/null; done
}
# stopping NAME SECONDS: stop() with a progress line when NAME is a live recorded process.
stopping() {
  recorded "$1" >/dev/null || return 0
  log "stopping $1"
  stop "$1" "$2"
}

for f in "$RUN"/pids/kubelet-*; do [ -e "$f" ] && stopping "$(basename "$f")" 10; done
kill_ours in_cgroups "in the run's cgroups (pods)"
for f in "$RUN"/pids/containerd-*; do [ -e "$f" ] && stopping "$(basename "$f")" 10; done
kill_ours ours "left in the run's cgroups and node network namespaces (shims)"
for f in "$RUN"/pids/anchor-node-*; do [ -e "$f" ] && stopping "$(basename "$f")" 5; done
for n in controller-manager scheduler apiserver etcd api-forward anchor-cluster; do stopping "$n" 20; done
left=""
for _ in $(seq 50); do
  left=$(ours | sort -u)
  [ -z "$left" ] && break
  kill_ours ours "still alive"
  sleep 0.2
done
# Cgroups go once their last task has left (rmdir fails while one is inside).
ls -d /sys/fs/cgroup/*/"$top" >/dev/null 2>&1 && log "removing the cgroup tree /$top"
for _ in $(seq 50); do
  find /sys/fs/cgroup/*/"$top" -depth -type d -exec rmdir {} \; 2>/dev/null
  ls -d /sys/fs/cgroup/*/"$top" >/dev/null 2>&1 || break
  sleep 0.2
done

status=0
if [ -n "$left" ]; then
  log "processes of the run still alive: $left"
  status=1
fi
if [ -f "$RUN/host-before" ]; then
  log "checking the host against its state before up.sh (host-state.sh compare)"
  bash "$here/host-state.sh" snapshot "$RUN/host-after"
  if ! bash "$here/host-state.sh" compare "$RUN/host-before" "$RUN/host-after" "$ID"; then status=1; fi
fi
w=$(recorded watchdog) && [ "$w" != "$$" ] && [ "$w" != "$PPID" ] && log "stopping watchdog" && kill -TERM "$w" 2>/dev/null
if [ $status -ne 0 ]; then
  log "teardown check failed; run dir kept for inspection: $RUN"
elif [ "${2:-}" != "--keep" ]; then
  log "removing the run directory $RUN"
  rm -rf "$RUN"
else
  log "run directory kept (--keep): $RUN"
fi
exit $status
