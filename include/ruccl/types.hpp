// Element types, reduction ops and device identities.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ruccl {

// Element types. kBytes is an opaque byte for packed formats (NF4/AWQ blocks):
// it moves (broadcast, all_gather, all_to_all_v) but never reduces.
enum class DataType : std::uint8_t { kF16, kBF16, kF32, kF64, kI8, kU8, kI32, kI64, kU64, kBytes };
inline constexpr DataType kAllDataTypes[] = {DataType::kF16, DataType::kBF16, DataType::kF32,
                                             DataType::kF64, DataType::kI8,   DataType::kU8,
                                             DataType::kI32, DataType::kI64,  DataType::kU64,
                                             DataType::kBytes};

// Reduction ops.
// - Sum, Min, Max, Prod: elementwise. f16/bf16 are computed in f32 and rounded once
//   per combine. Integer Sum and Prod wrap modulo 2^bits (two's complement).
//   Float Min and Max return NaN wherever any rank holds NaN.
// - Mean: the Sum divided by the world size. Floats: one correctly rounded division
//   of the (rounded) sum, not a multiplication by 1/n. Integers: the wrapped sum
//   divided by n, truncated toward zero (C++ integer division).
// - Band, Bor, Bxor: bitwise and, or, xor of the integer bit patterns.
// - Land, Lor, Lxor: logical and, or, xor: an element is true when nonzero, and
//   the result is 1 or 0 (MPI's MPI_LAND/LOR/LXOR). A world of one rank
//   combines nothing, so there the result is the input unchanged (as in MPI).
// The six bitwise and logical ops take integer dtypes only (i8 u8 i32 i64 u64);
// a floating dtype with one of them is kInvalidArgument in the local check.
enum class ReduceOp : std::uint8_t {
  kSum,
  kMean,
  kMin,
  kMax,
  kProd,
  kBand,
  kBor,
  kBxor,
  kLand,
  kLor,
  kLxor
};
// The ops every reducible dtype takes.
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin,
                                             ReduceOp::kMax, ReduceOp::kProd};
// The ops only integer dtypes take.
inline constexpr ReduceOp kIntegerOnlyOps[] = {ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor,
                                               ReduceOp::kLand, ReduceOp::kLor, ReduceOp::kLxor};

enum class DeviceKind : std::uint8_t { kHost, kCuda };

// A logical device. Several logical devices may share one physical device (a
// CUDA backend maps `index` to a GPU); within one group they must be distinct.
struct DeviceId {
  DeviceKind kind = DeviceKind::kHost;
  std::size_t index = 0;
  friend bool operator==(const DeviceId&, const DeviceId&) = default;
  friend auto operator<=>(const DeviceId&, const DeviceId&) = default;
};
inline DeviceId host_device(std::size_t index) { return {DeviceKind::kHost, index}; }
inline DeviceId cuda_device(std::size_t index) { return {DeviceKind::kCuda, index}; }

// Bytes per element; 0 for a value outside the enum. (Inline with the other
// predicates below: every collective calls them several times.)
constexpr std::size_t dtype_size(DataType dtype) noexcept {
  switch (dtype) {
    case DataType::kF16:
    case DataType::kBF16: return 2;
    case DataType::kF32:
    case DataType::kI32: return 4;
    case DataType::kF64:
    case DataType::kI64:
    case DataType::kU64: return 8;
    case DataType::kI8:
    case DataType::kU8:
    case DataType::kBytes: return 1;
  }
  return 0;
}
std::string_view dtype_name(DataType dtype) noexcept;  // "f32", "bytes", ...; "?" if unknown
std::string_view op_name(ReduceOp op) noexcept;        // "sum", "mean", ...
std::string_view device_kind_name(DeviceKind kind) noexcept;
std::string device_name(DeviceId device);              // "host:3", "cuda:0"
// Guards values cast from integers.
constexpr bool is_valid(DataType dtype) noexcept { return dtype_size(dtype) != 0; }
constexpr bool is_valid(ReduceOp op) noexcept { return op <= ReduceOp::kLxor; }
constexpr bool is_floating(DataType dtype) noexcept {
  return dtype == DataType::kF16 || dtype == DataType::kBF16 || dtype == DataType::kF32 ||
         dtype == DataType::kF64;
}
constexpr bool is_integer_only(ReduceOp op) noexcept {  // Band .. Lxor
  return op >= ReduceOp::kBand && op <= ReduceOp::kLxor;
}
std::optional<DataType> parse_dtype(std::string_view name);  // inverse of dtype_name
std::optional<ReduceOp> parse_op(std::string_view name);

// a*b, or nullopt if it overflows size_t.
inline std::optional<std::size_t> checked_mul(std::size_t a, std::size_t b) {
  std::size_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}
inline std::optional<std::size_t> checked_add(std::size_t a, std::size_t b) {
  std::size_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

}  // namespace ruccl
