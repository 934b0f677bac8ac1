// The two step patterns every algorithm here is made of. The algorithm files
// say which chunks/segments move and how they combine; these loops turn that
// into per-step messages cut to the byte budget.
#pragma once

#include <span>

#include "ring/rank_run.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {

// A ring pass: world-1 steps; at each step this rank sends chunk
// `pattern(rank, world, step).send_chunk` to ring_next and receives
// `.recv_chunk` from ring_prev, combining with `combine`. `first_source` is
// where step 0 reads from (later steps read the send buffer).
Status ring_pass(RankRun& run, std::span<const Range> chunks,
                 RingStep (*pattern)(std::size_t, std::size_t, std::size_t), Combine combine,
                 Source first_source);

// A chain pass: segments flow one hop per step along the chain from `root`
// (root_is_head: broadcast) or towards it (reduce). The chain's head reads
// `head_source`; every other position forwards from its send buffer.
Status chain_pass(RankRun& run, std::span<const Range> segments, std::size_t root,
                  bool root_is_head, Combine combine, Source head_source);

}  // namespace ruccl::ring
