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
// that is not in the column of a level takes no part in it; before a level's
// chain its ranks agree on the outcome of the levels above (RankRun::share),
// so that a failure there reaches every rank below it. Every rank forwards
// from its send buffer: the root's input, everyone else's output.
#include "ring/algorithms.hpp"
#include "ring/passes.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {
namespace {

constexpr std::array<const char*, 3> kPhases = {"local broadcast", "node broadcast",
                                                "broadcast across"};

// Levels depth.. of a rank that takes part in level `depth`.
Status levels_broadcast(std::span<RankRun* const> levels, std::span<const std::size_t> root,
                        std::size_t depth, std::span<const Range> segments) {
  RankRun& level = *levels[depth];
  if (depth + 1 < levels.size()) {
    Status above = Status::ok();
    if (level.rank() == root[depth]) above = levels_broadcast(levels, root, depth + 1, segments);
    RUCCL_TRY(level.share(std::move(above)));
  }
  levels.front()->phase(level_phase(kPhases, depth, levels.size()));
  return chain_broadcast(level, segments, root[depth]);
}

}  // namespace

Status hierarchical_broadcast(std::span<RankRun* const> levels, std::span<const Range> segments,
                              std::size_t root) {
  auto at = root_coordinates(levels, root, "hierarchical broadcast");
  RUCCL_TRY(at);
  return levels_broadcast(levels, at.value(), 0, segments);
}

}  // namespace ruccl::ring
