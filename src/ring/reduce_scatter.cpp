// Ring reduce-scatter.
//
// How it works: the tensor is cut into one chunk per rank. At step s (0..n-2),
// rank r sends its partial sum of chunk r-s-1 to ring_next and reduces the
// chunk r-s-2 it receives from ring_prev, combined with its own input, into its
// buffer. Each chunk thus travels n-1 hops around the ring, gathering one rank's
// contribution per hop, and arrives complete at its owner at the last step.
// Step 0 sends straight from the input, and every receive adds the receiver's
// input (Combine::kReduceInput), so the input is never copied first; in-place
// callers simply have input == buffer. Every message is cut to the byte budget;
// the pieces of one chunk share a step.
#include "ring/algorithms.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {

Status ring_reduce_scatter(RankRun& run, std::span<const Range> chunks) {
  const std::size_t world = run.world();
  const std::size_t rank = run.rank();
  const std::size_t next = ring_next(rank, world);
  const std::size_t prev = ring_prev(rank, world);
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  for (std::size_t step = 0; step + 1 < world; ++step) {
    const RingStep s = reduce_scatter_step(rank, world, step);
    sends.clear();
    recvs.clear();
    const Range out = chunks[s.send_chunk];
    const Range in = chunks[s.recv_chunk];
    const Source source = step == 0 ? Source::kInput : Source::kSend;
    append_messages(sends, next, out, out.offset, run.message_elements(), source);
    append_messages(recvs, prev, in, in.offset, run.message_elements(), source);
    RUCCL_TRY(run.step(sends, recvs, Combine::kReduceInput));
  }
  return Status::ok();
}

}  // namespace ruccl::ring
