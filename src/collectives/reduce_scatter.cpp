// reduce_scatter: rank r gets its balanced shard of rows of the reduction.
//   checks     the op must be reducible; an output holds the rank's shard.
//   agreement  equal shapes, dtype and op.
//   layout     work = scratch (the input itself if in place: the output is the
//              rank's shard of the input); the rank's shard is copied out at
//              the end. No copy of the input first, except with a world of one.
//   algorithm  the ring (ring/reduce_scatter.cpp), or hierarchical: a ring per
//              level, innermost first (ring/hierarchical_reduce_scatter.cpp).
#include "collectives/collective.hpp"
#include "collectives/execution.hpp"
#include "ring/algorithms.hpp"
#include "ring/schedule.hpp"

namespace ruccl::core {
namespace {

std::optional<std::size_t> output_count(const Request&, const Geometry& g, std::size_t rank,
                                        std::size_t world) {
  return ring::balanced_range(g.rows, world, rank, g.unit).count;
}

Status setup(Execution& x) {
  const std::size_t n = x.geo.count;
  const bool in_place = x.req.out && x.req.out->data == x.at(x.req.in.data, x.shard().offset);
  auto work = in_place ? Result<void*>(x.req.in.data) : x.scratch(n);
  RUCCL_TRY(work);
  if (x.world == 1) RUCCL_TRY(x.copy(work.value(), x.req.in.data, n));
  return x.use(work.value(), n);
}

Status run(Execution& x, const Levels& levels) {
  const std::vector<Range> shards = ring::balanced_ranges(x.geo.rows, x.world, x.geo.unit);
  std::array<ring::RankRun*, 3> held{};
  if (auto nested = levels.nested(held); !nested.empty())
    return ring::hierarchical_reduce_scatter(nested, shards);
  return ring::ring_reduce_scatter(levels.run, shards);
}

Status complete(Execution& x, std::optional<Shape>& shape) {
  const Range mine = x.shard();
  RUCCL_TRY(x.scale_if_mean(x.at(x.me.recv, mine.offset), mine.count));
  auto out = x.output(mine.count);
  RUCCL_TRY(out);
  RUCCL_TRY(x.copy(out.value(), x.at(x.me.recv, mine.offset), mine.count));
  shape = with_rows(x.req.in.shape, ring::balanced_range(x.geo.rows, x.world, x.rank).count);
  return Status::ok();
}

}  // namespace

const CollectiveRules kReduceScatterRules = {
    .kind = CollectiveKind::kReduceScatter,
    .reducing = true,
    .row_split = true,
    .output_count = output_count,
    .setup = setup,
    .run = run,
    .complete = complete,
};

}  // namespace ruccl::core
