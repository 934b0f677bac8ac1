// Hierarchical broadcast over nested levels, innermost first (those of the
// hierarchical all-reduce: `local`, this process's ranks; optionally `node`,
// one rank per process of this node with the same local index, joined by the
// node's shared memory; `across`, the ranks with the same index in the next
// level up, joined by the transport).
//
// How it works, outermost level first: the root's column (the ranks that
// share the root's coordinates at every level below the outermost) runs the
// pipelined chain from the root across processes or nodes; then, at each
// level below, the groups whose members share the root's coordinates below it
// run the chain from their member that holds the tensor. So each byte crosses
// between nodes once per node and between the processes of a node once per
// process, and the last hops read another thread's memory in-process. A rank
// that is not in the column of a level takes no part in it (ring::rooted_levels);
// before a level's chain its ranks pass on the outcome of the levels above
// (RankRun::share: a barrier in-process; between processes a failure travels
// as the node's and the transport's failure notices, which end the waits of
// the chain below), so that a failure there reaches every rank below it. The
// levels run a round of at most kRoundSegments segments at a time
// (ring/passes.hpp): a rank off the column waits for no more than a round of
// the levels above at one step's deadline. Every rank forwards from its send
// buffer: the root's input, everyone else's output.
#include "ring/algorithms.hpp"
#include "ring/passes.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {
namespace {

constexpr std::array<const char*, 3> kPhases = {"local broadcast", "node broadcast",
                                                "broadcast across"};

// Levels depth.. of a rank that takes part in level `depth`.
Status levels_broadcast(std::span<RankRun* const> levels, const RootColumn& column,
                        std::size_t depth, std::span<const Range> segments) {
  RankRun& level = *levels[depth];
  if (depth + 1 < levels.size()) {
    Status above = Status::ok();
    if (depth + 1 < column.levels) above = levels_broadcast(levels, column, depth + 1, segments);
    RUCCL_TRY(level.share(std::move(above)));
  }
  levels.front()->phase(level_phase(kPhases, depth, levels.size()));
  return chain_broadcast(level, segments, column.root[depth]);
}

}  // namespace

Status hierarchical_broadcast(std::span<RankRun* const> levels, std::span<const Range> segments,
                              std::size_t root) {
  auto column = root_column(levels, root, "hierarchical broadcast");
  RUCCL_TRY(column);
  return in_rounds(segments, [&](std::span<const Range> round) {
    return levels_broadcast(levels, column.value(), 0, round);
  });
}

}  // namespace ruccl::ring
