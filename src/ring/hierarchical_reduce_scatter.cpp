// Hierarchical reduce-scatter over nested levels, innermost first (those of
// the hierarchical all-reduce; see hierarchical_all_gather.cpp).
//
// How it works, innermost level first: each level reduce-scatters around its
// ring the blocks its ranks hold partial sums of (at the first level, every
// block): member m ends with the level's sums of the blocks of the ranks with
// m at this level and its coordinates below (ring::level_blocks, several
// ranges a chunk); the next level reduces those among its group, and the
// outermost leaves each rank the full sum of its own block. The first level
// with more than one rank reduces the inputs, the ones above the partial sums
// in the buffer. Each byte of a node's partial sums leaves it once. After the
// levels above returned, a level's ranks pass on their outcome
// (RankRun::share: a barrier in-process; between processes the failure
// notices end the peers' waits, and a rank whose own rings succeeded may
// return ok and fail its next collective).
#include "ring/algorithms.hpp"
#include "ring/passes.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {
namespace {

constexpr std::array<const char*, 3> kPhases = {"local reduce-scatter", "node reduce-scatter",
                                                "reduce-scatter across"};

Status levels_reduce_scatter(std::span<RankRun* const> levels, const LevelGrid& grid,
                             std::size_t depth, std::span<const Range> blocks, bool reduced) {
  RankRun& level = *levels[depth];
  std::vector<std::vector<Range>> chunks(level.world());
  for (std::size_t m = 0; m < level.world(); ++m)
    for (std::size_t g : level_blocks(grid.mine, grid.worlds, depth, m))
      chunks[m].push_back(blocks[g]);
  levels.front()->phase(level_phase(kPhases, depth, levels.size()));
  RUCCL_TRY(ring_pass(level, chunks, reduce_scatter_step,
                      reduced ? Combine::kReduce : Combine::kReduceInput,
                      reduced ? Source::kSend : Source::kInput));
  if (depth + 1 == levels.size()) return Status::ok();
  Status above =
      levels_reduce_scatter(levels, grid, depth + 1, blocks, reduced || level.world() > 1);
  return level.share(std::move(above));
}

}  // namespace

Status hierarchical_reduce_scatter(std::span<RankRun* const> levels,
                                   std::span<const Range> blocks) {
  const LevelGrid grid = level_grid(levels);
  if (levels.empty() || grid.ranks != blocks.size())
    return Status(ErrorCode::kInternal,
                  "hierarchical reduce-scatter: " + std::to_string(blocks.size()) +
                      " blocks for levels of " + std::to_string(grid.ranks) + " ranks");
  return levels_reduce_scatter(levels, grid, 0, blocks, false);
}

}  // namespace ruccl::ring
