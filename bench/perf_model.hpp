// ruccl-perf --model: the memory traffic of the in-process ring all_reduce, and
// the time it needs at the memcpy bandwidth measured in the same run.
//
// How the library moves the bytes (src/ring/all_reduce.cpp, passes.cpp,
// src/core/engine.cpp, src/device/host/host_adapter.cpp): the tensor of S bytes
// is cut into n balanced chunks of ~S/n; the work buffer is the output (in place:
// the input). Each step, every rank pulls one chunk from its ring predecessor's
// memory with its own thread (no staging, no message):
//   reduce-scatter, n-1 steps, Combine::kReduceInput: out[c] = in[c] op peer[c]
//     (step 0 reads the peer's input, later steps the peer's partial in its work
//     buffer): reads 2 chunks, writes 1 chunk per step.
//   all-gather, n-1 steps, Combine::kCopy (memmove): out[c] = peer[c]:
//     reads 1 chunk, writes 1 chunk per step.
// Per rank:  reads  R = 3 (n-1)/n S      writes  W = 2 (n-1)/n S.
// The input is never copied first, and nothing else touches the tensor (Mean
// adds one scaling pass, not modelled: the model is for sum/prod/min/max).
//
// A memcpy of B bytes reads B and writes B. In every timed iteration, after
// the collective, all n rank threads copy S bytes each at the same moment (a
// barrier first), as the ring's threads run at the same moment; with the
// slowest copy taking T (p50 over the iterations), the memory system moved
// n S copied bytes in T, i.e. M = n S / T bytes copied per second in all (the
// cores' shared bandwidth, whatever it is: on a 2-vCPU VM two copies at once
// do not run twice as fast as one). The ring moves n (R + W) bytes in all:
//   t_model = n (R + W) / (2 M)
// and the achieved fraction = t_model / measured p50 time (1.0 = the ring runs
// at the speed of plain copies by the same threads). Caveats: memcpy of large
// sizes uses non-temporal stores, the reduce loops ordinary ones
// (write-allocate adds a read per written line); the model ignores the 2(n-1)
// step barriers, which dominate small sizes. Until 2026-11-30 M was one
// thread's copy times the core count, which assumed bandwidth that scales
// with cores; it does not here, and the fractions then read about 0.5.
#pragma once

#include <cstddef>

#include "perf_types.hpp"

namespace ruccl::perf {

// CPUs this process may run on (sched_getaffinity), at least 1.
std::size_t usable_cpus();


// The model for `ranks` threads all-reducing `bytes`, with the threads' copies
// at once moving `aggregate_gbps` (1e9 bytes copied per second, all threads
// together); fractions from the row's measured p50 times.
// (The runner measures the memcpy: perf_runner.hpp.)
ModelEstimate all_reduce_model(std::size_t ranks, std::size_t bytes, double aggregate_gbps,
                               std::size_t cpus, const Row& measured);

}  // namespace ruccl::perf
