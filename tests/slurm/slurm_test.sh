#!/bin/bash
# ctest label slurm: ruccl's batch scripts under a real Slurm on this machine.
#   slurm_test.sh <slurm dir (the repo's slurm/)> <build dir>
# Brings up a private single-node cluster from Debian's packages (munge,
# slurmctld, slurmd, slurm-client): its own munged (own key and socket),
# slurmctld and slurmd on free ports, with config, state, spool, logs and PMIx
# files all under one temporary directory; nothing under /etc is read or
# written, and a system Slurm or munged already running is left alone. Then it
# submits slurm/mpirun.sbatch and slurm/srun.sbatch (1 node, 2 tasks, 2
# devices per task = 4 ranks), waits for each, checks its state (COMPLETED,
# exit 0) and its output (mpi_all_reduce's PASSED line, ruccl-perf's check line
# and JSON, the job's own PASSED line and where its output went), and tears the
# cluster down (also on failure or interruption).
# Exit 0 pass, 1 fail, 77 skip (prints "SKIP: <reason>": not root, packages missing).
# RUCCL_SLURM_KEEP=1 keeps the temporary directory (logs, job output) for a look;
# RUCCL_SLURM_REQUIRE=1 turns a skip into a failure (CI, which is root and has
# the packages). Clusters of earlier runs that were killed (a ctest timeout) are
# removed first.
# shellcheck disable=SC2317  # functions called through traps and until_ok
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 <slurm dir> <build dir>" >&2; exit 2; }
jobs_dir=$(cd "$1" && pwd) build=$(cd "$2" && pwd)

skip() {
  if [ "${RUCCL_SLURM_REQUIRE:-0}" = 1 ]; then echo "FAIL (RUCCL_SLURM_REQUIRE=1): cannot run: $*"; exit 1; fi
  echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (munged and slurmd run as system users)"
missing=()
for c in munged mungekey munge unmunge slurmctld slurmd sbatch srun scontrol sinfo scancel runuser; do
  command -v "$c" >/dev/null || missing+=("$c")
done
((${#missing[@]} == 0)) || skip "missing ${missing[*]} (apt-get install munge slurmctld slurmd slurm-client)"
id munge >/dev/null 2>&1 || skip "no user munge (apt-get install munge)"
for b in examples/mpi_all_reduce bin/ruccl-perf; do
  [ -x "$build/$b" ] || { echo "FAIL: no $build/$b"; exit 1; }
done

# Nothing of an outer Slurm job (CI inside Slurm) may leak into ours.
while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep -E '^(SLURM|SBATCH|SRUN|SALLOC)_' || true)

t0=$(date +%s.%N)
elapsed() { awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%6.2fs", a - b }'; }
log() { echo "[$(elapsed)] $*"; }

# Processes of a cluster (daemons, job steps, job processes) carry
# RUCCL_SLURM_LAB=<its directory> in their environment; teardown ends exactly those.
alive() { [ -r "/proc/$1/status" ] && ! grep -q '^State:.*Z' "/proc/$1/status"; }
start_time() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }  # field 22
# members LAB: the live processes of the cluster in LAB (munged by its command line).
members() { local f p
  for f in $( (grep -lzxF "RUCCL_SLURM_LAB=$1" /proc/[0-9]*/environ
               grep -lzxF -- "--socket=$1/munge-run/munge.socket" /proc/[0-9]*/cmdline) 2>/dev/null); do
    p=${f#/proc/}; p=${p%%/*}
    [ "$p" != $$ ] && alive "$p" && echo "$p"
  done | sort -un; }
# Clusters whose test was killed: owner (pid + start time) gone.
for old in /tmp/ruccl-slurm.*; do
  [ -f "$old/owner" ] || continue
  read -r opid ostart <"$old/owner" || continue
  if alive "$opid" && [ "$(start_time "$opid")" = "$ostart" ]; then continue; fi
  stale=$(members "$old")
  echo "removing the cluster of a killed run: $old${stale:+ (processes ${stale//$'\n'/ })}"
  for p in $stale; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$old"
done

lab=$(mktemp -d /tmp/ruccl-slurm.XXXXXX) || { echo "FAIL: mktemp"; exit 1; }
chmod 755 "$lab"   # munge must reach its socket directory below
mkdir -p "$lab"/{etc,state,spool,log,run,tmp,jobs}
echo "$$ $(start_time $$)" >"$lab/owner"
export SLURM_CONF=$lab/etc/slurm.conf
marker="RUCCL_SLURM_LAB=$lab"
pids=()

# ---- teardown (EXIT trap) ---------------------------------------------------
teardown() {
  local rc=$? p
  trap - EXIT INT TERM
  if [ "${ctld_up:-0}" = 1 ]; then timeout 10 scancel --quiet --full --user=root >/dev/null 2>&1; fi
  for p in "${pids[@]}"; do alive "$p" && kill -TERM "$p" 2>/dev/null; done
  for _ in $(seq 1 50); do
    local any=0; for p in "${pids[@]}"; do alive "$p" && any=1; done
    [ "$any" = 0 ] && break; sleep 0.1
  done
  for p in "${pids[@]}" $(members "$lab"); do alive "$p" && kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [ "${RUCCL_SLURM_KEEP:-0}" = 1 ]; then rm -f "$lab/owner"; echo "kept $lab"; else rm -rf "$lab"; fi
  log "cluster down"
  exit "$rc"
}
trap teardown EXIT
trap 'echo "slurm_test: interrupted"; exit 130' INT TERM
die() {
  echo "FAIL: $*"
  for f in "$lab"/log/*.log "$lab"/munge/munged.log; do
    [ -s "$f" ] && { echo "---- tail of $f"; tail -n 25 "$f"; }
  done
  exit 1
}
# until_ok SECONDS WHAT CMD...: polls CMD every 0.1 s until it succeeds.
until_ok() { local end=$(($(date +%s) + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do [ "$(date +%s)" -lt $end ] || die "$what"; sleep 0.1; done; }

# ---- munge: a private munged with its own key and socket ---------------------
install -d -o munge -g munge -m 0700 "$lab/munge"
install -d -o munge -g munge -m 0755 "$lab/munge-run"
socket=$lab/munge-run/munge.socket
runuser -u munge -- mungekey --create --keyfile="$lab/munge/munge.key" || die "mungekey"
env "$marker" runuser -u munge -- munged --socket="$socket" --key-file="$lab/munge/munge.key" \
  --log-file="$lab/munge/munged.log" --pid-file="$lab/munge-run/munged.pid" \
  --seed-file="$lab/munge/munged.seed" </dev/null >"$lab/log/munged.stdio" 2>&1 || die "munged did not start"
munge_ok() { munge -S "$socket" -n | unmunge -S "$socket"; }
until_ok 10 "munged not answering on $socket" munge_ok

# ---- config: free ports, everything under $lab -------------------------------
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() { local p
  for _ in $(seq 1 200); do
    # Below the kernel's ephemeral range (32768 up): the outgoing connections
    # of tests running beside this one take ports there.
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
    [ "$p" != "${1:-0}" ] && port_free "$p" && port_free $((p + 1)) && { echo "$p"; return; }
  done; return 1; }
ctld_port=$(pick_port) || die "no free port"
slurmd_port=$(pick_port "$ctld_port") || die "no free port"
host=$(hostname -s)
node_line=$(slurmd -C 2>/dev/null | grep -m1 '^NodeName=') || die "slurmd -C printed no NodeName line"
cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node_line")
cat >"$SLURM_CONF" <<CONF
# ruccl's Slurm test cluster (tests/slurm/slurm_test.sh), on localhost only.
ClusterName=ruccltest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$lab/state
SlurmdSpoolDir=$lab/spool
SlurmctldPidFile=$lab/run/slurmctld.pid
SlurmdPidFile=$lab/run/slurmd.pid
SlurmctldLogFile=$lab/log/slurmctld.log
SlurmdLogFile=$lab/log/slurmd.log
TmpFS=$lab/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
SlurmctldDebug=info
SlurmdDebug=info
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=ruccl Nodes=$host Default=YES MaxTime=30 State=UP OverSubscribe=NO
CONF

# ---- daemons (foreground children of this script, no inherited stdio) --------
env "$marker" slurmctld -D -f "$SLURM_CONF" </dev/null >"$lab/log/slurmctld.stdio" 2>&1 &
pids+=($!)
ctld_ping() { timeout 5 scontrol ping | grep -q UP; }
until_ok 20 "slurmctld not answering on port $ctld_port" ctld_ping
ctld_up=1
env "$marker" slurmd -D -f "$SLURM_CONF" </dev/null >"$lab/log/slurmd.stdio" 2>&1 &
pids+=($!)
node_ready() {
  local st; st=$(timeout 5 sinfo -h -N -o %T | head -1)
  case "$st" in idle*|mixed*|allocated*) return 0;;
    down*|drain*) timeout 5 scontrol update nodename="$host" state=resume; return 1;; esac
  return 1; }
until_ok 30 "node $host not idle (sinfo: $(timeout 5 sinfo -h -N -o %T 2>&1))" node_ready
log "cluster up: node $host ($cpus CPUs), ports $ctld_port/$slurmd_port, $lab"

# ---- jobs --------------------------------------------------------------------
# submit_wait NAME SCRIPT [sbatch args]: sets $job, $state, $code, $out (the output file).
# Polls every 0.2 s (sbatch --wait backs off to seconds).
submit_wait() {
  local name=$1 script=$2 line end; shift 2
  out=$lab/jobs/$name.out
  job=$(env "$marker" RUCCL_BUILD="$build" RUCCL_OUT_DIR="$lab/jobs/$name-perf" \
        MPIRUN="${MPIEXEC:-mpirun}" RUCCL_TIMEOUT=60 \
        sbatch --parsable --chdir="$lab/jobs" --output="$out" --nodes=1 --ntasks-per-node=2 \
               --cpus-per-task=1 --time=3 "${overcommit[@]}" "$@" "$script") || die "sbatch $script"
  job=${job%%;*}
  end=$(($(date +%s) + 100))
  while :; do
    line=$(scontrol -o show job "$job" 2>/dev/null)
    state=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$line")
    case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|PREEMPTED|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE) break;; esac
    if [ "$(date +%s)" -ge $end ]; then
      scancel "$job"; state="STILL_${state:-UNKNOWN}_AFTER_100s"; break
    fi
    sleep 0.2
  done
  code=$(sed -n 's/.* ExitCode=\([0-9]*:[0-9]*\).*/\1/p' <<<"$line")
}

# 2 tasks on a 1-CPU machine: let Slurm start them anyway.
overcommit=(); [ "${cpus:-2}" -ge 2 ] || overcommit=(--overcommit)
failures=0
check_job() {
  local name=$1 label=$2 perf=$3 ok=1
  if [ "$state" != COMPLETED ] || [ "$code" != 0:0 ]; then echo "  job $job: $state, exit $code"; ok=0; fi
  local text; text=$(cat "$out" 2>/dev/null)
  local want=(
    "ruccl job $job \($label\): 1 node\(s\) \[$host\], 2 process\(es\) \(2 per node\) x 2 device\(s\) = 4 ranks"
    "ruccl job output: $out"
    "^mpi_all_reduce: 4 ranks \(2 per process\), hierarchical, count 1003: PASSED"
    "^# Out of bounds values : 0 OK"
    "ruccl job $job \($label\): PASSED; output: $out; ruccl-perf JSON: $perf"
  )
  local w
  for w in "${want[@]}"; do grep -Eq -- "$w" <<<"$text" || { echo "  no line matching: $w"; ok=0; }; done
  grep -q '"devices_per_process": 2' "$perf" 2>/dev/null || { echo "  no world JSON in $perf"; ok=0; }
  if [ $ok = 1 ]; then
    log "$name: job $job COMPLETED, exit $code: $(grep -m1 '^mpi_all_reduce:' <<<"$text")"
  else
    log "$name: FAILED (job $job); its output:"
    # shellcheck disable=SC2001
    sed 's/^/    | /' <<<"$text"
    failures=$((failures + 1))
  fi
}

submit_wait mpirun "$jobs_dir/mpirun.sbatch"
check_job mpirun mpirun "$lab/jobs/mpirun-perf/perf-mpirun.json"
submit_wait srun "$jobs_dir/srun.sbatch"
check_job srun srun "$lab/jobs/srun-perf/perf-srun.json"

# ---- creation faults under srun --mpi=pmix (no mpirun, no --enable-recovery) --
# 3 tasks of ruccl_fault_worker create: process 1 throws in transport creation
# (every process must get the same Internal error naming process 1), then
# process 1 _exits after the address exchange began (the survivors must get a
# typed error naming process 1). Each within RUCCL_TIMEOUT (3 s) + 2 s grace +
# 2.5 s slack of its creation's start; the step must end by itself.
worker=$build/tests/faults/ruccl_fault_worker
if [ -x "$worker" ]; then
  cat >"$lab/jobs/create.sbatch" <<JOB
#!/bin/bash
export RUCCL_TIMEOUT=3
for fault in create:stage=transports,process=1,action=throw create:stage=address,process=1,code=7; do
  echo "== fault \$fault"
  t0=\$(date +%s%3N)
  RUCCL_FAULT=\$fault timeout -s KILL 40 srun --mpi=pmix --kill-on-bad-exit=0 -n 3 "$worker" create
  echo "== srun exit \$? after \$((\$(date +%s%3N) - t0)) ms"
done
JOB
  out=$lab/jobs/create.out
  job=$(env "$marker" sbatch --parsable --chdir="$lab/jobs" --output="$out" --nodes=1 --ntasks=3 \
        --cpus-per-task=1 --overcommit --time=3 "$lab/jobs/create.sbatch") || die "sbatch create"
  job=${job%%;*}
  end=$(($(date +%s) + 100))
  until grep -q "^== srun exit" <(sed -n '/create:stage=address/,$p' "$out" 2>/dev/null); do
    [ "$(date +%s)" -lt $end ] || { scancel "$job"; break; }
    sleep 0.2
  done
  create_ok=1
  for fault in throw address; do
    key=$([ $fault = throw ] && echo action=throw || echo stage=address)
    section=$(awk -v k="$key" '/^== fault / { on = index($0, k) > 0 } on { print } /^== srun exit/ { on = 0 }' "$out")
    step_ms=$(sed -n 's/^== srun exit [0-9]* after \([0-9]*\) ms/\1/p' <<<"$section")
    [ "${step_ms:-99999}" -le 7500 ] || { echo "  $fault: the step ran ${step_ms:-?} ms"; create_ok=0; }
    # Slurm's PMIx server cancels a step as soon as one of its tasks dies
    # without finalising: the survivors are then ended by Slurm (in the bound
    # above), not by ruccl's error.
    if [ $fault = address ] && ! grep -q "^CREATE rank=[02] " <<<"$section" &&
       grep -q "CANCELLED" <<<"$section"; then
      log "creation fault ($fault) under srun: Slurm cancelled the step after $step_ms ms"
      continue
    fi
    for r in 0 2; do
      line=$(grep "^CREATE rank=$r " <<<"$section" | head -1)
      status=$(sed -n 's/.* status=\([^ ]*\).*/\1/p' <<<"$line")
      ms=$(sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<<"$line")
      if [ -z "$line" ] || [ "$status" = Ok ] || ! grep -Eq "(process|rank) 1\b" <<<"$line" ||
         [ "${ms:-99999}" -gt 7500 ]; then
        echo "  $fault: rank $r: bad or missing CREATE line: ${line:-none}"; create_ok=0
      else
        log "creation fault ($fault) under srun: rank $r: $status after $ms ms"
      fi
    done
    [ $fault != throw ] || grep -q "^CREATE rank=1 .*status=Internal" <<<"$section" ||
      { echo "  throw: process 1 did not return Internal"; create_ok=0; }
  done
  if [ $create_ok = 1 ]; then log "create: job $job: every survivor got a typed error naming process 1"
  else log "create: FAILED (job $job); its output:"; sed 's/^/    | /' "$out"; failures=$((failures + 1)); fi
else
  echo "  no $worker: creation faults under srun not run"; failures=$((failures + 1))
fi

if [ $failures != 0 ]; then die "$failures of 3 jobs failed"; fi
log "slurm: PASSED (mpirun.sbatch, srun.sbatch, creation faults under srun)"
exit 0
