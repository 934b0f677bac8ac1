// The CUDA backend's kernels: elementwise reduction and Mean's division.
//
// Semantics are the host adapter's (src/device/host), bit for bit:
//   - integer Sum and Prod wrap: they combine the unsigned twins (8-bit types
//     in unsigned int, truncated), so no signed overflow;
//   - Min and Max propagate NaN whichever operand holds it;
//   - f16/bf16 convert to f32 (the host's exact bit conversions, ported below),
//     combine in f32 and round once, to nearest even;
//   - Mean's division: f32/f64 one IEEE division (nvcc's default -prec-div),
//     f16/bf16 the f32 quotient rounded once, integers 64-bit truncating division.
// Nothing here may be built with --use_fast_math (flush-to-zero and approximate
// division would break the host equality).
//
// Shape of every kernel: a grid-stride loop over a Split (kernels.hpp): scalar
// head, 16-byte packs, scalar tail. The loop bodies are __host__ __device__ so
// emulate_* can run them on the CPU as a test hook.
#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

#include "device/cuda/kernels.hpp"

namespace ruccl::cuda::kernels {
namespace {

// ---- bits <-> floats, f16/bf16 conversions (ported from host/half.hpp) ----

__host__ __device__ inline float bits_f32(std::uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

__host__ __device__ inline std::uint32_t f32_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

__host__ __device__ inline float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact
    const float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  if (exp == 31) return bits_f32(sign | 0x7f800000u | (mant << 13));
  return bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

__host__ __device__ inline std::uint16_t f32_to_f16(float f) {
  std::uint32_t x = f32_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, inf
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504: inf
  if (x < 0x38800000u) {  // below the smallest normal half: subnormal
    const float scaled = bits_f32(x) * 16777216.0f;  // exact: a power-of-two scaling
    return sign | static_cast<std::uint16_t>(rintf(scaled));  // rintf: nearest even
  }
  const std::uint32_t rounded = x + 0xfffu + ((x >> 13) & 1u) - 0x38000000u;
  return sign | static_cast<std::uint16_t>(rounded >> 13);
}

__host__ __device__ inline float bf16_to_f32(std::uint16_t h) {
  return bits_f32(static_cast<std::uint32_t>(h) << 16);
}

__host__ __device__ inline std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// ---- the ops --------------------------------------------------------------

// Integers add and multiply as their unsigned twins (8-bit ones in unsigned int).
template <typename T>
using Wrapping = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct Sum {
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      using W = Wrapping<T>;
      return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(a)) +
                                            static_cast<W>(static_cast<U>(b))));
    } else {
      return a + b;
    }
  }
};
struct Prod {
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      using W = Wrapping<T>;
      return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(a)) *
                                            static_cast<W>(static_cast<U>(b))));
    } else {
      return a * b;
    }
  }
};
// NaN from either operand wins (a != a is false for integers).
struct Min {
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    return a != a ? a : (b < a || b != b ? b : a);
  }
};
struct Max {
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    return a != a ? a : (a < b || b != b ? b : a);
  }
};

// Bitwise and logical ops, for integer types only (with_reduce dispatches them
// to the integer types alone). Logical results are 1 or 0, as the host's.
struct Band {
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};
struct Bor {
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};
struct Bxor {
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};
struct Land {
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    return static_cast<T>(a != 0 && b != 0);
  }
};
struct Lor {
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    return static_cast<T>(a != 0 || b != 0);
  }
};
struct Lxor {
  template <typename T>
  __host__ __device__ T operator()(T a, T b) const {
    return static_cast<T>((a != 0) != (b != 0));
  }
};

// f16/bf16 storage: widen to f32, combine, round once.
template <typename F>
struct F16Of {
  F f;
  __host__ __device__ std::uint16_t operator()(std::uint16_t a, std::uint16_t b) const {
    return f32_to_f16(f(f16_to_f32(a), f16_to_f32(b)));
  }
};
template <typename F>
struct BF16Of {
  F f;
  __host__ __device__ std::uint16_t operator()(std::uint16_t a, std::uint16_t b) const {
    return f32_to_bf16(f(bf16_to_f32(a), bf16_to_f32(b)));
  }
};

// Mean's division, one functor per rounding rule.
template <typename T>
struct DivideFloat {
  T divisor;
  __host__ __device__ T operator()(T x) const { return x / divisor; }
};
struct DivideF16 {
  float divisor;
  __host__ __device__ std::uint16_t operator()(std::uint16_t x) const {
    return f32_to_f16(f16_to_f32(x) / divisor);
  }
};
struct DivideBF16 {
  float divisor;
  __host__ __device__ std::uint16_t operator()(std::uint16_t x) const {
    return f32_to_bf16(bf16_to_f32(x) / divisor);
  }
};
template <typename T>
struct DivideInt {
  using Wide = std::conditional_t<std::is_signed_v<T>, long long, unsigned long long>;
  Wide divisor;
  __host__ __device__ T operator()(T x) const {
    return static_cast<T>(static_cast<Wide>(x) / divisor);
  }
};

// ---- loop bodies ------------------------------------------------------------

template <typename T>
struct alignas(kPackBytes) Pack {
  static constexpr int kLanes = static_cast<int>(kPackBytes / sizeof(T));
  T v[kLanes];
};

template <typename T>
__host__ __device__ inline Pack<T> load(const T* base, std::size_t pack) {
#ifdef __CUDA_ARCH__
  return reinterpret_cast<const Pack<T>*>(base)[pack];  // one 128-bit load
#else
  Pack<T> p;
  std::memcpy(&p, base + pack * Pack<T>::kLanes, kPackBytes);
  return p;
#endif
}

template <typename T>
__host__ __device__ inline void store(T* base, std::size_t pack, const Pack<T>& p) {
#ifdef __CUDA_ARCH__
  reinterpret_cast<Pack<T>*>(base)[pack] = p;
#else
  std::memcpy(base + pack * Pack<T>::kLanes, &p, kPackBytes);
#endif
}

// Thread `tid` of `stride` threads: dst[i] = f(a[i], b[i]) over its share.
template <typename T, typename F>
__host__ __device__ void reduce_body(T* dst, const T* a, const T* b, const Split& s, const F& f,
                                     std::size_t tid, std::size_t stride) {
  for (std::size_t i = tid; i < s.head; i += stride) dst[i] = f(a[i], b[i]);
  T* dp = dst + s.head;
  const T* ap = a + s.head;
  const T* bp = b + s.head;
  for (std::size_t j = tid; j < s.packs; j += stride) {
    const Pack<T> x = load(ap, j);
    const Pack<T> y = load(bp, j);
    Pack<T> r;
#pragma unroll
    for (int k = 0; k < Pack<T>::kLanes; ++k) r.v[k] = f(x.v[k], y.v[k]);
    store(dp, j, r);
  }
  for (std::size_t i = s.tail_begin + tid; i < s.count; i += stride) dst[i] = f(a[i], b[i]);
}

// data[i] = f(data[i]).
template <typename T, typename F>
__host__ __device__ void map_body(T* data, const Split& s, const F& f, std::size_t tid,
                                  std::size_t stride) {
  for (std::size_t i = tid; i < s.head; i += stride) data[i] = f(data[i]);
  T* dp = data + s.head;
  for (std::size_t j = tid; j < s.packs; j += stride) {
    Pack<T> x = load(static_cast<const T*>(dp), j);
#pragma unroll
    for (int k = 0; k < Pack<T>::kLanes; ++k) x.v[k] = f(x.v[k]);
    store(dp, j, x);
  }
  for (std::size_t i = s.tail_begin + tid; i < s.count; i += stride) data[i] = f(data[i]);
}

template <typename T, typename F>
__global__ void reduce_kernel(T* dst, const T* a, const T* b, Split s, F f) {
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  reduce_body(dst, a, b, s, f, tid, stride);
}

template <typename T, typename F>
__global__ void map_kernel(T* data, Split s, F f) {
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  map_body(data, s, f, tid, stride);
}

// ---- launch geometry and dispatch ------------------------------------------

constexpr unsigned kThreads = 256;
constexpr unsigned kBlocksPerSm = 8;

// Enough blocks for the longest of the three loops, at most a few waves.
dim3 grid_for(const Split& s, int sm_count) {
  std::size_t items = s.packs;
  if (s.head > items) items = s.head;
  if (s.count - s.tail_begin > items) items = s.count - s.tail_begin;
  const std::size_t cap = static_cast<std::size_t>(sm_count > 0 ? sm_count : 132) * kBlocksPerSm;
  std::size_t blocks = (items + kThreads - 1) / kThreads;
  if (blocks > cap) blocks = cap;
  if (blocks == 0) blocks = 1;
  return dim3(static_cast<unsigned>(blocks));
}

template <typename T>
Split split_of(const void* dst, const void* a, const void* b, std::size_t count) {
  return split_for(reinterpret_cast<std::uintptr_t>(dst), reinterpret_cast<std::uintptr_t>(a),
                   reinterpret_cast<std::uintptr_t>(b), b != nullptr, sizeof(T), count);
}

// Calls run(T{}, functor) with the storage type and elementwise functor of
// (type, op): the op itself, or the op wrapped in an f16/bf16 conversion.
template <typename Run>
int with_reduce(Type type, Op op, Run&& run) {
  auto typed = [&](auto f) -> int {
    using F = decltype(f);
    switch (type) {
      case Type::kF16: return run(std::uint16_t{}, F16Of<F>{f});
      case Type::kBF16: return run(std::uint16_t{}, BF16Of<F>{f});
      case Type::kF32: return run(float{}, f);
      case Type::kF64: return run(double{}, f);
      case Type::kI8: return run(std::int8_t{}, f);
      case Type::kU8: return run(std::uint8_t{}, f);
      case Type::kI32: return run(std::int32_t{}, f);
      case Type::kI64: return run(std::int64_t{}, f);
      case Type::kU64: return run(std::uint64_t{}, f);
    }
    return static_cast<int>(cudaErrorInvalidValue);
  };
  auto integral = [&](auto f) -> int {
    switch (type) {
      case Type::kI8: return run(std::int8_t{}, f);
      case Type::kU8: return run(std::uint8_t{}, f);
      case Type::kI32: return run(std::int32_t{}, f);
      case Type::kI64: return run(std::int64_t{}, f);
      case Type::kU64: return run(std::uint64_t{}, f);
      default: break;  // floating types take no bitwise or logical op
    }
    return static_cast<int>(cudaErrorInvalidValue);
  };
  switch (op) {
    case Op::kSum: return typed(Sum{});
    case Op::kProd: return typed(Prod{});
    case Op::kMin: return typed(Min{});
    case Op::kMax: return typed(Max{});
    case Op::kBand: return integral(Band{});
    case Op::kBor: return integral(Bor{});
    case Op::kBxor: return integral(Bxor{});
    case Op::kLand: return integral(Land{});
    case Op::kLor: return integral(Lor{});
    case Op::kLxor: return integral(Lxor{});
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

template <typename Run>
int with_divide(Type type, std::uint64_t divisor, Run&& run) {
  const float f = static_cast<float>(divisor);
  switch (type) {
    case Type::kF16: return run(std::uint16_t{}, DivideF16{f});
    case Type::kBF16: return run(std::uint16_t{}, DivideBF16{f});
    case Type::kF32: return run(float{}, DivideFloat<float>{f});
    case Type::kF64: return run(double{}, DivideFloat<double>{static_cast<double>(divisor)});
    case Type::kI8: return run(std::int8_t{}, DivideInt<std::int8_t>{static_cast<long long>(divisor)});
    case Type::kU8: return run(std::uint8_t{}, DivideInt<std::uint8_t>{divisor});
    case Type::kI32: return run(std::int32_t{}, DivideInt<std::int32_t>{static_cast<long long>(divisor)});
    case Type::kI64: return run(std::int64_t{}, DivideInt<std::int64_t>{static_cast<long long>(divisor)});
    case Type::kU64: return run(std::uint64_t{}, DivideInt<std::uint64_t>{divisor});
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace

int launch_reduce(Type type, Op op, void* dst, const void* a, const void* b, std::size_t count,
                  int sm_count, void* stream) {
  if (count == 0) return 0;
  return with_reduce(type, op, [&](auto tag, auto f) -> int {
    using T = decltype(tag);
    const Split s = split_of<T>(dst, a, b, count);
    reduce_kernel<<<grid_for(s, sm_count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), s, f);
    return static_cast<int>(cudaGetLastError());
  });
}

int launch_divide(Type type, void* data, std::size_t count, std::uint64_t divisor, int sm_count,
                  void* stream) {
  if (count == 0) return 0;
  if (divisor == 0) return static_cast<int>(cudaErrorInvalidValue);
  return with_divide(type, divisor, [&](auto tag, auto f) -> int {
    using T = decltype(tag);
    const Split s = split_of<T>(data, data, nullptr, count);
    map_kernel<<<grid_for(s, sm_count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<T*>(data), s, f);
    return static_cast<int>(cudaGetLastError());
  });
}

void emulate_reduce(Type type, Op op, void* dst, const void* a, const void* b, std::size_t count,
                    std::size_t threads) {
  if (threads == 0) threads = 1;
  with_reduce(type, op, [&](auto tag, auto f) -> int {
    using T = decltype(tag);
    const Split s = split_of<T>(dst, a, b, count);
    for (std::size_t tid = 0; tid < threads; ++tid)
      reduce_body(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), s, f,
                  tid, threads);
    return 0;
  });
}

void emulate_divide(Type type, void* data, std::size_t count, std::uint64_t divisor,
                    std::size_t threads) {
  if (threads == 0) threads = 1;
  if (divisor == 0) return;
  with_divide(type, divisor, [&](auto tag, auto f) -> int {
    using T = decltype(tag);
    const Split s = split_of<T>(data, data, nullptr, count);
    for (std::size_t tid = 0; tid < threads; ++tid) map_body(static_cast<T*>(data), s, f, tid, threads);
    return 0;
  });
}

}  // namespace ruccl::cuda::kernels
