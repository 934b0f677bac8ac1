"""ruccl vs Gloo as torch.distributed backends, interleaved in one job.

  PYTHONPATH=build/python mpirun --allow-run-as-root -np 2 -x PYTHONPATH \
      -x OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_bench.py [--json out.json]
      [--plot-json plot.json]   (then tools/plot_perf plot.json -o plot.svg)

(or under torchrun: RANK/WORLD_SIZE/MASTER_* come from it). Part 1: in-place
float32 all_reduce (SUM), 8 B .. --max-bytes, x4 per step; every iteration
times one ruccl call and one Gloo call on the same buffer, each after a barrier
of its own group; an iteration's time is the slowest rank's (gathered at the
end), the table gives the medians. busbw = time-based algbw x 2(n-1)/n, as
nccl-tests. Part 2: DistributedDataParallel step time (forward, backward with
the gradient all-reduce, SGD step) of an MLP, one model per backend, steps
alternating between them; medians. Nothing is asserted.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import ruccl_torch  # noqa: F401  (registers "ruccl")


def rank_and_size():
    if "RANK" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}"
        n /= 1024


def timed(fn, group):
    dist.barrier(group=group)
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    ap.add_argument("--iters", type=int, default=30, help="timed iterations per size (<= 1 MiB)")
    ap.add_argument("--large-iters", type=int, default=10, help="timed iterations above 1 MiB")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--ddp-steps", type=int, default=20)
    ap.add_argument("--json", help="write the medians here (rank 0)")
    ap.add_argument("--plot-json", help="write the all_reduce medians here in ruccl-perf's "
                    "--json form, for tools/plot_perf (rank 0)")
    args = ap.parse_args()

    rank, size = rank_and_size()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("gloo", rank=rank, world_size=size)
    groups = {"ruccl": dist.new_group(backend="ruccl"), "gloo": dist.new_group(backend="gloo")}
    results = {"world": size, "all_reduce": [], "ddp": {}}

    sizes, b = [], 8
    while b < args.max_bytes:
        sizes.append(b)
        b *= 4
    sizes.append(args.max_bytes)
    for nbytes in sizes:
        t = torch.ones(max(nbytes // 4, 1), dtype=torch.float32)
        iters = args.iters if nbytes <= (1 << 20) else args.large_iters
        times = {name: [] for name in groups}
        for i in range(args.warmup + iters):
            for name, g in groups.items():
                s = timed(lambda: dist.all_reduce(t, group=g), g)
                if i >= args.warmup:
                    times[name].append(s)
        row = {"bytes": nbytes}
        for name, ts in times.items():
            slowest = torch.tensor(ts, dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX, group=groups["gloo"])
            med = statistics.median(slowest.tolist())
            row[name] = {"us": med * 1e6,
                         "busbw_gbs": nbytes / med / 1e9 * 2 * (size - 1) / size}
        results["all_reduce"].append(row)

    # DDP: the same MLP on each backend, gradients all-reduced in buckets of
    # 1 MiB (several per step, overlapping backward) and 25 MiB (DDP's default).
    results["ddp"] = {}
    params = 0
    for bucket_mb in (1, 25):
        nets = {}
        for name, g in groups.items():
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                                        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                        torch.nn.Linear(1024, 10))
            net = DDP(model, process_group=g, bucket_cap_mb=bucket_mb)
            nets[name] = (net, torch.optim.SGD(net.parameters(), lr=0.01))
        params = sum(p.numel() for p in nets["ruccl"][0].parameters())
        x, y = torch.randn(64, 512), torch.randint(0, 10, (64,))
        steps = {name: [] for name in nets}
        for i in range(3 + args.ddp_steps):
            for name, (net, opt) in nets.items():
                def step():
                    opt.zero_grad()
                    torch.nn.functional.cross_entropy(net(x), y).backward()
                    opt.step()
                s = timed(step, groups[name])
                if i >= 3:
                    steps[name].append(s)
        row = {}
        for name, ts in steps.items():
            slowest = torch.tensor(ts, dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX, group=groups["gloo"])
            row[name] = {"ms": statistics.median(slowest.tolist()) * 1e3}
        results["ddp"][f"bucket_{bucket_mb}MiB"] = row
    results["ddp"]["parameters"] = params

    if rank == 0:
        print(f"all_reduce float32 sum, np={size}, medians of the slowest rank")
        print(f"{'size':>10} {'ruccl us':>10} {'gloo us':>10} {'ruccl GB/s':>11} "
              f"{'gloo GB/s':>10} {'gloo/ruccl':>10}")
        for row in results["all_reduce"]:
            r, g = row["ruccl"], row["gloo"]
            print(f"{human(row['bytes']):>10} {r['us']:10.1f} {g['us']:10.1f} "
                  f"{r['busbw_gbs']:11.3f} {g['busbw_gbs']:10.3f} {g['us'] / r['us']:10.2f}")
        for bucket_mb in (1, 25):
            d = results["ddp"][f"bucket_{bucket_mb}MiB"]
            print(f"DDP step (MLP, {params} parameters, {params * 4 / 2**20:.1f} MiB of "
                  f"gradients, batch 64, buckets of {bucket_mb} MiB): ruccl {d['ruccl']['ms']:.2f} ms, "
                  f"gloo {d['gloo']['ms']:.2f} ms")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
        if args.plot_json:  # the medians as p50 (ruccl-perf's rows: one per backend and size)
            rows = []
            for row in results["all_reduce"]:
                for impl in ("ruccl", "gloo"):
                    t = row[impl]
                    algbw = row["bytes"] / t["us"] / 1e3
                    rows.append({"collective": "all_reduce", "redop": "sum", "impl": impl,
                                 "peer": impl != "ruccl", "size": row["bytes"],
                                 "in_place": {"p50_us": t["us"], "time_us": t["us"],
                                              "algbw_gbps": algbw, "busbw_gbps": t["busbw_gbs"]}})
            with open(args.plot_json, "w") as f:
                json.dump({"label": f"torch.distributed np={size}", "mode": "torch",
                           "results": rows}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
