#!/bin/bash
# Run an MPI program across simulated hosts (network namespaces), UCX over TCP:
#   netns_mpirun.sh [-t SECONDS] <hosts> <procs-per-host> [mpirun args...] -- <command...>
# Brings a lab of <hosts> namespaces up, runs mpirun on h1 across all of them
# (<procs-per-host> ranks each, Open MPI's rsh launcher with the nsrsh agent),
# and always tears the lab down. Exits with mpirun's status, or 77 with
# "SKIP: <reason>" where namespaces cannot be made (not root, no ip, ...).
# Environment: UCX_TLS (default tcp; set it to "" for UCX's own choice),
# UCX_NET_DEVICES (default eth0), RUCCL_* and UCX_* are passed to every rank.
# Example (2 namespaces x 2 ranks, hierarchical vs flat):
#   for a in hierarchical flat_ring; do RUCCL_ALGO=$a tests/multinode/netns_mpirun.sh 2 2 -- \
#     build/examples/mpi_all_reduce --count 1000003; done
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=netns_lab.sh
source "$here/netns_lab.sh"
limit=120
if [ "${1:-}" = -t ]; then limit=$2; shift 2; fi
[ $# -ge 4 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
hosts=$1 ppn=$2; shift 2
lab_preflight
trap lab_down EXIT
trap 'exit 130' INT TERM
lab_up "$hosts"
# In the background, so that INT/TERM reach the trap at once. The trap ends
# that job's shell first (it would report its ranks "Killed"), then the EXIT
# trap's lab_down kills whatever still runs in the lab.
lab_mpirun "$ppn" "$limit" "$@" &
job=$!
trap 'echo "netns_mpirun: interrupted, tearing the lab down" >&2; exec 2>/dev/null; kill -9 $job; exit 130' INT TERM
rc=0
wait $job || rc=$?
exit $rc
