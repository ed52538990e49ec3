#!/bin/sh
# Records one CNI call as the runtime (or a chaining plugin) makes it, then runs the real plugin.
# Installed by install-blockipam.sh as NODE/cni/bin/<plugin>, the real one being
# NODE/cni/bin/real/<plugin>. Each call leaves NODE/cni-calls/<ns since epoch>-<pid>.<plugin>.{env,stdin,stdout,rc}
# (read by test/cluster/blockipam.ts cniCalls(); secrets are redacted there, not here: the files
# stay inside the run directory, which is mode 0700).
bin=$(dirname "$0")
name=$(basename "$0")
dir=$bin/../../cni-calls
f=$dir/$(date +%s%N)-$$.$name
cat >"$f.stdin"
env >"$f.env"
"$bin/real/$name" <"$f.stdin" >"$f.stdout"
rc=$?
echo "$rc" >"$f.rc"
cat "$f.stdout"
exit "$rc"
