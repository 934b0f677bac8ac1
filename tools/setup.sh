#!/usr/bin/env bash
# Shared set-up of run.sh and test.sh: install the Debian packages that are
# missing (only those), then configure and build into $BUILD_DIR (default build/).
# Source it; it defines ruccl_setup and ruccl_build.
set -euo pipefail

# MPI and UCX are optional parts of ruccl; the packages let their tests run.
# python3-torch, libtorch-dev and pybind11-dev: the torch.distributed backend
# (src/torch) and its tests (label torch).
RUCCL_PACKAGES=(build-essential cmake ninja-build pkg-config libgtest-dev
                openmpi-bin libopenmpi-dev libucx-dev ucx-utils iproute2 util-linux
                munge slurmctld slurmd slurm-client gfortran libgloo-dev
                clang libclang-rt-14-dev iptables libnetfilter-queue-dev
                libsodium-dev clang-format clang-tidy python3-mpi4py python3-numpy
                python3-torch libtorch-dev pybind11-dev
                lammps lammps-examples scalapack-mpi-test)

ruccl_setup() {
  local missing=()
  for p in "${RUCCL_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "== installing missing packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# ruccl_build DIR [cmake args...]: configure (once) and build DIR.
ruccl_build() {
  local dir=$1; shift
  local jobs
  jobs=$(nproc 2>/dev/null || echo 2)
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

# ruccl_build_targets DIR TARGET...: configure (once) and build only those of
# the TARGETs this configuration has (MPI/UCX/CUDA parts may be absent).
ruccl_build_targets() {
  local dir=$1; shift
  local jobs known wanted=()
  jobs=$(nproc 2>/dev/null || echo 2)
  cmake -S . -B "$dir" -G Ninja >/dev/null
  known=$(cmake --build "$dir" --target help | sed -n 's/^\([A-Za-z0-9_.-]*\): .*/\1/p')
  for t in "$@"; do
    grep -qx "$t" <<<"$known" && wanted+=("$t")
  done
  cmake --build "$dir" -j "$jobs" --target "${wanted[@]}"
}
