// Hierarchical reduce over nested levels, innermost first (those of the
// hierarchical all-reduce; see hierarchical_broadcast.cpp).
//
// How it works, innermost level first: every group of the innermost level
// runs the pipelined chain towards its member with the root's coordinate
// there, which then holds its group's partial sums; those members, one per
// group, run the chain of the next level towards their member with the root's
// coordinate, and so on up to the root. The first level with more than one
// rank reduces the ranks' inputs; the levels above it reduce the partial sums
// (each rank that takes part there holds its group's in its buffer). After the
// levels above returned, a level's ranks pass on their outcome
// (RankRun::share: a barrier in-process; between processes the failure
// notices), so that a failure there reaches every rank. As the broadcast, it
// runs a round of at most kRoundSegments segments at a time. The partial sums
// group the inputs by level (the same on every run of one world); each byte
// crosses between nodes once per node.
#include "ring/algorithms.hpp"
#include "ring/passes.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {
namespace {

constexpr std::array<const char*, 3> kPhases = {"local reduce", "node reduce", "reduce across"};

// Levels depth.. of a rank that takes part in level `depth`; `reduced`: its
// partial sums are in its buffer (a level below had more than one rank).
Status levels_reduce(std::span<RankRun* const> levels, const RootColumn& column, std::size_t depth,
                     std::span<const Range> segments, bool reduced) {
  RankRun& level = *levels[depth];
  levels.front()->phase(level_phase(kPhases, depth, levels.size()));
  RUCCL_TRY(chain_pass(level, segments, column.root[depth], /*root_is_head=*/false,
                       reduced ? Combine::kReduce : Combine::kReduceInput,
                       reduced ? Source::kSend : Source::kInput));
  if (depth + 1 == levels.size()) return Status::ok();
  Status above = Status::ok();
  if (depth + 1 < column.levels)
    above = levels_reduce(levels, column, depth + 1, segments, reduced || level.world() > 1);
  return level.share(std::move(above));
}

}  // namespace

Status hierarchical_reduce(std::span<RankRun* const> levels, std::span<const Range> segments,
                           std::size_t root) {
  auto column = root_column(levels, root, "hierarchical reduce");
  RUCCL_TRY(column);
  return in_rounds(segments, [&](std::span<const Range> round) {
    return levels_reduce(levels, column.value(), 0, round, false);
  });
}

}  // namespace ruccl::ring
