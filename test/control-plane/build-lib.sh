# Sourced (not run) by test/control-plane/build.sh and test/cluster/build.sh: the cache layout,
# the build lock and the Kubernetes wrapper module they share, so every Kubernetes binary is
# built from ONE module with one dependency set and the Go build cache serves them all.
#
# Defines: K8S_VERSION ETCD_VERSION CNI_VERSION PLUGINS_VERSION CACHE BIN CNI_BIN,
#   build_lock        takes the cache's build lock (fd 9) — one build at a time per cache
#   have BIN ARGS...  true when BIN exists and `BIN ARGS` exits 0
#   go_mod_init MOD   `go mod init MOD` in the working directory unless it has a go.mod: quiet, but
#                     a failure prints what go said
#   k8s_build NAME... builds k8s.io/kubernetes/cmd/NAME for each NAME into $BIN (go get -tool
#                     into the wrapper module, `-tags selinux,notest`, version stamped)
# Environment: BLOCKIPAM_CACHE (default ~/.cache/blockipam), K8S_VERSION (v1.37.2),
# ETCD_VERSION (v3.7.3), CNI_VERSION (v1.3.0), PLUGINS_VERSION (v1.10.0).
# Recipe and pitfalls: docs/control-plane.md.

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}
CNI_VERSION=${CNI_VERSION:-v1.3.0}
PLUGINS_VERSION=${PLUGINS_VERSION:-v1.10.0}
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
CACHE=${BLOCKIPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/blockipam}
BIN=$CACHE/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION
CNI_BIN=$CACHE/bin/cni-$CNI_VERSION-plugins-$PLUGINS_VERSION
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath
mkdir -p "$BIN" "$CNI_BIN" "$CACHE/gomod"

# Parallel test runs on one machine share the cache: one build at a time.
build_lock() {
  exec 9>"$CACHE/.build.lock"
  # say who holds it when another run is building (a silent wait looked like a hang)
  if ! flock -n 9; then
    echo "[build] waiting for another run's build to finish ($CACHE/.build.lock)" >&2
    flock 9
  fi
}

have() { [ -x "$1" ] && "$1" "${@:2}" >/dev/null 2>&1; }

go_mod_init() {
  [ -f go.mod ] && return
  local said
  said=$(go mod init "$1" 2>&1) || { echo "$said" >&2; return 1; }
}

# The wrapper module replaces every staging module (k8s.io/api …) with its published
# v0.<minor>.<patch>; the list is read from the published go.mod of k8s.io/kubernetes.
k8s_module() {
  local w=$CACHE/gomod/k8s-$K8S_VERSION
  local staging=v0.${K8S_VERSION#v1.}
  mkdir -p "$w" && cd "$w"
  go_mod_init example.invalid/k8s-build
  grep -q 'k8s.io/api => ' go.mod && return
  local kmod mods m
  kmod=$(cd "$(mktemp -d)" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\([^"]*\)".*/\1/p')
  mods=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#\1#p' "$kmod" | sort -u)
  [ -n "$mods" ] || { echo "build: could not read the staging module list from $kmod" >&2; exit 1; }
  for m in $mods; do go mod edit -replace="$m=$m@$staging"; done
}

k8s_build() {
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  local ldf="-s -w" p date name tools=()
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=$date"
  done
  k8s_module
  for name in "$@"; do tools+=("k8s.io/kubernetes/cmd/$name@$K8S_VERSION"); done
  go get -tool "${tools[@]}" >&2
  for name in "$@"; do
    go build -tags selinux,notest -ldflags "$ldf" -o "$BIN/$name.tmp" "k8s.io/kubernetes/cmd/$name"
    mv "$BIN/$name.tmp" "$BIN/$name"
  done
}
