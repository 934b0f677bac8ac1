#!/bin/bash
# ctest label faults: one process failing or dying during world creation.
#   create_test.sh <ruccl_fault_worker> <case>
# Cases (3 processes, `ruccl_fault_worker create`, RUCCL_TIMEOUT=$timeout_s):
#   bogus-tls        process 1 runs with UCX_TLS=bogus (its transports cannot open)
#   invalid-config   process 1's Config fails validate() (segment_bytes 0)
#   throw            RUCCL_FAULT create:stage=transports,process=1,action=throw
#   segment          process 1 runs with RUCCL_SEGMENT_BYTES=64K, the others 1M
#   algorithm        process 1 forces RUCCL_ALGO=broadcast:@flat_ring, the others nothing
#   exit-<stage>     RUCCL_FAULT create:stage=<stage>,process=1 (it _exits there);
#                    stage: start transports address connect handshake agreed
# (A kill -9 that lands inside MPI_Init is not covered: the survivors then wait
# in Open MPI's own MPI_Init (PMIx_Get of the dead process's modex, no timeout),
# before ruccl has any wait of its own. The exit-<stage> cases kill at every
# stage after it, deterministically.)
# Every process that does not fail by itself must print its CREATE line with a
# typed error (not Ok) that names process 1 ("process 1" or "rank 1"), within
# the bound (below) of its creation's start; for the agreed failures (bogus-tls,
# invalid-config, throw, segment, algorithm) every process, process 1 included, prints the
# same status. The job must end by itself (a hard `timeout -s KILL` turns a
# hang into a failure: on 4ccd446 every case hangs or, for segment, succeeds).
# Bound: RUCCL_TIMEOUT + 2 s (the grace of creation's last agreement after a
# local failure) + $slack_ms for this loaded 2-core machine.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
[ $# -eq 2 ] || { echo "usage: $0 <ruccl_fault_worker> <case>" >&2; exit 2; }
worker=$1 case=$2
timeout_s=${RUCCL_CREATE_TIMEOUT_S:-3}
slack_ms=${RUCCL_CREATE_SLACK_MS:-2500}
bound_ms=$((timeout_s * 1000 + 2000 + slack_ms))
hard_s=40
[ -x "$worker" ] || { echo "no executable $worker" >&2; exit 1; }
work=$(mktemp -d /tmp/ruccl-create.XXXXXX)
trap '[ -n "${RUCCL_FAULT_KEEP:-}" ] || rm -rf "$work"' EXIT
failures=0
# launch <mpirun args, app contexts included>: recovery on (see lib.sh), hard limit.
launch() {
  timeout -s KILL $hard_s "$mpiexec" --oversubscribe --allow-run-as-root --enable-recovery \
    --mca orte_abort_on_non_zero_status 0 -x RUCCL_TIMEOUT="$timeout_s" "$@"
}

# judge <name> <np> <victim dies: 0|1> <want status or ""> <want text or ""> <output> <rc> <wall ms>
judge() {
  local name=$1 np=$2 dies=$3 want=$4 text=$5 out=$6 rc=$7 wall=$8 r line status ms msg first=""
  local verdict=ok notes=""
  bad() { verdict=FAIL; notes+=" rank $r: $*;"; }
  [ "$rc" -eq 137 ] && { verdict=HANG; notes+=" killed after ${hard_s}s;"; }
  for ((r = 0; r < np; ++r)); do
    line=$(grep "^CREATE rank=$r " "$out" | head -1)
    if [ "$r" = 1 ] && [ "$dies" = 1 ]; then
      [ -z "$line" ] || bad "the victim printed: $line"; continue
    fi
    [ -n "$line" ] || { bad "no CREATE line"; continue; }
    status=$(field "$line" status) ms=$(field "$line" ms) msg=$(message "$line")
    [ "$status" != Ok ] || { bad "status Ok"; continue; }
    [ -z "$want" ] || [ "$status" = "$want" ] || bad "status $status, want $want"
    [ -z "$first" ] || [ "$dies" = 1 ] || [ "$status" = "$first" ] || bad "status $status where rank 0 got $first"
    first=${first:-$status}
    grep -Eq "(process|rank) 1\b" <<<"$msg" || bad "message does not name process 1: $msg"
    [ -z "$text" ] || grep -Fq -- "$text" <<<"$msg" || bad "message lacks '$text': $msg"
    [ "${ms%.*}" -le $bound_ms ] || bad "returned after $ms ms (bound $bound_ms)"
    echo "  rank $r: $status after $ms ms: $msg"
  done
  echo "$name: $verdict (job ${wall} ms)${notes}"
  [ $verdict = ok ] || { failures=$((failures + 1)); sed 's/^/  | /' "$out" | tail -20; }
}

# run <name> <np> <dies> <want status> <want text> -- <app contexts for launch>
run() {
  local name=$1 np=$2 dies=$3 want=$4 text=$5; shift 6
  local out=$work/$name.out t0 rc
  t0=$(now_ms)
  launch "$@" >"$out" 2>&1
  rc=$?
  judge "$name" "$np" "$dies" "$want" "$text" "$out" $rc $(($(now_ms) - t0))
}

w=("$worker" create)
case $case in
  bogus-tls)
    run bogus-tls 3 0 "" "process 1 (host" -- -np 1 "${w[@]}" : -np 1 -x UCX_TLS=bogus "${w[@]}" : -np 1 "${w[@]}" ;;
  invalid-config)
    run invalid-config 3 0 InvalidArgument "segment_bytes must be at least 1" -- \
      -np 1 "${w[@]}" : -np 1 "$worker" --invalid-config create : -np 1 "${w[@]}" ;;
  throw)
    run throw 3 0 Internal "injected fault" -- -x RUCCL_FAULT=create:stage=transports,process=1,action=throw -np 3 "${w[@]}" ;;
  segment)
    run segment 3 0 InvalidArgument "has 65536 segment_bytes (RUCCL_SEGMENT_BYTES), process 0 (host" -- \
      -np 1 "${w[@]}" : -np 1 -x RUCCL_SEGMENT_BYTES=64K "${w[@]}" : -np 1 "${w[@]}" ;;
  algorithm)
    run algorithm 3 0 InvalidArgument "algorithm selection (RUCCL_ALGO; a hash of the string), process 0 (host" -- \
      -np 1 "${w[@]}" : -np 1 -x RUCCL_ALGO=broadcast:@flat_ring "${w[@]}" : -np 1 "${w[@]}" ;;
  exit-*)
    stage=${case#exit-}
    run "$case" 3 1 "" "" -- -x RUCCL_FAULT="create:stage=$stage,process=1,code=7" -np 3 "${w[@]}" ;;
  *) echo "unknown case $case" >&2; exit 2 ;;
esac
[ $failures = 0 ] && echo "create_test $case: PASSED" || echo "create_test $case: FAILED"
[ $failures = 0 ]
