#!/usr/bin/env bash
# The README's test command: installs everything a fresh machine lacks (npm dependencies,
# Node 24 through npm, the control plane and CNI tools built from the Go module proxy), checks
# types and lint, then runs every test — unit, property, integration against a real
# kube-apiserver + etcd, and end-to-end under ptp — with Node's test runner.
# Extra arguments are passed to the runner as test file globs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
echo "== typecheck and lint" >&2
node_modules/.bin/tsc -p tsconfig.json --noEmit
node_modules/.bin/eslint .
node_modules/.bin/node scripts/docs-lint.ts
node_modules/.bin/prettier --check . >/dev/null || { node_modules/.bin/prettier --list-different .; echo 'prettier: the files above are not formatted (npm run format)' >&2; exit 1; }
echo "== tests" >&2
exec node_modules/.bin/node scripts/run-tests.ts "$@"
