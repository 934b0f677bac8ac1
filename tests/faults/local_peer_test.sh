#!/bin/bash
# ctest label faults: a step that fails on one local rank reaches the other
# local ranks of its process at once (the completion barrier carries it), not at
# their deadline as a Timeout "did not arrive".
#   local_peer_test.sh <ruccl_fault_worker>
# 2 processes x 2 devices, RUCCL_ALGO=flat_ring (the transport executor, which
# has no local barrier per step). Rank 2 sends the last step (5) of all-reduce
# #3 corrupted to rank 3, its local peer: rank 3 fails (ProtocolError naming
# rank 2) while rank 2 has finished its exchanges and waits at the completion
# barrier. Both must report ProtocolError in #3 within 1 s of their last good
# collective (RUCCL_TIMEOUT is 3 s: a wait for the deadline fails). Process 0's
# ranks get the failure notice: ProtocolError in #3, or, when their part of #3
# was complete before the notice came (rank 3's last message to rank 0 can be
# delivered before its own receive fails), in #4, naming collective #3.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
[ $# -eq 1 ] || { echo "usage: $0 <ruccl_fault_worker>" >&2; exit 2; }
worker=$1
out=$(mktemp /tmp/ruccl-local-peer.XXXXXX)
trap 'rm -f "$out"' EXIT
bound_ms=${RUCCL_FAULT_LOCAL_MS:-1000}
started=$(now_ms)
faulty_mpirun 40 2 -x RUCCL_TIMEOUT=3 -x RUCCL_CHECKSUM=1 -x RUCCL_ALGO=flat_ring \
  -x RUCCL_FAULT="corrupt:rank=2,seq=3,step=5" -- \
  "$worker" --devices-per-process 2 allreduce-loop 8 65536 >"$out"
rc=$?
wall_ms=$(($(now_ms) - started))
failed=0
fail() { echo "FAIL: $*"; failed=1; }
[ $rc -ne 137 ] || fail "the job hung"
for r in 0 1 2 3; do
  line=$(result_line "$out" $r)
  [ -n "$line" ] || { fail "rank $r printed no RESULT"; continue; }
  status=$(field "$line" status) ms=$(field "$line" ms) seq=$(field "$line" seq) msg=$(message "$line")
  grep -Eq "rank 2([^0-9]|\$)" <<<"$msg" || fail "rank $r: the message does not name rank 2: $msg"
  [ "$status" = ProtocolError ] || fail "rank $r: status $status, expected ProtocolError: $msg"
  if [ $r -ge 2 ]; then
    [ "$seq" = 3 ] || fail "rank $r: failed in collective #$seq, expected #3"
    [ "$ms" -le "$bound_ms" ] || fail "rank $r: error ${ms} ms after its last collective (bound ${bound_ms} ms)"
  else
    [ "$seq" = 3 ] || { [ "$seq" = 4 ] && grep -q "collective #3" <<<"$msg"; } ||
      fail "rank $r: failed in collective #$seq without naming collective #3: $msg"
  fi
  echo "rank $r: $status in #$seq after ${ms} ms"
done
[ $failed -eq 0 ] || sed 's/^/  | /' "$out"
echo "local_peer_test: job ended after ${wall_ms} ms (rc $rc): $([ $failed -eq 0 ] && echo PASSED || echo FAILED)"
exit $failed
