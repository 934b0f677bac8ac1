// Pipelined chain broadcast.
//
// How it works: the ranks form a chain in ring order starting at the root
// (position 0). The tensor is cut into segments. At step k, position p forwards
// segment k-p to position p+1, so up to n-1 segments are in flight at once and
// the whole takes segments + n - 2 steps. The root reads from its send buffer
// (its input); every other rank receives into and forwards from its output.
#include "ring/algorithms.hpp"
#include "ring/passes.hpp"

namespace ruccl::ring {

Status chain_broadcast(RankRun& run, std::span<const Range> segments, std::size_t root) {
  return chain_pass(run, segments, root, /*root_is_head=*/true, Combine::kCopy, Source::kSend);
}

}  // namespace ruccl::ring
