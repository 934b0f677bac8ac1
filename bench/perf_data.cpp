#include "perf_data.hpp"

#include <algorithm>
#include <bit>
#include <type_traits>

namespace ruccl::perf {
namespace {

// --- Codecs: an int64 value to a dtype's bit pattern, with ruccl's semantics. ---
// Every codec stores the raw bits as an unsigned integer, so comparing two
// elements is an exact bit comparison.

template <typename T>  // i8, u8, i32, i64, u64, bytes
struct IntCodec {
  using Bits = std::make_unsigned_t<T>;
  static Bits encode(std::int64_t v) { return static_cast<Bits>(static_cast<T>(v)); }
  // Integer Mean: the wrapped sum divided by n, truncated toward zero.
  static Bits mean(std::int64_t sum, std::size_t n) {
    const T wrapped = static_cast<T>(sum);
    if constexpr (std::is_signed_v<T>)
      return encode(static_cast<std::int64_t>(wrapped) / static_cast<std::int64_t>(n));
    else
      return static_cast<Bits>(static_cast<std::uint64_t>(wrapped) / n);
  }
};

struct F32Codec {
  using Bits = std::uint32_t;
  static Bits bits(float f) { return std::bit_cast<Bits>(f); }
  static Bits encode(std::int64_t v) { return bits(static_cast<float>(v)); }
  // One correctly rounded division of the (exact) sum.
  static Bits mean(std::int64_t sum, std::size_t n) {
    return bits(static_cast<float>(sum) / static_cast<float>(n));
  }
};

struct F64Codec {
  using Bits = std::uint64_t;
  static Bits bits(double d) { return std::bit_cast<Bits>(d); }
  static Bits encode(std::int64_t v) { return bits(static_cast<double>(v)); }
  static Bits mean(std::int64_t sum, std::size_t n) {
    return bits(static_cast<double>(sum) / static_cast<double>(n));
  }
};

// f32 -> IEEE half, round to nearest even; normal range and zero (the generator
// makes nothing else), overflow to infinity.
std::uint16_t f32_to_f16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  if ((x & 0x7fffffffu) == 0) return sign;
  const int exponent = static_cast<int>((x >> 23) & 0xffu) - 127 + 15;
  if (exponent >= 31) return sign | 0x7c00u;
  if (exponent <= 0) return sign;  // below half's normal range: not produced here
  std::uint32_t mantissa = x & 0x7fffffu;
  std::uint32_t half = (static_cast<std::uint32_t>(exponent) << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into inf
  return static_cast<std::uint16_t>(sign | half);
}

// f32 -> bfloat16, round to nearest even (finite inputs).
std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

template <std::uint16_t (*Round)(float)>
struct HalfCodec {
  using Bits = std::uint16_t;
  static Bits encode(std::int64_t v) { return Round(static_cast<float>(v)); }
  // The generator makes Mean sums multiples of n, so the quotient is exact.
  static Bits mean(std::int64_t sum, std::size_t n) {
    return Round(static_cast<float>(sum) / static_cast<float>(n));
  }
};

template <typename F>
decltype(auto) with_codec(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kF16: return f(HalfCodec<f32_to_f16>{});
    case DataType::kBF16: return f(HalfCodec<f32_to_bf16>{});
    case DataType::kF32: return f(F32Codec{});
    case DataType::kF64: return f(F64Codec{});
    case DataType::kI8: return f(IntCodec<std::int8_t>{});
    case DataType::kI32: return f(IntCodec<std::int32_t>{});
    case DataType::kI64: return f(IntCodec<std::int64_t>{});
    case DataType::kU64: return f(IntCodec<std::uint64_t>{});
    case DataType::kU8:
    case DataType::kBytes: break;
  }
  return f(IntCodec<std::uint8_t>{});
}

std::int64_t move_value(std::size_t rank, std::size_t index) {
  return static_cast<std::int64_t>((31 * rank + 7 * (index % 97)) % 97);
}

}  // namespace

std::size_t DataModel::input_count() const {
  switch (c_.kind) {
    case CollectiveKind::kAllGather: return c_.chunk;
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAllV: return c_.chunk * c_.ranks;
    default: return c_.count;
  }
}

std::size_t DataModel::output_count(std::size_t rank) const {
  switch (c_.kind) {
    case CollectiveKind::kReduce: return rank == c_.root.value_or(0) ? c_.count : 0;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kAllToAllV: return c_.chunk * c_.ranks;
    case CollectiveKind::kReduceScatter: return c_.chunk;
    default: return c_.count;
  }
}

std::int64_t DataModel::input(std::size_t rank, std::size_t index) const {
  if (!c_.op) return move_value(rank, index);
  const std::size_t n = c_.ranks;
  switch (*c_.op) {
    case ReduceOp::kSum: return static_cast<std::int64_t>((rank + index) % 3 + 1);
    case ReduceOp::kMean:
      return static_cast<std::int64_t>(index % 4 + ((rank + index) % n == 0 ? n : 0));
    case ReduceOp::kMin:
    case ReduceOp::kMax: return static_cast<std::int64_t>((5 * rank + 3 * (index % 17)) % 17);
    case ReduceOp::kProd:
      return 1 + ((rank + index) % n == 0 ? 1 : 0) + ((rank + 2 * (index % n) + 1) % n == 0 ? 1 : 0);
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor: return static_cast<std::int64_t>((3 * rank + index) % 8);
    case ReduceOp::kLand:
    case ReduceOp::kLor:
    case ReduceOp::kLxor: return static_cast<std::int64_t>((rank + index) % 3 == 0 ? 0 : 1);
  }
  return 0;
}

std::int64_t DataModel::fold(std::size_t index) const {
  std::int64_t acc = input(0, index);
  for (std::size_t r = 1; r < c_.ranks; ++r) {
    const std::int64_t v = input(r, index);
    switch (*c_.op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean: acc += v; break;
      case ReduceOp::kProd: acc *= v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kBand: acc &= v; break;
      case ReduceOp::kBor: acc |= v; break;
      case ReduceOp::kBxor: acc ^= v; break;
      case ReduceOp::kLand: acc = (acc != 0 && v != 0) ? 1 : 0; break;
      case ReduceOp::kLor: acc = (acc != 0 || v != 0) ? 1 : 0; break;
      case ReduceOp::kLxor: acc = ((acc != 0) != (v != 0)) ? 1 : 0; break;
    }
  }
  return acc;
}

std::int64_t DataModel::result(std::size_t rank, std::size_t index) const {
  const std::size_t chunk = c_.chunk;
  switch (c_.kind) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduce: return fold(index);
    case CollectiveKind::kReduceScatter: return fold(rank * chunk + index);
    case CollectiveKind::kBroadcast: return input(c_.root.value_or(0), index);
    // Block s of the output is source s's input (all_gather) or source s's block
    // for this rank (all_to_all_v: it starts at rank * chunk of s's input).
    case CollectiveKind::kAllGather: return input(index / chunk, index % chunk);
    case CollectiveKind::kAllToAllV: return input(index / chunk, rank * chunk + index % chunk);
  }
  return 0;
}

void DataModel::fill_input(std::size_t rank, void* data) const {
  with_codec(c_.dtype, [&]<typename Codec>(Codec) {
    auto* out = static_cast<typename Codec::Bits*>(data);
    const std::size_t count = input_count();
    for (std::size_t i = 0; i < count; ++i) out[i] = Codec::encode(input(rank, i));
  });
}

std::size_t DataModel::count_wrong_input(std::size_t rank, const void* data) const {
  return with_codec(c_.dtype, [&]<typename Codec>(Codec) {
    const auto* got = static_cast<const typename Codec::Bits*>(data);
    const std::size_t count = input_count();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) wrong += got[i] != Codec::encode(input(rank, i));
    return wrong;
  });
}

std::size_t DataModel::count_wrong_output(std::size_t rank, const void* data) const {
  const bool mean = c_.op == ReduceOp::kMean;
  return with_codec(c_.dtype, [&]<typename Codec>(Codec) {
    const auto* got = static_cast<const typename Codec::Bits*>(data);
    const std::size_t count = output_count(rank);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t value = result(rank, i);
      const auto want = mean ? Codec::mean(value, c_.ranks) : Codec::encode(value);
      wrong += got[i] != want;
    }
    return wrong;
  });
}

}  // namespace ruccl::perf
