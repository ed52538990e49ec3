#!/usr/bin/env bash
# Builds Helm 3 and Helm 4 from the Go module proxy into the cache outside the repo, skipping a
# version already there. Nothing built here is committed. The chart (charts/blockipam) is tested
# with both (test/charts/).
#
#   helm 3   helm.sh/helm/v3/cmd/helm   (go install)
#   helm 4   helm.sh/helm/v4/cmd/helm   (go install)
# Cold: ~2.4 + 2 min on an idle two-core machine; measured 2026-12-01 at load 14-20 (two cores
# shared by six engineers): 493 s + 784 s. Warm (both cached): 0.4 s.
#
# The upstream Makefile's `-X` stamps are set: the version (without it `helm version` prints a
# bare v3.22 / v4.3) and, for Helm 3, the Kubernetes major/minor its lint and template assume
# (derived like the Makefile from the module's k8s.io/client-go; without it Helm 3 assumes
# v1.20 and refuses a chart with `kubeVersion: >=1.30.0-0`). Helm 4 reads it from its build info.
#
# Output: stdout gets HELM3=<path> and HELM4=<path>; progress goes to stderr.
# Environment: BLOCKIPAM_CACHE (default ~/.cache/blockipam), HELM3_VERSION (v3.22.0),
# HELM4_VERSION (v4.3.2). Its own lock (.helm-build.lock): a cold Helm build does not hold up the
# cluster build's lock, and two runs never build the same Helm at once.
set -euo pipefail
# build_helm runs in a command substitution, which without this ignores set -e
shopt -s inherit_errexit
HELM3_VERSION=${HELM3_VERSION:-v3.22.0}
HELM4_VERSION=${HELM4_VERSION:-v4.3.2}
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
CACHE=${BLOCKIPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/blockipam}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath
log() { echo "[helm build] $*" >&2; }
mkdir -p "$CACHE/bin"
exec 8>"$CACHE/.helm-build.lock"
# say who holds it when another run is building (a silent wait looked like a hang)
if ! flock -n 8; then
  echo "[helm build] waiting for another run's build to finish ($CACHE/.helm-build.lock)" >&2
  flock 8
fi

# build_helm MAJOR VERSION → prints the path of the executable
build_helm() {
  local major=$1 version=$2 dir=$CACHE/bin/helm-$2 t0=$SECONDS
  local mod=helm.sh/helm/v$major
  if [ -x "$dir/helm" ] && "$dir/helm" version --short 2>/dev/null | grep -Eq "^${version}(\+.*)?$"; then
    echo "$dir/helm"
    return
  fi
  log "building helm $version (first time only; 2-13 min on two cores, depending on load)"
  local gomod kver kmajor kminor
  gomod=$(cd "$(mktemp -d)" && go mod download -json "$mod@$version" | sed -n 's/.*"GoMod": "\([^"]*\)".*/\1/p')
  # The Makefile: K8S_MODULES_VER from k8s.io/client-go v0.<minor>.<patch>; major = 0 + 1.
  kver=$(sed -n 's#^[[:space:]]*k8s.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$gomod" | head -1)
  [ -n "$kver" ] || { log "could not read k8s.io/client-go's version from $gomod"; exit 1; }
  kmajor=1 kminor=$kver
  local ldf="-w -s -X $mod/internal/version.version=$version -X $mod/internal/version.gitTreeState=clean"
  if [ "$major" = 3 ]; then
    ldf="$ldf -X $mod/pkg/lint/rules.k8sVersionMajor=$kmajor -X $mod/pkg/lint/rules.k8sVersionMinor=$kminor"
    ldf="$ldf -X $mod/pkg/chartutil.k8sVersionMajor=$kmajor -X $mod/pkg/chartutil.k8sVersionMinor=$kminor"
  fi
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  GOBIN=$dir.tmp go install -ldflags "$ldf" "$mod/cmd/helm@$version" >&2
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  log "helm $version built in $((SECONDS - t0)) s ($("$dir/helm" version --short))"
  echo "$dir/helm"
}

# Assigned before they are printed: `echo "HELM3=$(build_helm …)"` exits 0 when build_helm fails.
helm3=$(build_helm 3 "$HELM3_VERSION")
helm4=$(build_helm 4 "$HELM4_VERSION")
echo "HELM3=$helm3"
echo "HELM4=$helm4"
