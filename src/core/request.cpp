// The local checks common to every collective; each kind's own are in
// src/collectives (CollectiveRules::check_arguments, check_geometry,
// check_buffers, output_count).
#include "core/request.hpp"

#include <string>

#include "collectives/collective.hpp"

namespace ruccl::core {
// Count and byte size of a view, or an error naming what overflows or is null.
Result<std::size_t> check_view(const TensorView& v, DataType dtype, const char* name,
                               std::size_t rank, DeviceId device) {
  const auto count = shape_count(v.shape);
  if (!count || !checked_mul(*count, dtype_size(dtype)))
    return invalid(rank, std::string("passed ") + name + " of shape " + shape_string(v.shape) +
                             " whose byte size overflows size_t");
  if (*count != 0 && v.data == nullptr)
    return invalid(rank, std::string("passed a null ") + name + " pointer for " +
                             std::to_string(*count) + " elements");
  if (v.device != device)
    return invalid(rank, std::string("passed ") + name + " on " + device_name(v.device) +
                             " but its rank's device is " + device_name(device));
  if (v.dtype != dtype)
    return Status(ErrorCode::kDtypeMismatch,
                  "rank " + std::to_string(rank) + " passed " + name + " of dtype " +
                      std::string(dtype_name(v.dtype)) + " for a " +
                      std::string(dtype_name(dtype)) + " collective");
  return *count;
}

bool is_reducing(CollectiveKind kind) { return rules(kind).reducing; }

std::size_t row_unit(const Shape& shape) {
  if (shape.size() <= 1) return 1;
  return shape_count(std::span(shape).subspan(1)).value_or(0);
}

Status check_reducible(DataType dtype, ReduceOp op) {
  if (reducible(dtype, op)) return Status::ok();  // (before any message is built)
  if (!is_valid(dtype)) return Status(ErrorCode::kInvalidArgument, "unknown dtype value");
  if (!is_valid(op)) return Status(ErrorCode::kInvalidArgument, "unknown reduction op value");
  if (dtype == DataType::kBytes)
    return Status(ErrorCode::kInvalidArgument,
                  "dtype bytes is opaque (packed formats) and cannot be reduced with " +
                      std::string(op_name(op)) + "; use broadcast, all_gather or all_to_all_v");
  if (is_floating(dtype) && is_integer_only(op))
    return Status(ErrorCode::kInvalidArgument,
                  "op " + std::string(op_name(op)) +
                      " takes integer dtypes only (i8 u8 i32 i64 u64), not " +
                      std::string(dtype_name(dtype)));
  return Status::ok();
}

Status check_record(const Request& req, std::size_t rank, std::size_t world) {
  const CollectiveRules& kind = rules(req.kind);
  if (!is_valid(req.dtype)) return invalid(rank, "passed an unknown dtype value");
  if (kind.reducing) {
    Status s = check_reducible(req.dtype, req.op);
    if (!s.is_ok()) return s.with_context("rank " + std::to_string(rank));
  }
  if (kind.check_arguments) RUCCL_TRY(kind.check_arguments(req, rank, world));
  if (req.max_chunk_bytes == 0)
    return Status(ErrorCode::kBudgetTooSmall,
                  "rank " + std::to_string(rank) + " passed max_chunk_bytes=0");
  return Status::ok();
}

Geometry geometry_of(CollectiveKind kind, const Shape& shape, std::size_t count) {
  Geometry g;
  g.count = count;
  if (rules(kind).row_split) {
    g.unit = row_unit(shape);  // 0 for zero-width rows: nothing moves, but rows count
    g.rows = shape.empty() ? 1 : shape[0];
  } else {
    g.rows = count;
  }
  return g;
}

Status check_record_geometry(const Request& req, const Geometry& g, std::size_t rank,
                             std::size_t world) {
  if (!checked_mul(g.count, dtype_size(req.dtype)))
    return invalid(rank, "claims " + std::to_string(g.count) +
                             " elements, whose byte size overflows size_t");
  const CollectiveRules& kind = rules(req.kind);
  if (kind.check_geometry) RUCCL_TRY(kind.check_geometry(req, g, rank, world));
  return Status::ok();
}

void assign_view(TensorView& to, const TensorView& from) {
  to.data = from.data;
  to.dtype = from.dtype;
  if (!same_sizes(to.shape, from.shape)) to.shape = from.shape;
  to.device = from.device;
  to.stream = from.stream;
}

void assign_output(std::optional<TensorView>& to, const TensorView* from) {
  if (from == nullptr) to.reset();
  else if (to) assign_view(*to, *from);
  else to.emplace(*from);
}

void assign_request(Request& to, const Request& from) {
  to.kind = from.kind;
  to.dtype = from.dtype;
  to.op = from.op;
  to.root = from.root;
  to.has_input = from.has_input;
  if (!same_sizes(to.shape, from.shape)) to.shape = from.shape;
  if (!same_sizes(to.send_counts, from.send_counts)) to.send_counts = from.send_counts;
  to.max_chunk_bytes = from.max_chunk_bytes;
  assign_view(to.in, from.in);
  assign_output(to.out, from.out ? &*from.out : nullptr);
}

bool same_request(const Request& a, const Request& b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.op == b.op && a.root == b.root &&
         a.has_input == b.has_input && a.max_chunk_bytes == b.max_chunk_bytes &&
         a.out.has_value() == b.out.has_value() && same_view(a.in, b.in) &&
         (!a.out || same_view(*a.out, *b.out)) && same_sizes(a.shape, b.shape) &&
         same_sizes(a.send_counts, b.send_counts);
}

Result<Geometry> check_local(const Request& req, std::size_t rank, std::size_t world,
                             DeviceId device) {
  const CollectiveRules& kind = rules(req.kind);
  RUCCL_TRY(check_record(req, rank, world));
  std::size_t count = 0;
  if (req.has_input) {
    auto c = check_view(req.in, req.dtype, "input", rank, device);
    RUCCL_TRY(c);
    count = c.value();
  } else if (req.out) {
    auto c = check_view(*req.out, req.dtype, "output", rank, device);
    RUCCL_TRY(c);
    count = c.value();
  }
  const Shape& shape = req.has_input ? req.in.shape : (req.out ? req.out->shape : req.shape);
  const Geometry g = geometry_of(req.kind, shape, count);
  RUCCL_TRY(check_record_geometry(req, g, rank, world));
  if (kind.check_buffers) RUCCL_TRY(kind.check_buffers(req, g, rank, device));
  if (req.out && req.has_input && kind.output_count) {
    if (const auto want = kind.output_count(req, g, rank, world)) {
      auto out_count = check_view(*req.out, req.dtype, "output", rank, device);
      RUCCL_TRY(out_count);
      if (out_count.value() != *want)
        return Status(ErrorCode::kShapeMismatch,
                      "rank " + std::to_string(rank) + " passed an output of " +
                          std::to_string(out_count.value()) + " elements; " +
                          std::string(collective_name(req.kind)) + " needs " +
                          std::to_string(*want));
    }
  }
  return g;
}

std::size_t expected_output_count(const Request& req, const Geometry& g, std::size_t rank,
                                  std::size_t world) {
  const CollectiveRules& kind = rules(req.kind);
  const auto want = kind.output_count ? kind.output_count(req, g, rank, world) : std::nullopt;
  return want.value_or(g.count);
}

}  // namespace ruccl::core
