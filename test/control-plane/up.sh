#!/usr/bin/env bash
# Starts etcd + kube-apiserver on free loopback ports with RBAC on, a self-signed CA,
# service-account keys and a static token file with two identities:
#   admin  (user blockipam-admin, group system:masters)   -> $RUN/admin.kubeconfig
#   dev    (user blockipam-dev, no extra groups; for RBAC) -> $RUN/dev.kubeconfig
# Waits for /readyz and for namespace `default`, then prints the path of an env file
# (shell syntax) describing the run. Builds the binaries first if the cache lacks them.
#
# Usage: up.sh [--owner-pid PID] [--run-dir DIR]
#   --owner-pid  a watchdog stops the control plane when PID exits (also on SIGKILL of the owner)
#   --run-dir    where PKI, logs, data and PIDs go (default: a new /tmp/blockipam-cp.XXXXXX)
# Stop with: down.sh RUN_DIR  (kills only the recorded PIDs)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
owner=""; RUN=""
while [ $# -gt 0 ]; do
  case $1 in
    --owner-pid) owner=${2:?"up.sh: --owner-pid needs a PID"}; shift 2 ;;
    --run-dir) RUN=${2:?"up.sh: --run-dir needs a directory"}; shift 2 ;;
    *) echo "up.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$RUN" ] || RUN=$(mktemp -d /tmp/blockipam-cp.XXXXXX)
mkdir -p "$RUN/pki"
RUN=$(cd "$RUN" && pwd) # kubeconfigs resolve relative paths against their own folder
# Until the env file exists, any exit (error, Ctrl-C) stops what was started and removes RUN.
trap '"$here/down.sh" "$RUN"' EXIT
trap 'exit 130' INT TERM
# The watchdog goes up before anything slow, so an interrupted start-up is cleaned too.
if [ -n "$owner" ]; then
  setsid bash -c 'while kill -0 "$1" 2>/dev/null && [ -d "$2" ]; do sleep 1; done; [ -d "$2" ] && "$3" "$2"' \
    watchdog "$owner" "$RUN" "$here/down.sh" >/dev/null 2>&1 </dev/null &
  echo $! >"$RUN/watchdog.pid"
fi
eval "$("$here/build.sh" control-plane | grep -E '^(BIN|CNI_BIN)=')"
t0=$(date +%s.%N)

free_port() {
  python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'
}
wait_until() { # wait_until SECONDS CMD... : retry every 0.1 s
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}
fail() {
  echo "up.sh: $*" >&2
  for f in etcd apiserver; do [ -f "$RUN/$f.log" ] && { echo "--- tail of $f.log" >&2; tail -n 30 "$RUN/$f.log" >&2; }; done
  exit 1 # the EXIT trap stops what was started and removes RUN
}

ETCD_PORT=$(free_port); PEER_PORT=$(free_port); API_PORT=$(free_port)

# PKI: CA, serving certificate for 127.0.0.1/localhost, service-account key pair.
(
  cd "$RUN/pki"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=blockipam-test-ca 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj /CN=kube-apiserver 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >san.ext
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext -out apiserver.crt 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  chmod 600 ca.key apiserver.key sa.key
)
ADMIN_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
DEV_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
printf '%s,blockipam-admin,uid-admin,"system:masters"\n%s,blockipam-dev,uid-dev\n' "$ADMIN_TOKEN" "$DEV_TOKEN" >"$RUN/tokens.csv"
chmod 600 "$RUN/tokens.csv"

"$BIN/etcd" --name cp --data-dir "$RUN/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" \
  --initial-cluster "cp=http://127.0.0.1:$PEER_PORT" --unsafe-no-fsync --log-level warn \
  >"$RUN/etcd.log" 2>&1 </dev/null &
echo $! >"$RUN/etcd.pid"

wait_until 30 curl -fsS "http://127.0.0.1:$ETCD_PORT/health" || fail "etcd did not become healthy in 30 s"

"$BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
  --cert-dir="$RUN/pki" --tls-cert-file="$RUN/pki/apiserver.crt" --tls-private-key-file="$RUN/pki/apiserver.key" \
  --client-ca-file="$RUN/pki/ca.crt" \
  --token-auth-file="$RUN/tokens.csv" \
  --authorization-mode=RBAC \
  --service-account-issuer="https://127.0.0.1:$API_PORT" \
  --service-account-key-file="$RUN/pki/sa.pub" \
  --service-account-signing-key-file="$RUN/pki/sa.key" \
  --service-cluster-ip-range=10.0.0.0/24 \
  --disable-admission-plugins=ServiceAccount \
  --allow-privileged=true \
  --endpoint-reconciler-type=none \
  --profiling=false \
  >"$RUN/apiserver.log" 2>&1 </dev/null &
echo $! >"$RUN/apiserver.pid"

for name in admin dev; do
  if [ $name = admin ]; then token=$ADMIN_TOKEN; else token=$DEV_TOKEN; fi
  cat >"$RUN/$name.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
  - name: local
    cluster:
      server: https://127.0.0.1:$API_PORT
      certificate-authority: $RUN/pki/ca.crt
users:
  - name: $name
    user:
      token: $token
contexts:
  - name: $name
    context:
      cluster: local
      user: $name
current-context: $name
KC
  chmod 600 "$RUN/$name.kubeconfig"
done

readyz() {
  curl -fsS --cacert "$RUN/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" "https://127.0.0.1:$API_PORT/readyz"
}
wait_until 120 readyz || {
  curl -sS --cacert "$RUN/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" "https://127.0.0.1:$API_PORT/readyz?verbose" >&2 || true
  fail "kube-apiserver did not become ready in 120 s"
}
wait_until 30 "$BIN/kubectl" --kubeconfig "$RUN/admin.kubeconfig" get namespace default || fail "namespace default did not appear in 30 s"
elapsed=$(python3 -c "import time;print(f'{time.time()-$t0:.1f}')")
version=$("$BIN/kubectl" --kubeconfig "$RUN/admin.kubeconfig" version -o json | python3 -c 'import json,sys;print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')

cat >"$RUN/env" <<ENV
CP_RUN_DIR=$RUN
CP_API_URL=https://127.0.0.1:$API_PORT
CP_CA_FILE=$RUN/pki/ca.crt
CP_ADMIN_KUBECONFIG=$RUN/admin.kubeconfig
CP_DEV_KUBECONFIG=$RUN/dev.kubeconfig
CP_ADMIN_TOKEN=$ADMIN_TOKEN
CP_BIN=$BIN
CP_CNI_BIN=$CNI_BIN
CP_ETCD_URL=http://127.0.0.1:$ETCD_PORT
CP_SERVER_VERSION=$version
CP_STARTUP_SECONDS=$elapsed
ENV
trap - EXIT INT TERM
echo "[control-plane] kube-apiserver $version ready at https://127.0.0.1:$API_PORT in ${elapsed}s (run dir $RUN)" >&2
echo "$RUN/env"
