#!/bin/bash
# ctest label faults: an injected fault (RUCCL_FAULT) of rank 2 in collective #5
# of a 4 MiB all-reduce loop ends in the expected typed error on every rank.
#   injected_test.sh <ruccl_fault_worker> <np> <stall|drop|corrupt>
#   stall    rank 2 sleeps 10 s before #5: every other rank gets Timeout naming
#            rank 2 ("rank 2 did not arrive"/"waiting for rank 2") in #5; rank 2
#            prints some error (the stall may run out its 10 s).
#   drop     rank 2's messages of #5 are never sent: every rank gets Timeout
#            (the one waiting on rank 2 names it; the others hear of it or time
#            out on their own neighbour), at least one naming rank 2.
#   corrupt  rank 2 sends #5's messages with one bit flipped after the checksum
#            (RUCCL_CHECKSUM=1): the receiver's check fails and every rank,
#            rank 2 included, gets ProtocolError naming rank 2 as the sender.
# RUCCL_TIMEOUT is 2 s; every error must come within the deadline plus slack of
# the rank's last successful collective, and the job must end by itself (a hard
# limit turns a hang into a failure). Exit 0 only if all that held.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
[ $# -eq 3 ] || { echo "usage: $0 <ruccl_fault_worker> <np> <stall|drop|corrupt>" >&2; exit 2; }
worker=$1 np=$2 mode=$3 stalled=2 seq=5
case $mode in
  stall) fault="stall:rank=$stalled,seq=$seq,ms=10000" want=Timeout ;;
  drop) fault="drop:rank=$stalled,seq=$seq" want=Timeout ;;
  corrupt) fault="corrupt:rank=$stalled,seq=$seq" want=ProtocolError ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
timeout_s=2 slack_ms=${RUCCL_FAULT_SLACK_MS:-1500} hard_s=40
out=$(mktemp /tmp/ruccl-injected.XXXXXX)
trap 'rm -f "$out"' EXIT

started=$(now_ms)
faulty_mpirun $hard_s "$np" -x RUCCL_TIMEOUT=$timeout_s -x RUCCL_CHECKSUM=1 \
  -x RUCCL_FAULT="$fault" -- "$worker" allreduce-loop 20 1048576 >"$out"
rc=$?
wall_ms=$(($(now_ms) - started))
cat "$out"
failed=0
fail() { echo "FAIL: $*"; failed=1; }
[ $rc -ne 137 ] || fail "the job hung (killed after ${hard_s} s)"
named=0
for ((r = 0; r < np; ++r)); do
  line=$(result_line "$out" $r)
  [ -n "$line" ] || { fail "rank $r printed no RESULT"; continue; }
  status=$(field "$line" status) ms=$(field "$line" ms) msg=$(message "$line")
  if grep -Eq "rank $stalled([^0-9]|\$)" <<<"$msg"; then named=$((named + 1)); fi
  if [ "$mode" = stall ] && [ $r -eq $stalled ]; then
    [ "$status" != Ok ] || fail "the stalled rank $r finished without an error"
    continue
  fi
  [ "$status" = "$want" ] || fail "rank $r: status $status, expected $want"
  if [ "$mode" != drop ]; then  # (drop: see the header)
    grep -Eq "rank $stalled([^0-9]|\$)" <<<"$msg" || fail "rank $r: the message does not name rank $stalled: $msg"
  fi
  [ "$(field "$line" seq)" = $seq ] || fail "rank $r: failed in collective #$(field "$line" seq), expected #$seq"
  [ "$ms" -le $((timeout_s * 1000 + slack_ms)) ] || fail "rank $r: error ${ms} ms after its last collective"
done
[ $named -gt 0 ] || fail "no rank's message names rank $stalled"
echo "injected_test $mode np=$np: job ended after ${wall_ms} ms (rc $rc): $([ $failed -eq 0 ] && echo PASSED || echo FAILED)"
exit $failed
