#!/usr/bin/env bash
# Runs every benchmark, one after another, each rewriting its own section of docs/benchmarks.md
# (and its charts in docs/benchmarks/). Benchmarks are not tests: they are never part of
# scripts/test.sh, and they time a shared machine — `uptime` is recorded before and after each.
# Needs what the test command needs (root, the Go-built control plane and cluster binaries):
# it runs scripts/setup.sh first. pod-churn alone takes ~75 min on 2 quiet cores (9 runs, a
# fresh cluster each), the others minutes each; much longer under load.
#
#   bash scripts/bench.sh [NAME ...]     (default: all, in this order)
#
# Names: core plugin thin-client check release fanout burst agent-memory churn
# cost-curves pod-churn adopt. Each benchmark starts its own private control plane
# (or test cluster) and stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
node=node_modules/.bin/node
all=(core plugin thin-client check release fanout burst agent-memory churn cost-curves pod-churn adopt)
[ $# -gt 0 ] || set -- "${all[@]}"
for name in "$@"; do
  printf '%s\n' "${all[@]}" | grep -qxF -- "$name" || { echo "bench.sh: unknown benchmark $name (known: ${all[*]})" >&2; exit 2; }
done
source scripts/setup.sh
log=$(mktemp -d /tmp/blockipam-bench.XXXXXX)
echo "bench.sh: logs in $log" >&2
failed=()
for name in "$@"; do
  case $name in
    core) cmd=("$node" test/bench/core-bench.ts) ;;
    plugin) cmd=("$node" test/bench/plugin-bench.ts --write-docs) ;;
    thin-client) cmd=("$node" test/bench/thin-client-bench.ts) ;;
    check) cmd=("$node" test/bench/check-bench.ts) ;;
    release) cmd=("$node" test/bench/release-bench.ts) ;;
    fanout) cmd=("$node" test/bench/fanout-bench.ts --write-docs) ;;
    burst) cmd=("$node" test/bench/burst-bench.ts --write-docs) ;;
    agent-memory) cmd=("$node" test/bench/agent-memory-bench.ts --write-docs) ;;
    churn) cmd=("$node" test/bench/churn-bench.ts --write-docs) ;;
    cost-curves) cmd=("$node" test/bench/cost-curves/main.ts) ;;
    pod-churn) cmd=("$node" test/bench/pod-churn/main.ts --order host-local,blockipam,calico,blockipam,calico,host-local,calico,host-local,blockipam) ;;
    adopt) cmd=("$node" test/bench/adopt-bench.ts --write-docs) ;;
  esac
  echo "== $name: ${cmd[*]} — $(uptime)" >&2
  start=$(date +%s)
  if "${cmd[@]}" >"$log/$name.out" 2>"$log/$name.err"; then
    echo "== $name: done in $(($(date +%s) - start)) s — $(uptime)" >&2
  else
    echo "== $name: FAILED (exit $?) after $(($(date +%s) - start)) s; see $log/$name.err" >&2
    failed+=("$name")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "bench.sh: failed: ${failed[*]}" >&2; exit 1; }
