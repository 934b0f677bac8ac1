#include "ring/passes.hpp"

#include <string>
#include <vector>

namespace ruccl::ring {

namespace {

// The ring pass over chunks that are each a list of ranges: `chunk(i)` is
// chunk i's (a span of Range).
template <typename Chunk>
Status ring_pass_of(RankRun& run, Chunk chunk,
                    RingStep (*pattern)(std::size_t, std::size_t, std::size_t), Combine combine,
                    Source first_source) {
  const std::size_t world = run.world();
  const std::size_t rank = run.rank();
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  for (std::size_t step = 0; step + 1 < world; ++step) {
    const RingStep s = pattern(rank, world, step);
    const Source source = step == 0 ? first_source : Source::kSend;
    sends.clear();
    recvs.clear();
    for (const Range& out : chunk(s.send_chunk))
      append_messages(sends, ring_next(rank, world), out, out.offset, run.message_elements(),
                      source);
    for (const Range& in : chunk(s.recv_chunk))
      append_messages(recvs, ring_prev(rank, world), in, in.offset, run.message_elements(), source);
    RUCCL_TRY(run.step(sends, recvs, combine));
  }
  return Status::ok();
}

}  // namespace

Status ring_pass(RankRun& run, std::span<const Range> chunks,
                 RingStep (*pattern)(std::size_t, std::size_t, std::size_t), Combine combine,
                 Source first_source) {
  return ring_pass_of(
      run, [&](std::size_t i) { return chunks.subspan(i, 1); }, pattern, combine, first_source);
}

Status ring_pass(RankRun& run, std::span<const std::vector<Range>> chunks,
                 RingStep (*pattern)(std::size_t, std::size_t, std::size_t), Combine combine,
                 Source first_source) {
  return ring_pass_of(
      run, [&](std::size_t i) { return std::span<const Range>(chunks[i]); }, pattern, combine,
      first_source);
}

Status chain_pass(RankRun& run, std::span<const Range> segments, std::size_t root,
                  bool root_is_head, Combine combine, Source head_source) {
  const std::size_t world = run.world();
  const std::size_t pos = root_is_head ? broadcast_position(run.rank(), root, world)
                                       : reduce_position(run.rank(), root, world);
  const std::size_t steps = chain_steps(world, segments.size());
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  for (std::size_t step = 0; step < steps; ++step) {
    sends.clear();
    recvs.clear();
    if (auto seg = chain_send_segment(pos, world, segments.size(), step)) {
      const Range r = segments[*seg];
      append_messages(sends, chain_rank(pos + 1, root, world, root_is_head), r, r.offset,
                      run.message_elements(), pos == 0 ? head_source : Source::kSend);
    }
    if (auto seg = chain_recv_segment(pos, world, segments.size(), step)) {
      const Range r = segments[*seg];
      append_messages(recvs, chain_rank(pos - 1, root, world, root_is_head), r, r.offset,
                      run.message_elements(), pos == 1 ? head_source : Source::kSend);
    }
    RUCCL_TRY(run.step(sends, recvs, combine));
  }
  return Status::ok();
}

LevelGrid level_grid(std::span<RankRun* const> levels) {
  LevelGrid g;
  for (const RankRun* level : levels) {
    g.worlds.push_back(level->world());
    g.mine.push_back(level->rank());
    g.ranks *= level->world();
  }
  return g;
}

Result<RootColumn> root_column(std::span<RankRun* const> levels, std::size_t root,
                               const char* what) {
  const LevelGrid grid = level_grid(levels);
  RootColumn c{level_coordinates(root, grid.worlds), 0};
  if (levels.empty() || c.root.size() != levels.size())
    return Status(ErrorCode::kInternal, std::string(what) + ": root " + std::to_string(root) +
                                            " is not a rank of its levels");
  c.levels = rooted_levels(grid.mine, c.root);
  return c;
}

}  // namespace ruccl::ring
