// The agreement common to every collective; each kind's own comparisons
// are in src/collectives (CollectiveRules::agree_first, agree_fields,
// same_shape, agree_last).
#include "core/agreement.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "collectives/collective.hpp"
#include "ring/schedule.hpp"

namespace ruccl::core {
std::string describe(std::uint64_t seq, CollectiveKind kind) {
  return "collective #" + std::to_string(seq) + " (" + std::string(collective_name(kind)) + ")";
}

std::string describe(std::uint64_t seq, std::optional<CollectiveKind> kind) {
  return kind ? describe(seq, *kind) : "collective #" + std::to_string(seq);
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
    if (!locals[r]->is_ok())
      return locals[r]->status().with_context(what + " failed on rank " + std::to_string(r));
  }
  // 3. The fingerprint. A broadcast is compared against its one sender, and its
  //    value-form receivers (no tensor at all) take the sender's dtype.
  const CollectiveRules& kind = rules(r0.kind);
  Plan plan;
  if (kind.agree_first) RUCCL_TRY(kind.agree_first(reqs, what, plan));
  const std::size_t ref = kind.compare_to_root ? plan.root : 0;
  RUCCL_TRY(first_difference(
      reqs, ref, ErrorCode::kDtypeMismatch, "dtype", what, [](const Request& q) { return q.dtype; },
      [](const Request& q) { return std::string(dtype_name(q.dtype)); },
      [](const Request& q) { return q.has_input || q.out.has_value(); }));
  if (kind.reducing)
    RUCCL_TRY(first_difference(
        reqs, 0, ErrorCode::kOpMismatch, "op", what, [](const Request& q) { return q.op; },
        [](const Request& q) { return std::string(op_name(q.op)); }, kEveryRank));
  if (kind.agree_fields) RUCCL_TRY(kind.agree_fields(reqs, what));
  RUCCL_TRY(first_difference(
      reqs, 0, ErrorCode::kInvalidArgument, "max_chunk_bytes", what,
      [](const Request& q) { return q.max_chunk_bytes; },
      [](const Request& q) { return std::to_string(q.max_chunk_bytes); }, kEveryRank));

  const Request& lead = *reqs[plan.root];
  plan.dtype = lead.dtype;
  plan.geometry = locals[plan.root]->value();
  plan.shape = lead.shape;
  // Receivers of the value form allocate the sender's count.
  if (!checked_mul(plan.geometry.count, dtype_size(plan.dtype)))
    return Status(ErrorCode::kProtocolError, what + ": the fingerprint of rank " +
                                                 std::to_string(plan.root) + " claims " +
                                                 std::to_string(plan.geometry.count) +
                                                 " elements, whose byte size overflows size_t");

  // 4. Shapes: equal, unless the kind says otherwise (a broadcast receiver's
  //    own output must hold the sender's count; all_to_all_v needs equal rows).
  for (std::size_t r = 0; r < world; ++r) {
    const Request& q = *reqs[r];
    const Geometry& g = locals[r]->value();
    const bool same = kind.same_shape ? kind.same_shape(q, g, lead, plan) : q.shape == lead.shape;
    if (!same)
      return Status(ErrorCode::kShapeMismatch,
                    what + ": rank " + std::to_string(r) + " passed shape " +
                        shape_string(q.shape) + " (" + std::to_string(g.count) +
                        " elements), rank " + std::to_string(plan.root) + " passed " +
                        shape_string(lead.shape) + " (" + std::to_string(plan.geometry.count) +
                        " elements)");
  }

  // 5. What the plan holds for this kind alone (all_to_all_v's rows matrix).
  if (kind.agree_last) RUCCL_TRY(kind.agree_last(reqs, what, plan));

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
