# The body of every stand-in executable the stubs write (after `#!/bin/sh` and `v='VERSION'`): it
# answers its tool's version query, by the name it is called under, in that tool's format.
case "${0##*/} $*" in
  "promtool --version") printf 'promtool, version %s (branch: HEAD, revision: stub)\n  build user: stub\n' "$v" ;;
  "crane version" | "helm version --short") echo "$v" ;;
  "runc --version") printf 'runc version %s\ncommit: stub\n' "$v" ;;
  "busybox --list") printf 'busybox\nls\nsh\n' ;;
  mmtarfilter*) cat ;;
  mmdebstrap*) for a; do case $a in *.tar) echo stub >"$a" ;; esac; done ;;
  *) echo "${0##*/} version $v" ;;
esac
