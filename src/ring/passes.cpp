#include "ring/passes.hpp"

#include <vector>

namespace ruccl::ring {

Status ring_pass(RankRun& run, std::span<const Range> chunks,
                 RingStep (*pattern)(std::size_t, std::size_t, std::size_t), Combine combine,
                 Source first_source) {
  const std::size_t world = run.world();
  const std::size_t rank = run.rank();
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  for (std::size_t step = 0; step + 1 < world; ++step) {
    const RingStep s = pattern(rank, world, step);
    const Source source = step == 0 ? first_source : Source::kSend;
    const Range out = chunks[s.send_chunk];
    const Range in = chunks[s.recv_chunk];
    sends.clear();
    recvs.clear();
    append_messages(sends, ring_next(rank, world), out, out.offset, run.message_elements(), source);
    append_messages(recvs, ring_prev(rank, world), in, in.offset, run.message_elements(), source);
    RUCCL_TRY(run.step(sends, recvs, combine));
  }
  return Status::ok();
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

}  // namespace ruccl::ring
