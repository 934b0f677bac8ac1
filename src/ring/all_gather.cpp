// Ring all-gather.
//
// How it works: rank r starts with chunk r in place. At step s (0..n-2) it
// forwards chunk r-s to ring_next and receives chunk r-s-1 from ring_prev,
// overwriting that range. After n-1 steps every rank holds every chunk.
#include "ring/algorithms.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {

Status ring_all_gather(RankRun& run, std::span<const Range> chunks) {
  const std::size_t world = run.world();
  const std::size_t rank = run.rank();
  const std::size_t next = ring_next(rank, world);
  const std::size_t prev = ring_prev(rank, world);
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  for (std::size_t step = 0; step + 1 < world; ++step) {
    const RingStep s = all_gather_step(rank, world, step);
    sends.clear();
    recvs.clear();
    const Range out = chunks[s.send_chunk];
    const Range in = chunks[s.recv_chunk];
    append_messages(sends, next, out, out.offset, run.message_elements());
    append_messages(recvs, prev, in, in.offset, run.message_elements());
    RUCCL_TRY(run.step(sends, recvs, Combine::kCopy));
  }
  return Status::ok();
}

}  // namespace ruccl::ring
