#include "ruccl/types.hpp"

#include <iterator>

#include "ruccl/communicator.hpp"  // collective_name (here: the fuzz targets link no communicator)

namespace ruccl {

std::string_view collective_name(CollectiveKind kind) noexcept {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kReduce: return "reduce";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kAllToAllV: return "all_to_all_v";
  }
  return "?";
}

std::string_view dtype_name(DataType dtype) noexcept {
  switch (dtype) {
    case DataType::kF16: return "f16";
    case DataType::kBF16: return "bf16";
    case DataType::kF32: return "f32";
    case DataType::kF64: return "f64";
    case DataType::kI8: return "i8";
    case DataType::kU8: return "u8";
    case DataType::kI32: return "i32";
    case DataType::kI64: return "i64";
    case DataType::kU64: return "u64";
    case DataType::kBytes: return "bytes";
  }
  return "?";
}

std::string_view op_name(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMean: return "mean";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kBand: return "band";
    case ReduceOp::kBor: return "bor";
    case ReduceOp::kBxor: return "bxor";
    case ReduceOp::kLand: return "land";
    case ReduceOp::kLor: return "lor";
    case ReduceOp::kLxor: return "lxor";
  }
  return "?";
}

std::string_view device_kind_name(DeviceKind kind) noexcept {
  switch (kind) {
    case DeviceKind::kHost: return "host";
    case DeviceKind::kCuda: return "cuda";
  }
  return "?";
}

std::string device_name(DeviceId device) {
  return std::string(device_kind_name(device.kind)) + ":" + std::to_string(device.index);
}

// (Per call on every path: a range check, not the names. The ops are the
// enumerators kSum..kLxor; the integer-only ones kBand..kLxor, as listed.)
static_assert(static_cast<int>(ReduceOp::kLxor) == 10 && std::size(kIntegerOnlyOps) == 6 &&
              kIntegerOnlyOps[0] == ReduceOp::kBand && kIntegerOnlyOps[5] == ReduceOp::kLxor);

std::optional<DataType> parse_dtype(std::string_view name) {
  for (DataType d : kAllDataTypes)
    if (dtype_name(d) == name) return d;
  return std::nullopt;
}

std::optional<ReduceOp> parse_op(std::string_view name) {
  for (ReduceOp op : kAllReduceOps)
    if (op_name(op) == name) return op;
  for (ReduceOp op : kIntegerOnlyOps)
    if (op_name(op) == name) return op;
  return std::nullopt;
}

}  // namespace ruccl
