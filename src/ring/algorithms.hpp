// The collective algorithms, each written once over RankRun (one per file).
//
// Buffers: every algorithm writes the ranks' recv buffers, reading the peers'
// send (or input) buffers; the caller lays them out (see src/core/engine.cpp).
// Reducing algorithms combine with the rank's own input as they go, so inputs
// need no copy first. All ranges are in elements.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "ring/rank_run.hpp"

namespace ruccl::ring {

// Ring reduce-scatter over `chunks` (one per rank): afterwards rank r's buffer
// holds the full reduction of chunks[r] (other chunks hold partials, and the
// chunk r-1 nothing). send == recv buffer; input may be that buffer (in-place).
Status ring_reduce_scatter(RankRun& run, std::span<const Range> chunks);
// Ring all-gather: rank r starts with chunks[r] in its buffer and ends with all.
Status ring_all_gather(RankRun& run, std::span<const Range> chunks);
// Reduce-scatter then all-gather, over balanced chunks of `units` units.
Status ring_all_reduce(RankRun& run, std::size_t units, std::size_t unit);
// Hierarchical all-reduce (see hierarchical_all_reduce.cpp) over `levels`,
// innermost first (this process's ranks; optionally the node's processes; the
// ranks of other processes or nodes with the same index below): reduce-scatter
// over a level, all-reduce of this rank's part over the levels above,
// all-gather over the level.
Status hierarchical_all_reduce(std::span<RankRun* const> levels, std::size_t units,
                               std::size_t unit);
// Hierarchical broadcast and reduce over the same `levels` (see
// hierarchical_broadcast.cpp, hierarchical_reduce.cpp): pipelined chains
// level by level along the root's column, outermost first for a broadcast,
// innermost first for a reduce. `root` is a rank of the whole, whose ranks
// are numbered innermost level first (ring::level_coordinates).
Status hierarchical_broadcast(std::span<RankRun* const> levels, std::span<const Range> segments,
                              std::size_t root);
Status hierarchical_reduce(std::span<RankRun* const> levels, std::span<const Range> segments,
                           std::size_t root);
// Hierarchical all-gather and reduce-scatter over the same `levels` (see
// hierarchical_all_gather.cpp, hierarchical_reduce_scatter.cpp): blocks[g] is
// rank g's block (numbered innermost level first); a ring per level, each
// chunk the blocks ring::level_blocks names, outermost level first for an
// all-gather (rank g starts with block g), innermost first for a
// reduce-scatter (rank g ends with the sum of block g).
Status hierarchical_all_gather(std::span<RankRun* const> levels, std::span<const Range> blocks);
Status hierarchical_reduce_scatter(std::span<RankRun* const> levels, std::span<const Range> blocks);
// One-shot all-reduce of `count` elements for small tensors (one step of
// latency): every rank reduces all n inputs itself, in rank order. Needs an
// executor that delivers the inputs as they were when the collective began
// (see one_shot_all_reduce.cpp); the in-process executor does not.
Status one_shot_all_reduce(RankRun& run, std::size_t count);
// Pipelined chain from the root: every rank ends with the root's segments.
Status chain_broadcast(RankRun& run, std::span<const Range> segments, std::size_t root);
// Pipelined chain to the root: the root's buffer ends with the reduction. The
// chain's head (the rank after the root) reads only its input.
Status chain_reduce(RankRun& run, std::span<const Range> segments, std::size_t root);
// Pairwise all-to-all-v. rows[s][d]: rows rank s sends to rank d; `row` elements
// per row. Rank d receives source s's block at the prefix of rows[*][d].
Status pairwise_all_to_all_v(RankRun& run, const std::vector<std::vector<std::size_t>>& rows,
                             std::size_t row);

}  // namespace ruccl::ring
