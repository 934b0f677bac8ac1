// Host reduction loops, one template per op, instantiated per dtype. The loops
// are plain elementwise array code over __restrict pointers, which the compiler
// vectorises at -O3. Integers combine in their unsigned twin, so Sum and Prod
// wrap modulo 2^bits without undefined behaviour. f16/bf16 go through f32.
#include "device/host/host_kernels.hpp"

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/request.hpp"
#include "device/host/half.hpp"

namespace ruccl::host {
namespace {

struct Add { template <typename T> T operator()(T a, T b) const { return a + b; } };
struct Mul { template <typename T> T operator()(T a, T b) const { return a * b; } };
// Min/Max propagate NaN whichever operand holds it, so the result does not
// depend on a rank's position in the ring (a != a is false for integers).
struct Min {
  template <typename T> T operator()(T a, T b) const { return a != a ? a : (b < a || b != b ? b : a); }
};
struct Max {
  template <typename T> T operator()(T a, T b) const { return a != a ? a : (a < b || b != b ? b : a); }
};

// Bitwise and logical ops: integers only (reduce_with_int never instantiates
// them for a floating type). Logical results are 1 or 0.
struct Band {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};
struct Bor {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};
struct Bxor {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};
struct Land {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a != 0 && b != 0);
  }
};
struct Lor {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a != 0 || b != 0);
  }
};
struct Lxor {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>((a != 0) != (b != 0));
  }
};

// The loop body is elementwise, so dst == a is safe; when it is, the loop runs
// through the two-operand form, which the compiler vectorises without alias checks.
template <typename T, typename F>
void combine_loop(T* dst, const T* a, const T* __restrict b, std::size_t n, F f) {
  if (dst == a) {
    T* __restrict d = dst;
    for (std::size_t i = 0; i < n; ++i) d[i] = f(d[i], b[i]);
  } else {
    T* __restrict d = dst;
    const T* __restrict x = a;
    for (std::size_t i = 0; i < n; ++i) d[i] = f(x[i], b[i]);
  }
}

template <typename T, typename F>
void combine(T* dst, const T* a, const T* b, std::size_t n, F f) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T> &&
                (std::is_same_v<F, Add> || std::is_same_v<F, Mul>)) {
    using U = std::make_unsigned_t<T>;
    // Wrapping arithmetic: combine the two's-complement bit patterns.
    combine(reinterpret_cast<U*>(dst), reinterpret_cast<const U*>(a),
            reinterpret_cast<const U*>(b), n, f);
  } else if constexpr (std::is_integral_v<T> && sizeof(T) < sizeof(int) &&
                       (std::is_same_v<F, Add> || std::is_same_v<F, Mul>)) {
    // Narrow unsigned types promote to int; compute in unsigned int and truncate.
    combine_loop(dst, a, b, n, [f](T x, T y) {
      return static_cast<T>(f(static_cast<unsigned>(x), static_cast<unsigned>(y)));
    });
  } else {
    combine_loop(dst, a, b, n, f);
  }
}

template <float (*Load)(std::uint16_t), std::uint16_t (*Store)(float), typename F>
void combine16(std::uint16_t* dst, const std::uint16_t* a, const std::uint16_t* b,
               std::size_t n, F f) {
  combine_loop(dst, a, b, n,
               [f](std::uint16_t x, std::uint16_t y) { return Store(f(Load(x), Load(y))); });
}

template <typename T>
void typed(void* d, const void* a, const void* b, std::size_t n, auto f) {
  combine(static_cast<T*>(d), static_cast<const T*>(a), static_cast<const T*>(b), n, f);
}

template <typename F>
Status reduce_with(DataType dtype, void* d, const void* a, const void* b, std::size_t n, F f) {
  using U16 = std::uint16_t;
  switch (dtype) {
    case DataType::kF16:
      combine16<f16_to_f32, f32_to_f16>(static_cast<U16*>(d), static_cast<const U16*>(a),
                                        static_cast<const U16*>(b), n, f);
      break;
    case DataType::kBF16:
      combine16<bf16_to_f32, f32_to_bf16>(static_cast<U16*>(d), static_cast<const U16*>(a),
                                          static_cast<const U16*>(b), n, f);
      break;
    case DataType::kF32: typed<float>(d, a, b, n, f); break;
    case DataType::kF64: typed<double>(d, a, b, n, f); break;
    case DataType::kI8: typed<std::int8_t>(d, a, b, n, f); break;
    case DataType::kU8: typed<std::uint8_t>(d, a, b, n, f); break;
    case DataType::kI32: typed<std::int32_t>(d, a, b, n, f); break;
    case DataType::kI64: typed<std::int64_t>(d, a, b, n, f); break;
    case DataType::kU64: typed<std::uint64_t>(d, a, b, n, f); break;
    case DataType::kBytes: return core::check_reducible(dtype, ReduceOp::kSum);
  }
  return Status::ok();
}

// The integer dtypes only: the bitwise and logical ops.
template <typename F>
Status reduce_with_int(DataType dtype, void* d, const void* a, const void* b, std::size_t n, F f) {
  switch (dtype) {
    case DataType::kI8: typed<std::int8_t>(d, a, b, n, f); break;
    case DataType::kU8: typed<std::uint8_t>(d, a, b, n, f); break;
    case DataType::kI32: typed<std::int32_t>(d, a, b, n, f); break;
    case DataType::kI64: typed<std::int64_t>(d, a, b, n, f); break;
    case DataType::kU64: typed<std::uint64_t>(d, a, b, n, f); break;
    default: return core::check_reducible(dtype, ReduceOp::kBand);
  }
  return Status::ok();
}

template <typename T>
void divide_ints(T* data, std::size_t n, std::size_t divisor) {
  using Wide = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
  const Wide d = static_cast<Wide>(divisor);
  for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<T>(static_cast<Wide>(data[i]) / d);
}

template <float (*Load)(std::uint16_t), std::uint16_t (*Store)(float)>
void divide16(std::uint16_t* data, std::size_t n, std::size_t divisor) {
  // f32 has 24 bits >= 2*11+2, so rounding the f32 quotient to f16/bf16 is the
  // correctly rounded quotient (double rounding is innocuous for division).
  const float d = static_cast<float>(divisor);
  for (std::size_t i = 0; i < n; ++i) data[i] = Store(Load(data[i]) / d);
}

}  // namespace

Status reduce(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b,
              std::size_t count) {
  if (!core::reducible(dtype, op)) return core::check_reducible(dtype, op);
  switch (op) {
    case ReduceOp::kSum: case ReduceOp::kMean: return reduce_with(dtype, dst, a, b, count, Add{});
    case ReduceOp::kProd: return reduce_with(dtype, dst, a, b, count, Mul{});
    case ReduceOp::kMin: return reduce_with(dtype, dst, a, b, count, Min{});
    case ReduceOp::kMax: return reduce_with(dtype, dst, a, b, count, Max{});
    case ReduceOp::kBand: return reduce_with_int(dtype, dst, a, b, count, Band{});
    case ReduceOp::kBor: return reduce_with_int(dtype, dst, a, b, count, Bor{});
    case ReduceOp::kBxor: return reduce_with_int(dtype, dst, a, b, count, Bxor{});
    case ReduceOp::kLand: return reduce_with_int(dtype, dst, a, b, count, Land{});
    case ReduceOp::kLor: return reduce_with_int(dtype, dst, a, b, count, Lor{});
    case ReduceOp::kLxor: return reduce_with_int(dtype, dst, a, b, count, Lxor{});
  }
  return Status(ErrorCode::kInvalidArgument, "unknown reduction op value");
}

Status divide(DataType dtype, void* data, std::size_t count, std::size_t divisor) {
  RUCCL_TRY(core::check_reducible(dtype, ReduceOp::kMean));
  if (divisor == 0) return Status(ErrorCode::kInternal, "Mean divisor is zero");
  switch (dtype) {
    case DataType::kF16: divide16<f16_to_f32, f32_to_f16>(static_cast<std::uint16_t*>(data), count, divisor); break;
    case DataType::kBF16: divide16<bf16_to_f32, f32_to_bf16>(static_cast<std::uint16_t*>(data), count, divisor); break;
    case DataType::kF32: {
      auto* p = static_cast<float*>(data);
      const float d = static_cast<float>(divisor);
      for (std::size_t i = 0; i < count; ++i) p[i] /= d;
      break;
    }
    case DataType::kF64: {
      auto* p = static_cast<double*>(data);
      const double d = static_cast<double>(divisor);
      for (std::size_t i = 0; i < count; ++i) p[i] /= d;
      break;
    }
    case DataType::kI8: divide_ints(static_cast<std::int8_t*>(data), count, divisor); break;
    case DataType::kU8: divide_ints(static_cast<std::uint8_t*>(data), count, divisor); break;
    case DataType::kI32: divide_ints(static_cast<std::int32_t*>(data), count, divisor); break;
    case DataType::kI64: divide_ints(static_cast<std::int64_t*>(data), count, divisor); break;
    case DataType::kU64: divide_ints(static_cast<std::uint64_t*>(data), count, divisor); break;
    case DataType::kBytes: break;
  }
  return Status::ok();
}

}  // namespace ruccl::host
