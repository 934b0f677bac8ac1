#!/usr/bin/env bash
# Installs what is missing, builds ruccl, and runs the main example through
# mpirun: 2 processes x 2 host devices (4 ranks), each rank checking Sum and
# Mean all-reduce, a broadcast and an all-to-all-v against closed forms; rank 0
# prints one summary line. Extra arguments go to the example
# (e.g. ./run.sh --count 1000000). RUCCL_* variables are passed to every rank.
# Without MPI/UCX (no mpi_all_reduce built) it runs the in-process example.
set -euo pipefail
cd "$(dirname "$0")"
source tools/setup.sh
ruccl_setup
# Only the two examples this runs; ./test.sh builds the rest.
ruccl_build_targets build mpi_all_reduce all_reduce
if [[ -x build/examples/mpi_all_reduce ]] && command -v mpirun >/dev/null; then
  cmd=(mpirun -np 2 --oversubscribe --allow-run-as-root --timeout 300
       build/examples/mpi_all_reduce --devices-per-process 2 "$@")
else
  echo "run.sh: no MPI/UCX build; running the in-process example instead" >&2
  cmd=(build/examples/all_reduce "$@")
fi
echo "== ${cmd[*]}"
exec "${cmd[@]}"
