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
#include "ring/passes.hpp"

namespace ruccl::ring {

Status ring_reduce_scatter(RankRun& run, std::span<const Range> chunks) {
  return ring_pass(run, chunks, reduce_scatter_step, Combine::kReduceInput, Source::kInput);
}

}  // namespace ruccl::ring
