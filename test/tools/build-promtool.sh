#!/usr/bin/env bash
# Builds promtool (Prometheus' rule checker and unit-test runner) from the Go module proxy into
# the cache outside the repo, skipping a version already there. Nothing built here is committed.
# The chart's PrometheusRule is tested with it (test/charts/prometheus-rules.int.test.ts:
# `promtool check rules`, `promtool test rules`).
#
#   promtool   github.com/prometheus/prometheus/cmd/promtool   (go install)
#
# Cold (empty module and build caches), measured 2026-12-04: 22 min wall at load 12-30 on two
# shared cores, 11 min CPU (about 6 min on two idle cores) plus 1.8 GB of module downloads;
# docs/operations.md §Testing the rules. Cached: 0.02 s.
#
# Output: stdout gets PROMTOOL=<path>; progress goes to stderr.
# Environment: BLOCKIPAM_CACHE (default ~/.cache/blockipam), PROMETHEUS_VERSION (v0.316.0, the
# Go module version of Prometheus 3.16.0). Its own lock (.promtool-build.lock), as build-helm.sh.
set -euo pipefail
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
CACHE=${BLOCKIPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/blockipam}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath
log() { echo "[promtool build] $*" >&2; }
dir=$CACHE/bin/promtool-$PROMETHEUS_VERSION
# Prometheus 3.x is published as Go module v0.3MM.P: release 3.MM.P. Stamped as the Makefile
# (promu) does, so `promtool --version` says which it is (unstamped it prints an empty version).
minor=$(echo "$PROMETHEUS_VERSION" | sed -n 's/^v0\.3\([0-9][0-9]\)\.[0-9]*$/\1/p')
[ -n "$minor" ] || { log "PROMETHEUS_VERSION $PROMETHEUS_VERSION is not a v0.3MM.P module version"; exit 1; }
release=3.$((10#$minor)).${PROMETHEUS_VERSION##*.}
# Its output is read whole: `promtool --version | grep -q` can end the pipe before promtool is done
# writing, which pipefail counts as "not built".
built() {
  local said
  [ -x "$dir/promtool" ] && said=$("$dir/promtool" --version 2>/dev/null) &&
    grep -q "^promtool, version $release " <<<"$said"
}
if built; then
  echo "PROMTOOL=$dir/promtool"
  exit 0
fi
mkdir -p "$CACHE/bin"
exec 8>"$CACHE/.promtool-build.lock"
# say who holds it when another run is building (a silent wait looked like a hang)
if ! flock -n 8; then
  log "waiting for another run's build to finish ($CACHE/.promtool-build.lock)"
  flock 8
fi
if ! built; then
  t0=$SECONDS
  log "building promtool $PROMETHEUS_VERSION (first time only; see docs/operations.md §Testing the rules)"
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  # progress: the go command's download lines, then a line a minute while it compiles. The
  # ticker's sleep holds neither the output nor the lock (fd 8): killing the ticker leaves it to
  # finish alone, and a caller reading this script's output to its end must not wait for it.
  (while sleep 60 >/dev/null 2>&1; do log "still building ($((SECONDS - t0)) s)"; done) 8>&- &
  ticker=$!
  # `|| true`: under set -e a failing command in an EXIT trap becomes the script's exit status.
  stop_ticker() { kill "$ticker" 2>/dev/null || true; }
  trap stop_ticker EXIT
  GOBIN=$dir.tmp go install -ldflags "-s -w -X github.com/prometheus/common/version.Version=$release" \
    "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION" >&2
  stop_ticker
  trap - EXIT
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  log "promtool $PROMETHEUS_VERSION built in $((SECONDS - t0)) s"
fi
echo "PROMTOOL=$dir/promtool"
