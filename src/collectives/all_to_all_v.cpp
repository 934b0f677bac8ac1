// all_to_all_v: rank s sends send_counts[d] rows to each rank d; each rank
// gets the rows sent to it, in source order, with their counts.
//   checks     one send count per rank, summing to the input's rows; the
//              output (out-of-place only) must not overlap the input.
//   agreement  equal row widths and dtype; the [src][dst] rows matrix, and
//              every receiver's capacity for its rows.
//   layout     send = input, recv = output (rows in source order).
//   algorithm  pairwise exchange (ring/all_to_all_v.cpp).
#include <optional>

#include "collectives/collective.hpp"
#include "collectives/execution.hpp"
#include "ring/algorithms.hpp"

namespace ruccl::core {
namespace {

Status check_geometry(const Request& req, const Geometry& g, std::size_t rank, std::size_t world) {
  if (req.send_counts.size() != world)
    return invalid(rank, "passed " + std::to_string(req.send_counts.size()) +
                             " send counts for a world of " + std::to_string(world));
  std::size_t total = 0;
  for (std::size_t c : req.send_counts) {
    auto t = checked_add(total, c);
    if (!t) return invalid(rank, "passed send counts whose sum overflows size_t");
    total = *t;
  }
  if (total != g.rows)
    return Status(ErrorCode::kShapeMismatch,
                  "rank " + std::to_string(rank) + " passed send counts summing to " +
                      std::to_string(total) + " rows but its input has " + std::to_string(g.rows) +
                      " rows");
  return Status::ok();
}

Status check_buffers(const Request& req, const Geometry& g, std::size_t rank, DeviceId device) {
  if (req.out && g.count != 0 && req.out->data != nullptr) {
    // Peers read the input while the output is written: they must not overlap.
    const auto* in = static_cast<const std::byte*>(req.in.data);
    const auto* out = static_cast<const std::byte*>(req.out->data);
    const std::size_t es = dtype_size(req.dtype);
    const std::size_t out_count = shape_count(req.out->shape).value_or(0);
    if (in < out + out_count * es && out < in + g.count * es)
      return invalid(rank,
                     "passed overlapping input and output buffers; all_to_all_v is "
                     "out-of-place only");
  }
  // Any output size will do here: agreement checks it holds the rows received.
  if (req.out) RUCCL_TRY(check_view(*req.out, req.dtype, "output", rank, device));
  return Status::ok();
}

Status agree_first(std::span<const Request* const> reqs, const std::string& what, Plan&) {
  const std::size_t world = reqs.size();
  for (std::size_t r = 0; r < world; ++r)
    if (reqs[r]->send_counts.size() != world)
      return Status(ErrorCode::kProtocolError,
                    what + ": the fingerprint of rank " + std::to_string(r) + " holds " +
                        std::to_string(reqs[r]->send_counts.size()) +
                        " send counts for a world of " + std::to_string(world));
  return Status::ok();
}

bool same_shape(const Request&, const Geometry& g, const Request&, const Plan& plan) {
  return g.unit == plan.geometry.unit;
}

// The rows matrix, and receivers' capacity.
Status agree_last(std::span<const Request* const> reqs, const std::string& what, Plan& plan) {
  const std::size_t world = reqs.size();
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
      return Status(ErrorCode::kShapeMismatch, what + ": rank " + std::to_string(d) + " receives " +
                                                   std::to_string(*rows) + " rows of " +
                                                   std::to_string(plan.geometry.unit) +
                                                   " element(s) but its output holds " +
                                                   std::to_string(out->count()) + " elements");
  }
  return Status::ok();
}

Status setup(Execution& x) {
  std::size_t rows = 0;
  for (std::size_t s = 0; s < x.world; ++s) {
    rows += x.plan.a2a_rows[s][x.rank];
    x.outcome.recv_counts.push_back(x.plan.a2a_rows[s][x.rank]);
  }
  auto recv = x.output(rows * x.geo.unit);
  RUCCL_TRY(recv);
  x.me.send = x.req.in.data;
  x.me.send_count = x.geo.count;
  x.me.recv = recv.value();
  x.me.recv_count = x.req.out ? x.req.out->count() : rows * x.geo.unit;
  x.out_rows = rows;
  return Status::ok();
}

Status run(Execution& x, const Levels& levels) {
  return ring::pairwise_all_to_all_v(levels.run, x.plan.a2a_rows, x.geo.unit);
}

Status complete(Execution& x, std::optional<Shape>& shape) {
  shape = with_rows(x.req.in.shape, x.out_rows);
  return Status::ok();
}

}  // namespace

const CollectiveRules kAllToAllVRules = {
    .kind = CollectiveKind::kAllToAllV,
    .row_split = true,
    .check_geometry = check_geometry,
    .check_buffers = check_buffers,
    .agree_first = agree_first,
    .same_shape = same_shape,
    .agree_last = agree_last,
    .setup = setup,
    .run = run,
    .complete = complete,
};

}  // namespace ruccl::core
