#include "core/request.hpp"

#include <string>

#include "ring/schedule.hpp"

namespace ruccl::core {
namespace {

Status invalid(std::size_t rank, const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, "rank " + std::to_string(rank) + " " + what);
}

bool row_split(CollectiveKind kind) {
  return kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter ||
         kind == CollectiveKind::kAllToAllV;
}

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

}  // namespace

bool is_reducing(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduce ||
         kind == CollectiveKind::kReduceScatter;
}

std::size_t row_unit(const Shape& shape) {
  if (shape.size() <= 1) return 1;
  return shape_count(std::span(shape).subspan(1)).value_or(0);
}

Status check_reducible(DataType dtype, ReduceOp op) {
  if (!is_valid(dtype)) return Status(ErrorCode::kInvalidArgument, "unknown dtype value");
  if (!is_valid(op)) return Status(ErrorCode::kInvalidArgument, "unknown reduction op value");
  if (dtype == DataType::kBytes)
    return Status(ErrorCode::kInvalidArgument,
                  "dtype bytes is opaque (packed formats) and cannot be reduced with " +
                      std::string(op_name(op)) + "; use broadcast, all_gather or all_to_all_v");
  return Status::ok();
}

Result<Geometry> check_local(const Request& req, std::size_t rank, std::size_t world,
                             DeviceId device) {
  if (!is_valid(req.dtype)) return invalid(rank, "passed an unknown dtype value");
  if (is_reducing(req.kind)) {
    Status s = check_reducible(req.dtype, req.op);
    if (!s.is_ok()) return s.with_context("rank " + std::to_string(rank));
  }
  if (req.kind == CollectiveKind::kReduce && req.root >= world)
    return invalid(rank, "passed root " + std::to_string(req.root) + " outside a world of " +
                             std::to_string(world));
  if (req.max_chunk_bytes == 0)
    return Status(ErrorCode::kBudgetTooSmall,
                  "rank " + std::to_string(rank) + " passed max_chunk_bytes=0");

  Geometry g;
  if (req.has_input) {
    auto count = check_view(req.in, req.dtype, "input", rank, device);
    RUCCL_TRY(count);
    g.count = count.value();
  } else if (req.out) {
    auto count = check_view(*req.out, req.dtype, "output", rank, device);
    RUCCL_TRY(count);
    g.count = count.value();
  }
  const Shape& shape = req.has_input ? req.in.shape : (req.out ? req.out->shape : req.shape);
  if (row_split(req.kind)) {
    g.unit = row_unit(shape);  // 0 for zero-width rows: nothing moves, but rows count
    g.rows = shape.empty() ? 1 : shape[0];
  } else {
    g.unit = 1;
    g.rows = g.count;
  }
  if (req.kind == CollectiveKind::kAllGather &&
      !checked_mul(g.count * dtype_size(req.dtype), world))
    return invalid(rank, "passed an all_gather input whose gathered byte size overflows size_t");

  if (req.kind == CollectiveKind::kAllToAllV) {
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
                        std::to_string(total) + " rows but its input has " +
                        std::to_string(g.rows) + " rows");
    if (req.out && g.count != 0 && req.out->data != nullptr) {
      // Peers read the input while the output is written: they must not overlap.
      const auto* in = static_cast<const std::byte*>(req.in.data);
      const auto* out = static_cast<const std::byte*>(req.out->data);
      const std::size_t es = dtype_size(req.dtype);
      const std::size_t out_count = shape_count(req.out->shape).value_or(0);
      if (in < out + out_count * es && out < in + g.count * es)
        return invalid(rank, "passed overlapping input and output buffers; all_to_all_v is "
                             "out-of-place only");
    }
  }
  if (req.out && req.has_input && req.kind != CollectiveKind::kAllToAllV) {
    const bool gets_output = req.kind != CollectiveKind::kReduce || req.root == rank;
    if (gets_output) {
      auto out_count = check_view(*req.out, req.dtype, "output", rank, device);
      RUCCL_TRY(out_count);
      const std::size_t want = expected_output_count(req, g, rank, world);
      if (out_count.value() != want)
        return Status(ErrorCode::kShapeMismatch,
                      "rank " + std::to_string(rank) + " passed an output of " +
                          std::to_string(out_count.value()) + " elements; " +
                          std::string(collective_name(req.kind)) + " needs " +
                          std::to_string(want));
    }
  }
  if (req.out && req.kind == CollectiveKind::kAllToAllV)
    RUCCL_TRY(check_view(*req.out, req.dtype, "output", rank, device));
  return g;
}

std::size_t expected_output_count(const Request& req, const Geometry& g, std::size_t rank,
                                  std::size_t world) {
  switch (req.kind) {
    case CollectiveKind::kAllGather: return g.count * world;
    case CollectiveKind::kReduceScatter: return ring::balanced_range(g.rows, world, rank, g.unit).count;
    default: return g.count;
  }
}

}  // namespace ruccl::core
