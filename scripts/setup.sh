# Go and the build cache need a home directory; a bare CI environment may not set HOME.
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
# Sourced by scripts/test.sh and scripts/demo.sh: installs what a fresh machine lacks.
# Idempotent and cheap when everything is present.
# A failing command stops the caller as `set -e` does, after one line on stderr naming the step,
# the command, its exit status and its line here (an ERR trap, set for the steps below only: the
# caller's own ERR trap, if any, is put back at the end).
setup_caller_err_trap=$(trap -p ERR)
setup_step_name=""
setup_step() { setup_step_name=$1; echo "== $2" >&2; } # setup_step NAME DESCRIPTION
setup_failed() { # setup_failed STATUS COMMAND LINE
  echo "setup: step \"$setup_step_name\" failed: \`$2\` exited $1 (scripts/setup.sh line $3)" >&2
}
trap 'setup_failed $? "$BASH_COMMAND" "$LINENO"' ERR
setup_step "system packages" "system packages (Debian: reference CNI plugins 1.1.1, iptables for portmap, nftables for the masquerade tests, ping)"
missing=()
[ -x /usr/lib/cni/ptp ] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null || missing+=(iptables)
command -v nft >/dev/null || missing+=(nftables)
command -v ping >/dev/null || missing+=(iputils-ping)
command -v ip >/dev/null || missing+=(iproute2)
command -v openssl >/dev/null || missing+=(openssl)
command -v curl >/dev/null || missing+=(curl)
command -v nsenter >/dev/null || missing+=(util-linux)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  else
    echo "setup: missing ${missing[*]} and not root: install them with apt-get" >&2
    exit 1
  fi
fi
setup_step "npm ci" "dependencies (npm ci; brings Node 24 as a dev dependency)"
if [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error >&2
fi
setup_step "cluster build" "control plane, CNI tools, kubelet, containerd and images (built once from the Go module proxy and Debian packages into ~/.cache/blockipam)"
bash test/cluster/build.sh all >/dev/null
setup_step "Helm build" "Helm 3 and Helm 4 for the chart tests (built once from the Go module proxy into ~/.cache/blockipam; 4.5-21 min cold, depending on load)"
bash test/tools/build-helm.sh >/dev/null
setup_step "promtool build" "promtool for the alert tests (built once from the Go module proxy into ~/.cache/blockipam; ~6 min cold on idle cores, 22 at load 12-30)"
bash test/tools/build-promtool.sh >/dev/null
# The image itself is built from the sources by what uses it (the demo, the image and chart
# tests: scripts/build-image.sh, ~20-60 s); here only what needs the network, once.
setup_step "image build tools" "image build tools (Debian's mmdebstrap + buildah, unpacked) and the image's Debian base, into ~/.cache/blockipam (once: ~20 s idle, 1-3 min loaded)"
bash scripts/build-image.sh --prepare >/dev/null
# Everything after this uses the project's Node 24 (npm scripts do the same).
export PATH="$PWD/node_modules/.bin:$PATH"
eval "${setup_caller_err_trap:-trap - ERR}"
unset -f setup_step setup_failed
unset setup_caller_err_trap setup_step_name
