#!/bin/bash
# ctest label multinode: the world test matrix's collective tests (every
# collective, root, dtype, op and form; zero and odd counts; budgets) across
# simulated hosts, where every collective but the all-to-all-v runs level by
# level (ring/hierarchical_*.cpp; a broadcast from 512 B): in-process, the
# node's shared memory (a node level where a host has several processes),
# UCX/tcp across. The TRACE lines must show each of them level by level.
#   world_matrix_test.sh <ruccl_mpi_world_matrix binary>
# Shapes (hosts x processes per host x devices per process): 2x2x1 and 2x2x2
# (with a node level), 3x1x2 (local and across levels only), 3 processes on
# 2 hosts (2 + 1: nodes of different sizes, no node level); and 2x2x1 under
# the flat ring strategy. Where a host has several processes, the all-to-all-v
# (and the flat ring) send to the ranks of their host through its shared
# memory and to the others over UCX (world/routed_run.hpp): TRACE says so.
# Exit 0 pass, 1 fail, 77 skip (prints "SKIP: <reason>").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=netns_lab.sh
source "$here/netns_lab.sh"
[ $# -eq 1 ] || { echo "usage: $0 <ruccl_mpi_world_matrix>" >&2; exit 2; }
bin=$1
[ -x "$bin" ] || { echo "no executable $bin" >&2; exit 1; }
filter='*Collectives*:*Budget*:*AllReduce.*:*AllToAllV*'
lab_preflight
trap lab_down EXIT
trap 'exit 130' INT TERM
failed=0
routed="other ranks of this node through its shared memory, to the other"
# (hosts, processes per host, devices per process, strategy, processes in
# all where fewer than hosts x per host: the last host gets the rest)
for shape in "2 2 1 hierarchical" "2 2 2 hierarchical" "3 1 2 hierarchical" \
             "2 2 2 hierarchical 3" "2 2 1 flat_ring"; do
  read -r hosts ppn dev algo np <<<"$shape"
  np=${np:-$((hosts * ppn))}
  lab_down
  lab_up "$hosts" || { echo "FAIL: lab_up $hosts"; exit 1; }
  log=$(mktemp /tmp/ruccl-world-matrix-netns.XXXXXX)
  rc=0
  lab_mpirun "$ppn" 100 -np "$np" -x RUCCL_DEBUG=TRACE -- "$bin" --devices-per-process "$dev" \
    --strategy "$algo" --gtest_brief=1 --gtest_filter="$filter" >"$log" 2>&1 || rc=$?
  summary=$(grep -m1 -E '\[  PASSED  \]|\[  FAILED  \]' "$log" | sed 's/\x1b\[[0-9;]*m//g' || true)
  echo "${hosts} hosts x ${ppn} processes x ${dev} devices ($np processes), $algo: rc=$rc ${summary:-no summary}"
  ok=1
  [ $rc -eq 0 ] && grep -q 'PASSED' "$log" || ok=0
  # The path they took (the TRACE line of each collective): level by level,
  # with a node level where a host has several processes; the flat ring
  # (and the all-to-all-v) routed by where each peer is.
  if [ "$algo" = hierarchical ]; then
    for kind in broadcast reduce all_gather reduce_scatter; do
      grep -Eq "$kind #[0-9]+ [0-9]+ bytes \(hierarchical\) done" "$log" ||
        { echo "no $kind ran level by level"; ok=0; }
    done
    if [ "$ppn" -gt 1 ] && [ "$np" -eq $((hosts * ppn)) ] &&
      ! grep -q "node level through the node's shared memory" "$log"; then
      echo "no collective ran a node level"; ok=0
    fi
    if [ "$np" -ne $((hosts * ppn)) ]; then  # (3 processes: the level across them routed)
      grep -q "node level through the node's shared memory" "$log" &&
        { echo "nodes of different sizes ran a node level"; ok=0; }
      grep -q "to the 1 other ranks of this node through its shared memory, to the other 1 over UCX" \
        "$log" || { echo "the level across processes did not route by node"; ok=0; }
    fi
  else
    grep -Eq "all_reduce #[0-9]+ [0-9]+ bytes \(flat_ring\) done" "$log" ||
      { echo "no all_reduce ran as a flat ring"; ok=0; }
  fi
  if [ "$ppn" -gt 1 ] && ! grep -q "$routed" "$log"; then
    echo "no collective sent through the node's shared memory and UCX at once"; ok=0
  fi
  if [ "$ppn" -eq 1 ] && grep -q "$routed" "$log"; then
    echo "a host of one process routed through a node segment it does not have"; ok=0
  fi
  if [ $ok = 0 ]; then
    failed=1
    grep -v ' TRACE ' "$log" | tail -n 40
  fi
  rm -f "$log"
done
[ $failed -eq 0 ] && echo "world_matrix_test: PASSED" || echo "world_matrix_test: FAILED"
exit $failed
