// Hierarchical all-gather over nested levels, innermost first (those of the
// hierarchical all-reduce: `local`, this process's ranks; optionally `node`,
// one rank per process of this node with the same local index; `across`, the
// ranks with the same index in the next level up, joined by the transport).
//
// How it works, outermost level first: across processes or nodes, each ring
// (the ranks with one index below it) gathers its members' blocks; then each
// level below gathers, around its ring, the blocks its members gathered above
// (ring::level_blocks: member m's are the blocks of the ranks with m at this
// level and this rank's coordinates below it, several ranges a chunk). So a
// node's blocks leave it once per other node, every rank of the node sending
// its share, and the node's processes exchange the rest through the node's
// shared memory, the last hops in-process. Before each level below the
// outermost, its ranks pass on the outcome of the levels above
// (RankRun::share: a barrier in-process; between processes the node's and the
// transport's failure notices), so that a failure there reaches every rank.
#include "ring/algorithms.hpp"
#include "ring/passes.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {
namespace {
constexpr std::array<const char*, 3> kPhases = {"local all-gather", "node all-gather",
                                                "all-gather across"};
}  // namespace

Status hierarchical_all_gather(std::span<RankRun* const> levels, std::span<const Range> blocks) {
  const LevelGrid grid = level_grid(levels);
  if (levels.empty() || grid.ranks != blocks.size())
    return Status(ErrorCode::kInternal,
                  "hierarchical all-gather: " + std::to_string(blocks.size()) +
                      " blocks for levels of " + std::to_string(grid.ranks) + " ranks");
  Status s = Status::ok();
  std::vector<std::vector<Range>> chunks;
  for (std::size_t depth = levels.size(); depth-- > 0;) {
    RankRun& level = *levels[depth];
    if (depth + 1 < levels.size()) s = level.share(std::move(s));
    if (!s.is_ok()) continue;
    chunks.assign(level.world(), {});
    for (std::size_t m = 0; m < level.world(); ++m)
      for (std::size_t g : level_blocks(grid.mine, grid.worlds, depth, m))
        chunks[m].push_back(blocks[g]);
    levels.front()->phase(level_phase(kPhases, depth, levels.size()));
    s = ring_pass(level, chunks, all_gather_step, Combine::kCopy, Source::kSend);
  }
  return s;
}

}  // namespace ruccl::ring
