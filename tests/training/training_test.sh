#!/bin/bash
# ctest driver of examples/collective_training (labels inproc and mpi).
#   training_test.sh inproc <collective_training>   2 ranks as threads (Session)
#   training_test.sh mpi <collective_training>      mpirun -np 2 ... --world ($MPIEXEC, default mpirun)
# Checks: run DIR then resume DIR print the same final checksum (and a second
# resume too); run on an existing DIR fails; a corrupt (one changed byte), a
# truncated and a missing state file (in-process also: too short for a header,
# bad magic, another version, trailing bytes) each fail with a clear message on
# the rank that owns it while the other ranks stop too; --mismatch gives
# ShapeMismatch on every rank. In mpi mode also: the checksum equals the
# in-process one, and the in-process program resumes the state mpirun saved.
# Exit 0 pass, 1 fail.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 inproc|mpi <collective_training>" >&2; exit 2; }
mode=$1 bin=$2
[ -x "$bin" ] || { echo "no executable $bin" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ruccl-training.XXXXXX")
trap 'rm -rf "$work"' EXIT
export RUCCL_TIMEOUT=${RUCCL_TIMEOUT:-30}
case $mode in
  inproc) launch=("$bin");;
  mpi) launch=("${MPIEXEC:-mpirun}" --oversubscribe --allow-run-as-root --timeout 60 -np 2
               -x RUCCL_TIMEOUT "$bin" --world);;
  *) echo "unknown mode $mode" >&2; exit 2;;
esac
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
t0=$(date +%s.%N)
elapsed() { awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%6.2fs", a - b }'; }

# go NAME ARGS...: runs the example (launcher of this mode) and keeps its output
# in $work/NAME.log; sets $rc and $out.
go() {
  local name=$1; shift
  timeout -s KILL 100 "$@" >"$work/$name.log" 2>&1; rc=$?
  out=$(cat "$work/$name.log")
  echo "[$(elapsed)] $name: exit $rc"
}
checksum() { grep -o 'final parameters checksum 0x[0-9a-f]\{16\}' <<<"$1" | awk '{print $4}' | head -1; }
# shellcheck disable=SC2001
show() { sed 's/^/    | /' <<<"$out"; }
expect_ok() { [ "$rc" = 0 ] || { fail "$1: exit $rc"; show; }; }
# expect_error WHAT PATTERN: nonzero exit and PATTERN (grep -E) in the output.
expect_error() {
  if [ "$rc" = 0 ] || [ "$rc" = 137 ]; then fail "$1: exit $rc, want a clean failure"; show; return; fi
  grep -Eq -- "$2" <<<"$out" || { fail "$1: no line matching '$2'"; show; }
}

state=$work/state
go run "${launch[@]}" run "$state"; expect_ok run
a=$(checksum "$out"); [ -n "$a" ] || { fail "run printed no checksum"; show; }
for r in 0 1; do [ -s "$state/rank-$r.state" ] || fail "run left no $state/rank-$r.state"; done
leftover=$(find "$state" -name '*.tmp.*')
[ -z "$leftover" ] || fail "temporary files left in $state: $leftover"
grep -q 'saved the state after step 1' <<<"$out" || { fail "run did not report saving"; show; }

go resume "${launch[@]}" resume "$state"; expect_ok resume
b=$(checksum "$out")
if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "  checksums: run $a, resume $b: equal"
else fail "run checksum '$a' != resume checksum '$b'"; show; fi
go resume_again "${launch[@]}" resume "$state"; expect_ok resume_again
[ "$(checksum "$out")" = "$a" ] || fail "a second resume printed $(checksum "$out"), want $a"

go run_existing "${launch[@]}" run "$state"
expect_error run_existing "already exists: run needs a new directory"

# flip FILE OFFSET: inverts the bits of one byte (called through eval in damaged).
# shellcheck disable=SC2317
flip() {
  local v; v=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  # shellcheck disable=SC2059  # the format is the octal escape of the new byte
  printf "$(printf '\\%03o' $((v ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# A damaged copy of the state: DAMAGE is a command run on the copy's rank-1.state.
damaged() {
  local name=$1 damage=$2 pattern=$3
  rm -rf "${work:?}/$name"; cp -r "$state" "$work/$name"
  (cd "$work/$name" && eval "$damage")
  go "$name" "${launch[@]}" resume "$work/$name"
  expect_error "$name" "$pattern"
  # the other rank stops too, naming the rank that failed
  grep -q "rank 0: stopping: loading the state failed on rank(s) 1" <<<"$out" ||
    { fail "$name: rank 0 did not stop naming rank 1"; show; }
}
damaged corrupt "flip rank-1.state 200" \
  "rank 1: InvalidArgument: .*rank-1.state: checksum mismatch \(stored 0x[0-9a-f]+, computed 0x[0-9a-f]+\): the state file is corrupt"
damaged truncated "truncate -s -37 rank-1.state" \
  "rank 1: .*rank-1.state: truncated state file: [0-9]+ bytes, the header says [0-9]+"
if [ "$mode" = inproc ]; then  # the same code path in both modes; each failing mpirun costs ~2 s
  damaged tiny "truncate -s 10 rank-1.state" "rank-1.state: truncated state file: 10 bytes"
  damaged magic "printf 'NOTRUCCL' | dd of=rank-1.state bs=1 seek=0 conv=notrunc status=none" \
    "rank-1.state: not a collective_training state file \(bad magic\)"
  damaged version "printf '\\x07' | dd of=rank-1.state bs=1 seek=8 conv=notrunc status=none" \
    "rank-1.state: unsupported state file version 7 \(this program reads version 1\)"
  damaged longer "printf 'xx' >>rank-1.state" "rank-1.state: size mismatch: [0-9]+ bytes, the header says [0-9]+"
fi
damaged missing "rm rank-1.state" "cannot open .*rank-1.state: No such file or directory"
go resume_nodir "${launch[@]}" resume "$work/nonexistent"
expect_error resume_nodir "cannot open .*nonexistent/rank-0.state"

go mismatch "${launch[@]}" --mismatch; expect_ok mismatch
n=$(grep -c 'got the expected typed error: ShapeMismatch: .*rank 1 passed shape \[15, 4\]' <<<"$out")
if [ "$n" = 2 ]; then echo "  mismatch: ShapeMismatch on both ranks"
else fail "mismatch: $n ranks got ShapeMismatch, want 2"; show; fi
grep -m1 'ShapeMismatch' <<<"$out" | sed 's/^/    /'

if [ "$mode" = mpi ]; then
  # The world's 2-rank Mean is the in-process one, bit for bit; the files are the same format.
  go inproc_reference "$bin" run "$work/inproc-state"; expect_ok inproc_reference
  c=$(checksum "$out")
  if [ "$c" = "$a" ]; then echo "  in-process checksum $c equals mpirun's"
  else fail "in-process checksum '$c' != mpirun's '$a'"; fi
  go inproc_resume_of_mpi "$bin" resume "$state"; expect_ok inproc_resume_of_mpi
  [ "$(checksum "$out")" = "$a" ] || fail "in-process resume of mpirun's state: $(checksum "$out"), want $a"
fi

if [ $failures = 0 ]; then echo "collective_training $mode: PASSED ($(elapsed))"; exit 0; fi
echo "collective_training $mode: FAILED ($failures failures)"; exit 1
