#!/usr/bin/env bash
# The host state the test cluster promises not to change, as text, and a comparison of two
# such snapshots (test/cluster/up.sh takes one before it starts anything, down.sh one after
# everything has stopped; docs/test-cluster.md "What it changes on the host").
#
#   host-state.sh snapshot FILE          write the host's state to FILE
#   host-state.sh compare BEFORE AFTER ID   exit 1 (and print the lines) when they differ
#
# Covered: sysctls (every readable one, minus counters that move by themselves), mounts of the
# host mount namespace, links, addresses, routes and rules (IPv4 and IPv6), iptables and
# ip6tables rules (counters stripped), paths under /run and /var (depth 3, minus package
# manager and journal churn) plus the paths kubelet, containerd and CNI use by default, and the
# first level of every cgroup hierarchy.
# compare ignores lines that belong to OTHER runs on this machine, which may start and stop
# while this one runs: cgroups and paths named blockipam-cluster.<other id>, and /run/netns
# (the e2e harness's `ip netns`; the test cluster never uses it).
set -euo pipefail

# Sysctls that change on their own (counters, random values).
volatile='^(fs\.(dentry-state|file-nr|inode-nr|inode-state|aio-nr|quota\.)|kernel\.(ns_last_pid|random\.|pty\.nr)|net\.netfilter\.nf_conntrack_count)'

snapshot() {
  echo '## sysctl'
  sysctl -a 2>/dev/null | grep -Ev "$volatile" || true
  echo '## mounts (mount point, type, source, options)'
  awk '{ for (i = 7; $i != "-"; i++); print $5, $(i+1), $(i+2), $6 }' /proc/self/mountinfo | sort
  echo '## links'
  ip -o link show | awk '{ $1 = ""; print }' | sed 's/ qlen [0-9]*//' | sort
  echo '## addresses'
  ip -o addr show | awk '{ $1 = ""; print }' | sed 's/valid_lft.*//' | sort
  echo '## routes and rules'
  ip route show table all | sort
  ip -6 route show table all | sed 's/ expires [0-9]*sec//' | sort
  ip rule show
  ip -6 rule show
  echo '## iptables'
  if command -v iptables-save >/dev/null; then
    { iptables-save; ip6tables-save; } 2>/dev/null | { grep -v '^#' || true; } | sed 's/\[[0-9]*:[0-9]*\]//'
  fi
  if command -v nft >/dev/null; then nft list ruleset 2>/dev/null || true; fi
  echo '## paths'
  find /run /var -maxdepth 3 \
    \( -path /var/cache -o -path /var/lib/apt -o -path /var/lib/dpkg -o -path /var/log/journal \
    -o -path /var/tmp -o -path /var/lib/systemd -o -path /var/lib/PackageKit -o -path /run/user \
    -o -path /var/lib/postgresql -o -path /run/postgresql \) -prune -o -print 2>/dev/null | sort
  local p
  for p in /etc/cni /opt/cni /opt/containerd /etc/containerd /etc/kubernetes \
    /usr/libexec/kubernetes /var/lib/kubelet /var/lib/containerd /var/lib/cni /var/log/pods \
    /var/log/containers /run/containerd /run/netns /etc/hosts /etc/resolv.conf; do
    [ -e "$p" ] && echo "exists $p $(stat -c '%s %Y' "$p")"
  done
  echo '## cgroups'
  for p in /sys/fs/cgroup/*/; do
    find "$p" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | sort
  done
}

case ${1:-} in
  snapshot) snapshot >"${2:?host-state.sh snapshot FILE}" ;;
  compare)
    before=${2:?} after=${3:?} id=${4:?host-state.sh compare BEFORE AFTER ID}
    others="blockipam-cluster\.[A-Za-z0-9]{6}"
    lines=$(diff "$before" "$after" | grep -E '^[<>]' | grep -Ev '/run/netns' || true)
    changed=$(
      grep -E "$others" <<<"$lines" | grep -F "blockipam-cluster.$id" || true
      grep -Ev "$others" <<<"$lines" || true
    )
    if [ -n "$changed" ]; then
      echo "host-state: the host changed during the test cluster's run (< before, > after):" >&2
      echo "$changed" >&2
      exit 1
    fi
    ;;
  *) echo "usage: host-state.sh snapshot FILE | compare BEFORE AFTER ID" >&2; exit 2 ;;
esac
