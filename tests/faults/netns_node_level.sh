#!/bin/bash
# ctest label faults: the node level of a hierarchical all-reduce across nodes
# (2 network-namespace hosts x 2 processes x 1 device: the node's shared
# memory, then a ring across the nodes over UCX/tcp).
#   netns_node_level.sh <build dir>
#   soak     `ruccl_fault_worker soak 40` (random checked collectives: every
#            all-reduce above the one-shot's sizes runs the node level) passes.
#   exit@0   rank 1 exits as collective #5's first step (the node level's
#            reduce-scatter) starts: rank 0, its node peer, sees its process
#            die; rank 3, its partner in the ring across nodes, sees its
#            endpoint fail; rank 2 hears of it from them.
#   exit@1   the same at the second step (the ring across nodes).
#   mismatch rank 1's count, dtype or op differs in collective #1: the
#            hierarchical agreement (fingerprints bundled per node) gives every
#            rank the same typed error.
#   one-shot a small all-reduce (its inputs in the bundles), rank 1 exits as
#            #5 starts: every survivor reports PeerFailure naming it in #5 or #6.
#   kinds    the same for a loop of all-gathers, reduce-scatters, broadcasts
#            and reduces (RUCCL_FAULT_KIND), level by level too (see below),
#            and of all-to-all-vs (routed: the node's memory and UCX at once).
# In the exit@ cases every survivor must report PeerFailure in #5 naming rank 1,
# within 1 s (plus scheduling slack) of its last good collective, under a
# RUCCL_TIMEOUT of 10 s: a survivor that only times out fails the test (and
# one that does not report before mpirun's 12 s limit prints no RESULT).
# Skips (exit 77, "SKIP: <reason>") where the lab cannot be made; RUCCL_NETNS_REQUIRE=1
# turns that into a failure. RUCCL_FAULT_KEEP=1 keeps the logs.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 <build dir>" >&2; exit 2; }
worker=$(cd "$1" && pwd)/tests/faults/ruccl_fault_worker
[ -x "$worker" ] || { echo "FAIL: no executable $worker" >&2; exit 1; }
bound_ms=$((1000 + ${RUCCL_FAULT_SLACK_MS:-1500}))
# (lib.sh: result lines, show; netns_lab.sh: the lab)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
# shellcheck source=../multinode/netns_lab.sh
source "$here/../multinode/netns_lab.sh"

lab_preflight
work=$(mktemp -d /tmp/ruccl-netns-node-level.XXXXXX)
trap 'lab_down; [ -n "${RUCCL_FAULT_KEEP:-}" ] || rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
failed=0
fail() { echo "FAIL: $*"; failed=1; }
lab_up 2 || { echo "FAIL: lab_up"; exit 1; }

# job <log prefix> <limit s> [mpirun args] -- <command...>: 2 processes per host.
job() {
  local log=$1 limit=$2; shift 2
  lab_mpirun 2 "$limit" "$@" >"$log.out" 2>"$log.err"
}
# faulty_job <log prefix> <results> <limit s> [mpirun args] -- <command...>:
# job, ended once <results> RESULT lines are out (the survivors'): Open MPI
# 4.1 with recovery across daemons does not end the job once its processes
# are gone (mpirun and the orteds stay), so it would last its whole --timeout.
# Returns the job's status, or 0 when it was ended so.
faulty_job() {
  local log=$1 want=$2 pid rc=0; shift 2
  job "$log" "$@" &
  pid=$!
  while kill -0 $pid 2>/dev/null; do
    if [ "$(grep -c '^RESULT ' "$log.out" 2>/dev/null || true)" -ge "$want" ]; then
      sleep 0.3  # the survivors' stderr (TRACE lines) reach the log
      lab_kill_hosts
      wait $pid 2>/dev/null || true
      return 0
    fi
    sleep 0.1
  done
  wait $pid || rc=$?
  return $rc
}

# survivor LABEL LOG RANK VICTIM SEQS: rank RANK's RESULT in LOG.out must be
# PeerFailure in one of collectives SEQS naming rank VICTIM, within bound_ms
# of its last good collective.
survivor() {
  local label=$1 log=$2 r=$3 victim=$4 seqs=$5 line status ms seq msg
  line=$(result_line "$log.out" "$r")
  [ -n "$line" ] || { fail "$label: rank $r printed no RESULT"; return; }
  status=$(field "$line" status) ms=$(field "$line" ms) seq=$(field "$line" seq) msg=$(message "$line")
  echo "$label: rank $r: $status in #$seq after ${ms} ms: ${msg:0:160}"
  [ "$status" = PeerFailure ] || fail "$label: rank $r: status $status, expected PeerFailure"
  [[ " $seqs " == *" $seq "* ]] || fail "$label: rank $r: failed in collective #$seq, expected #${seqs// / or #}"
  grep -Eq "rank $victim([^0-9]|\$)" <<<"$msg" || fail "$label: rank $r: the message does not name rank $victim"
  [ "$ms" -le $bound_ms ] || fail "$label: rank $r: the error came ${ms} ms after its last collective"
}

rc=0
t0=$(now_ms)
job "$work/soak" 90 -x RUCCL_TIMEOUT=20 -x RUCCL_CHECKSUM=1 -- "$worker" soak 40 || rc=$?
for r in 0 1 2 3; do
  line=$(result_line "$work/soak.out" $r)
  if [ "$(field "$line" status)" != Ok ] || [ "$(field "$line" collectives)" != 40 ] ||
     [ "$(field "$line" mismatches)" != 0 ]; then
    fail "soak: rank $r: ${line:-no RESULT}"
  fi
done
[ $rc -eq 0 ] || fail "soak: exited $rc"
echo "soak 40 on 2 hosts x 2 processes: rc $rc after $(($(now_ms) - t0)) ms"
[ $failed -eq 0 ] || show "$work/soak"

# The hierarchical agreement across nodes (node rank i sends its node's
# fingerprints, bundled, to node rank i of the other node): rank 1 deviates
# in collective #1, and every rank must report the same typed error.
for case in count:ShapeMismatch dtype:DtypeMismatch op:OpMismatch; do
  what=${case%%:*} want=${case#*:} rc=0 first="" before=$failed
  job "$work/mismatch-$what" 40 -x RUCCL_TIMEOUT=5 -- "$worker" mismatch "$what" || rc=$?
  for r in 0 1 2 3; do
    line=$(result_line "$work/mismatch-$what.out" $r)
    [ "$(field "$line" status)" = "$want" ] ||
      fail "mismatch $what: rank $r: ${line:-no RESULT}, expected $want"
    [ -n "$first" ] || first=$(message "$line")
    [ "$(message "$line")" = "$first" ] || fail "mismatch $what: rank $r's message differs from rank 0's"
  done
  [ $rc -eq 0 ] || fail "mismatch $what: exited $rc"
  echo "mismatch $what on 2 hosts x 2 processes: $want \"${first:0:120}\""
  [ $failed -eq $before ] || show "$work/mismatch-$what"
done

# A small all-reduce (one-shot: its inputs ride in the bundles): rank 1 exits
# as #5's step starts; a survivor that had every input completes #5, and
# every one must fail #5 or #6 naming rank 1 (its node peer sees its process
# die, its partner across its endpoint fail, rank 2 hears of it).
log=$work/one-shot rc=0 before=$failed
t0=$(now_ms)
faulty_job "$log" 3 12 --enable-recovery --mca orte_abort_on_non_zero_status 0 \
  -x RUCCL_TIMEOUT=10 -x RUCCL_FAULT="exit:rank=1,seq=5,step=0" -x RUCCL_DEBUG=TRACE -- \
  "$worker" allreduce-loop 20 16 || rc=$?
echo "one-shot exit of rank 1: job rc $rc after $(($(now_ms) - t0)) ms"
grep -q "(one_shot) done" "$log.err" || fail "one-shot: no rank ran the one-shot"
grep -q "agreement in bundles" "$log.err" || fail "one-shot: no rank agreed in bundles"
for r in 0 2 3; do survivor one-shot "$log" $r 1 "5 6"; done
[ $failed -eq $before ] || show "$log"

for step in 0 1; do
  log=$work/exit$step rc=0
  t0=$(now_ms)
  faulty_job "$log" 3 12 --enable-recovery --mca orte_abort_on_non_zero_status 0 \
    -x RUCCL_TIMEOUT=10 -x RUCCL_FAULT="exit:rank=1,seq=5,step=$step" -x RUCCL_DEBUG=TRACE -- \
    "$worker" allreduce-loop 20 1048576 || rc=$?
  echo "exit@$step: job rc $rc after $(($(now_ms) - t0)) ms"
  grep -q "node level through the node's shared memory (2 processes)" "$log.err" ||
    fail "exit@$step: no rank ran the node level"
  before=$failed
  for r in 0 2 3; do survivor "exit@$step" "$log" $r 1 5; done
  [ $failed -eq $before ] || show "$log"
done
# The other collectives level by level (node level, then across; ring/
# hierarchical_*.cpp): a rank exits as collective #5's first step starts.
# All-gather and reduce-scatter: rank 1, on whose blocks every rank waits,
# so every survivor fails #5. Broadcast and reduce (root 0): rank 2, node 1's
# rank on the root's column (it takes the tensor across and hands it on, or
# gathers its node's sums and sends them across); a survivor that has
# everything it needs without rank 2 completes #5 and fails #6.
# The all-to-all-v (pairwise steps, flat) has no levels: it sends to the rank
# of its own host through the node's shared memory and to the other host's
# over UCX (world/routed_run.hpp); rank 1 exits as #5's first step starts.
for kind in all_gather reduce_scatter broadcast reduce all_to_all_v; do
  victim=1 seqs="5"
  route="node level through the node's shared memory (2 processes)"
  case $kind in
    broadcast|reduce) victim=2 seqs="5 6" ;;
    all_to_all_v) route="other ranks of this node through its shared memory, to the other 2 over UCX" ;;
  esac
  log=$work/$kind rc=0
  t0=$(now_ms)
  faulty_job "$log" 3 12 --enable-recovery --mca orte_abort_on_non_zero_status 0 \
    -x RUCCL_TIMEOUT=10 -x RUCCL_FAULT_KIND=$kind -x RUCCL_DEBUG=TRACE \
    -x RUCCL_FAULT="exit:rank=$victim,seq=5,step=0" -- \
    "$worker" allreduce-loop 20 262147 || rc=$?
  echo "$kind exit of rank $victim: job rc $rc after $(($(now_ms) - t0)) ms"
  grep -q "$route" "$log.err" || fail "$kind: no rank took its route (\"$route\")"
  before=$failed
  for r in 0 1 2 3; do
    [ $r -eq $victim ] || survivor "$kind" "$log" $r $victim "$seqs"
  done
  [ $failed -eq $before ] || show "$log"
done
echo "netns_node_level: $([ $failed -eq 0 ] && echo PASSED || echo FAILED)"
exit $failed
