# Sourced by test/cluster/{up,node,down}.sh. Needs RUN (the run directory) set.
#
# Every process the cluster starts is recorded in $RUN/pids/<name> as "PID STARTTIME" (field 22
# of /proc/PID/stat, clock ticks since boot): down.sh signals a PID only while that pair still
# matches, so a reused PID is never hit.

log() { echo "[cluster] $*" >&2; }

# wait_until SECONDS CMD...: retry every 0.2 s; status 1 on timeout.
wait_until() {
  local deadline=$(($(date +%s) + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

starttime() { awk '{ print $22 }' "/proc/$1/stat" 2>/dev/null; }

# record NAME PID
record() {
  mkdir -p "$RUN/pids"
  echo "$2 $(starttime "$2")" >"$RUN/pids/$1"
}

# recorded NAME: prints the PID when the recorded process is still the one that was started.
recorded() {
  local pid st
  [ -f "$RUN/pids/$1" ] && read -r pid st <"$RUN/pids/$1" || return 1
  [ -n "$st" ] && [ "$(starttime "$pid")" = "$st" ] && echo "$pid"
}

# pid_of_ns NAME: PID holding namespace NAME (cluster, node-1, ...), i.e. its anchor.
pid_of_ns() { recorded "anchor-$1"; }

# in_ns NAME CMD...: runs CMD in the network + mount namespaces of NAME.
in_ns() {
  local pid
  pid=$(pid_of_ns "$1") || { echo "cluster: namespace $1 is not running" >&2; return 1; }
  shift
  nsenter -t "$pid" -n -m -- "$@"
}

# spawn NAME NS CMD...: starts a daemon in namespace NS (own session, clean environment, log
# appended to $RUN/logs/NAME.log) and records it, and its command in $RUN/cmds/NAME (ctl.sh
# restarts it from there). nsenter without --fork execs CMD, so $! is CMD's PID.
spawn() {
  local name=$1 ns=$2 pid
  shift 2
  pid=$(pid_of_ns "$ns")
  mkdir -p "$RUN/logs" "$RUN/cmds"
  { printf 'DAEMON_PATH=%q\nNS=%q\nCMD=(' "$DAEMON_PATH" "$ns"; printf '%q ' "$@"; echo ')'; } >"$RUN/cmds/$name"
  setsid nsenter -t "$pid" -n -m -- env -i PATH="$DAEMON_PATH" HOME=/root "$@" \
    >>"$RUN/logs/$name.log" 2>&1 </dev/null &
  record "$name" $!
}

# stop NAME SECONDS: SIGTERM to the recorded process, SIGKILL after SECONDS; waits until gone.
stop() {
  local pid
  pid=$(recorded "$1") || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq $(($2 * 10))); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}

# anchor NAME PARENT SCRIPT: a `sleep infinity` in new network + mount namespaces (entered from
# PARENT's, or the host's when PARENT is "-"), after SCRIPT (sh, args: RUN NAME) ran inside them.
anchor() {
  local name=$1 parent=$2 script=$3 enter=()
  [ "$parent" = - ] || enter=(nsenter -t "$(pid_of_ns "$parent")" -n -m --)
  rm -f "$RUN/ns/$name.ready"
  mkdir -p "$RUN/ns"
  setsid "${enter[@]}" unshare --net --mount --propagation private -- \
    sh -c "set -e; $script; touch \"\$0/ns/\$1.ready\"; exec sleep infinity" "$RUN" "$name" \
    >"$RUN/ns/$name.log" 2>&1 </dev/null &
  record "anchor-$name" $!
  wait_until 20 test -e "$RUN/ns/$name.ready" || {
    cat "$RUN/ns/$name.log" >&2
    return 1
  }
  # The namespace's identity, for down.sh's sweep of processes started inside it (shims, pods).
  stat -L -c %i "/proc/$(pid_of_ns "$name")/ns/net" >"$RUN/ns/$name.netns"
}
