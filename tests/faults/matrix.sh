#!/bin/bash
# ctest label faults: one case of the fault matrix (tests/faults/CMakeLists.txt
# picks the cases: every kind with every device count and every process count).
#   matrix.sh <ruccl_fault_worker> <kind> <devices per process> <processes>
# kinds:
#   stall    rank R sleeps 4 s before collective #K: every other rank gets
#            Timeout, at least one naming rank R; rank R some error.
#   drop     rank R's messages of #K are never sent: every rank an error
#            (Timeout, or the failure notice of the rank that timed out), at
#            least one naming rank R.
#   corrupt  rank R's payloads of #K get a bit flipped (RUCCL_CHECKSUM=1):
#            every rank ProtocolError naming rank R.
#   adapter  a device verb of rank R fails in #K: every rank DeviceError
#            naming rank R (not a Timeout: the real error reaches everyone).
#   kill     kill -9 of one process mid-loop (kill_trials.sh, one trial).
#   mismatch every argument mismatch (mismatch_test.sh).
#   soak     300 random collectives, checked (the worker judges them).
# R is the first rank of process 1 (it has local peers with 2+ devices), K 3,
# in a loop of 256 KiB all-reduces. With 2 devices per process the job runs
# RUCCL_ALGO=flat_ring: every step is a transport message, also between local
# ranks (the transport executor); with 3, the hierarchical default. Every rank
# must report its error in collective #K (its message naming #K) within
# RUCCL_TIMEOUT (2 s) + slack (1.5 s, RUCCL_FAULT_SLACK_MS) of its last
# successful collective (the stalled rank excepted: it may sleep out its
# stall). No rank may succeed in #K, and the job must end by itself (a hard
# limit turns a hang into a failure).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
[ $# -eq 4 ] || { echo "usage: $0 <ruccl_fault_worker> <kind> <devices> <processes>" >&2; exit 2; }
worker=$1 kind=$2 devices=$3 np=$4
world=$((np * devices))
timeout_s=2 slack_ms=${RUCCL_FAULT_SLACK_MS:-1500} hard_s=40
bad_rank=$devices seq=3
algo=()
[ "$devices" -ne 2 ] || algo=(-x RUCCL_ALGO=flat_ring)

case $kind in
  kill)
    RUCCL_FAULT_NP=$np RUCCL_FAULT_DEVICES=$devices RUCCL_FAULT_COUNT=65536 RUCCL_FAULT_CHECK_SEQ=1 \
      exec bash "$here/kill_trials.sh" "$worker" 1 shm $((np - 1)) ;;
  mismatch) exec bash "$here/mismatch_test.sh" "$worker" "$np" "$devices" ;;
  soak)
    exec timeout -s KILL 120 "$mpiexec" -np "$np" --oversubscribe --allow-run-as-root \
      -x RUCCL_TIMEOUT=10 "${algo[@]}" "$worker" --devices-per-process "$devices" soak 300 ;;
  stall) fault="stall:rank=$bad_rank,seq=$seq,ms=4000" want=Timeout ;;
  drop) fault="drop:rank=$bad_rank,seq=$seq" want=any ;;
  corrupt) fault="corrupt:rank=$bad_rank,seq=$seq" want=ProtocolError ;;
  # The first verb of the collective that runs where the rank's messages cross
  # (combine: a received message reduced) or, hierarchical, its local steps.
  adapter)
    verb=combine
    [ "$devices" -ne 3 ] || verb=exchange
    fault="adapter:rank=$bad_rank,seq=$seq,verb=$verb" want=DeviceError ;;
  *) echo "unknown kind $kind" >&2; exit 2 ;;
esac

out=$(mktemp /tmp/ruccl-matrix.XXXXXX)
trap 'rm -f "$out"' EXIT
started=$(now_ms)
faulty_mpirun $hard_s "$np" -x RUCCL_TIMEOUT=$timeout_s -x RUCCL_CHECKSUM=1 "${algo[@]}" \
  -x RUCCL_FAULT="$fault" -- "$worker" --devices-per-process "$devices" allreduce-loop 8 65536 >"$out"
rc=$?
wall_ms=$(($(now_ms) - started))
failed=0 named=0 worst=0
fail() { echo "FAIL: $*"; failed=1; }
[ $rc -ne 137 ] || fail "the job hung (killed after ${hard_s} s)"
for ((r = 0; r < world; ++r)); do
  line=$(result_line "$out" $r)
  [ -n "$line" ] || { fail "rank $r printed no RESULT"; continue; }
  status=$(field "$line" status) ms=$(field "$line" ms) msg=$(message "$line")
  named_here=0
  if grep -Eq "rank $bad_rank([^0-9]|\$)" <<<"$msg"; then named=$((named + 1)) named_here=1; fi
  [ "$status" != Ok ] || { fail "rank $r: returned success (collective #$(field "$line" seq))"; continue; }
  [ "$(field "$line" seq)" = $seq ] || fail "rank $r: failed in collective #$(field "$line" seq), expected #$seq"
  grep -Eq "(collective #|seq )$seq([^0-9]|\$)" <<<"$msg" || fail "rank $r: the message does not name collective #$seq: $msg"
  [ "$kind" != stall ] || [ $r -ne $bad_rank ] || continue  # the stalled rank: any error, any time
  bound=$((timeout_s * 1000 + slack_ms))
  [ "$ms" -le $bound ] || fail "rank $r: error ${ms} ms after its last collective (bound ${bound} ms)"
  [ "$ms" -le $worst ] || worst=$ms
  [ "$want" = any ] || [ "$status" = "$want" ] || fail "rank $r: status $status, expected $want: $msg"
  if [ "$want" != Timeout ] && [ "$want" != any ] && [ $named_here -eq 0 ]; then
    fail "rank $r: the message does not name rank $bad_rank: $msg"
  fi
done
[ $named -gt 0 ] || fail "no rank's message names rank $bad_rank"
if [ $failed -eq 0 ]; then grep '^RESULT' "$out" | sed 's/^/  | /'; else sed 's/^/  | /' "$out"; fi
echo "matrix $kind ${np}x${devices}: job ended after ${wall_ms} ms (rc $rc), slowest error ${worst} ms: $([ $failed -eq 0 ] && echo PASSED || echo FAILED)"
exit $failed
