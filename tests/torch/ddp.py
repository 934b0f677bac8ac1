"""DistributedDataParallel on a ruccl group against DDP on a Gloo group.

Two copies of the same small MLP (same seed) are trained side by side for 20
steps on the same per-rank batches, one wrapped with
DistributedDataParallel(process_group=<ruccl group>), the other with a Gloo
group. Their parameters must stay equal (1e-6 relative) and must differ on
purpose from the untrained ones and between two ranks' local batches (so the
gradient all-reduce really happened).
"""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import common

rank, size = common.init("gloo")
ruccl_group = dist.new_group(backend="ruccl")
gloo_group = dist.new_group(backend="gloo")
check = common.Checks(rank)


def model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(),
                               torch.nn.Linear(64, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 4))


def train(group, steps=20):
    net = DDP(model(), process_group=group, bucket_cap_mb=0.01)  # several buckets
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(99 + rank)  # a different batch on every rank
    for _ in range(steps):
        x = torch.randn(16, 32, generator=gen)
        y = torch.randn(16, 4, generator=gen)
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in net.module.parameters()]


ruccl_params = train(ruccl_group)
gloo_params = train(gloo_group)
start = [p.detach() for p in model().parameters()]
for i, (a, b) in enumerate(zip(ruccl_params, gloo_params)):
    check.equal(f"parameter {i} after 20 steps", a, b, rtol=1e-6, atol=1e-7)
check.true("training changed the parameters",
           any(not torch.allclose(a, s) for a, s in zip(ruccl_params, start)))
# The ranks trained on different data yet hold the same parameters.
mine = torch.cat([p.reshape(-1) for p in ruccl_params])
other = mine.clone()
dist.broadcast(other, src=0, group=gloo_group)
check.equal("parameters equal on every rank", mine, other)
dist.destroy_process_group()
check.finish(f"ddp np={size}")
