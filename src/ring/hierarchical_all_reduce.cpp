// Hierarchical all-reduce over two levels: `local` (the ranks of this process,
// which read each other's memory) and `across` (one rank per process: the ranks
// with the same local index, joined by the transport).
//
// How it works, with D local ranks and P processes:
//   1. reduce-scatter inside the process: local rank d ends with the process's
//      sum of shard d (one of D balanced shards);
//   2. all-reduce of shard d across the P processes, as a ring reduce-scatter
//      then all-gather over P parts of the shard: the D local ranks each run
//      their own inter-process ring, in parallel, over their own transport;
//   3. all-gather inside the process: every local rank ends with every shard.
// Each byte crosses between processes 2(P-1)/P times per shard, as in a ring
// over the P processes, but every process's D ranks share that traffic, and
// the 2(D-1) local steps never leave the process. The local ranks then agree on
// the outcome of step 2 (RankRun::share), so a failure of any one of the D
// rings reaches every local rank before step 3.
// With D == 1 step 1 and 3 vanish and step 2 reads the input directly.
#include "ring/algorithms.hpp"
#include "ring/passes.hpp"

namespace ruccl::ring {

Status hierarchical_all_reduce(RankRun& local, RankRun& across, std::size_t units,
                               std::size_t unit) {
  const std::vector<Range> shards = balanced_ranges(units, local.world(), unit);
  const bool split = local.world() > 1;
  if (split) {
    local.phase("local reduce-scatter");
    RUCCL_TRY(ring_reduce_scatter(local, shards));
  }

  const Range shard = shards[local.rank()];
  std::vector<Range> parts = balanced_ranges(shard.count / unit, across.world(), unit);
  for (Range& p : parts) p.offset += shard.offset;
  // After step 1 the shard's local sum is in the buffer; without it, in the input.
  local.phase("inter-node exchange");
  Status inter = ring_pass(across, parts, reduce_scatter_step,
                           split ? Combine::kReduce : Combine::kReduceInput,
                           split ? Source::kSend : Source::kInput);
  if (inter.is_ok()) inter = ring_all_gather(across, parts);
  RUCCL_TRY(local.share(std::move(inter)));

  if (split) {
    local.phase("local all-gather");
    RUCCL_TRY(ring_all_gather(local, shards));
  }
  return Status::ok();
}

}  // namespace ruccl::ring
