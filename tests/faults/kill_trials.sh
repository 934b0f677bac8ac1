#!/bin/bash
# ctest label faults: kill -9 of one rank in the middle of an all-reduce loop.
#   kill_trials.sh <ruccl_fault_worker> <trials> <shm|tcp> [first-trial]
# Trial t runs a 4-process mpirun job (1 host device each) of
# `ruccl_fault_worker allreduce-loop` (4 MiB all-reduces back to back) with
# RUCCL_TIMEOUT=$timeout_s, waits until every rank has finished a few
# all-reduces, then kill -9s rank position (t % 4). Every survivor must print
# its RESULT line with PeerFailure, Timeout or Aborted, within the deadline plus
# slack of the kill, every survivor the same code, every message must name the
# rank(s) it waited on and at least one survivor's the killed rank; the job must end by itself (a hard `timeout -s KILL` around
# mpirun turns a hang into a failure). RUCCL_FAULT_CHECK_SEQ=1 also requires the
# message to name the survivor's failing collective ("collective #K" or "seq K"). Prints one line per trial and a
# summary (hangs, min/median/max detection ms from the kill to each survivor's
# error). Exit 0 only if every trial held.
#
# mpirun runs with recovery on (lib.sh). The workers leave with _exit after
# their RESULT (see fault_worker.cpp), so mpirun's exit code is not judged, only
# the RESULT lines. RUCCL_FAULT_KEEP=1 keeps the per-trial output in /tmp.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
[ $# -ge 3 ] || { echo "usage: $0 <ruccl_fault_worker> <trials> <shm|tcp> [first-trial]" >&2; exit 2; }
worker=$1 trials=$2 transport=$3 first=${4:-0}
# RUCCL_FAULT_NP processes (default 4) of RUCCL_FAULT_DEVICES ranks (default 1):
# killing a process kills its ranks; survivors are the other processes' ranks,
# and "the victim" is any rank of the killed process.
np=${RUCCL_FAULT_NP:-4}
devices=${RUCCL_FAULT_DEVICES:-1}
world=$((np * devices))
timeout_s=${RUCCL_FAULT_TIMEOUT_S:-2}   # RUCCL_TIMEOUT of the job
slack_ms=${RUCCL_FAULT_SLACK_MS:-1500}   # scheduling on 2 cores; under one deadline, so a
                                         # survivor that waits a second deadline fails
hard_s=40                                # the job's wall clock limit (a hang)
check_seq=${RUCCL_FAULT_CHECK_SEQ:-0}
# Set: every survivor must report PeerFailure within this many ms of the kill
# (the node mailboxes watch their peers' processes), not wait for a deadline.
within_ms=${RUCCL_FAULT_WITHIN_MS:-}
[ -x "$worker" ] || { echo "no executable $worker" >&2; exit 1; }

work=$(mktemp -d /tmp/ruccl-kill.XXXXXX)
job=""
trap '[ -z "$job" ] || kill -9 "$job" 2>/dev/null; [ -n "${RUCCL_FAULT_KEEP:-}" ] || rm -rf "$work"' EXIT
running() { ls "$1" | grep -c '^running\.'; }
failures=0 hangs=0
detections=()

for ((t = first; t < first + trials; ++t)); do
  victim=$((t % np))
  dir=$work/t$t
  mkdir -p "$dir"
  faulty_mpirun $hard_s $np -x RUCCL_TIMEOUT="$timeout_s" -x RUCCL_FAULT_GATHER="${RUCCL_FAULT_GATHER:-0}" -x RUCCL_FAULT_HOST_MEMORY="${RUCCL_FAULT_HOST_MEMORY:-0}" -x RUCCL_INTRA_NODE_TRANSPORT="$transport" -- \
      "$worker" --devices-per-process "$devices" --dir "$dir" allreduce-loop 1000000 \
      ${RUCCL_FAULT_COUNT:-} >"$dir/out" 2>"$dir/err" &
  job=$!

  # Every rank running (5 all-reduces done), then a random 0-150 ms into the loop.
  deadline=$(($(now_ms) + 30000))
  while [ "$(running "$dir")" -lt $world ] && [ "$(now_ms)" -le $deadline ] && kill -0 $job 2>/dev/null; do
    sleep 0.05
  done
  if [ "$(running "$dir")" -lt $world ]; then
    echo "trial $t: the job did not start (no progress within 30 s)"; tail -20 "$dir/err" | sed 's/^/  | /'
    failures=$((failures + 1)); kill -9 $job 2>/dev/null; wait $job 2>/dev/null; job=""; continue
  fi
  sleep "0.$((RANDOM % 150))"
  killed_at=$(now_ms)
  kill -9 "$(cat "$dir/pid.$((victim * devices))")"
  wait $job; rc=$?; job=""
  wall_ms=$(($(now_ms) - killed_at))

  # Judge the survivors' RESULT lines.
  verdict=ok notes="" codes="" named=0
  if [ $rc -eq 137 ] && [ $wall_ms -ge $((hard_s * 1000 - 5000)) ]; then
    verdict=HANG; hangs=$((hangs + 1))
  fi
  bad() { verdict=FAIL; notes+=" rank $r: $*;"; }
  victims="($(seq -s '|' $((victim * devices)) $((victim * devices + devices - 1))))"
  for ((r = 0; r < world; ++r)); do
    [ $((r / devices)) -eq $victim ] && continue
    line=$(result_line "$dir/out" $r)
    [ -n "$line" ] || { bad "no RESULT"; continue; }
    status=$(field "$line" status) seq=$(field "$line" seq) msg=$(message "$line")
    ms=$(($(field "$line" at) - killed_at))
    detections+=("$ms")
    case $status in
      PeerFailure|Timeout|Aborted) ;;
      *) bad "status $status" ;;
    esac
    [ -z "$codes" ] || [ "$codes" = "$status" ] || bad "status $status where another survivor got $codes"
    codes=$status
    [ $ms -le $((timeout_s * 1000 + slack_ms)) ] || bad "${ms} ms after the kill"
    if [ -n "$within_ms" ]; then
      [ "$status" = PeerFailure ] || bad "status $status, not PeerFailure"
      [ $ms -le "$within_ms" ] || bad "${ms} ms after the kill, over ${within_ms} ms"
    fi
    # Every survivor names the rank(s) it waited on; at least one names the
    # victim. (When nobody fails outright, all survivors time out at about the
    # same moment, and one whose deadline passed on a live neighbour names that
    # neighbour: it cannot tell which rank down the ring stopped.)
    grep -Eq "rank [0-9]+" <<<"$msg" || bad "message names no rank"
    grep -Eq "(rank|peer)s? ([0-9]+, )*$victims([^0-9]|\$)" <<<"$msg" && named=$((named + 1))
    if [ "$check_seq" = 1 ] && ! grep -Eq "(collective #|seq )$seq([^0-9]|\$)" <<<"$msg"; then
      bad "message does not name collective #$seq"
    fi
    notes+=" r$r=$status/#$seq/${ms}ms"
  done
  r=any
  [ $named -gt 0 ] || bad "no survivor names a rank of process $victim $victims"
  echo "trial $t ($transport, ${np}x${devices}): killed process $victim; job ended ${wall_ms} ms after the kill (rc $rc): $verdict;$notes"
  if [ "$verdict" != ok ]; then
    failures=$((failures + 1))
    grep '^RESULT' "$dir/out" | sed 's/^/  | /'
    grep -v '^\[' "$dir/err" | tail -20 | sed 's/^/  | /'
  fi
done

summary=$(printf '%s\n' "${detections[@]}" | sort -n | awk '
  { v[NR] = $1 } END { if (NR) printf "min %d / median %d / max %d ms over %d survivors", v[1], v[int((NR + 1) / 2)], v[NR], NR }')
echo "kill_trials ($transport, ${np} processes x ${devices} devices, RUCCL_TIMEOUT=${timeout_s}s): $trials trials, $failures failed, $hangs hangs; detection after the kill: $summary"
[ $failures -eq 0 ]
