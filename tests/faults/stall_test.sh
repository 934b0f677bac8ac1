#!/bin/bash
# ctest label faults: a stalled rank is named by every other rank's Timeout.
#   stall_test.sh <ruccl_fault_worker> <np>
# RUCCL_FAULT makes rank 2 sleep 10 s before collective #5 of an all-reduce loop;
# RUCCL_TIMEOUT is 2 s. Every other rank must get Timeout, whose message names
# rank 2 ("rank 2", as a Timeout's "rank R did not arrive" does), and collective
# #5, within the deadline plus slack of its last successful collective. Rank 2
# must print a RESULT too (any error) and the job must end by itself (a hard
# limit turns a hang into a failure; the stall itself may run out its 10 s).
# Exit 0 only if all that held.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
[ $# -eq 2 ] || { echo "usage: $0 <ruccl_fault_worker> <np>" >&2; exit 2; }
worker=$1 np=$2 stalled=2 seq=5
timeout_s=2 slack_ms=${RUCCL_FAULT_SLACK_MS:-1500} hard_s=40
out=$(mktemp /tmp/ruccl-stall.XXXXXX)
trap 'rm -f "$out"' EXIT

started=$(now_ms)
faulty_mpirun $hard_s "$np" -x RUCCL_TIMEOUT=$timeout_s \
  -x RUCCL_FAULT="stall:rank=$stalled,seq=$seq,ms=10000" -- \
  "$worker" allreduce-loop 20 65536 >"$out"
rc=$?
wall_ms=$(($(now_ms) - started))
cat "$out"
failed=0
fail() { echo "FAIL: $*"; failed=1; }
[ $rc -ne 137 ] || fail "the job hung (killed after ${hard_s} s)"
for ((r = 0; r < np; ++r)); do
  line=$(result_line "$out" $r)
  [ -n "$line" ] || { fail "rank $r printed no RESULT"; continue; }
  status=$(field "$line" status) ms=$(field "$line" ms) msg=$(message "$line")
  if [ $r -eq $stalled ]; then
    [ "$status" != Ok ] || fail "the stalled rank $r finished without an error"
    continue
  fi
  [ "$status" = Timeout ] || fail "rank $r: status $status, expected Timeout"
  grep -Eq "rank $stalled([^0-9]|\$)" <<<"$msg" || fail "rank $r: the message does not name rank $stalled: $msg"
  [ "$(field "$line" seq)" = $seq ] || fail "rank $r: failed in collective #$(field "$line" seq), expected #$seq"
  [ "$ms" -le $((timeout_s * 1000 + slack_ms)) ] || fail "rank $r: error ${ms} ms after its last collective"
done
echo "stall_test np=$np: job ended after ${wall_ms} ms (rc $rc): $([ $failed -eq 0 ] && echo PASSED || echo FAILED)"
exit $failed
