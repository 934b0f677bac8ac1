// The two step patterns every algorithm here is made of. The algorithm files
// say which chunks/segments move and how they combine; these loops turn that
// into per-step messages cut to the byte budget.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <vector>

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

// The same over chunks of several ranges each (chunks[i]: chunk i's ranges,
// all of which move at the steps chunk i moves).
Status ring_pass(RankRun& run, std::span<const std::vector<Range>> chunks,
                 RingStep (*pattern)(std::size_t, std::size_t, std::size_t), Combine combine,
                 Source first_source);

// A chain pass: segments flow one hop per step along the chain from `root`
// (root_is_head: broadcast) or towards it (reduce). The chain's head reads
// `head_source`; every other position forwards from its send buffer.
Status chain_pass(RankRun& run, std::span<const Range> segments, std::size_t root,
                  bool root_is_head, Combine combine, Source head_source);

// Nested levels of a hierarchy, innermost first: their worlds, this rank's
// coordinates (its rank in each) and the ranks of the whole (the product).
struct LevelGrid {
  std::vector<std::size_t> worlds;
  std::vector<std::size_t> mine;
  std::size_t ranks = 1;
};
LevelGrid level_grid(std::span<RankRun* const> levels);
// A rooted collective over `levels`: the root's coordinates in them
// (ring::level_coordinates), and how many of them, innermost first, this rank
// takes part in (ring::rooted_levels).
struct RootColumn {
  std::vector<std::size_t> root;
  std::size_t levels = 0;
};
// kInternal, naming `what`, when `root` is none of the levels' ranks or there
// are no levels.
Result<RootColumn> root_column(std::span<RankRun* const> levels, std::size_t root,
                               const char* what);
// A rooted hierarchical collective runs its levels a round at a time, each
// round at most kRoundSegments of its pipeline segments (at least one round,
// also of none), so that a rank off the root's column, which waits through
// the levels above at one step's deadline, never waits for more than a
// round's worth of them (8 x RUCCL_SEGMENT_BYTES).
inline constexpr std::size_t kRoundSegments = 8;
template <typename Round>
Status in_rounds(std::span<const Range> segments, Round round) {
  std::size_t first = 0;
  do {
    const std::size_t n = std::min(kRoundSegments, segments.size() - first);
    RUCCL_TRY(round(segments.subspan(first, n)));
    first += n;
  } while (first < segments.size());
  return Status::ok();
}
// The phase mark of level `depth` of `levels`: names[0] the innermost's,
// names[2] the outermost's, names[1] one between.
inline const char* level_phase(const std::array<const char*, 3>& names, std::size_t depth,
                               std::size_t levels) {
  return depth + 1 == levels ? names[2] : depth == 0 ? names[0] : names[1];
}

}  // namespace ruccl::ring
