// all_reduce: every rank gets the reduction of all inputs.
//   checks     the op must be reducible; an output holds as many elements as the input.
//   agreement  equal shapes, dtype and op.
//   layout     work = output; the ring combines inputs as it goes (no copy of
//              the input first, Combine::kReduceInput), except with a world of
//              one, where no step runs. kMean divides at completion.
//   algorithm  ring (ring/all_reduce.cpp), hierarchical over the local, node
//              (when the world spans nodes) and cross-process levels, or one-shot over the inputs
//              delivered with the fingerprints (core/selection.hpp chooses).
#include "collectives/collective.hpp"
#include "collectives/execution.hpp"
#include "ring/algorithms.hpp"

namespace ruccl::core {
namespace {

std::optional<std::size_t> output_count(const Request&, const Geometry& g, std::size_t,
                                        std::size_t) {
  return g.count;
}

Status setup(Execution& x) {
  const std::size_t n = x.geo.count;
  auto work = x.output(n);
  RUCCL_TRY(work);
  if (x.world == 1) RUCCL_TRY(x.copy(work.value(), x.req.in.data, n));
  return x.use(work.value(), n);
}

Status run(Execution& x, const Levels& levels) {
  if (levels.one_shot) return ring::one_shot_all_reduce(levels.run, x.geo.count);
  std::array<ring::RankRun*, 3> held{};
  if (auto nested = levels.nested(held); !nested.empty())
    return ring::hierarchical_all_reduce(nested, x.geo.count, 1);
  return ring::ring_all_reduce(levels.run, x.geo.count, 1);
}

Status complete(Execution& x, std::optional<Shape>&) {
  return x.scale_if_mean(x.me.recv, x.geo.count);
}

}  // namespace

const CollectiveRules kAllReduceRules = {
    .kind = CollectiveKind::kAllReduce,
    .reducing = true,
    .output_count = output_count,
    .setup = setup,
    .run = run,
    .complete = complete,
};

}  // namespace ruccl::core
