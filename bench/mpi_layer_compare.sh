#!/usr/bin/env bash
# MPI_Allreduce latency with and without the ruccl layer, interleaved
# (A B A B ...), the median of the rounds per size. Arguments after the
# third go to allreduce_latency (--max BYTES, --iters N, --warmup N, --coll C).
# RUCCL_MPI_COLLS, when set, reaches the layer's runs (RUCCL_MPI_COLLS=all for
# the collectives it routes only when chosen).
#   bench/mpi_layer_compare.sh [build dir] [rounds] [np] [allreduce_latency options]
set -eu
build=${1:-build} rounds=${2:-5} np=${3:-2}
shift $(($# < 3 ? $# : 3))
bin=$build/bin/allreduce_latency layer=$build/lib/libruccl_mpi.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
options=("$@")
run() { mpirun --allow-run-as-root --oversubscribe -np "$np" "$@" "$bin" "${options[@]}" | grep -v '^#'; }
for r in $(seq "$rounds"); do
  run > "$tmp/mpi.$r"
  run -x LD_PRELOAD="$layer" ${RUCCL_MPI_COLLS:+-x RUCCL_MPI_COLLS} > "$tmp/ruccl.$r"
done
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
printf "%10s %12s %14s %8s\n" bytes "MPI (us)" "ruccl layer" ratio
for bytes in $(awk '{print $1}' "$tmp/mpi.1"); do
  a=$(cat "$tmp"/mpi.* | awk -v b="$bytes" '$1 == b {print $2}' | median)
  b=$(cat "$tmp"/ruccl.* | awk -v b="$bytes" '$1 == b {print $2}' | median)
  printf "%10s %12s %14s %8.2f\n" "$bytes" "$a" "$b" "$(echo "$b / $a" | bc -l)"
done
