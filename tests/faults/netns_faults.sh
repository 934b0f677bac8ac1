#!/bin/bash
# ctest label faults: network faults between simulated hosts (issue 7, item 4).
#   netns_faults.sh <build dir>
# Two network-namespace hosts (the tests/multinode lab: h1, h2 on a bridge, UCX
# over tcp on eth0), one process each. Each case gets a fresh lab:
#   cut    `ruccl_fault_worker allreduce-loop` runs, then h2's eth0 goes down
#          (`ip link set eth0 down`) and stays down for the deadline plus slack.
#          Both ranks must print a RESULT with Timeout or PeerFailure, naming the
#          collective and the peer rank, made within RUCCL_TIMEOUT + slack of
#          the cut (judged by the line's at= wall clock: h2's output reaches
#          mpirun on h1 only once the link is back, so the link then comes up
#          and the job must end by itself before mpirun's --timeout).
#   loss   5% of packets dropped in both directions on h2 (iptables statistic):
#          a checked soak of random collectives and mpi_all_reduce at two sizes
#          must pass (a longer RUCCL_TIMEOUT: TCP retransmits back off to seconds).
#   delay  every packet h2 receives held 20 ms by ruccl_nfq_delay (NFQUEUE; this
#          kernel has no tc netem), so +20 ms round trip: the same checked runs
#          must pass. The delay sits on h2's INPUT, not its OUTPUT: a packet
#          held in the sender's own OUTPUT hook still counts against its
#          socket's TCP Small Queues budget, which then throttles the sender to
#          a few packets per delay (a 512 KiB ucx_perftest tag_lat took 1.0 s
#          with the delay on egress, 77 ms with it on ingress). Without
#          ruccl_nfq_delay (no libnetfilter-queue-dev at build time) a `tc tbf`
#          rate limit stands in, and the output says so.
# Every fault must really have acted: the drop and queue rules' packet counters
# must be non-zero. Skips (exit 77, "SKIP: <reason>") where the lab cannot be
# made (not root, no ip/unshare/iptables), or fails if RUCCL_NETNS_REQUIRE=1.
# RUCCL_FAULT_KEEP=1 keeps the logs (in /tmp/ruccl-netns-faults.*).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
# shellcheck source=../multinode/netns_lab.sh
source "$here/../multinode/netns_lab.sh"
[ $# -eq 1 ] || { echo "usage: $0 <build dir>" >&2; exit 2; }
build=$(cd "$1" && pwd)
worker=$build/tests/faults/ruccl_fault_worker
allreduce=$build/examples/mpi_all_reduce
nfq=$build/tests/faults/ruccl_nfq_delay
for b in "$worker" "$allreduce"; do [ -x "$b" ] || { echo "FAIL: no executable $b" >&2; exit 1; }; done

cut_timeout_s=3                              # RUCCL_TIMEOUT of the link-cut job
slack_ms=${RUCCL_FAULT_SLACK_MS:-1500}       # scheduling on 2 cores, as the other fault tests
slow_timeout_s=20                            # RUCCL_TIMEOUT under loss and delay
loss=0.05 delay_ms=20

lab_preflight
command -v iptables >/dev/null 2>&1 || lab_skip "'iptables' not found (Debian package iptables)"
work=$(mktemp -d /tmp/ruccl-netns-faults.XXXXXX)
trap 'lab_down; [ -n "${RUCCL_FAULT_KEEP:-}" ] || rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

failed=0
fail() { echo "FAIL: $*"; failed=1; }
ns() { echo "$RUCCL_NETNS_NAME-$1"; }
# fresh_lab: a new 2-host lab, so that nothing a case leaves behind (a rank or
# orted stranded by the cut, a rule, the delayer) reaches the next case.
fresh_lab() { lab_down; lab_up 2 || { echo "FAIL: lab_up"; exit 1; }; }

# job <log prefix> <limit s> <RUCCL_TIMEOUT s> [mpirun args] -- <command...>: one
# process per host; stdout/stderr to <prefix>.out/.err; returns mpirun's status.
job() {
  local log=$1 limit=$2 t=$3; shift 3
  ( export RUCCL_TIMEOUT=$t; lab_mpirun 1 "$limit" "$@" ) >"$log.out" 2>"$log.err"
}

# ---------------------------------------------------------------- link cut
cut_case() {
  local d=$work/cut
  mkdir -p "$d"; chmod 777 "$d"
  fresh_lab
  local started; started=$(now_ms)
  # Recovery on, as in lib.sh: the ranks' exits must not end the job before
  # both RESULTs are out (the worker leaves with _exit after its RESULT).
  job "$d/job" 40 $cut_timeout_s --enable-recovery --mca orte_abort_on_non_zero_status 0 -- \
    "$worker" --dir "$d" allreduce-loop 1000000 262144 &
  local pid=$! deadline=$(($(now_ms) + 30000))
  while ! [ -e "$d/running.0" ] || ! [ -e "$d/running.1" ]; do
    if [ "$(now_ms)" -gt $deadline ] || ! kill -0 $pid 2>/dev/null; then
      fail "cut: the job did not start (no progress within 30 s)"; kill -9 $pid 2>/dev/null; wait $pid
      show "$d/job"; return
    fi
    sleep 0.05
  done
  sleep "0.$((RANDOM % 300))"
  local cut; cut=$(now_ms)
  ip -n "$(ns h2)" link set eth0 down
  # The link stays down until each rank's deadline (plus slack) has passed.
  sleep "$(awk -v ms=$((cut_timeout_s * 1000 + slack_ms + 500)) 'BEGIN { print ms / 1000 }')"
  ip -n "$(ns h2)" link set eth0 up
  local healed rc=0; healed=$(now_ms)
  wait $pid || rc=$?
  local ended; ended=$(now_ms)
  echo "cut: h2 eth0 down $((cut - started)) ms after launch, up again after $((healed - cut)) ms;" \
       "job ended $((ended - healed)) ms after that (rc $rc)"
  [ $((ended - started)) -lt 40000 ] || fail "cut: the job did not end by itself (mpirun --timeout 40 s, rc $rc)"
  local r line status ms seq msg
  for r in 0 1; do
    line=$(result_line "$d/job.out" $r)
    [ -n "$line" ] || { fail "cut: rank $r printed no RESULT"; continue; }
    status=$(field "$line" status) seq=$(field "$line" seq) msg=$(message "$line")
    ms=$(($(field "$line" at) - cut))
    echo "cut: rank $r (h$((r + 1))): $status ${ms} ms after the cut: $msg"
    case $status in Timeout|PeerFailure) ;; *) fail "cut: rank $r: status $status, expected Timeout or PeerFailure" ;; esac
    [ $ms -le $((cut_timeout_s * 1000 + slack_ms)) ] ||
      fail "cut: rank $r: error ${ms} ms after the cut (deadline ${cut_timeout_s} s + ${slack_ms} ms slack)"
    grep -q "collective #$seq" <<<"$msg" || fail "cut: rank $r: the message does not name collective #$seq"
    grep -Eq "rank $((1 - r))([^0-9]|\$)" <<<"$msg" || fail "cut: rank $r: the message does not name its peer rank $((1 - r))"
  done
  [ $failed -eq 0 ] || show "$d/job"
}

# ---------------------------------------------------------------- checked runs

# checked_runs <case> <soak N> <count...>: a soak of N random checked collectives
# (up to 256 KiB per rank), then mpi_all_reduce (Sum/Mean all-reduce, broadcast,
# all-to-all-v, checked) at each count, all under the fault in place. Prints each
# run's wall time.
checked_runs() {
  local c=$1 soak_n=$2 d=$work/$1 t0 rc r line n
  shift 2
  mkdir -p "$d"
  t0=$(now_ms); rc=0
  job "$d/soak" 90 $slow_timeout_s -- "$worker" soak "$soak_n" || rc=$?
  echo "$c: soak $soak_n: rc $rc, $(($(now_ms) - t0)) ms"
  for r in 0 1; do
    line=$(result_line "$d/soak.out" $r)
    n=$(field "$line" collectives)
    if [ "$(field "$line" status)" != Ok ] || [ "$n" != "$soak_n" ] || [ "$(field "$line" mismatches)" != 0 ]; then
      fail "$c: soak rank $r: ${line:-no RESULT}"; show "$d/soak"
    fi
  done
  [ $rc -eq 0 ] || fail "$c: soak exited $rc"
  for n in "$@"; do
    t0=$(now_ms); rc=0
    # INFO logs creation step by step: should a run hang, its log shows where.
    job "$d/ar$n" 60 $slow_timeout_s -x RUCCL_DEBUG=INFO -- "$allreduce" --count "$n" || rc=$?
    echo "$c: mpi_all_reduce --count $n: rc $rc, $(($(now_ms) - t0)) ms: $(grep -m1 -E 'PASSED|FAILED' "$d/ar$n.out")"
    { [ $rc -eq 0 ] && grep -q PASSED "$d/ar$n.out"; } || { fail "$c: mpi_all_reduce --count $n"; show "$d/ar$n"; }
  done
}

# rule_packets <host> <chain>: packets matched by the chain's rules (summed).
rule_packets() {
  ip netns exec "$(ns "$1")" iptables -L "$2" -v -n -x | awk 'NR > 2 { s += $1 } END { print s + 0 }'
}

loss_case() {
  fresh_lab
  local h2 chain; h2=$(ns h2)
  ip netns exec "$h2" iptables -A INPUT -i eth0 -m statistic --mode random --probability $loss -j DROP
  ip netns exec "$h2" iptables -A OUTPUT -o eth0 -m statistic --mode random --probability $loss -j DROP
  checked_runs loss 150 1003 1000003
  for chain in INPUT OUTPUT; do
    local dropped; dropped=$(rule_packets h2 $chain)
    echo "loss: h2 $chain dropped $dropped packets"
    [ "$dropped" -gt 0 ] || fail "loss: the $chain drop rule never matched (no loss was injected)"
  done
}

delay_case() {
  fresh_lab
  local h2 dpid=""; h2=$(ns h2)
  if [ -x "$nfq" ]; then
    ip netns exec "$h2" "$nfq" 7 $delay_ms 2>"$work/nfq.log" &
    dpid=$!
    sleep 0.3
    kill -0 $dpid 2>/dev/null || { fail "delay: ruccl_nfq_delay did not start: $(cat "$work/nfq.log")"; return; }
    # --queue-bypass: should the delayer die, packets pass instead of vanishing.
    # INPUT, not OUTPUT: see the header (TCP Small Queues).
    ip netns exec "$h2" iptables -A INPUT -i eth0 -j NFQUEUE --queue-num 7 --queue-bypass
    echo "delay: h2 ingress +$delay_ms ms per packet (NFQUEUE, ruccl_nfq_delay)"
  else
    echo "delay: STAND-IN: no ruccl_nfq_delay (libnetfilter-queue-dev missing at build time);" \
         "h2 egress rate-limited with tc tbf 20mbit, latency 400ms instead of a fixed delay"
    ip netns exec "$h2" tc qdisc add dev eth0 root tbf rate 20mbit burst 32kb latency 400ms
  fi
  checked_runs delay 150 1003 1000003
  if [ -n "$dpid" ]; then
    local queued; queued=$(rule_packets h2 INPUT)
    kill $dpid; wait $dpid
    echo "delay: $queued packets went through the queue; $(tail -1 "$work/nfq.log")"
    [ "$queued" -gt 0 ] || fail "delay: the NFQUEUE rule never matched (no delay was injected)"
  else
    local sent; sent=$(ip netns exec "$h2" tc -s qdisc show dev eth0 | awk '/Sent/ { print $4; exit }')
    [ "${sent:-0}" -gt 0 ] || fail "delay: the tbf qdisc sent no packets"
  fi
}

begin=$(now_ms)
cut_case
loss_case
delay_case
echo "netns_faults: $(($(now_ms) - begin)) ms: $([ $failed -eq 0 ] && echo PASSED || echo FAILED)"
exit $failed
