"""Every op of the ruccl backend, several dtypes, against Gloo in the same job.

The default group is ruccl (init_process_group("ruccl")), a Gloo group over the
same ranks sits beside it; each case runs on both and the results must be
equal (exactly for integer-valued inputs; float16/bfloat16 within rounding).
Where Gloo (torch 1.13) lacks an op (AVG, reduce_scatter, _allgather_base),
the reference is each rank's inputs gathered through Gloo and reduced here.
Run under mpirun (any np) or torchrun.
"""
import functools
import sys

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

import common
import ruccl_torch

rank, size = common.init("ruccl")
gloo = dist.new_group(backend="gloo")
check = common.Checks(rank)
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int32, torch.int64, torch.int8, torch.uint8]


def tol(dtype):
    return 1e-2 if dtype in (torch.float16, torch.bfloat16) else 0.0


def values(n, dtype, r=None, salt=0):
    """Small integer values (exact in every dtype), different on every rank."""
    r = rank if r is None else r
    return ((torch.arange(n) * 3 + salt) % 5 + r + 1).to(dtype)


def wide(dtype):
    """The dtype a value of `dtype` takes through Gloo (which lacks some)."""
    return {torch.float16: torch.float32, torch.bfloat16: torch.float32,
            torch.int16: torch.int32}.get(dtype, dtype)


def gathered(t):
    """Every rank's `t`, through Gloo (in the wide dtype)."""
    src = t.to(wide(t.dtype))
    outs = [torch.empty_like(src) for _ in range(size)]
    dist.all_gather(outs, src, group=gloo)
    return [o.to(t.dtype) for o in outs]


COMBINE = {ReduceOp.SUM: torch.add, ReduceOp.AVG: torch.add, ReduceOp.PRODUCT: torch.mul,
           ReduceOp.MIN: torch.minimum, ReduceOp.MAX: torch.maximum,
           ReduceOp.BAND: torch.bitwise_and, ReduceOp.BOR: torch.bitwise_or,
           ReduceOp.BXOR: torch.bitwise_xor}


def local_reduce(tensors, op):
    """The reduction computed here (float16/bfloat16 in float32, like ruccl)."""
    dtype = tensors[0].dtype
    out = functools.reduce(COMBINE[op], [t.to(wide(dtype)) for t in tensors])
    if op == ReduceOp.AVG:
        out = out / size if out.is_floating_point() else torch.div(out, size, rounding_mode="trunc")
    return out.to(dtype)


# --- all_reduce: every op x dtype, Gloo where it has the op and dtype.
for dtype in FLOATS + INTS:
    ops = [ReduceOp.SUM, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX]
    if dtype.is_floating_point:
        ops.append(ReduceOp.AVG)
    else:
        ops += [ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR]
    for op in ops:
        for n in (1, 7, 1000):
            t = values(n, dtype, salt=n)
            mine = t.clone()
            dist.all_reduce(mine, op=op)
            if op != ReduceOp.AVG and dtype not in (torch.float16, torch.bfloat16):
                ref = t.clone()
                dist.all_reduce(ref, op=op, group=gloo)
            else:
                ref = local_reduce(gathered(t), op)
            check.equal(f"all_reduce {op} {dtype} n={n}", mine, ref, rtol=tol(dtype))
# A larger float32 sum (several ring chunks), against Gloo.
t = values(300_001, torch.float32)
mine, ref = t.clone(), t.clone()
dist.all_reduce(mine)
dist.all_reduce(ref, group=gloo)
check.equal("all_reduce sum float32 n=300001", mine, ref)
# bool: SUM is or, PRODUCT is and.
b = torch.tensor([rank == 0, False, True, rank % 2 == 1])
for op, want in ((ReduceOp.SUM, [True, False, True, size > 1]),
                 (ReduceOp.PRODUCT, [size == 1, False, True, False])):
    mine = b.clone()
    dist.all_reduce(mine, op=op)
    check.equal(f"all_reduce {op} bool", mine, torch.tensor(want))
# A non-contiguous tensor (a transposed view): reduced in place through a copy.
base = values(12, torch.float32).reshape(3, 4)
view = base.t()
expect = view.clone()
dist.all_reduce(expect, group=gloo)
dist.all_reduce(view)
check.equal("all_reduce of a transposed view", view, expect)
check.true("the view's storage was written", torch.equal(base.t(), expect))

# --- broadcast, from the first and the last rank; int16 travels as bytes.
for dtype in (torch.float32, torch.int64, torch.bfloat16, torch.int16):
    for root in sorted({0, size - 1}):
        mine = values(33, dtype, salt=root)
        dist.broadcast(mine, src=root)
        ref = values(33, wide(dtype), salt=root)
        dist.broadcast(ref, src=root, group=gloo)
        ref = ref.to(dtype)
        check.equal(f"broadcast {dtype} root {root}", mine, ref)

# --- reduce to the last rank.
for dtype in (torch.float32, torch.int32):
    root = size - 1
    mine = values(50, dtype)
    ref = mine.clone()
    dist.reduce(mine, dst=root, op=ReduceOp.MAX)
    dist.reduce(ref, dst=root, op=ReduceOp.MAX, group=gloo)
    if rank == root:
        check.equal(f"reduce max {dtype}", mine, ref)

# --- all_gather (list form) and the one-tensor form (_allgather_base).
for dtype in (torch.float32, torch.int64, torch.float16, torch.int16):
    t = values(10, dtype).reshape(2, 5)
    mine = [torch.zeros_like(t) for _ in range(size)]
    dist.all_gather(mine, t)
    ref = gathered(t)
    for r in range(size):
        check.equal(f"all_gather {dtype} block {r}", mine[r], ref[r])
    flat = torch.zeros(size * 2, 5, dtype=dtype)
    dist.all_gather_into_tensor(flat, t)
    check.equal(f"all_gather_into_tensor {dtype}", flat, torch.cat(ref))

# --- reduce_scatter (list form) and the one-tensor form (_reduce_scatter_base).
for dtype in (torch.float32, torch.int32, torch.bfloat16):
    for op in (ReduceOp.SUM, ReduceOp.MIN):
        ins = [values(6, dtype, salt=d) for d in range(size)]
        out = torch.zeros(6, dtype=dtype)
        dist.reduce_scatter(out, ins, op=op)
        want = local_reduce([values(6, dtype, r=r, salt=rank) for r in range(size)], op)
        check.equal(f"reduce_scatter {op} {dtype}", out, want, rtol=tol(dtype))
        whole = torch.cat(ins)
        out2 = torch.zeros(6, dtype=dtype)
        dist.reduce_scatter_tensor(out2, whole, op=op)
        check.equal(f"reduce_scatter_tensor {op} {dtype}", out2, want, rtol=tol(dtype))

# --- all_to_all_single with uneven split sizes (rank r sends r + d + 1 rows to
#     rank d), rows of 3 elements; then even splits.
for dtype in (torch.float32, torch.int64, torch.int16):
    send = [rank + d + 1 for d in range(size)]
    recv = [s + rank + 1 for s in range(size)]
    inp = values(sum(send) * 3, dtype).reshape(sum(send), 3)
    mine = torch.zeros(sum(recv), 3, dtype=dtype)
    ref = torch.zeros_like(mine, dtype=wide(dtype))
    dist.all_to_all_single(mine, inp, recv, send)
    dist.all_to_all_single(ref, inp.to(wide(dtype)), recv, send, group=gloo)
    ref = ref.to(dtype)
    check.equal(f"all_to_all_single uneven {dtype}", mine, ref)
even_in = values(size * 4, torch.float32)
even_mine, even_ref = torch.zeros_like(even_in), torch.zeros_like(even_in)
dist.all_to_all_single(even_mine, even_in)
dist.all_to_all_single(even_ref, even_in, group=gloo)
check.equal("all_to_all_single even", even_mine, even_ref)

# --- gather and scatter to/from the last rank (int16 as bytes), against Gloo.
for dtype in (torch.float32, torch.int64, torch.int16):
    root = size - 1
    t = values(7, dtype).reshape(7, 1)
    mine = [torch.full_like(t, -1) for _ in range(size)] if rank == root else None
    dist.gather(t, mine, dst=root)
    ref = gathered(t)  # on every rank: a Gloo collective
    if rank == root:
        for r in range(size):
            check.equal(f"gather {dtype} block {r}", mine[r], ref[r])
    blocks = [values(5, dtype, r=d, salt=9) for d in range(size)] if rank == root else None
    out = torch.full((5,), -1, dtype=dtype)
    dist.scatter(out, blocks, src=root)
    check.equal(f"scatter {dtype}", out, values(5, dtype, r=rank, salt=9))

# --- the list all_to_all (rank s sends s + d + 1 elements to rank d) and
#     all_reduce_coalesced (three tensors of one dtype), computed here.
for dtype in (torch.float32, torch.int32):
    ins = [values(rank + d + 1, dtype, salt=d) for d in range(size)]
    outs = [torch.full((s + rank + 1,), -1, dtype=dtype) for s in range(size)]
    dist.all_to_all(outs, ins)
    for s in range(size):
        check.equal(f"all_to_all list {dtype} from {s}", outs[s],
                    values(s + rank + 1, dtype, r=s, salt=rank))
    parts = [values(n, dtype, salt=n).reshape(-1, 1) for n in (3, 1, 10)]
    want = [local_reduce([values(n, dtype, r=r, salt=n).reshape(-1, 1) for r in range(size)],
                         ReduceOp.SUM) for n in (3, 1, 10)]
    dist.all_reduce_coalesced(parts)
    for k in range(3):
        check.equal(f"all_reduce_coalesced {dtype} tensor {k}", parts[k], want[k])
    mine = [values(n, dtype, salt=n).reshape(-1, 1) for n in (2, 5)]
    lists = [[torch.full_like(t, -1) for t in mine] for _ in range(size)]
    dist.all_gather_coalesced(lists, mine)
    for r in range(size):
        for k, n in enumerate((2, 5)):
            check.equal(f"all_gather_coalesced {dtype} rank {r} tensor {k}", lists[r][k],
                        values(n, dtype, r=r, salt=n).reshape(-1, 1))

# --- async: several ops queued, then waited for; FIFO, so results are in order.
works, tensors = [], []
for k in range(5):
    t = torch.full((100,), float(rank + k))
    tensors.append(t)
    works.append(dist.all_reduce(t, async_op=True))
for k, w in enumerate(works):
    w.wait()
    check.true(f"async work {k} completed", w.is_completed())
    check.equal(f"async all_reduce {k}", tensors[k],
                torch.full((100,), float(sum(range(size)) + size * k)))
fut = dist.all_reduce(torch.ones(3), async_op=True).get_future()
check.equal("the Work's future", fut.wait()[0], torch.full((3,), float(size)))

# --- the all_to_all budget (ruccl_torch.Options): a small budget still works;
#     one below a row is ruccl's BudgetTooSmall as a RuntimeError, everywhere.
small = dist.new_group(backend="ruccl", pg_options=ruccl_torch.Options(max_chunk_bytes=64))
inp = values(size * 16, torch.float32).reshape(size * 4, 4)
mine, ref = torch.zeros_like(inp), torch.zeros_like(inp)
dist.all_to_all_single(mine, inp, group=small)
dist.all_to_all_single(ref, inp, group=gloo)
check.equal("all_to_all_single under a 64-byte budget", mine, ref)
tiny = dist.new_group(backend="ruccl", pg_options=ruccl_torch.Options(max_chunk_bytes=8))
try:
    dist.all_to_all_single(torch.zeros_like(inp), inp, group=tiny)
    check.true("a budget below one row fails", False)
except RuntimeError as e:
    check.true(f"BudgetTooSmall in the message: {e}", "BudgetTooSmall" in str(e))

dist.barrier()
dist.destroy_process_group()
check.finish(f"ops np={size}")
