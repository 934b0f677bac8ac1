#!/bin/bash
# ctest label mpi (issue 7): two independent jobs on one host; a connection
# attempt across them is refused because their job tokens differ.
#   job_token_test.sh <job_token_probe> <mpirun command...>
# The mpirun command comes with its flags and `-np 1`. Each case starts two
# separate mpirun jobs at once (roles A and B, each its own token drawn by its
# rank 0), meeting only through address files in a fresh directory; see
# job_token_probe.cpp.
#   refuse      both jobs must print status=ProtocolError with a message that
#               says "another job" and "refused" and names the peer (the probe
#               checks that too and exits non-zero otherwise), their tokens
#               must differ, and neither token may appear in either job's
#               output besides its own TOKEN line (the token is a key);
#   same-token  the control: B uses A's token, so the same set-up must give
#               status=Ok and a checked exchange on both sides.
# Each job runs under a hard `timeout -s KILL` (the probe's own waits end it in
# ~25 s at most), so a lost job cannot hang ctest.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 <job_token_probe> <mpirun command...>" >&2; exit 2; }
probe=$1; shift
mpirun_cmd=("$@")
hard_limit=28
work=$(mktemp -d /tmp/ruccl-job-token.XXXXXX)
sessions=$(mktemp -d /tmp/rt.XXXXXX)  # short: Open MPI puts its sockets below it
trap 'rm -rf "$work" "$sessions"' EXIT

# run_case <mode> <want status>: both jobs, then their RESULT lines checked.
run_case() {
  local mode=$1 want=$2 dir="$work/$1" failed=0 role pid_a pid_b rc_a rc_b line
  # Each job gets its own Open MPI session directory: two mpiruns starting at
  # the same moment race to create /tmp/ompi.<host>.<uid> ("mkdir ... File
  # exists"), and the loser never starts (seen once in CI).
  local sa="$sessions/${mode:0:1}A" sb="$sessions/${mode:0:1}B"
  mkdir -p "$dir" "$sa" "$sb"
  OMPI_MCA_orte_tmpdir_base="$sa" \
    timeout -s KILL $hard_limit "${mpirun_cmd[@]}" "$probe" A "$dir" "$mode" >"$dir/A.out" 2>&1 &
  pid_a=$!
  OMPI_MCA_orte_tmpdir_base="$sb" \
    timeout -s KILL $hard_limit "${mpirun_cmd[@]}" "$probe" B "$dir" "$mode" >"$dir/B.out" 2>&1 &
  pid_b=$!
  wait $pid_a; rc_a=$?
  wait $pid_b; rc_b=$?
  for role in A B; do
    line=$(grep "^RESULT role=$role " "$dir/$role.out" | head -1)
    echo "$mode $role: ${line:-no RESULT line}"
    case "$line" in
      *" status=$want expected=yes "*) ;;
      *) failed=1 ;;
    esac
  done
  if [ $rc_a -ne 0 ] || [ $rc_b -ne 0 ]; then
    echo "$mode: mpirun rc A=$rc_a B=$rc_b"; failed=1
  fi
  local token_a token_b
  token_a=$(sed -n 's/^TOKEN role=A token=//p' "$dir/A.out")
  token_b=$(sed -n 's/^TOKEN role=B token=//p' "$dir/B.out")
  echo "$mode tokens: A=$token_a B=$token_b"
  if [ -z "$token_a" ] || [ -z "$token_b" ]; then failed=1
  elif [ "$mode" = refuse ] && [ "$token_a" = "$token_b" ]; then
    echo "$mode: both jobs drew the same token"; failed=1
  elif [ "$mode" = refuse ] &&
       grep -v '^TOKEN ' "$dir/A.out" "$dir/B.out" | grep -q -e "$token_a" -e "$token_b"; then
    echo "$mode: a job token appears in the jobs' messages"; failed=1
  elif [ "$mode" = same-token ] && [ "$token_a" != "$token_b" ]; then
    echo "$mode: B did not take A's token"; failed=1
  fi
  if [ $failed -ne 0 ]; then
    echo "$mode: FAILED; output of both jobs:"
    sed 's/^/  A| /' "$dir/A.out"
    sed 's/^/  B| /' "$dir/B.out"
  fi
  return $failed
}

status=0
run_case refuse ProtocolError || status=1
run_case same-token Ok || status=1
if [ $status -eq 0 ]; then echo "job token test: passed"; else echo "job token test: FAILED"; fi
exit $status
