#!/bin/bash
# ctest label faults: disagreeing arguments give every rank the same typed error.
#   mismatch_test.sh <ruccl_fault_worker> <np> [devices per process, default 1]
# For each of op, count, dtype, root, bcast-senders, order and dims (a tensor of
# more dims than a fingerprint carries, on rank 1 only), rank 1 deviates in
# collective #1; every rank must print a RESULT with the expected code, and all
# ranks the same message (the worker itself checks that the message names rank 1
# and collective #1, and exits non-zero otherwise). RUCCL_TIMEOUT is 5 s: a
# mismatch is found in the agreement, never by waiting.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
[ $# -ge 2 ] || { echo "usage: $0 <ruccl_fault_worker> <np> [devices]" >&2; exit 2; }
worker=$1 np=$2 devices=${3:-1}
out=$(mktemp /tmp/ruccl-mismatch.XXXXXX)
trap 'rm -f "$out"' EXIT
failed=0
for case in op:OpMismatch count:ShapeMismatch dtype:DtypeMismatch root:RootMismatch \
            bcast-senders:BroadcastSenderCount order:CollectiveMismatch \
            dims:ShapeMismatch; do
  what=${case%%:*} want=${case#*:}
  timeout -s KILL 40 "$mpiexec" -np "$np" --oversubscribe --allow-run-as-root \
    -x RUCCL_TIMEOUT=5 "$worker" --devices-per-process "$devices" mismatch "$what" >"$out"
  rc=$?
  verdict=ok first=""
  [ $rc -eq 0 ] || verdict="mpirun rc $rc"
  for ((r = 0; r < np * devices; ++r)); do
    line=$(result_line "$out" $r)
    if [ -z "$line" ]; then verdict="rank $r printed no RESULT"; continue; fi
    [ "$(field "$line" status)" = "$want" ] || verdict="rank $r: $(field "$line" status), expected $want"
    msg=$(message "$line")
    [ -n "$first" ] || first=$msg
    [ "$msg" = "$first" ] || verdict="rank $r's message differs from rank 0's"
  done
  echo "mismatch $what np=$np devices=$devices: $want \"$first\": $verdict"
  if [ "$verdict" != ok ]; then failed=1; sed 's/^/  | /' "$out"; fi
done
exit $failed
