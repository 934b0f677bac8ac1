# Shared by the fault test scripts (sourced): the mpirun line of a faulty job
# and the fields of the workers' RESULT lines.
#
# A faulty job runs with --enable-recovery (Open MPI would otherwise kill every
# process as soon as one dies, hiding what the survivors do) and
# orte_abort_on_non_zero_status 0 (one rank's exit does not end the others), under
# a hard `timeout -s KILL` so that a hang ends as rc 137 instead of hanging ctest.
mpiexec=${MPIEXEC:-mpirun}
now_ms() { date +%s%3N; }

# faulty_mpirun <hard limit s> <np> [mpirun args] -- <worker args...>
faulty_mpirun() {
  local hard=$1 np=$2; shift 2
  local mpi_args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do mpi_args+=("$1"); shift; done
  shift
  timeout -s KILL "$hard" "$mpiexec" -np "$np" --oversubscribe --allow-run-as-root \
    --enable-recovery --mca orte_abort_on_non_zero_status 0 "${mpi_args[@]}" "$@"
}

# result_line <file> <rank>: that rank's RESULT line (empty if none).
result_line() { grep "^RESULT rank=$2 " "$1" | head -1; }
# field <line> <name>: the value of name=value (not msg).
field() { sed -n "s/.* $2=\\([^ ]*\\).*/\\1/p" <<<"$1"; }
# message <line>: the msg="..." text.
message() { sed -n 's/.* msg="\(.*\)"$/\1/p' <<<"$1"; }
# show <log prefix>: a job's output (<prefix>.out) and the tail of its stderr
# (<prefix>.err), for the reader of a failure.
show() { sed 's/^/  | /' "$1.out"; grep -v '^\s*$' "$1.err" | tail -15 | sed 's/^/  ! /'; }
