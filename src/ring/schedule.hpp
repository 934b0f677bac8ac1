// Pure schedules: which range goes to which rank at which step.
//
// Vocabulary:
//   count   - elements; bytes are always named bytes.
//   unit    - the smallest piece a message may carry: one element, or one row
//             (the product of all dims but the first) for row-split tensors and
//             all_to_all_v. Every range below is a multiple of the unit.
//   chunk   - one rank's share of a tensor in a ring (balanced_ranges).
//   segment - the pipelining piece of broadcast/reduce along a chain.
//   message - one transfer of one step; at most max_chunk_bytes of payload.
// Nothing here touches memory or devices; everything is tested exhaustively.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "ring/transfer.hpp"
#include "ruccl/status.hpp"
#include "ruccl/types.hpp"

namespace ruccl::ring {

// Splits `units` units into `parts` ranges, in order; the first units % parts get
// one unit more. Each range is scaled by `unit` elements. parts >= 1.
std::vector<Range> balanced_ranges(std::size_t units, std::size_t parts, std::size_t unit = 1);
Range balanced_range(std::size_t units, std::size_t parts, std::size_t index, std::size_t unit = 1);

inline std::size_t ring_next(std::size_t rank, std::size_t world) { return (rank + 1) % world; }
inline std::size_t ring_prev(std::size_t rank, std::size_t world) { return (rank + world - 1) % world; }

// Chunk indices one rank sends to ring_next and receives from ring_prev at a step.
struct RingStep {
  std::size_t send_chunk;
  std::size_t recv_chunk;
  friend bool operator==(const RingStep&, const RingStep&) = default;
};
// Reduce-scatter, steps 0..world-2: after the last step rank r holds the full
// reduction of chunk r. Receive chunk at step s is the send chunk of ring_prev.
RingStep reduce_scatter_step(std::size_t rank, std::size_t world, std::size_t step);
// All-gather, steps 0..world-2, starting from rank r holding chunk r.
RingStep all_gather_step(std::size_t rank, std::size_t world, std::size_t step);

// Chain pipelines for broadcast and reduce. The chain visits ranks in ring order;
// position 0 is its head. Broadcast: the root is the head and data flows away
// from it. Reduce: the root is the tail (position world-1), and partial sums flow
// towards it. At step k, position p sends segment k - p to position p + 1.
std::size_t broadcast_position(std::size_t rank, std::size_t root, std::size_t world);
std::size_t reduce_position(std::size_t rank, std::size_t root, std::size_t world);
std::size_t chain_rank(std::size_t position, std::size_t root, std::size_t world, bool root_is_head);
std::size_t chain_steps(std::size_t world, std::size_t segments);  // 0 if nothing moves
std::optional<std::size_t> chain_send_segment(std::size_t position, std::size_t world,
                                              std::size_t segments, std::size_t step);
std::optional<std::size_t> chain_recv_segment(std::size_t position, std::size_t world,
                                              std::size_t segments, std::size_t step);
// Nested levels of a hierarchy, innermost first (those of the hierarchical
// algorithms: this process's ranks, the node's processes of one local index,
// the ranks of one index across processes or nodes): rank r of the whole has
// coordinate c[i] at level i (its rank in its level-i group), with
// r = c[0] + worlds[0] * (c[1] + worlds[1] * (c[2] + ...)). Empty when
// r lies outside the product of the worlds (or a world is 0).
std::vector<std::size_t> level_coordinates(std::size_t rank, std::span<const std::size_t> worlds);
// The levels a rank takes part in for a collective rooted at `root` (both as
// coordinates), innermost first: level i iff the rank shares the root's
// coordinates at every level below i, i.e. levels 0 .. result-1. Every rank
// takes part in level 0; a group of level i takes part as a whole, and its
// member with the root's coordinate i is the one that takes part in level i+1.
std::size_t rooted_levels(std::span<const std::size_t> mine, std::span<const std::size_t> root);
// The ranks of the whole (ascending) whose blocks member `member` of this
// rank's level-`level` group handles in a hierarchical all-gather or
// reduce-scatter: those with this rank's coordinates (`mine`) at every level
// below `level`, `member` at `level`, and any above. An all-gather runs the
// levels outermost first: before level i a rank holds the blocks of the ranks
// that share its coordinates up to i, after it those that share them below i.
// A reduce-scatter runs them innermost first, each level reducing the
// member's blocks of the level below among the group.
std::vector<std::size_t> level_blocks(std::span<const std::size_t> mine,
                                      std::span<const std::size_t> worlds, std::size_t level,
                                      std::size_t member);
// Segments of at most `segment_units` units each, covering `units` units.
std::vector<Range> segment_ranges(std::size_t units, std::size_t segment_units, std::size_t unit = 1);

// Pairwise all-to-all, steps 0..world-1: step 0 is the local copy; at step s rank r
// sends to (r + s) % world and receives from (r - s) % world.
inline std::size_t a2a_send_peer(std::size_t rank, std::size_t world, std::size_t step) {
  return (rank + step) % world;
}
inline std::size_t a2a_recv_peer(std::size_t rank, std::size_t world, std::size_t step) {
  return (rank + world - step % world) % world;
}
// offsets[i] = sum(counts[0..i)); one more entry than counts (the total last).
std::vector<std::size_t> exclusive_prefix(std::span<const std::size_t> counts);

// One-shot all-reduce, steps 0..world-1: at step k rank k sends its input to
// every other rank, and every rank takes rank k's input (its own from itself),
// as a copy at step 0 and reduced into the result after, so that each rank
// computes x0 op x1 op ... op x(n-1), left to right, bit for bit alike.
struct OneShotStep {
  std::vector<std::size_t> send_to;  // ranks this rank sends its input to
  std::size_t recv_from = 0;         // the rank whose input this rank takes
  Combine combine = Combine::kCopy;
  friend bool operator==(const OneShotStep&, const OneShotStep&) = default;
};
OneShotStep one_shot_step(std::size_t rank, std::size_t world, std::size_t step);

// Elements one message may carry: the largest multiple of `unit` elements that
// fits `max_chunk_bytes`. kBudgetTooSmall (naming the budget and the unit size)
// when not even one unit fits. elem_bytes, unit >= 1.
Result<std::size_t> message_elements(std::size_t max_chunk_bytes, std::size_t elem_bytes,
                                     std::size_t unit);
// Appends `src` as messages of at most `max_elements` elements, keeping the
// destination offsets contiguous. An empty range appends nothing.
void append_messages(std::vector<Transfer>& out, std::size_t peer, Range src,
                     std::size_t dst_offset, std::size_t max_elements,
                     Source source = Source::kSend);
// One step's transfers by peer (world::RoutedRun): those with a peer in
// [begin, begin + count) into `inside`, the peer renumbered from 0 (begin ->
// 0), the others into `outside` as they are, each in its order. Both lists are
// cleared first.
void split_by_peer(std::span<const Transfer> transfers, std::size_t begin, std::size_t count,
                   std::vector<Transfer>& inside, std::vector<Transfer>& outside);

}  // namespace ruccl::ring
