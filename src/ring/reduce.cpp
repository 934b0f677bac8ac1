// Pipelined chain reduce.
//
// How it works: the mirror of the chain broadcast. The chain starts at the rank
// after the root and ends at the root (position n-1). At step k, position p
// sends its partial sum of segment k-p to position p+1, which adds its own input
// to it into its buffer; by the time a segment reaches the root it holds every
// rank's contribution. The head sends straight from its input and needs no
// buffer. segments + n - 2 steps; each rank sends the tensor once.
#include "ring/algorithms.hpp"
#include "ring/passes.hpp"

namespace ruccl::ring {

Status chain_reduce(RankRun& run, std::span<const Range> segments, std::size_t root) {
  return chain_pass(run, segments, root, /*root_is_head=*/false, Combine::kReduceInput,
                    Source::kInput);
}

}  // namespace ruccl::ring
