// reduce: the root gets the reduction of all inputs.
//   checks     the op must be reducible; the root must index the world; the
//              root's output holds as many elements as the input.
//   agreement  equal shapes, dtype, op and root (rank 0's root must index the world).
//   layout     root: work = output; chain head: its input only; others (in
//              a hierarchy every rank but the root): work = scratch for the
//              partial sums.
//   algorithm  the pipelined chain (ring/reduce.cpp), or hierarchical: the
//              chain level by level, innermost first (ring/hierarchical_reduce.cpp).
#include "collectives/collective.hpp"
#include "collectives/execution.hpp"
#include "ring/algorithms.hpp"
#include "ring/schedule.hpp"

namespace ruccl::core {
namespace {

Status check_arguments(const Request& req, std::size_t rank, std::size_t world) {
  if (req.root >= world)
    return invalid(rank, "passed root " + std::to_string(req.root) + " outside a world of " +
                             std::to_string(world));
  return Status::ok();
}

std::optional<std::size_t> output_count(const Request& req, const Geometry& g, std::size_t rank,
                                        std::size_t) {
  if (req.root != rank) return std::nullopt;  // only the root gets an output
  return g.count;
}

Status agree_first(std::span<const Request* const> reqs, const std::string& what, Plan& plan) {
  // Every root is compared with rank 0's (agree_fields); rank 0's must index the world.
  const std::size_t world = reqs.size();
  if (reqs[0]->root >= world)
    return Status(ErrorCode::kProtocolError, what + ": the fingerprint of rank 0 names root " +
                                                 std::to_string(reqs[0]->root) +
                                                 " outside a world of " + std::to_string(world));
  plan.root = reqs[0]->root;
  return Status::ok();
}

Status agree_fields(std::span<const Request* const> reqs, const std::string& what) {
  return first_difference(
      reqs, 0, ErrorCode::kRootMismatch, "root", what, [](const Request& q) { return q.root; },
      [](const Request& q) { return std::to_string(q.root); }, kEveryRank);
}

Status setup(Execution& x) {
  const std::size_t n = x.geo.count;
  if (x.rank == x.plan.root) {
    auto work = x.output(n);
    RUCCL_TRY(work);
    if (x.world == 1) RUCCL_TRY(x.copy(work.value(), x.req.in.data, n));
    return x.use(work.value(), n);
  }
  // The flat chain's head reads only its input; in a hierarchy every rank but
  // the root may hold partial sums on their way up.
  if (x.job.algorithm != Algorithm::kHierarchical &&
      ring::reduce_position(x.rank, x.plan.root, x.world) == 0)
    return Status::ok();
  auto work = x.scratch(n);
  RUCCL_TRY(work);
  return x.use(work.value(), n);
}

Status run(Execution& x, const Levels& levels) {
  std::array<ring::RankRun*, 3> held{};
  if (auto nested = levels.nested(held); !nested.empty())
    return ring::hierarchical_reduce(nested, x.segments(), x.plan.root);
  return ring::chain_reduce(levels.run, x.segments(), x.plan.root);
}

Status complete(Execution& x, std::optional<Shape>& shape) {
  if (x.rank != x.plan.root) {
    shape.reset();
    return Status::ok();
  }
  return x.scale_if_mean(x.me.recv, x.geo.count);
}

}  // namespace

const CollectiveRules kReduceRules = {
    .kind = CollectiveKind::kReduce,
    .reducing = true,
    .check_arguments = check_arguments,
    .output_count = output_count,
    .agree_first = agree_first,
    .agree_fields = agree_fields,
    .setup = setup,
    .run = run,
    .complete = complete,
};

}  // namespace ruccl::core
