#!/usr/bin/env bash
# Builds the blockipam image as an OCI archive, with no container daemon and no registry
# (docs/image.md):
#   1. tools: Debian's mmdebstrap and buildah (+ libgpgme11, libassuan0), `apt-get download` +
#      `dpkg-deb -x` into the cache — nothing is installed on the host;
#   2. base: `mmdebstrap --mode=unshare --variant=extract --include=iproute2,nftables bookworm`
#      (the essential packages + iproute2 + nftables, no shell), its /dev nodes dropped — cached;
#   3. the multi-call executable (scripts/build-plugin.ts --multi-call) when older than its sources,
#      and the native forwarder (scripts/build-plugin.ts --forwarder: Go, ipam-plugin/forwarder/);
#   4. the build context: Containerfile, base.tar, app.tar (/usr/local/bin/blockipam + role links,
#      /usr/local/bin/blockipam-forwarder, which the agent installs as the plugin: docs/image.md);
#   5. `buildah bud --timestamp 0` of the repo's Containerfile, confined so that it writes no host
#      path (own containers.conf, storage and run dirs under the cache; a private mount namespace
#      with tmpfs over /var/lib and /run, where buildah would otherwise write its blob-info cache
#      and /etc/cni/net.d/cni.lock); pushed to an oci-archive, re-tarred with fixed timestamps.
# Same executable + same base → byte-identical archive (tested: test/image/image.int.test.ts).
#
# Usage: build-image.sh [--out FILE] [--context DIR] [--prepare]
#   --out      archive path (default build/image/blockipam-<version>.oci.tar); an archive newer
#              than the executable, the base, the Containerfile and this script is kept as it is
#   --context  only write the build context into DIR (for docker/podman/buildah users); no build
#   --prepare  only fetch the tools and build the base (what needs the network; scripts/setup.sh)
# stdout: IMAGE=localhost/blockipam:<package.json version>, ARCHIVE=<path>, DIGEST=<manifest digest>;
# with --prepare TOOLS=<unpacked tools directory>, BASE=<base tar>; with --context nothing.
# Progress on stderr. Environment: BLOCKIPAM_CACHE (default ~/.cache/blockipam). Run as root.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
CACHE=${BLOCKIPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/blockipam}
NODE=$repo/node_modules/.bin/node
VERSION=$("$NODE" -p 'require(process.argv[1]).version' "$repo/package.json")
IMAGE=localhost/blockipam:$VERSION
out=$repo/build/image/blockipam-$VERSION.oci.tar context="" prepare=""
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=${2:?"build-image.sh: --out needs a path"}; shift 2 ;;
    --context) context=${2:?"build-image.sh: --context needs a directory"}; shift 2 ;;
    --prepare) prepare=1; shift ;;
    *) echo "build-image.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "build-image.sh: run as root (mmdebstrap's and buildah's namespaces)" >&2; exit 1; }
log() { echo "[image build] $*" >&2; }

# Bump when the tool set or the base recipe changes (the cache paths carry them).
TOOLS=$CACHE/tools/image-tools-bookworm-1
BASE=$CACHE/images/base-bookworm-iproute2-nftables-1.tar
mkdir -p "$CACHE/tools" "$CACHE/images"
exec 7>"$CACHE/.image-build.lock"
# say who holds it when another run is building (a silent wait looked like a hang)
if ! flock -n 7; then
  echo "[image build] waiting for another run's build to finish ($CACHE/.image-build.lock)" >&2
  flock 7
fi

tools() {
  [ -x "$TOOLS/usr/bin/buildah" ] && [ -x "$TOOLS/usr/bin/mmdebstrap" ] && return
  local t0=$SECONDS tmp p
  log "fetching Debian's mmdebstrap and buildah into $TOOLS (first time only, ~10-30 s)"
  tmp=$(mktemp -d "$CACHE/tools/.fetch.XXXXXX")
  (cd "$tmp" && { apt-get download -q mmdebstrap buildah libgpgme11 libassuan0 >&2 2>/dev/null ||
    { apt-get update -qq >&2 && apt-get download -q mmdebstrap buildah libgpgme11 libassuan0 >&2; }; })
  mkdir -p "$tmp/root"
  for p in "$tmp"/*.deb; do dpkg-deb -x "$p" "$tmp/root"; done
  rm -rf "$TOOLS"
  mv "$tmp/root" "$TOOLS"
  rm -rf "$tmp"
  log "tools ready in $((SECONDS - t0)) s ($(LD_LIBRARY_PATH=$TOOLS/usr/lib/x86_64-linux-gnu "$TOOLS/usr/bin/buildah" --version))"
}

base() {
  [ -s "$BASE" ] && return
  local t0=$SECONDS tmp mirror
  # The first Debian mirror apt knows, else deb.debian.org. No match is not a failure: a machine
  # before its first `apt-get update` lists nothing.
  mirror=$({ apt-get indextargets --format '$(REPO_URI)' 'Origin: Debian' 2>/dev/null || true; } |
    awk '!/security/ { print; exit }')
  mirror=${mirror:-http://deb.debian.org/debian/}
  log "building the base root file system with mmdebstrap from $mirror (first time only, ~10 s idle, 2-3 min loaded)"
  tmp=$(mktemp -d "$CACHE/images/.base.XXXXXX")
  # SOURCE_DATE_EPOCH: mmdebstrap clamps the tarball's mtimes to it.
  TMPDIR=$tmp SOURCE_DATE_EPOCH=0 PATH="$TOOLS/usr/bin:$PATH" "$TOOLS/usr/bin/mmdebstrap" --quiet \
    --mode=unshare --variant=extract --include=iproute2,nftables bookworm "$tmp/base-dev.tar" "$mirror" >&2
  "$TOOLS/usr/bin/mmtarfilter" --path-exclude='/dev/*' <"$tmp/base-dev.tar" >"$tmp/base.tar"
  mv "$tmp/base.tar" "$BASE"
  rm -rf "$tmp"
  log "base ready in $((SECONDS - t0)) s ($(du -m "$BASE" | cut -f1) MB)"
}

forwarder() { # rebuilt by the script only when a source is newer
  (cd "$repo" && "$NODE" scripts/build-plugin.ts --forwarder >/dev/null) ||
    { log "the forwarder build failed (it needs Go 1.26+): run node scripts/build-plugin.ts --forwarder"; exit 1; }
}

executable() {
  local exe=$repo/build/bin/blockipam
  if [ -x "$exe" ] && [ -z "$(find "$repo"/{cmd,ipam-plugin,core,cli,block-controller} -name '*.ts' -newer "$exe" -print -quit)" ]; then
    return
  fi
  local t0=$SECONDS
  log "building the multi-call executable (scripts/build-plugin.ts --multi-call; ~10 s idle, ~1 min loaded)"
  (cd "$repo" && "$NODE" scripts/build-plugin.ts --multi-call >/dev/null 2>&1) ||
    { log "the executable build failed: run node scripts/build-plugin.ts --multi-call"; exit 1; }
  log "executable built in $((SECONDS - t0)) s"
}

# Deterministic tar of a directory's contents (sorted, owner 0, mtime 0).
tar_tree() { # tar_tree DIR OUT
  tar --create --file "$2" --directory "$1" --sort=name --mtime=@0 --owner=0 --group=0 \
    --numeric-owner --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime .
}

write_context() { # write_context DIR
  local d=$1 app n
  mkdir -p "$d"
  cp "$repo/Containerfile" "$d/Containerfile"
  cp "$BASE" "$d/base.tar"
  app=$(mktemp -d "$d/.app.XXXXXX")
  mkdir -p "$app/usr/local/bin"
  cp "$repo/build/bin/blockipam" "$app/usr/local/bin/blockipam"
  chmod 0755 "$app/usr/local/bin/blockipam"
  for n in ipamctl blockipam-agent blockipam-controller; do ln -s blockipam "$app/usr/local/bin/$n"; done
  cp "$repo/build/forwarder/blockipam-forwarder" "$app/usr/local/bin/blockipam-forwarder"
  chmod 0755 "$app/usr/local/bin/blockipam-forwarder"
  tar_tree "$app" "$d/app.tar"
  rm -rf "$app"
}

tools
base
if [ -n "$prepare" ]; then
  printf 'TOOLS=%s\nBASE=%s\n' "$TOOLS" "$BASE"
  exit 0
fi
executable
forwarder
if [ -n "$context" ]; then
  write_context "$context"
  log "build context in $context: docker build -f $context/Containerfile --build-arg VERSION=$VERSION -t $IMAGE $context"
  exit 0
fi

manifest_digest() { # manifest_digest INDEX_JSON_TEXT
  "$NODE" -p 'JSON.parse(process.argv[1]).manifests[0].digest' "$1"
}
# Up to date: newer than everything it is made of (a changed source rebuilt the executable above).
if [ -s "$out" ] && [ -z "$(find "$repo/build/bin/blockipam" "$repo/build/forwarder/blockipam-forwarder" "$BASE" "$repo/Containerfile" "$0" -newer "$out" -print -quit)" ]; then
  printf 'IMAGE=%s\nARCHIVE=%s\nDIGEST=%s\n' "$IMAGE" "$out" "$(manifest_digest "$(tar -xOf "$out" ./index.json)")"
  exit 0
fi

t0=$SECONDS
log "building $IMAGE with buildah (~30 s idle, 1-2 min loaded)"
mkdir -p "$(dirname "$out")"
work=$(mktemp -d "$(dirname "$out")/.image.XXXXXX")
trap 'rm -rf "$work"' EXIT
write_context "$work/context"
mkdir -p "$work/tmp" "$work/cni"
echo '{"default":[{"type":"insecureAcceptAnything"}]}' >"$work/policy.json" # FROM scratch: nothing pulled
printf '[network]\nnetwork_config_dir = "%s/cni"\n' "$work" >"$work/containers.conf"
: >"$work/registries.conf"
# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --propagation private -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$work" \
  TMPDIR="$work/tmp" LD_LIBRARY_PATH="$TOOLS/usr/lib/x86_64-linux-gnu" \
  CONTAINERS_CONF="$work/containers.conf" CONTAINERS_REGISTRIES_CONF="$work/registries.conf" \
  bash -c 'set -e
    mount -n -t tmpfs tmpfs /var/lib; mount -n -t tmpfs tmpfs /run
    b=("$0" --root "$1/storage" --runroot "$1/runroot" --storage-driver vfs)
    "${b[@]}" bud --quiet --isolation chroot --layers=false --timestamp 0 --signature-policy "$1/policy.json" \
      --build-arg VERSION="$3" -f "$1/context/Containerfile" -t "$2" "$1/context" >/dev/null
    "${b[@]}" push --quiet --signature-policy "$1/policy.json" "$2" "oci-archive:$1/pushed.tar:$2"
    "${b[@]}" rmi --all >/dev/null' \
  "$TOOLS/usr/bin/buildah" "$work" "$IMAGE" "$VERSION" >&2
# Re-tar with fixed timestamps (buildah stamps the archive's entries with the time of the push),
# and name the image for containerd (io.containerd.image.name, as test/cluster/oci-image.ts).
mkdir -p "$work/layout"
tar -xf "$work/pushed.tar" -C "$work/layout"
"$NODE" -e '
  const fs = require("node:fs"); const [file, name] = process.argv.slice(1);
  const index = JSON.parse(fs.readFileSync(file, "utf8"));
  for (const m of index.manifests) {
    m.annotations = { ...m.annotations, "io.containerd.image.name": name };
    m.platform = { architecture: "amd64", os: "linux" };
  }
  fs.writeFileSync(file, JSON.stringify(index));' "$work/layout/index.json" "$IMAGE"
tar_tree "$work/layout" "$out.tmp"
mv "$out.tmp" "$out"
digest=$(manifest_digest "$(cat "$work/layout/index.json")")
log "$IMAGE built in $((SECONDS - t0)) s: $out ($(du -m "$out" | cut -f1) MB, manifest $digest)"
cat <<OUT
IMAGE=$IMAGE
ARCHIVE=$out
DIGEST=$digest
OUT
