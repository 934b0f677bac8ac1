#!/bin/bash
# ctest label multinode: ruccl across simulated hosts (network namespaces).
#   multinode_test.sh <mpi_all_reduce binary> <hosts: 2 or 3>
# Brings up <hosts> namespaces joined by a bridge, runs mpi_all_reduce (Sum/Mean
# all-reduce, broadcast, all-to-all-v, checked on every rank) under mpirun
# across them, hierarchical and flat ring, and checks the RUCCL_DEBUG=INFO lanes log:
# every lane between ranks on different nodes is tcp on eth0 with no
# shared-memory transport, and the expected number of such lanes exists.
# Exit 0 pass, 1 fail, 77 skip (prints "SKIP: <reason>").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=netns_lab.sh
source "$here/netns_lab.sh"
[ $# -eq 2 ] || { echo "usage: $0 <mpi_all_reduce> <hosts>" >&2; exit 2; }
bin=$1 hosts=$2
[ -x "$bin" ] || { echo "no executable $bin" >&2; exit 1; }

# Cases: procs-per-host devices-per-process count algorithm UCX_TLS.
# "default" leaves UCX_TLS unset: UCX may then pick shared memory wherever it
# thinks it can, and the lanes check shows that ranks on different hosts still
# reach each other only over eth0 (their IPC namespaces really are apart).
if [ "$hosts" = 2 ]; then
  cases=("1 2 1003 hierarchical tcp" "1 2 100003 flat_ring tcp"
         "2 1 100003 hierarchical default" "2 1 1003 flat_ring tcp"
         "2 2 1000003 hierarchical tcp" "2 2 1000003 flat_ring tcp")
else
  cases=("1 2 1003 hierarchical tcp" "1 2 100003 flat_ring tcp"
         "1 2 100003 hierarchical tcp" "1 2 1003 flat_ring tcp"
         "2 1 100003 hierarchical default" "2 1 100003 flat_ring tcp")
fi

lab_preflight                                              # SKIP (77) unless root etc.
logs=${RUCCL_MULTINODE_LOGS:-$PWD/multinode-logs/h$hosts}
rm -rf "$logs"; mkdir -p "$logs"
trap lab_down EXIT
# On INT/TERM: end the running case's job (quietly) and exit; the EXIT trap
# tears the lab down.
job=""
trap 'echo "multinode_test: interrupted, tearing the lab down" >&2; exec 2>/dev/null
      [ -z "$job" ] || kill -9 "$job"; exit 130' INT TERM
t0=$(date +%s.%N)
elapsed() { awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%6.2fs", a - b }'; }
lab_up "$hosts"
echo "[$(elapsed)] lab up: $hosts hosts ($RUCCL_NETNS_NAME-h1..h$hosts, $RUCCL_NETNS_SUBNET.0/24)"

# check_lanes LOG WORLD PER_HOST PROCS: the lanes lines of one run: world x world
# lines, all nodes seen, every inter-node line names only tcp/eth0 lanes;
# every process's world line counts the whole world on this machine.
check_lanes() {
  awk -v world="$2" -v per_host="$3" -v procs="$4" -v hosts="$hosts" '
    # The simulated hosts share this machine: every process counts the
    # whole world on it (the machine id read through every namespace).
    / INFO world of / {
      worlds++
      if ($0 !~ ("; " world " ranks on this machine \\(")) { print "machine count not " world ": " $0; bad++ }
    }
    / INFO lanes: rank / {
      if (!match($0, /rank [0-9]+ \(node [0-9]+\) -> rank [0-9]+ \(node [0-9]+\): /)) { print "unparsed: " $0; bad++; next }
      split(substr($0, RSTART, RLENGTH), f, /[ ()]+/)        # rank a node x -> rank b node y:
      from = f[2]; a = f[4]; to = f[7]; b = f[9]; sub(":", "", b)
      lanes = substr($0, RSTART + RLENGTH)
      all++; nodes[a] = 1; nodes[b] = 1
      # The lanes before "; tag_send", e.g. "tcp/eth0.0[am am_bw#0 keepalive wireup]".
      res = lanes; sub(/;.*/, "", res)
      other = 0; rest = res
      while (match(rest, /[A-Za-z0-9_]+\/[^ \[]+\[/)) {
        r = substr(rest, RSTART, RLENGTH - 1); rest = substr(rest, RSTART + RLENGTH)
        if (r !~ /^tcp\/eth0(\.|$)/) other++
        if (a == b && from != to) intra[r] = 1
      }
      if (a != b) {
        cross++
        if (res !~ /tcp\/eth0/ || res ~ /(posix|sysv|cma|xpmem|knem)\// || other) {
          print "inter-node lane not tcp/eth0 only: " $0; bad++
        }
        if (cross <= 2) print "  sample: " $0
      }
    }
    END {
      n = 0; for (k in nodes) n++
      want_cross = world * (world - per_host)
      if (all != world * world) { print "lanes lines: " all + 0 ", want " world * world; bad++ }
      if (cross != want_cross || cross == 0) { print "inter-node lanes lines: " cross + 0 ", want " want_cross; bad++ }
      if (n != hosts) { print "nodes seen: " n ", want " hosts; bad++ }
      if (worlds != procs) { print "world lines: " worlds + 0 ", want " procs; bad++ }
      used = ""; for (r in intra) used = used " " r
      if (!bad) printf "  lanes ok: %d lines, %d inter-node, all tcp/eth0 without shm (intra-node:%s)\n", all, cross, used
      exit bad ? 1 : 0
    }' "$1"
}

failed=0
for c in "${cases[@]}"; do
  read -r ppn dev count algo tls <<<"$c"
  world=$((hosts * ppn * dev))
  name="${hosts}x${ppn}x${dev}-$algo-n$count-$tls"
  log=$logs/$name.log
  rc=0
  (
    export RUCCL_DEBUG=INFO RUCCL_ALGO="$algo"
    if [ "$tls" = default ]; then export UCX_TLS=""; else export UCX_TLS="$tls"; fi
    lab_mpirun "$ppn" 40 -- "$bin" --devices-per-process "$dev" --count "$count"
  ) > "$log" 2>&1 &                                        # (INT/TERM reach the trap at once)
  job=$!
  wait "$job" || rc=$?
  job=""
  summary=$(grep -m1 '^mpi_all_reduce: ' "$log" || true)
  echo "[$(elapsed)] $name: rc=$rc ${summary:-no summary line}"
  ok=1
  [ "$rc" = 0 ] && grep -q "^mpi_all_reduce: $world ranks .*PASSED" "$log" || ok=0
  check_lanes "$log" "$world" "$((ppn * dev))" "$((hosts * ppn))" || ok=0
  if [ $ok = 0 ]; then
    failed=$((failed + 1))
    echo "---- $log"; tail -n 60 "$log"; echo "----"
  fi
done
lab_down
echo "[$(elapsed)] lab down; $((${#cases[@]} - failed)) of ${#cases[@]} runs passed (logs: $logs)"
[ $failed = 0 ]
