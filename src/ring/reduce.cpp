// Pipelined chain reduce.
//
// How it works: the mirror of the chain broadcast. The chain starts at the rank
// after the root and ends at the root (position n-1). At step k, position p
// sends its partial sum of segment k-p to position p+1, which adds its own input
// to it into its buffer; by the time a segment reaches the root it holds every
// rank's contribution. The head sends straight from its input and needs no
// buffer. segments + n - 2 steps; each rank sends the tensor once.
#include "ring/algorithms.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {

Status chain_reduce(RankRun& run, std::span<const Range> segments, std::size_t root) {
  const std::size_t world = run.world();
  const std::size_t pos = reduce_position(run.rank(), root, world);
  const std::size_t steps = chain_steps(world, segments.size());
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  for (std::size_t step = 0; step < steps; ++step) {
    sends.clear();
    recvs.clear();
    if (auto seg = chain_send_segment(pos, world, segments.size(), step)) {
      const Range r = segments[*seg];
      append_messages(sends, chain_rank(pos + 1, root, world, false), r, r.offset,
                      run.message_elements(), pos == 0 ? Source::kInput : Source::kSend);
    }
    if (auto seg = chain_recv_segment(pos, world, segments.size(), step)) {
      const Range r = segments[*seg];
      append_messages(recvs, chain_rank(pos - 1, root, world, false), r, r.offset,
                      run.message_elements(), pos == 1 ? Source::kInput : Source::kSend);
    }
    RUCCL_TRY(run.step(sends, recvs, Combine::kReduceInput));
  }
  return Status::ok();
}

}  // namespace ruccl::ring
