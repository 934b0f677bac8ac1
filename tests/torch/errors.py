"""Errors of the ruccl backend become Python exceptions, on every rank, in time.

 - ranks passing different shapes, dtypes or ops: ruccl's ShapeMismatch /
   DtypeMismatch / OpMismatch, as a RuntimeError carrying ruccl's message, on
   every rank (through Work.wait() and through the future), within seconds,
   not a hang; the group works again afterwards;
 - a rank that never calls: Timeout on the others after the group's timeout
   (new_group(timeout=...) is ruccl's Config deadline);
 - what ruccl cannot reduce (int16): an error at the call, on the caller;
 - Work.wait(timeout) that runs out (the other ranks never call): the
   communicator is aborted, on every rank, and wait() raises ruccl's Aborted
   naming the op; last, since the abort ends every group over the same
   transports.
"""
import datetime
import time

import torch
import torch.distributed as dist

import common

rank, size = common.init("ruccl", timeout_s=60)
gloo = dist.new_group(backend="gloo")
check = common.Checks(rank)


def expect_error(what, run, code):
    t0 = time.monotonic()
    try:
        run()
        check.true(f"{what}: no error", False)
        return
    except RuntimeError as e:
        msg = str(e)
    took = time.monotonic() - t0
    check.true(f"{what}: '{code}' in the message: {msg}", code in msg and "ruccl" in msg)
    check.true(f"{what}: took {took:.1f} s, the group's timeout is 60 s", took < 20)


# Shapes: rank 0 passes 4 elements, the others 5.
expect_error("shape mismatch",
             lambda: dist.all_reduce(torch.ones(4 if rank == 0 else 5)), "ShapeMismatch")
# The group is usable after the error.
t = torch.ones(3)
dist.all_reduce(t)
check.equal("all_reduce after a mismatch", t, torch.full((3,), float(size)))
# Dtypes, through the async Work and through its future.
bad = torch.ones(6, dtype=torch.float32 if rank == 0 else torch.int32)
work = dist.all_reduce(bad, async_op=True)
expect_error("dtype mismatch (Work.wait)", work.wait, "DtypeMismatch")
check.true("the failed Work is completed", work.is_completed())
fut = dist.all_reduce(torch.ones(2), op=dist.ReduceOp.MAX if rank == 0 else dist.ReduceOp.SUM,
                      async_op=True).get_future()
expect_error("op mismatch (future)", fut.wait, "OpMismatch")
# Broadcast from different roots: ruccl sees two senders.
expect_error("root mismatch", lambda: dist.broadcast(torch.ones(2), src=rank % 2),
             "BroadcastSenderCount")

# The group's timeout is ruccl's deadline: rank 0 waits alone.
short = dist.new_group(backend="ruccl", timeout=datetime.timedelta(seconds=2))
if rank == 0:
    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(2), group=short)
        check.true("a collective without the other ranks completed", False)
    except RuntimeError as e:
        took = time.monotonic() - t0
        check.true(f"Timeout in the message: {e}", "Timeout" in str(e))
        check.true(f"timed out after {took:.1f} s (deadline 2 s)", 1.5 < took < 15)
dist.barrier(group=gloo)

# What ruccl cannot reduce fails at the call.
try:
    dist.all_reduce(torch.ones(3, dtype=torch.int16))
    check.true("an int16 all_reduce was accepted", False)
except RuntimeError as e:
    check.true(f"cannot reduce int16: {e}", "cannot reduce" in str(e))
t = torch.ones(3)
dist.all_reduce(t)
check.equal("all_reduce at the end", t, torch.full((3,), float(size)))

# Work.wait(timeout): rank 0 alone; after 1 s its wait aborts the communicator.
dist.barrier(group=gloo)
if rank == 0:
    work = dist.all_reduce(torch.ones(4), async_op=True)
    t0 = time.monotonic()
    try:
        work.wait(timeout=datetime.timedelta(seconds=1))
        check.true("a wait(timeout) without the other ranks completed", False)
    except RuntimeError as e:
        took = time.monotonic() - t0
        check.true(f"Aborted and the op in the message: {e}",
                   "Aborted" in str(e) and "Work.wait(timeout=1000 ms) of allreduce" in str(e))
        check.true(f"wait(timeout=1 s) raised after {took:.1f} s (group timeout 60 s)",
                   0.9 < took < 10)
    check.true("the timed-out Work is completed", work.is_completed())
dist.barrier(group=gloo)
if rank != 0:
    # The abort reached this rank too: its next collective fails at once.
    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(4))
        check.true("a collective after the abort completed", False)
    except RuntimeError as e:
        check.true(f"Aborted after rank 0's abort: {e}", "Aborted" in str(e))
        check.true("failed at once", time.monotonic() - t0 < 5)
dist.destroy_process_group()
check.finish(f"errors np={size}")
