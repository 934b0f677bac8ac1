#!/usr/bin/env bash
# One mpi-layer test: runs an unmodified MPI program under mpirun with
# LD_PRELOAD of libruccl_mpi.so and checks its output.
#   run_layer.sh <mode> <np> <layer.so> <program | script.py> [mpiexec]
# modes:
#   routed    RUCCL_DEBUG=INFO, RUCCL_MPI_COLLS=all: the program says OK and, on
#             every rank, every collective it calls was routed at least once,
#             and only MPI_COMM_WORLD's communicator opened transports
#   default   no RUCCL_MPI_COLLS: OK, the default nine collectives are routed,
#             Gather(v), Scatter(v), Allgatherv and the scans fall back
#   off       RUCCL_MPI=0: the program says OK and nothing was routed
#   chosen    RUCCL_MPI_COLLS=allreduce,barrier: only those are routed
#   multiple  a script.py under MPI_THREAD_MULTIPLE: OK, and on every rank
#             MPI_Allreduce and MPI_Bcast routed
#   mismatch  ranks pass different counts: every rank gets ruccl's error
#   fatal     the same under MPI_ERRORS_ARE_FATAL: the job aborts, ruccl's
#             message printed
#   app       any MPI program (extra arguments follow): exit 0, and on every
#             rank some collective was routed (ruccl's own C example)
#   alloc_mem RUCCL_DEBUG=INFO, RUCCL_MPI_ALLOC_MEM_BYTES=1M, alloc_mem.c: OK,
#             and on every rank 32 of the 42 MPI_Alloc_mem came from ruccl
#             (two rounds of 16 live at once: freed ones return), the rest
#             from MPI; then without the variable (off), and with it but no
#             node segment (RUCCL_INTRA_NODE_TRANSPORT=tcp), OK and all 42
#             from MPI
#   plain     no preload (the reference: the program is right under MPI)
set -u
mode=$1 np=$2 layer=$3 program=$4 mpiexec=${5:-mpirun}
shift $(($# < 5 ? $# : 5))
args=("$@")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() {
  timeout 100 "$mpiexec" --allow-run-as-root --oversubscribe -np "$np" --timeout 90 "$@" \
    >"$out" 2>&1
}
fail() { echo "FAILED ($mode, np=$np): $*"; cat "$out"; exit 1; }
pre=(-x LD_PRELOAD="$layer")
# A Python script runs under $RUCCL_PYTHON (one that imports mpi4py), else python3.
case $program in *.py) program_cmd=("${RUCCL_PYTHON:-python3}" "$program") ;; *) program_cmd=("$program") ;; esac
colls="MPI_Allreduce MPI_Reduce MPI_Bcast MPI_Allgather MPI_Reduce_scatter_block
       MPI_Reduce_scatter MPI_Alltoall MPI_Alltoallv MPI_Barrier MPI_Allgatherv MPI_Gather
       MPI_Gatherv MPI_Scatter MPI_Scatterv MPI_Scan MPI_Exscan"
case $mode in
  plain)
    run "${program_cmd[@]}" || fail "exit code $?"
    grep -q ": OK" "$out" || fail "no OK line" ;;
  routed)
    run "${pre[@]}" -x RUCCL_DEBUG=INFO -x RUCCL_MPI_COLLS=all "${program_cmd[@]}" ||
      fail "exit code $?"
    grep -q ": OK" "$out" || fail "no OK line"
    for c in $colls; do
      n=$(grep -cE "MPI rank [0-9]+: $c routed [1-9][0-9]*," "$out")
      [ "$n" -eq "$np" ] || fail "$c routed on $n of $np ranks"
    done
    # Only MPI_COMM_WORLD's communicator opens transports; the program's
    # duplicates and splits share them.
    n=$(grep -cE "MPI rank [0-9]+: communicators: [0-9]+ shared the world's transports, 1 opened their own" "$out")
    [ "$n" -eq "$np" ] || fail "communicators opened transports of their own on $((np - n)) of $np ranks" ;;
  default)
    run "${pre[@]}" -x RUCCL_DEBUG=INFO "${program_cmd[@]}" || fail "exit code $?"
    grep -q ": OK" "$out" || fail "no OK line"
    for c in $colls; do
      case $c in
        MPI_Allgatherv | MPI_Gather* | MPI_Scatter* | MPI_Scan | MPI_Exscan)
          want="$c routed 0, fell back [1-9][0-9]* \\(not in RUCCL_MPI_COLLS" ;;
        *) want="$c routed [1-9][0-9]*," ;;
      esac
      n=$(grep -cE "MPI rank [0-9]+: $want" "$out")
      [ "$n" -eq "$np" ] || fail "$c: '$want' on $n of $np ranks"
    done ;;
  off)
    run "${pre[@]}" -x RUCCL_DEBUG=INFO -x RUCCL_MPI=0 "$program" || fail "exit code $?"
    grep -q ": OK" "$out" || fail "no OK line"
    grep -qE "routed [1-9]" "$out" && fail "RUCCL_MPI=0 routed calls"
    n=$(grep -c "MPI_Allreduce routed 0, fell back [1-9][0-9]* (RUCCL_MPI=0" "$out")
    [ "$n" -eq "$np" ] || fail "no RUCCL_MPI=0 fallback counts" ;;
  alloc_mem)
    run "${pre[@]}" -x RUCCL_DEBUG=INFO -x RUCCL_MPI_ALLOC_MEM_BYTES=1M "$program" ||
      fail "exit code $?"
    grep -q ": OK" "$out" || fail "no OK line"
    n=$(grep -c "MPI rank [0-9]*: MPI_Alloc_mem 32 from ruccl, 10 from MPI" "$out")
    [ "$n" -eq "$np" ] || fail "MPI_Alloc_mem: 32 from ruccl, 10 from MPI on $n of $np ranks"
    unset RUCCL_MPI_ALLOC_MEM_BYTES  # (the default, whatever the caller's environment)
    run "${pre[@]}" -x RUCCL_DEBUG=INFO "$program" || fail "exit code $? (default)"
    grep -q ": OK" "$out" || fail "no OK line (default)"
    n=$(grep -c "MPI rank [0-9]*: MPI_Alloc_mem 0 from ruccl, 42 from MPI" "$out")
    [ "$n" -eq "$np" ] || fail "default (off): all 42 from MPI on $n of $np ranks"
    run "${pre[@]}" -x RUCCL_DEBUG=INFO -x RUCCL_MPI_ALLOC_MEM_BYTES=1M \
      -x RUCCL_INTRA_NODE_TRANSPORT=tcp "$program" || fail "exit code $? (no node segment)"
    grep -q ": OK" "$out" || fail "no OK line (no node segment)"
    n=$(grep -c "MPI rank [0-9]*: MPI_Alloc_mem 0 from ruccl, 42 from MPI" "$out")
    [ "$n" -eq "$np" ] || fail "no node segment: all 42 from MPI on $n of $np ranks" ;;
  chosen)
    run "${pre[@]}" -x RUCCL_DEBUG=INFO -x RUCCL_MPI_COLLS=allreduce,barrier "$program" ||
      fail "exit code $?"
    grep -q ": OK" "$out" || fail "no OK line"
    [ "$(grep -cE 'MPI_Allreduce routed [1-9]' "$out")" -eq "$np" ] || fail "allreduce not routed"
    [ "$(grep -cE 'MPI_Barrier routed [1-9]' "$out")" -eq "$np" ] || fail "barrier not routed"
    [ "$(grep -c 'MPI_Bcast routed 0, fell back [1-9][0-9]* (not in RUCCL_MPI_COLLS' "$out")" \
      -eq "$np" ] || fail "bcast routed although not chosen" ;;
  app)
    run "${pre[@]}" -x RUCCL_DEBUG=INFO "${program_cmd[@]}" "${args[@]}" || fail "exit code $?"
    n=$(grep -E "MPI rank [0-9]+: MPI_[A-Za-z_]+ routed [1-9]" "$out" |
      sed -E 's/.*MPI rank ([0-9]+):.*/\1/' | sort -u | wc -l)
    [ "$n" -eq "$np" ] || fail "collectives routed on $n of $np ranks" ;;
  multiple)
    run "${pre[@]}" -x RUCCL_DEBUG=INFO "${program_cmd[@]}" multiple || fail "exit code $?"
    grep -q ": OK" "$out" || fail "no OK line"
    [ "$(grep -cE 'MPI_Allreduce routed [1-9]' "$out")" -eq "$np" ] ||
      fail "allreduce not routed under MPI_THREAD_MULTIPLE"
    [ "$(grep -cE 'MPI_Bcast routed [1-9]' "$out")" -eq "$np" ] ||
      fail "bcast not routed under MPI_THREAD_MULTIPLE" ;;
  mismatch)
    run "${pre[@]}" "$program" || fail "exit code $?"
    grep -q "mismatch: OK" "$out" || fail "no OK line" ;;
  fatal)
    run "${pre[@]}" "$program" fatal && fail "the job did not abort"
    grep -q "ShapeMismatch" "$out" || fail "ruccl's message was not printed"
    grep -q "rank 0 passed" "$out" || fail "the message does not name rank 0" ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
echo "ok ($mode, np=$np)"
