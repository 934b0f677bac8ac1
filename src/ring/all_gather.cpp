// Ring all-gather.
//
// How it works: rank r starts with chunk r in place. At step s (0..n-2) it
// forwards chunk r-s to ring_next and receives chunk r-s-1 from ring_prev,
// overwriting that range. After n-1 steps every rank holds every chunk.
#include "ring/algorithms.hpp"
#include "ring/passes.hpp"

namespace ruccl::ring {

Status ring_all_gather(RankRun& run, std::span<const Range> chunks) {
  return ring_pass(run, chunks, all_gather_step, Combine::kCopy, Source::kSend);
}

}  // namespace ruccl::ring
