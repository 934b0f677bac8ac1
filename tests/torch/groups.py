"""dist.new_group on ruccl: two groups of two at np=4, split from the default
ruccl group (sharing its transports; agreed through the group's
PrefixStore), used interleaved with the default group and checked against
Gloo subgroups of the same ranks; a group with share=False opens its own.
Each group has a worker thread of its own: asynchronous ops posted to a half
and to the default group in opposite orders on the two ranks of a half
complete."""
import datetime

import torch
import torch.distributed as dist

import common
import ruccl_torch

rank, size = common.init("ruccl")
check = common.Checks(rank)
assert size == 4, "run with 4 processes"
halves = [[0, 1], [2, 3]]
ruccl_groups = [dist.new_group(ranks) for ranks in halves]  # the default backend: ruccl
gloo_groups = [dist.new_group(ranks, backend="gloo") for ranks in halves]
mine = rank // 2
rg, gg = ruccl_groups[mine], gloo_groups[mine]
check.true("not a member of the other half",
           ruccl_groups[1 - mine] == dist.GroupMember.NON_GROUP_MEMBER)
check.true("rank in the half", dist.get_rank(rg) == rank % 2 and dist.get_world_size(rg) == 2)
check.true("the half shares the default group's transports", ruccl_torch.shares_transports(rg))
check.true("the default group has transports of its own",
           not ruccl_torch.shares_transports(dist.distributed_c10d._get_default_group()))
own = dist.new_group([0, 1, 2, 3],
                     pg_options=ruccl_torch.Options(share=False))
check.true("share=False opens its own", not ruccl_torch.shares_transports(own))
z = torch.ones(4)
dist.all_reduce(z, group=own)
check.equal("all_reduce on the group of its own", z, torch.full((4,), 4.0))

for step in range(3):
    t = torch.arange(10, dtype=torch.float32) * (rank + 1) + step
    a, b = t.clone(), t.clone()
    dist.all_reduce(a, group=rg)
    dist.all_reduce(b, group=gg)
    check.equal(f"half all_reduce step {step}", a, b)
    w = t.clone()
    dist.all_reduce(w)  # the default group, between the halves' calls
    check.equal(f"world all_reduce step {step}", w,
                torch.arange(10, dtype=torch.float32) * 10 + 4 * step)
    outs = [torch.zeros(10) for _ in range(2)]
    dist.all_gather(outs, t, group=rg)
    ref = [torch.zeros(10) for _ in range(2)]
    dist.all_gather(ref, t, group=gg)
    for i in range(2):
        check.equal(f"half all_gather block {i} step {step}", outs[i], ref[i])
    x = t.clone()
    dist.broadcast(x, src=halves[mine][1], group=rg)  # the global rank of the half's rank 1
    y = t.clone()
    dist.broadcast(y, src=halves[mine][1], group=gg)
    check.equal(f"half broadcast step {step}", x, y)
# With one worker for both groups, each rank's first op would wait for the
# other rank's second, queued behind its first (until the timeout).
for step in range(3):
    h = torch.full((5,), float(rank + step))
    w = torch.full((5,), float(rank))
    if rank % 2 == 0:
        wh = dist.all_reduce(h, group=rg, async_op=True)
        ww = dist.all_reduce(w, async_op=True)
    else:
        ww = dist.all_reduce(w, async_op=True)
        wh = dist.all_reduce(h, group=rg, async_op=True)
    for work in (wh, ww):
        work.wait(timeout=datetime.timedelta(seconds=20))
    check.equal(f"half all_reduce posted in opposite orders, step {step}", h,
                torch.full((5,), float(4 * mine + 1 + 2 * step)))
    check.equal(f"world all_reduce posted in opposite orders, step {step}", w,
                torch.full((5,), 6.0))
dist.barrier()
dist.destroy_process_group()
check.finish("groups np=4")
