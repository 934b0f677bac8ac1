#!/bin/bash
# ctest label faults: ruccl leaves nothing in /dev/shm. The node segment is a
# memfd (src/node/segment.hpp), which has no name there. Runs a 3-process job
# to its end, then one whose every process is killed with kill -9 mid-loop,
# and compares /dev/shm before and after each. Open MPI's own vader segments
# (vader_segment.*), which a killed job leaves, are not ruccl's and are ignored.
#   shm_leftovers.sh <ruccl_fault_worker>
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
worker=$1
listing() { ls -1 /dev/shm 2>/dev/null | grep -v '^vader_segment\.' | sort; }
work=$(mktemp -d /tmp/ruccl-shm.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
check() {
  local after; after=$(listing)
  if [ "$after" != "$before" ]; then
    echo "FAIL ($1): new /dev/shm entries:"; comm -13 <(echo "$before") <(echo "$after") | sed 's/^/  /'
    fail=1
  else
    echo "ok ($1): /dev/shm unchanged"
  fi
}

before=$(listing)
faulty_mpirun 60 3 -x RUCCL_TIMEOUT=10 -- "$worker" --dir "$work/a" allreduce-loop 200 16 \
  >"$work/a.out" 2>&1 || true
grep -q "^RESULT" "$work/a.out" || { echo "FAIL: the normal job printed no RESULT"; tail -5 "$work/a.out"; fail=1; }
check "after a normal job"

before=$(listing)
mkdir -p "$work/b"
faulty_mpirun 60 3 -x RUCCL_TIMEOUT=10 -- "$worker" --dir "$work/b" allreduce-loop 100000000 16 \
  >"$work/b.out" 2>&1 &
job=$!
for _ in $(seq 1 300); do [ "$(ls "$work/b" | grep -c '^pid\.')" -ge 3 ] && break; sleep 0.05; done
sleep 0.3
for f in "$work"/b/pid.*; do kill -9 "$(cat "$f")" 2>/dev/null; done
wait $job 2>/dev/null
check "after kill -9 of every process"
exit $fail
