// Pipelined chain broadcast.
//
// How it works: the ranks form a chain in ring order starting at the root
// (position 0). The tensor is cut into segments. At step k, position p forwards
// segment k-p to position p+1, so up to n-1 segments are in flight at once and
// the whole takes segments + n - 2 steps. The root reads from its send buffer
// (its input); every other rank receives into and forwards from its output.
#include "ring/algorithms.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {

Status chain_broadcast(RankRun& run, std::span<const Range> segments, std::size_t root) {
  const std::size_t world = run.world();
  const std::size_t pos = broadcast_position(run.rank(), root, world);
  const std::size_t steps = chain_steps(world, segments.size());
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  for (std::size_t step = 0; step < steps; ++step) {
    sends.clear();
    recvs.clear();
    if (auto seg = chain_send_segment(pos, world, segments.size(), step)) {
      const Range r = segments[*seg];
      append_messages(sends, chain_rank(pos + 1, root, world, true), r, r.offset,
                      run.message_elements());
    }
    if (auto seg = chain_recv_segment(pos, world, segments.size(), step)) {
      const Range r = segments[*seg];
      append_messages(recvs, chain_rank(pos - 1, root, world, true), r, r.offset,
                      run.message_elements());
    }
    RUCCL_TRY(run.step(sends, recvs, Combine::kCopy));
  }
  return Status::ok();
}

}  // namespace ruccl::ring
