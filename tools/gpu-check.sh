#!/usr/bin/env bash
# gpu-check.sh: everything that needs a GPU, in one command, on a machine with
# the CUDA toolkit, CMake and a C++ compiler (no MPI, UCX or GoogleTest needed).
#   1. configures and builds (Release, CUDA on, MPI/UCX off) into $BUILD
#      (default build-gpu; a fresh directory works); GoogleTest comes from
#      third_party/googletest (copied from /usr/src/googletest when missing);
#   2. runs the `cuda` ctest label (GPU tests, kernel emulation, the example);
#   3. runs examples/all_reduce --device cuda (4 logical ranks on GPU 0);
#   4. runs bin/ruccl-cuda-perf: all_reduce of 4 logical ranks on GPU 0 from
#      1 MiB to 1 GiB next to the plain device-to-device copy bandwidth; and
#      bin/ruccl-perf --device cuda as well once ruccl-perf has that option.
# Exits non-zero on any failure, and with 3 when no GPU is usable here.
#   tools/gpu-check.sh     # env: BUILD=dir JOBS=n BUILD_TIMEOUT=s CUDA_ARCHS="90-real;90-virtual" CMAKE_ARGS=...
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${BUILD:-build-gpu}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
archs=${CUDA_ARCHS:-90-real;90-virtual}
start=$(date +%s)
stage() { echo; echo "== [$(( $(date +%s) - start ))s] $*"; }

if [ ! -f third_party/googletest/CMakeLists.txt ]; then
  if [ -d /usr/src/googletest ]; then
    mkdir -p third_party && cp -r /usr/src/googletest third_party/googletest
  else
    echo "gpu-check: no GoogleTest sources: copy /usr/src/googletest to third_party/googletest" >&2
    echo "           (or carry third_party/googletest to this machine)" >&2
    exit 2
  fi
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || { echo "gpu-check: nvcc not found (PATH or /usr/local/cuda/bin)" >&2; exit 2; }
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

stage "configure $build (Release, CUDA archs $archs, $("$nvcc" --version | tail -1))"
command -v nvidia-smi >/dev/null && nvidia-smi -L || true
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$archs" \
  -DRUCCL_WITH_CUDA=ON -DRUCCL_WITH_MPI=OFF -DRUCCL_WITH_UCX=OFF ${CMAKE_ARGS:-} >/dev/null

stage "build (-j$jobs)"
timeout "${BUILD_TIMEOUT:-300}" cmake --build "$build" -j "$jobs" --target ruccl_cuda_tests all_reduce ruccl-cuda-perf
have_perf=0  # ruccl-perf is optional here: its failure to build fails nothing else
timeout "${BUILD_TIMEOUT:-300}" cmake --build "$build" -j "$jobs" --target ruccl-perf && have_perf=1 || true

stage "ctest -L cuda"
status=0
timeout 240 ctest --test-dir "$build" -L cuda --output-on-failure --no-tests=error \
  | tee "$build/gpu-check-ctest.log" || status=1
if grep -q "Skipped" "$build/gpu-check-ctest.log"; then
  # A skip here means no usable GPU: say why (the tests print the reason).
  grep -h -m1 "SKIPPED: " "$build/Testing/Temporary/LastTest.log" >&2 || true
  echo "gpu-check: CUDA tests were skipped: no usable GPU on this machine" >&2
  exit 3
fi

stage "examples/all_reduce --device cuda"
timeout 120 "$build/examples/all_reduce" --device cuda || status=1

stage "ruccl-cuda-perf: all_reduce, 4 logical ranks on GPU 0, 1 MiB .. 1 GiB, + d2d copy"
timeout 240 "$build/bin/ruccl-cuda-perf" --ranks 4 --gpu 0 -b 1M -e 1G -f 2 -n 20 -w 5 || status=1

if [ $have_perf = 1 ] && "$build/bin/ruccl-perf" --help 2>&1 | grep -q -- "--device"; then
  stage "ruccl-perf --device cuda"
  timeout 240 "$build/bin/ruccl-perf" --device cuda --coll all_reduce --ranks 4 \
    -b 1M -e 1G -f 2 -n 20 -w 5 || status=1
else
  stage "ruccl-perf has no --device option yet: its CUDA run is skipped"
fi

stage "done: $([ $status -eq 0 ] && echo PASSED || echo FAILED)"
exit $status
