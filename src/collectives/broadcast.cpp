// broadcast: every rank gets the one sender's tensor.
//   checks     the sender's output holds as many elements as its input.
//   agreement  exactly one rank passes a tensor (it is the root, and leads);
//              receivers with their own output must match its count; the
//              value form's receivers take its dtype and shape.
//   layout     the root sends from its input; the others receive into output.
//              The root's own copy is made at completion.
//   algorithm  the pipelined chain (ring/broadcast.cpp), or hierarchical: the
//              chain level by level, outermost first (ring/hierarchical_broadcast.cpp).
#include "collectives/collective.hpp"
#include "collectives/execution.hpp"
#include "ring/algorithms.hpp"

namespace ruccl::core {
namespace {

std::string join_ranks(const std::vector<std::size_t>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

std::optional<std::size_t> output_count(const Request&, const Geometry& g, std::size_t,
                                        std::size_t) {
  return g.count;
}

Status agree_first(std::span<const Request* const> reqs, const std::string& what, Plan& plan) {
  std::vector<std::size_t> senders;
  for (std::size_t r = 0; r < reqs.size(); ++r)
    if (reqs[r]->has_input) senders.push_back(r);
  if (senders.size() != 1)
    return Status(ErrorCode::kBroadcastSenderCount,
                  what + " has " + std::to_string(senders.size()) + " senders" +
                      (senders.empty() ? "" : " (ranks " + join_ranks(senders) + ")") +
                      "; exactly one rank must pass a tensor");
  plan.root = senders[0];
  return Status::ok();
}

bool same_shape(const Request& q, const Geometry& g, const Request&, const Plan& plan) {
  return !q.out || g.count == plan.geometry.count;
}

Status setup(Execution& x) {
  if (x.rank == x.plan.root) {
    x.me.send = x.req.in.data;
    x.me.send_count = x.geo.count;
    return Status::ok();  // the root's own copy is made at completion
  }
  auto work = x.output(x.plan.geometry.count);
  RUCCL_TRY(work);
  return x.use(work.value(), x.plan.geometry.count);
}

Status run(Execution& x, const Levels& levels) {
  std::array<ring::RankRun*, 3> held{};
  if (auto nested = levels.nested(held); !nested.empty())
    return ring::hierarchical_broadcast(nested, x.segments(), x.plan.root);
  return ring::chain_broadcast(levels.run, x.segments(), x.plan.root);
}

Status complete(Execution& x, std::optional<Shape>& shape) {
  shape = x.plan.shape;
  if (x.rank == x.plan.root) {
    auto out = x.output(x.geo.count);
    RUCCL_TRY(out);
    RUCCL_TRY(x.copy(out.value(), x.req.in.data, x.geo.count));
  }
  return Status::ok();
}

}  // namespace

const CollectiveRules kBroadcastRules = {
    .kind = CollectiveKind::kBroadcast,
    .compare_to_root = true,
    .output_count = output_count,
    .agree_first = agree_first,
    .same_shape = same_shape,
    .setup = setup,
    .run = run,
    .complete = complete,
};

}  // namespace ruccl::core
