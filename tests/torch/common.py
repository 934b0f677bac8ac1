"""Shared by the torch tests: the rank and world from mpirun or torchrun, the
env:// rendezvous, and checks that name the rank that failed."""
import datetime
import os
import sys

import torch
import torch.distributed as dist

import ruccl_torch  # noqa: F401  (registers the backend "ruccl")


def rank_and_size():
    """RANK/WORLD_SIZE (torchrun), else Open MPI's OMPI_COMM_WORLD_*."""
    if "RANK" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])


def init(backend="ruccl", timeout_s=60):
    """The default group over env:// (MASTER_ADDR/MASTER_PORT from the test)."""
    rank, size = rank_and_size()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group(backend, rank=rank, world_size=size,
                            timeout=datetime.timedelta(seconds=timeout_s))
    return rank, size


class Checks:
    """Counts checks; fail() reports with the rank and exits non-zero at the end."""

    def __init__(self, rank):
        self.rank, self.count, self.failures = rank, 0, []

    def equal(self, what, got, want, rtol=0.0, atol=0.0):
        self.count += 1
        ok = got.dtype == want.dtype and got.shape == want.shape
        if ok:
            if rtol == 0.0 and atol == 0.0:
                ok = torch.equal(got, want)
            else:
                ok = torch.allclose(got.double(), want.double(), rtol=rtol, atol=atol,
                                    equal_nan=True)
        if not ok:
            self.failures.append(f"{what}: got {got!r}, want {want!r}")

    def true(self, what, cond):
        self.count += 1
        if not cond:
            self.failures.append(what)

    def finish(self, name):
        for f in self.failures:
            print(f"rank {self.rank}: FAILED {f}", flush=True)
        if self.failures or self.count == 0:
            sys.exit(1)
        print(f"rank {self.rank}: {name} OK ({self.count} checks)", flush=True)
