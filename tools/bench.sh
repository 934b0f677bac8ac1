#!/bin/bash
# tools/bench.sh: the standard ruccl comparison on this machine, in one command.
# Writes JSON, CSV, the text tables, SVG plots and a summary under bench-results/.
#
#   1. np2-shm      mpirun -np 2 (shared memory), 1 device per process, all_reduce
#                   8 B .. 64 MiB, ruccl with the peers MPI and Gloo in the same
#                   launch (interleaved per iteration in a drawn order, same buffers).
#   1b. np2-<coll>  the same for broadcast, reduce, all_gather, reduce_scatter and
#                   all_to_all_v, with MPI as the peer (8 B .. RUCCL_BENCH_COLLS_MAX).
#   1c. np4-shm     mpirun -np 4 --oversubscribe (4 processes on this machine's
#                   cores), all_reduce with MPI, 8 B .. RUCCL_BENCH_NP4_MAX.
#   2. inproc-2/4   the in-process host all_reduce, 2 and 4 threads, with --model
#                   (the ring's memory traffic at this run's memcpy speed).
#   3. netns        2 simulated hosts (network namespaces, UCX over TCP):
#                   2 x 1 process x 2 devices, --algo both (hierarchical vs flat);
#                   2 x 2 processes x 1 device, --algo both with the peers;
#                   netns-colls: 2 x 2 x 1, every collective, --algo both.
#                   Needs root; skipped with a message otherwise.
#
# Assumes ruccl-perf is built (./test.sh or cmake --build build). Environment:
#   RUCCL_BENCH_BUILD   build directory (default <repo>/build)
#   RUCCL_BENCH_OUT     output directory (default <repo>/bench-results)
#   RUCCL_BENCH_PEERS   peers of the np=2 run (default mpi,gloo,gloo_chunked);
#                       RUCCL_BENCH_NETNS_PEERS those of the 2 x 2 netns run (default: same)
#   RUCCL_BENCH_ITERS / RUCCL_BENCH_WARMUP   timed / warm-up iterations (20 / 5)
#   RUCCL_BENCH_NETNS_ITERS / _WARMUP        the same for the netns runs (10 / 2)
#   RUCCL_BENCH_MAX     largest size of np2-shm and inproc (default 64M)
#   RUCCL_BENCH_NETNS_MAX  largest size of the netns runs (default 16M)
#   RUCCL_BENCH_COLLS_MAX  largest size of the np2-<coll> runs (default 16M)
#   RUCCL_BENCH_NP4_MAX    largest size of np4-shm (default 16M)
#   RUCCL_BENCH_SKIP    space-separated parts to skip: np2 colls np4 inproc netns
#   RUCCL_PERF_GLOO_POLL_MAX  Gloo's busy-polled pairs up to this many bytes (default
#                       1 MiB; 0 = Gloo's default loop-thread pairs everywhere;
#                       see bench/README.md)
#   MPIEXEC             mpirun (default mpirun)
# Exit status: 0 when every run that ran succeeded and was checked correct, else 1.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${RUCCL_BENCH_BUILD:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd || echo "$build")
out=${RUCCL_BENCH_OUT:-$root/bench-results}
perf=$build/bin/ruccl-perf
mpirun=${MPIEXEC:-mpirun}
iters=${RUCCL_BENCH_ITERS:-20}
warmup=${RUCCL_BENCH_WARMUP:-5}
max=${RUCCL_BENCH_MAX:-64M}
netns_max=${RUCCL_BENCH_NETNS_MAX:-16M}
skip=" ${RUCCL_BENCH_SKIP:-} "
status=0

[ -x "$perf" ] || { echo "bench.sh: $perf not found: build first (./test.sh, or cmake --build $build), or set RUCCL_BENCH_BUILD" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
started=$(date +%s)
available=$("$perf" --help | sed -n 's/.*This build: //p')

# peers LIST: the names of LIST this ruccl-perf can run, comma-separated.
peers() {
  local want=$1 p have=""
  for p in ${want//,/ }; do
    case ", $available," in *", $p,"*) have=${have:+$have,}$p ;; *) echo "bench.sh: peer '$p' is not in this build ($available), left out" >&2 ;; esac
  done
  echo "$have"
}

# run NAME COMMAND...: runs it with its table to NAME.txt (and the terminal).
run() {
  local name=$1; shift
  echo "== $name: $*"
  local t0=$SECONDS rc
  "$@" 2>&1 | tee "$out/$name.txt"
  rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc, $((SECONDS - t0)) s"
  if [ "$rc" = 77 ]; then return 0; fi
  [ "$rc" = 0 ] || status=1
}

common=(-n "$iters" -w "$warmup" -c 1)
netns_common=(-n "${RUCCL_BENCH_NETNS_ITERS:-10}" -w "${RUCCL_BENCH_NETNS_WARMUP:-2}" -c 1)
jsons=()

if [[ $skip != *" np2 "* ]]; then
  p=$(peers "${RUCCL_BENCH_PEERS:-mpi,gloo,gloo_chunked}")
  run np2-shm "$mpirun" --oversubscribe --allow-run-as-root --timeout 300 -np 2 \
    "$perf" --world --devices-per-process 1 ${p:+--peers "$p"} --coll all_reduce \
    -b 8 -e "$max" -f 2 "${common[@]}" \
    --label np2-shm --json "$out/np2-shm.json" --csv "$out/np2-shm.csv"
  jsons+=("$out/np2-shm.json")
fi

if [[ $skip != *" colls "* ]]; then
  p=$(peers mpi)
  for coll in broadcast reduce all_gather reduce_scatter all_to_all_v; do
    run "np2-$coll" "$mpirun" --oversubscribe --allow-run-as-root --timeout 300 -np 2 \
      "$perf" --world --devices-per-process 1 ${p:+--peers "$p"} --coll "$coll" \
      -b 8 -e "${RUCCL_BENCH_COLLS_MAX:-16M}" -f 8 "${common[@]}" \
      --label "np2-$coll" --json "$out/np2-$coll.json" --csv "$out/np2-$coll.csv"
  done
fi

if [[ $skip != *" np4 "* ]]; then
  p=$(peers mpi)
  run np4-shm "$mpirun" --oversubscribe --allow-run-as-root --timeout 300 -np 4 \
    "$perf" --world --devices-per-process 1 ${p:+--peers "$p"} --coll all_reduce \
    -b 8 -e "${RUCCL_BENCH_NP4_MAX:-16M}" -f 8 "${common[@]}" \
    --label np4-shm --json "$out/np4-shm.json" --csv "$out/np4-shm.csv"
fi

if [[ $skip != *" inproc "* ]]; then
  for n in 2 4; do
    run "inproc-$n" "$perf" --ranks "$n" --coll all_reduce -b 8 -e "$max" -f 2 "${common[@]}" \
      --model --label "inproc-$n" --json "$out/inproc-$n.json" --csv "$out/inproc-$n.csv"
    jsons+=("$out/inproc-$n.json")
  done
fi

if [[ $skip != *" netns "* ]]; then
  netns=$root/tests/multinode/netns_mpirun.sh
  if [ "$(id -u)" != 0 ]; then
    echo "== netns: skipped: simulated hosts need root (network namespaces)"
  elif [ ! -x "$netns" ]; then
    echo "== netns: skipped: $netns not found"
  else
    run netns-2x1x2 "$netns" -t 240 2 1 -- "$perf" --world --devices-per-process 2 --algo both \
      --coll all_reduce -b 8 -e "$netns_max" -f 8 "${netns_common[@]}" \
      --label netns-2x1x2 --json "$out/netns-2x1x2.json" --csv "$out/netns-2x1x2.csv"
    p=$(peers "${RUCCL_BENCH_NETNS_PEERS:-${RUCCL_BENCH_PEERS:-mpi,gloo,gloo_chunked}}")
    run netns-2x2x1 "$netns" -t 240 2 2 -- "$perf" --world --devices-per-process 1 --algo both \
      ${p:+--peers "$p"} --coll all_reduce -b 8 -e "$netns_max" -f 8 "${netns_common[@]}" \
      --label netns-2x2x1 --json "$out/netns-2x2x1.json" --csv "$out/netns-2x2x1.csv"
    # Every collective (hierarchical, flat ring interleaved; the tables only,
    # not the all-reduce plots).
    run netns-colls "$netns" -t 600 2 2 -- "$perf" --world --devices-per-process 1 --algo both \
      --coll all -b 8 -e "$netns_max" -f 8 "${netns_common[@]}" --label netns-colls
    for f in netns-2x1x2 netns-2x2x1; do [ -s "$out/$f.json" ] && jsons+=("$out/$f.json"); done
  fi
fi

# Plots and the summary: everything together, then each run on its own.
existing=()
for f in "${jsons[@]}"; do [ -s "$f" ] && existing+=("$f"); done
plot=$root/tools/plot_perf
if [ ${#existing[@]} -gt 0 ]; then
  {
    echo "# ruccl bench $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# all_reduce sum f32, in-place unless marked; p50 of the per-iteration max over ranks"
    for f in "${existing[@]}"; do
      python3 "$plot" -o "${f%.json}.svg" --summary "$f" || status=1
      python3 "$plot" -o "${f%.json}-time.svg" --metric time "$f" || status=1
    done
  } > "$out/summary.txt"
  python3 "$plot" -o "$out/all_reduce_busbw.svg" "${existing[@]}" || status=1
  python3 "$plot" -o "$out/all_reduce_time.svg" --metric time "${existing[@]}" || status=1
  python3 "$plot" -o "$out/all_reduce_busbw_out_of_place.svg" --placement out_of_place "${existing[@]}" || status=1
  # The model lines of the in-process runs.
  for n in 2 4; do
    [ -s "$out/inproc-$n.txt" ] && grep -h "^# model" "$out/inproc-$n.txt" | tail -3 >> "$out/summary.txt"
  done
fi
echo "== bench.sh: $(( $(date +%s) - started )) s; results in $out (summary.txt, *.svg, *.json, *.csv, *.txt)"
exit $status
