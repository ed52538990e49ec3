#!/usr/bin/env bash
# Stops a control plane started by up.sh: only the PIDs recorded in RUN_DIR, apiserver first,
# SIGTERM then SIGKILL after 20 s. Removes RUN_DIR unless --keep is given.
# Usage: down.sh RUN_DIR [--keep]
set -u
RUN=${1:?usage: down.sh RUN_DIR [--keep]}
[ -d "$RUN" ] || exit 0
# A test runner registered by its launcher (tests.pid, its own process group) goes first, so an
# orphaned run does not go on against a stopped server.
t=$(cat "$RUN/tests.pid" 2>/dev/null) && kill -TERM -- "-$t" 2>/dev/null
for n in apiserver etcd; do
  p=$(cat "$RUN/$n.pid" 2>/dev/null) || continue
  # Only a process still running from this RUN dir (guards against PID reuse).
  grep -qF "$RUN" "/proc/$p/cmdline" 2>/dev/null || continue
  kill -TERM "$p" 2>/dev/null || continue
  for _ in $(seq 200); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$p" 2>/dev/null || true
done
w=$(cat "$RUN/watchdog.pid" 2>/dev/null) && [ "$w" != "$$" ] && [ "$w" != "$PPID" ] && kill -TERM "$w" 2>/dev/null
[ "${2:-}" = "--keep" ] || rm -rf "$RUN"
exit 0
