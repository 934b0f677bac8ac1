"""mpi4py under the ruccl layer: the routed collectives over numpy buffers, in
place and not, several dtypes and ops, on COMM_WORLD, a dup, a split and
COMM_SELF, checked against numpy. mpi4py initialises MPI at
MPI_THREAD_SERIALIZED here; with the argument "multiple" at its default,
MPI_THREAD_MULTIPLE, under which the layer routes too, and then also two
threads per process, each with a communicator of its own (duplicates of
COMM_WORLD), call Allreduce and Bcast at the same time, started in opposite
orders on neighbouring ranks. Prints "mpi4py: OK"."""
import sys
import threading
import time

import mpi4py

mpi4py.rc.thread_level = "multiple" if sys.argv[1:] == ["multiple"] else "serialized"
from mpi4py import MPI  # noqa: E402
import numpy as np  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def inputs(rank, n, dtype):
    return ((np.arange(n) * 3 + rank * 7) % 23 - 11).astype(dtype)


def run(comm, name):
    rank, size = comm.Get_rank(), comm.Get_size()
    n = 513
    every = [inputs(r, n, np.float64) for r in range(size)]
    for dtype in (np.float32, np.float64, np.int32, np.int64):
        x = inputs(rank, n, dtype)
        for op, fold in ((MPI.SUM, np.add), (MPI.MAX, np.maximum), (MPI.MIN, np.minimum)):
            want = fold.reduce([e.astype(dtype) for e in every])
            out = np.empty_like(x)
            comm.Allreduce(x, out, op=op)
            check(np.array_equal(out, want), f"{name} Allreduce {dtype.__name__} {op}")
            y = x.copy()
            comm.Allreduce(MPI.IN_PLACE, y, op=op)
            check(np.array_equal(y, want), f"{name} Allreduce in place {dtype.__name__}")
    u = (np.arange(n, dtype=np.uint64) * 0x9E3779B97F4A7C15) ^ np.uint64(rank)
    for op, fold in ((MPI.BAND, np.bitwise_and), (MPI.BOR, np.bitwise_or),
                     (MPI.BXOR, np.bitwise_xor)):
        want = fold.reduce([(np.arange(n, dtype=np.uint64) * 0x9E3779B97F4A7C15) ^ np.uint64(r)
                            for r in range(size)])
        out = np.empty_like(u)
        comm.Allreduce(u, out, op=op)
        check(np.array_equal(out, want), f"{name} Allreduce uint64 {op}")
    x = inputs(rank, n, np.float64)
    out = np.zeros(n)
    comm.Reduce(x, out if rank == 0 else None, op=MPI.SUM, root=0)
    if rank == 0:
        check(np.array_equal(out, np.sum(every, axis=0)), f"{name} Reduce")
    b = inputs(5, n, np.int32) if rank == size - 1 else np.zeros(n, np.int32)
    comm.Bcast(b, root=size - 1)
    check(np.array_equal(b, inputs(5, n, np.int32)), f"{name} Bcast")
    g = np.empty(n * size, np.float32)
    comm.Allgather(inputs(rank, n, np.float32), g)
    check(np.array_equal(g, np.concatenate([inputs(r, n, np.float32) for r in range(size)])),
          f"{name} Allgather")
    s = np.arange(n * size, dtype=np.int64) + rank
    rs = np.empty(n, np.int64)
    comm.Reduce_scatter_block(s, rs, op=MPI.SUM)
    want = sum(np.arange(n * size, dtype=np.int64) + r for r in range(size))
    check(np.array_equal(rs, want[rank * n:(rank + 1) * n]), f"{name} Reduce_scatter_block")
    a = np.array([rank * 100 + d for d in range(size)], np.int32)
    t = np.empty(size, np.int32)
    comm.Alltoall(a, t)
    check(np.array_equal(t, np.array([s * 100 + rank for s in range(size)], np.int32)),
          f"{name} Alltoall")
    counts = [r + 1 for r in range(size)]
    send = np.concatenate([np.full(d + 1, rank * 100 + d, np.int32) for d in range(size)])
    recv = np.empty((rank + 1) * size, np.int32)
    comm.Alltoallv([send, counts], [recv, [rank + 1] * size])
    check(np.array_equal(recv, np.repeat(np.array([s * 100 + rank for s in range(size)],
                                                  np.int32), rank + 1)), f"{name} Alltoallv")
    rc = [r + 2 for r in range(size)]
    v = np.arange(sum(rc), dtype=np.float64) + rank
    part = np.empty(rc[rank])
    comm.Reduce_scatter(v, part, recvcounts=rc, op=MPI.SUM)
    whole = sum(np.arange(sum(rc), dtype=np.float64) + r for r in range(size))
    check(np.array_equal(part, whole[sum(rc[:rank]):sum(rc[:rank + 1])]), f"{name} Reduce_scatter")
    root = size - 1
    mine = inputs(rank, n, np.float64)
    gat = np.full(n * size, -1.0) if rank == root else None
    comm.Gather(mine, gat, root=root)
    if rank == root:
        check(np.array_equal(gat, np.concatenate(every)), f"{name} Gather")
    sc = np.concatenate(every) if rank == root else None
    piece = np.empty(n)
    comm.Scatter(sc, piece, root=root)
    check(np.array_equal(piece, every[rank]), f"{name} Scatter")
    vc = [r + 2 for r in range(size)]
    vd = [sum(vc[:r]) + 3 * r for r in range(size)]
    room = vd[-1] + vc[-1]
    vsend = np.arange(vc[rank], dtype=np.int32) + 100 * rank
    want = np.full(room, -1, np.int32)
    for r in range(size):
        want[vd[r]:vd[r] + vc[r]] = np.arange(vc[r]) + 100 * r
    vrecv = np.full(room, -1, np.int32)
    comm.Gatherv(vsend, [vrecv, vc, vd, MPI.INT] if rank == root else None, root=root)
    if rank == root:
        check(np.array_equal(vrecv, want), f"{name} Gatherv")
    vpiece = np.empty(vc[rank], np.int32)
    comm.Scatterv([want, vc, vd, MPI.INT] if rank == root else None, vpiece, root=root)
    check(np.array_equal(vpiece, vsend), f"{name} Scatterv")
    vall = np.full(room, -1, np.int32)
    comm.Allgatherv(vsend, [vall, vc, vd, MPI.INT])
    check(np.array_equal(vall, want), f"{name} Allgatherv")
    sx = inputs(rank, n, np.int64)
    sy = np.empty_like(sx)
    comm.Scan(sx, sy, op=MPI.SUM)
    check(np.array_equal(sy, sum(inputs(r, n, np.int64) for r in range(rank + 1))),
          f"{name} Scan")
    ey = np.full(n, -1.0)
    comm.Exscan(inputs(rank, n, np.float64), ey, op=MPI.MAX)
    if rank > 0:
        check(np.array_equal(ey, np.maximum.reduce(every[:rank])), f"{name} Exscan")
    else:
        check(np.all(ey == -1.0), f"{name} Exscan left rank 0 alone")
    comm.Barrier()


world = MPI.COMM_WORLD
run(world, "COMM_WORLD")
dup = world.Dup()
run(dup, "dup")
split = world.Split(world.Get_rank() % 2, world.Get_rank())
run(split, "split")
run(MPI.COMM_SELF, "COMM_SELF")
split.Free()
dup.Free()
if mpi4py.rc.thread_level == "multiple":
    comms = [world.Dup(), world.Dup()]

    def side_by_side(k):
        comm = comms[k]
        rank, size = comm.Get_rank(), comm.Get_size()
        if (rank + k) % 2 == 1:
            time.sleep(0.02)
        for step in range(40):
            n = 3 if step % 2 == 0 else 5000
            x = np.arange(n, dtype=np.float64) + rank + 10 * k + step
            y = np.empty_like(x)
            comm.Allreduce(x, y, op=MPI.SUM)
            want = size * (np.arange(n, dtype=np.float64) + 10 * k + step) + size * (size - 1) / 2
            check(np.array_equal(y, want), f"thread {k} Allreduce step {step}")
            b = np.full(n, float(rank))
            comm.Bcast(b, root=step % size)
            check(np.all(b == step % size), f"thread {k} Bcast step {step}")

    threads = [threading.Thread(target=side_by_side, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in comms:
        c.Free()
bad = world.allreduce(len(failures))
if failures:
    print(f"rank {world.Get_rank()}: {failures[:5]}", file=sys.stderr)
if world.Get_rank() == 0:
    print("mpi4py: OK" if bad == 0 else f"mpi4py: {bad} FAILED")
sys.exit(0 if bad == 0 else 1)
