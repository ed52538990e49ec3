#!/usr/bin/env bash
# Line coverage of the product code — the TypeScript under core/, block-controller/,
# ipam-plugin/, cli/ and cmd/, without *.generated.ts — under the unit and integration tiers
# (not the test cluster's, test/cluster/). Sets up as scripts/test.sh does, runs
# `run-tests.ts --unit` then every other *.int.test.ts outside test/cluster/ with
# NODE_V8_COVERAGE set, so each Node process a test starts (agents, controllers, ipamctl) writes
# its V8 coverage too, and has c8 report on them (scripts/coverage-summary.ts prints the total,
# each folder's and the files at 0 %). Not counted: Go (the plugin's forwarder), the
# Bun-compiled plugin executable, and a process that dies of a signal (V8 writes at exit).
#
#   bash scripts/coverage.sh [DIR]   DIR (default .tmp/coverage) gets v8/ (the raw files),
#                                    report/ (c8's html and json-summary), *.log and summary.txt
#
# Exits with the first failing tier's status, after reporting on what ran.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
out=$(realpath -m "${1:-.tmp/coverage}")
rm -rf "$out/v8" "$out/report"
mkdir -p "$out/v8"
export NODE_V8_COVERAGE="$out/v8"

status=0
tier() { # tier NAME RUN-TESTS-ARGS...: runs one tier into $out/NAME.log, prints its counts
  local name=$1 start=$SECONDS code=0
  shift
  echo "== $name tier (coverage into $NODE_V8_COVERAGE)" >&2
  node scripts/run-tests.ts "$@" 2>&1 | tee "$out/$name.log" || code=$?
  echo "$name tier: exit $code in $((SECONDS - start)) s;" \
    "$(grep -E '^ℹ (tests|pass|fail|cancelled|skipped) ' "$out/$name.log" | sed 's/^ℹ //' | paste -sd, -)" \
    | tee -a "$out/tiers.txt" >&2
  [ "$status" -ne 0 ] || status=$code
}
: >"$out/tiers.txt"
tier unit --unit
mapfile -t ints < <(find test -name '*.int.test.ts' ! -path 'test/cluster/*' | sort)
tier int "${ints[@]}"
unset NODE_V8_COVERAGE

echo "== c8 report" >&2
c8 report --temp-directory "$out/v8" --reports-dir "$out/report" --merge-async \
  --all --src . --extension .ts \
  --include 'core/**' --include 'block-controller/**' --include 'ipam-plugin/**' \
  --include 'cli/**' --include 'cmd/**' --exclude '**/*.generated.ts' \
  --reporter json-summary --reporter html >/dev/null
node --disable-warning=ExperimentalWarning scripts/coverage-summary.ts "$out/report/coverage-summary.json" | tee "$out/summary.txt"
cat "$out/tiers.txt"
exit "$status"
