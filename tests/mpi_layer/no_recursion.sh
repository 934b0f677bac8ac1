#!/usr/bin/env bash
# ruccl's own MPI calls (its bootstrap) must never reach the layer's
# interceptors: no MPI_* function that libruccl_mpi.so defines may be called
# by the ruccl code inside it.
#   no_recursion.sh <libruccl_mpi.so> <static archives of ruccl's parts...>
set -eu
layer=$1
shift
defined=$(nm -D --defined-only "$layer" | awk '$3 ~ /^MPI_/ {print $3}' | sort -u)
used=$(nm -u "$@" 2>/dev/null | awk '$2 ~ /^MPI_/ {print $2}' | sort -u)
[ -n "$defined" ] || { echo "FAILED: the layer defines no MPI_* function"; exit 1; }
[ -n "$used" ] || { echo "FAILED: found no MPI call in ruccl's parts"; exit 1; }
both=$(comm -12 <(echo "$defined") <(echo "$used"))
if [ -n "$both" ]; then
  echo "FAILED: ruccl calls MPI functions that the layer intercepts: $both"
  exit 1
fi
echo "ok: ruccl's MPI calls ($(echo "$used" | tr '\n' ' ')) are none of the layer's ($(echo "$defined" | tr '\n' ' '))"
