"""DistributedDataParallel on a ruccl group against DDP on a Gloo group.

Two copies of the same small model (an MLP, then a small convolutional net;
same seed) are trained side by side for 20 steps on the same per-rank batches, one wrapped with
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


def mlp():
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(),
                               torch.nn.Linear(64, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 4))


def cnn():
    """A small convolutional net on 1x12x12 images, 4 outputs."""
    torch.manual_seed(4321)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(),
                               torch.nn.Conv2d(4, 8, 3, stride=2), torch.nn.ReLU(),
                               torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 4))


def batch(kind, gen):
    shape = (16, 32) if kind is mlp else (8, 1, 12, 12)
    return torch.randn(*shape, generator=gen), torch.randn(shape[0], 4, generator=gen)


def train(kind, group, steps=20):
    net = DDP(kind(), process_group=group, bucket_cap_mb=0.01)  # several buckets
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(99 + rank)  # a different batch on every rank
    for _ in range(steps):
        x, y = batch(kind, gen)
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in net.module.parameters()]


for kind in (mlp, cnn):
    name = kind.__name__
    ruccl_params = train(kind, ruccl_group)
    gloo_params = train(kind, gloo_group)
    start = [p.detach() for p in kind().parameters()]
    for i, (a, b) in enumerate(zip(ruccl_params, gloo_params)):
        check.equal(f"{name} parameter {i} after 20 steps", a, b, rtol=1e-6, atol=1e-7)
    check.true(f"{name}: training changed the parameters",
               any(not torch.allclose(a, s) for a, s in zip(ruccl_params, start)))
    # The ranks trained on different data yet hold the same parameters.
    mine = torch.cat([p.reshape(-1) for p in ruccl_params])
    other = mine.clone()
    dist.broadcast(other, src=0, group=gloo_group)
    check.equal(f"{name}: parameters equal on every rank", mine, other)
dist.destroy_process_group()
check.finish(f"ddp np={size}")
