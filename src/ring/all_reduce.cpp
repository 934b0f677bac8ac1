// Ring all-reduce = ring reduce-scatter, then ring all-gather (as in the seed).
//
// Each rank sends and receives 2(n-1)/n of the tensor, the bandwidth optimum.
// Chunks are balanced in units (rows), so counts not divisible by the world,
// or smaller than it, give some empty chunks and still work.
#include "ring/algorithms.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {

Status ring_all_reduce(RankRun& run, std::size_t units, std::size_t unit) {
  if (run.world() < 2) return Status::ok();
  const std::vector<Range> chunks = balanced_ranges(units, run.world(), unit);
  run.phase("reduce-scatter");
  RUCCL_TRY(ring_reduce_scatter(run, chunks));
  run.phase("all-gather");
  return ring_all_gather(run, chunks);
}

}  // namespace ruccl::ring
