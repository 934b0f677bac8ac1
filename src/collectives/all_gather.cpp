// all_gather: every rank gets every rank's input, in rank order, along rows.
//   checks     the gathered byte size must fit size_t; an output holds world
//              times the input's elements.
//   agreement  equal shapes and dtype.
//   layout     work = output [world * count]; the input is copied to the
//              rank's chunk first.
//   algorithm  the ring (ring/all_gather.cpp), or hierarchical: a ring per
//              level, outermost first (ring/hierarchical_all_gather.cpp).
#include "collectives/collective.hpp"
#include "collectives/execution.hpp"
#include "ring/algorithms.hpp"

namespace ruccl::core {
namespace {

Status check_geometry(const Request& req, const Geometry& g, std::size_t rank, std::size_t world) {
  if (!checked_mul(g.count * dtype_size(req.dtype), world))
    return invalid(rank, "passed an all_gather input whose gathered byte size overflows size_t");
  return Status::ok();
}

std::optional<std::size_t> output_count(const Request&, const Geometry& g, std::size_t,
                                        std::size_t world) {
  return g.count * world;
}

Status setup(Execution& x) {
  const std::size_t n = x.geo.count;
  auto work = x.output(n * x.world);
  RUCCL_TRY(work);
  RUCCL_TRY(x.copy(x.at(work.value(), x.rank * n), x.req.in.data, n));
  return x.use(work.value(), n * x.world);
}

Status run(Execution& x, const Levels& levels) {
  std::vector<Range> chunks;
  for (std::size_t r = 0; r < x.world; ++r) chunks.push_back(Range{r * x.geo.count, x.geo.count});
  std::array<ring::RankRun*, 3> held{};
  if (auto nested = levels.nested(held); !nested.empty())
    return ring::hierarchical_all_gather(nested, chunks);
  return ring::ring_all_gather(levels.run, chunks);
}

Status complete(Execution& x, std::optional<Shape>& shape) {
  shape = with_rows(x.req.in.shape, x.geo.rows * x.world);
  return Status::ok();
}

}  // namespace

const CollectiveRules kAllGatherRules = {
    .kind = CollectiveKind::kAllGather,
    .row_split = true,
    .check_geometry = check_geometry,
    .output_count = output_count,
    .setup = setup,
    .run = run,
    .complete = complete,
};

}  // namespace ruccl::core
