#!/usr/bin/env bash
# One mpi-layer test with a real program from a Debian package, unmodified:
# it runs once under plain mpirun and once with LD_PRELOAD of libruccl_mpi.so
# (RUCCL_DEBUG=INFO), and compares the two.
#   run_package.sh lammps    <np> <layer.so> [mpiexec]
#   run_package.sh scalapack <np> <layer.so> [mpiexec] <tester> <input.dat>
# lammps     (lammps, lammps-examples) the LJ melt example, shortened to 100
#            steps with thermo output every 10: the thermo table and the
#            neighbour totals agree to the last printed digit, and on every
#            rank MPI_Allreduce was routed.
# scalapack  (scalapack-mpi-test) a ScaLAPACK tester (xdlu, xdqr, ...) with a
#            small input file: every residual check passes in both runs, the
#            same tests in the same order, and on every rank some collective
#            was routed. (BLACS broadcasts derived datatypes and reduces with
#            its own ops where it needs an index: those fall back, the counts
#            say so.)
# Exit 77 (a skip) when the package's files are absent; tools/setup.sh
# installs them, so CI runs these.
set -u
what=$1 np=$2 layer=$(realpath "$3") mpiexec=${4:-mpirun}
tester=${5:-} input=${6:+$(realpath "$6")}  # scalapack; made absolute before the cd
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() {
  echo "FAILED ($what, np=$np): $*"
  for f in plain layer; do echo "== $f"; cat "$f.out" "$f.err" 2>/dev/null; done
  exit 1
}
skip() { echo "SKIPPED ($what): $* (Debian: tools/setup.sh installs it)"; exit 77; }
# run <plain|layer> <program and arguments...>: the program's output (rank 0's
# stdout) in <mode>.out, every rank's stderr (ruccl's counts) in <mode>.err.
run() {
  local out=$1 pre=()
  shift
  [ "$out" = layer ] && pre=(-x LD_PRELOAD="$layer" -x RUCCL_DEBUG=INFO)
  timeout 100 "$mpiexec" --allow-run-as-root --oversubscribe -np "$np" --timeout 90 "${pre[@]}" "$@" \
    >"$out.out" 2>"$out.err" || fail "$out run: exit code $?"
}
# shared_on_every_rank <at least>: only MPI_COMM_WORLD's communicator opened
# transports, and at least that many were split from it.
shared_on_every_rank() {
  local n
  n=$(grep -E "\[ruccl mpi layer\] MPI rank [0-9]+: communicators: [0-9]+ shared the world's transports, 1 opened their own" layer.err |
    awk -v least="$1" '$8 >= least' | wc -l)
  [ "$n" -eq "$np" ] || fail "communicators split from the world's on $n of $np ranks (want >= $1, one own)"
}
# routed_on_every_rank <regex of collective names>
routed_on_every_rank() {
  local n
  n=$(grep -E "\[ruccl mpi layer\] MPI rank [0-9]+: ($1) routed [1-9]" layer.err |
    sed -E 's/.*MPI rank ([0-9]+):.*/\1/' | sort -u | wc -l)
  [ "$n" -eq "$np" ] || fail "$1 routed on $n of $np ranks"
}

case $what in
  lammps)
    lmp=$(command -v lmp) || skip "no lmp (package lammps)"
    example=/usr/share/lammps/examples/melt/in.melt
    [ -r "$example" ] || skip "no $example (package lammps-examples)"
    sed -e 's/^run.*/run 100/' -e 's/^thermo.*/thermo 10/' "$example" >in.melt
    for mode in plain layer; do run "$mode" "$lmp" -in in.melt -log none -echo none -nocite; done
    # The thermo rows (Step Temp E_pair E_mol TotEng Press) and the totals.
    for mode in plain layer; do
      awk '/^ *Step /{on=1; next} /^Loop time/{on=0} on' "$mode.out" >"$mode.thermo"
      grep -E "^(Total # of neighbors|Ave neighs/atom|Neighbor list builds)" "$mode.out" >>"$mode.thermo"
    done
    [ "$(grep -cE '^ +[0-9]+ ' plain.thermo)" -eq 11 ] || fail "plain run: not 11 thermo rows"
    diff plain.thermo layer.thermo >thermo.diff || fail "thermo output differs: $(cat thermo.diff)"
    routed_on_every_rank MPI_Allreduce
    shared_on_every_rank 0
    echo "$(grep -cE '^ +[0-9]+ ' layer.thermo) thermo rows agree; routed on rank 0:"
    grep -E "MPI rank 0: .* routed [1-9]" layer.err ;;
  scalapack)
    [ -x "$tester" ] || skip "no $tester (package scalapack-mpi-test)"
    cp "$input" .
    for mode in plain layer; do run "$mode" "$tester"; done
    # Per test: its parameters (integers) and verdict, without times and rates.
    for mode in plain layer; do
      awk '/^WALL/{s=""; for (i = 1; i <= NF; ++i) if ($i !~ /\./) s = s " " $i; print s}' \
        "$mode.out" >"$mode.tests"
      grep -q "END OF TESTS" "$mode.out" || fail "$mode run: no END OF TESTS"
      grep -qE "^ +0 tests completed and failed" "$mode.out" || fail "$mode run: a residual check failed"
    done
    [ -s plain.tests ] || fail "the plain run reported no test"
    grep -qv PASSED plain.tests layer.tests && fail "a test did not pass"
    diff plain.tests layer.tests >tests.diff || fail "the tests differ: $(cat tests.diff)"
    routed_on_every_rank "MPI_Allreduce|MPI_Reduce|MPI_Bcast|MPI_Barrier"
    shared_on_every_rank 1
    echo "$(wc -l <layer.tests) tests passed with and without the layer; counts on rank 0:"
    grep -E "MPI rank 0: (MPI_(Allreduce|Reduce|Bcast|Barrier) |communicators)" layer.err ;;
  *) echo "unknown program $what"; exit 2 ;;
esac
echo "ok ($what, np=$np)"
