# Sourced by scripts/test.sh and scripts/demo.sh: installs what a fresh machine lacks.
# Idempotent and cheap when everything is present.
echo "== dependencies (npm ci; brings Node 24 as a dev dependency)" >&2
if [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error >&2
fi
echo "== control plane and CNI tools (built once from the Go module proxy into ~/.cache/blockipam)" >&2
bash test/control-plane/build.sh all >/dev/null
