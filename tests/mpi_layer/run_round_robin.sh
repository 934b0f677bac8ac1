#!/usr/bin/env bash
# The layer on a world whose ruccl rank order is not MPI's: 2 namespace hosts
# x 2 processes placed round-robin (mpirun --map-by node: MPI ranks 0 and 2 on
# the first host, 1 and 3 on the second; ruccl orders by node, so its ranks
# are MPI's 0, 2, 1, 3, which the layer prints). The collectives program
# checks every result in MPI rank order, the rooted ones with root MPI rank 1
# (ruccl rank 2); every collective the layer routes is routed on
# MPI_COMM_WORLD too (blocks put in ruccl order and back).
# With the mpi4py program instead (a .py, run by $RUCCL_PYTHON or python3 with
# the argument "multiple"): the same under MPI_THREAD_MULTIPLE, its two
# threads per process on duplicates whose ruccl communicators share the
# world's transports across the hosts.
# With 3 hosts the map is 0 2 4 1 3 5, not its own inverse, so a
# permutation applied the wrong way round fails too.
#   run_round_robin.sh <layer.so> <collectives program | mpi4py_collectives.py> [hosts (2)]
# Exit 0 pass, 1 fail, 77 skip (no namespaces here).
set -u
layer=$1 program=$2 hosts=${3:-2}
np=$((2 * hosts))
# MPI rank m lies on host m % hosts, the (m / hosts)-th there: ruccl rank 2 * host + m / hosts.
map=""
for ((m = 0; m < np; ++m)); do map+=" $((2 * (m % hosts) + m / hosts))"; done
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
case $program in
  *.py) cmd=("${RUCCL_PYTHON:-python3}" "$program" multiple) ok="mpi4py: OK" ;;
  *) cmd=("$program") ok="collectives: OK" ;;
esac
bash "$here/../multinode/netns_mpirun.sh" -t 100 "$hosts" 2 --map-by node -x LD_PRELOAD="$layer" \
  -x RUCCL_DEBUG=INFO -x RUCCL_MPI_COLLS=all -x COLLECTIVES_ROOT=1 -- "${cmd[@]}" >"$out" 2>&1
rc=$?
[ "$rc" -eq 77 ] && { grep SKIP "$out"; exit 77; }
fail() { echo "FAILED (round robin): $*"; cat "$out"; exit 1; }
[ "$rc" -eq 0 ] || fail "exit code $rc"
grep -q "$ok" "$out" || fail "no OK line"
for c in MPI_Allgather MPI_Reduce_scatter_block MPI_Reduce_scatter MPI_Alltoall MPI_Alltoallv \
  MPI_Allgatherv MPI_Scan MPI_Exscan MPI_Gather MPI_Gatherv MPI_Scatter MPI_Scatterv; do
  n=$(grep -cE "MPI rank [0-9]+: $c routed [1-9][0-9]*, fell back 0$" "$out")
  [ "$n" -eq "$np" ] || fail "$c not routed everywhere on $np ranks ($n)"
done
n=$(grep -cE "MPI rank [0-9]+: MPI_COMM_WORLD's ruccl ranks by MPI rank:$map$" "$out")
[ "$n" -eq "$np" ] || fail "the world's rank order is not the round robin's: the test proves nothing"
echo "ok (round robin, $hosts hosts x 2)"
