#include "core/fingerprint.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "ring/schedule.hpp"

namespace ruccl::core {
namespace {

std::string join_ranks(const std::vector<std::size_t>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

// The first rank whose `field` differs from rank `ref`'s, as an error naming both.
// Ranks for which `takes_part` is false are not compared.
template <typename Get, typename Show, typename Part>
Status first_difference(std::span<const Request* const> reqs, std::size_t ref, ErrorCode code,
                        const char* what, const std::string& prefix, Get get, Show show,
                        Part takes_part) {
  for (std::size_t r = 0; r < reqs.size(); ++r) {
    if (r == ref || !takes_part(*reqs[r])) continue;
    if (!(get(*reqs[r]) == get(*reqs[ref]))) {
      return Status(code, prefix + ": rank " + std::to_string(r) + " passed " + what + " " +
                              show(*reqs[r]) + ", rank " + std::to_string(ref) + " passed " +
                              show(*reqs[ref]));
    }
  }
  return Status::ok();
}

const auto kEveryRank = [](const Request&) { return true; };

}  // namespace

std::string describe(std::uint64_t seq, CollectiveKind kind) {
  return "collective #" + std::to_string(seq) + " (" + std::string(collective_name(kind)) + ")";
}

bool same_plan(const Plan& a, const Plan& b) {
  return a.root == b.root && a.dtype == b.dtype && a.geometry.count == b.geometry.count &&
         a.geometry.unit == b.geometry.unit && a.geometry.rows == b.geometry.rows &&
         a.shape == b.shape && a.a2a_rows == b.a2a_rows &&
         a.message_elements == b.message_elements && a.one_shot == b.one_shot;
}

Result<Plan> agree(std::span<const Request* const> reqs,
                   std::span<const Result<Geometry>* const> locals, std::uint64_t seq) {
  const std::size_t world = reqs.size();
  if (world == 0 || locals.size() != world)
    return Status(ErrorCode::kInternal, "collective #" + std::to_string(seq) + ": agreement over " +
                                            std::to_string(world) + " requests and " +
                                            std::to_string(locals.size()) + " local outcomes");
  const Request& r0 = *reqs[0];
  // 1. Every rank calls the same collective (else the order differs somewhere).
  for (std::size_t r = 1; r < world; ++r) {
    if (reqs[r]->kind != r0.kind)
      return Status(ErrorCode::kCollectiveMismatch,
                    "collective #" + std::to_string(seq) + ": rank " + std::to_string(r) +
                        " called " + std::string(collective_name(reqs[r]->kind)) +
                        ", rank 0 called " + std::string(collective_name(r0.kind)) +
                        "; all ranks must call the same collectives in the same order");
  }
  const std::string what = describe(seq, r0.kind);
  // 2. Local errors: the lowest failing rank's error, for everyone.
  for (std::size_t r = 0; r < world; ++r) {
    if (!locals[r]->is_ok()) return locals[r]->status().with_context(what + " failed on rank " + std::to_string(r));
  }
  // 3. The fingerprint. A broadcast is compared against its one sender, and its
  //    value-form receivers (no tensor at all) take the sender's dtype.
  Plan plan;
  auto unusable = [&](std::size_t r, const std::string& why) {
    return Status(ErrorCode::kProtocolError,
                  what + ": the fingerprint of rank " + std::to_string(r) + " " + why);
  };
  if (r0.kind == CollectiveKind::kReduce) {
    // Every root is compared with rank 0's below; rank 0's must index the world.
    if (r0.root >= world)
      return unusable(0, "names root " + std::to_string(r0.root) + " outside a world of " +
                             std::to_string(world));
    plan.root = r0.root;
  }
  if (r0.kind == CollectiveKind::kAllToAllV) {
    for (std::size_t r = 0; r < world; ++r)
      if (reqs[r]->send_counts.size() != world)
        return unusable(r, "holds " + std::to_string(reqs[r]->send_counts.size()) +
                               " send counts for a world of " + std::to_string(world));
  }
  if (r0.kind == CollectiveKind::kBroadcast) {
    std::vector<std::size_t> senders;
    for (std::size_t r = 0; r < world; ++r)
      if (reqs[r]->has_input) senders.push_back(r);
    if (senders.size() != 1)
      return Status(ErrorCode::kBroadcastSenderCount,
                    what + " has " + std::to_string(senders.size()) + " senders" +
                        (senders.empty() ? "" : " (ranks " + join_ranks(senders) + ")") +
                        "; exactly one rank must pass a tensor");
    plan.root = senders[0];
  }
  const std::size_t ref = r0.kind == CollectiveKind::kBroadcast ? plan.root : 0;
  RUCCL_TRY(first_difference(
      reqs, ref, ErrorCode::kDtypeMismatch, "dtype", what, [](const Request& q) { return q.dtype; },
      [](const Request& q) { return std::string(dtype_name(q.dtype)); },
      [](const Request& q) { return q.has_input || q.out.has_value(); }));
  if (is_reducing(r0.kind))
    RUCCL_TRY(first_difference(reqs, 0, ErrorCode::kOpMismatch, "op", what,
                               [](const Request& q) { return q.op; },
                               [](const Request& q) { return std::string(op_name(q.op)); },
                               kEveryRank));
  if (r0.kind == CollectiveKind::kReduce)
    RUCCL_TRY(first_difference(reqs, 0, ErrorCode::kRootMismatch, "root", what,
                               [](const Request& q) { return q.root; },
                               [](const Request& q) { return std::to_string(q.root); },
                               kEveryRank));
  RUCCL_TRY(first_difference(reqs, 0, ErrorCode::kInvalidArgument, "max_chunk_bytes", what,
                             [](const Request& q) { return q.max_chunk_bytes; },
                             [](const Request& q) { return std::to_string(q.max_chunk_bytes); },
                             kEveryRank));

  const Request& lead = *reqs[plan.root];
  plan.dtype = lead.dtype;
  plan.geometry = locals[plan.root]->value();
  plan.shape = lead.shape;
  // Receivers of the value form allocate the sender's count.
  if (!checked_mul(plan.geometry.count, dtype_size(plan.dtype)))
    return unusable(plan.root, "claims " + std::to_string(plan.geometry.count) +
                                   " elements, whose byte size overflows size_t");

  // 4. Shapes. Broadcast receivers with their own output must match the sender's
  //    count; all_to_all_v needs equal rows; the others need equal shapes.
  for (std::size_t r = 0; r < world; ++r) {
    const Request& q = *reqs[r];
    const Geometry& g = locals[r]->value();
    bool same = true;
    if (r0.kind == CollectiveKind::kBroadcast) {
      same = !q.out || g.count == plan.geometry.count;
    } else if (r0.kind == CollectiveKind::kAllToAllV) {
      same = g.unit == plan.geometry.unit;
    } else {
      same = q.shape == lead.shape;
    }
    if (!same)
      return Status(ErrorCode::kShapeMismatch,
                    what + ": rank " + std::to_string(r) + " passed shape " +
                        shape_string(q.shape) + " (" + std::to_string(g.count) +
                        " elements), rank " + std::to_string(plan.root) + " passed " +
                        shape_string(lead.shape) + " (" + std::to_string(plan.geometry.count) +
                        " elements)");
  }

  // 5. all_to_all_v: the rows matrix, and receivers' capacity.
  if (r0.kind == CollectiveKind::kAllToAllV) {
    for (std::size_t r = 0; r < world; ++r) plan.a2a_rows.push_back(reqs[r]->send_counts);
    for (std::size_t d = 0; d < world; ++d) {
      std::optional<std::size_t> rows = 0;
      for (std::size_t s = 0; s < world && rows; ++s) rows = checked_add(*rows, plan.a2a_rows[s][d]);
      const auto elements = rows ? checked_mul(*rows, plan.geometry.unit) : std::nullopt;
      if (!elements || !checked_mul(*elements, dtype_size(plan.dtype)))
        return Status(ErrorCode::kInvalidArgument,
                      what + ": the rows rank " + std::to_string(d) + " receives overflow size_t");
      const auto& out = reqs[d]->out;
      if (out && out->count() < *elements)
        return Status(ErrorCode::kShapeMismatch,
                      what + ": rank " + std::to_string(d) + " receives " + std::to_string(*rows) +
                          " rows of " + std::to_string(plan.geometry.unit) +
                          " element(s) but its output holds " + std::to_string(out->count()) +
                          " elements");
    }
  }

  // 6. The budget: one message must carry one element/row, unless nothing moves.
  bool any_data = false;
  for (std::size_t r = 0; r < world; ++r) any_data = any_data || locals[r]->value().count != 0;
  if (any_data) {
    auto m = ring::message_elements(r0.max_chunk_bytes, dtype_size(plan.dtype),
                                    std::max<std::size_t>(1, plan.geometry.unit));
    if (!m.is_ok()) return m.status().with_context(what);
    plan.message_elements = m.value();
  }
  return plan;
}

}  // namespace ruccl::core
