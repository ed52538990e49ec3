#!/usr/bin/env bash
# The README's main-job command: installs what a fresh machine lacks, then runs the demo
# (scripts/demo.ts) against a local control plane that it starts and stops itself.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
exec node_modules/.bin/node scripts/demo.ts "$@"
