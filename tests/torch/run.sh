#!/usr/bin/env bash
# One torch test: a script of this folder on <np> processes, launched by
# mpirun or torchrun (python3 -m torch.distributed.run, no MPI), with the
# env:// rendezvous on a free port of 127.0.0.1. Passes when the launcher
# exits 0 and every rank printed its "rank R: ... OK" line.
#   run.sh <mpi|torchrun> <np> <script.py> <python3> <pythonpath> [mpiexec]
set -u
launcher=$1 np=$2 script=$3 python=$4 pythonpath=$5 mpiexec=${6:-mpirun}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
logs=$(mktemp -d)
trap 'rm -rf "$out" "$logs"' EXIT
# A free port below the kernel's ephemeral range (32768 up by default), where
# the UCX connections of tests running beside this one take their ports; one
# taken between this check and the rendezvous's bind ("Address already in
# use") is retried on another, up to 3 times.
pick_port() {
  "$python" -c 'import random, socket
for _ in range(200):
    p = random.randrange(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); print(p); break
    except OSError:
        pass
    finally:
        s.close()'
}
export PYTHONPATH="$pythonpath:$here" MASTER_ADDR=127.0.0.1 OMP_NUM_THREADS=1
launch() {
  case $launcher in
    mpi)
      timeout 150 "$mpiexec" --allow-run-as-root --oversubscribe -np "$np" --timeout 140 \
        -x PYTHONPATH -x MASTER_ADDR -x MASTER_PORT -x OMP_NUM_THREADS \
        "$python" "$here/$script" >"$out" 2>&1 ;;
    torchrun)
      # --redirects 1 --tee 1: torch 1.13's default (0) fails under Python 3.11,
      # whose Flag enums no longer list the 0 member ("'NoneType' object has no
      # attribute 'get'"); 1 sends stdout to the log and to the console.
      timeout 150 "$python" -m torch.distributed.run --nproc_per_node "$np" \
        --master_addr 127.0.0.1 --master_port "$MASTER_PORT" --redirects 1 --tee 1 \
        --log_dir "$logs" "$here/$script" >"$out" 2>&1 ;;
    *) echo "run.sh: unknown launcher $launcher"; exit 2 ;;
  esac
}
for attempt in 1 2 3; do
  MASTER_PORT=$(pick_port)
  export MASTER_PORT
  launch
  rc=$?
  [ "$rc" != 0 ] && grep -q "Address already in use" "$out" || break
  echo "run.sh: port $MASTER_PORT was taken before the rendezvous bound it (attempt $attempt)"
  rm -rf "$logs" && mkdir -p "$logs"
done
cat "$out"
[ "$rc" = 0 ] || { echo "FAILED: $launcher exited $rc"; exit 1; }
for ((r = 0; r < np; ++r)); do
  grep -q "rank $r: .* OK" "$out" || { echo "FAILED: no OK line from rank $r"; exit 1; }
done
echo "PASSED: $script on $np processes ($launcher)"
