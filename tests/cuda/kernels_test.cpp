// The CUDA kernels' loop bodies, run on the host (kernels::emulate_*), against
// the host adapter's loops bit for bit: every dtype and op, random bit
// patterns (NaN, infinities, subnormals, wrapping integers), every alignment
// of dst/a/b within a 16-byte pack, counts around the pack size, several
// emulated thread counts. Needs no GPU, so it runs (and passes) everywhere the
// CUDA backend is built; what it cannot cover is the device's own execution.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "device/cuda/kernels.hpp"
#include "device/host/host_kernels.hpp"
#include "test_support.hpp"

namespace ruccl::test {
namespace {

namespace k = cuda::kernels;

k::Type type_of(DataType dtype) {
  switch (dtype) {
    case DataType::kF16: return k::Type::kF16;
    case DataType::kBF16: return k::Type::kBF16;
    case DataType::kF32: return k::Type::kF32;
    case DataType::kF64: return k::Type::kF64;
    case DataType::kI8: return k::Type::kI8;
    case DataType::kU8: return k::Type::kU8;
    case DataType::kI32: return k::Type::kI32;
    case DataType::kI64: return k::Type::kI64;
    default: return k::Type::kU64;
  }
}

k::Op op_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::kProd: return k::Op::kProd;
    case ReduceOp::kMin: return k::Op::kMin;
    case ReduceOp::kMax: return k::Op::kMax;
    case ReduceOp::kBand: return k::Op::kBand;
    case ReduceOp::kBor: return k::Op::kBor;
    case ReduceOp::kBxor: return k::Op::kBxor;
    case ReduceOp::kLand: return k::Op::kLand;
    case ReduceOp::kLor: return k::Op::kLor;
    case ReduceOp::kLxor: return k::Op::kLxor;
    default: return k::Op::kSum;
  }
}

// 64-byte aligned storage, so offsets within a pack are exact.
struct Aligned {
  explicit Aligned(std::size_t bytes) : raw(bytes + 128) {}
  std::byte* at(std::size_t offset) {
    auto p = reinterpret_cast<std::uintptr_t>(raw.data());
    return raw.data() + ((64 - p % 64) % 64) + offset;
  }
  std::vector<std::byte> raw;
};

// Bit-equal elements, except that a NaN matches any NaN: which operand's
// payload (and sign) an f32 add or multiply keeps depends on the compiler's
// operand order on x86 (a GPU returns the canonical NaN), and bf16 keeps the
// f32 payload's top bits.
bool is_nan(DataType dtype, const std::byte* p) {
  switch (dtype) {
    case DataType::kF16:
    case DataType::kBF16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      return dtype == DataType::kF16 ? (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0
                                     : (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
    }
    case DataType::kF32: {
      float x;
      std::memcpy(&x, p, 4);
      return x != x;
    }
    case DataType::kF64: {
      double x;
      std::memcpy(&x, p, 8);
      return x != x;
    }
    default: return false;
  }
}

bool same_bits(DataType dtype, const std::byte* got, const std::byte* want, std::size_t count) {
  const std::size_t es = dtype_size(dtype);
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(got + i * es, want + i * es, es) == 0) continue;
    if (is_nan(dtype, got + i * es) && is_nan(dtype, want + i * es)) continue;
    return false;
  }
  return true;
}

void random_fill(std::byte* p, std::size_t bytes, std::uint64_t seed) {
  for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<std::byte>(splitmix64(seed + i) >> 29);
}

TEST(CudaKernelsOnHost, SplitCoversTheRangeWithAlignedPacks) {
  for (std::size_t element : {1, 2, 4, 8})
    for (std::uintptr_t dst = 0; dst < 32; dst += element)
      for (std::uintptr_t a = 0; a < 32; a += element)
        for (std::size_t count : {0, 1, 7, 16, 17, 33, 1000}) {
          const k::Split s = k::split_for(4096 + dst, 8192 + a, 0, false, element, count);
          EXPECT_LE(s.head, count);
          EXPECT_EQ(s.tail_begin, s.head + s.packs * (k::kPackBytes / element));
          EXPECT_LE(s.tail_begin, count);
          if (s.packs > 0) {
            EXPECT_EQ((4096 + dst + s.head * element) % k::kPackBytes, 0u);
            EXPECT_EQ(dst % k::kPackBytes, a % k::kPackBytes);
            EXPECT_LT(count - s.tail_begin, k::kPackBytes / element);
          }
        }
}

TEST(CudaKernelsOnHost, ReduceMatchesTheHostAdapterBitForBit) {
  std::uint64_t seed = 1;
  std::size_t cases = 0;
  for (DataType dtype : kReducible) {
    const std::size_t es = dtype_size(dtype);
    std::vector<ReduceOp> ops(std::begin(kAllReduceOps), std::end(kAllReduceOps));
    if (!is_floating(dtype))
      ops.insert(ops.end(), std::begin(kIntegerOnlyOps), std::end(kIntegerOnlyOps));
    for (ReduceOp op : ops) {
      for (std::size_t count : {0, 1, 3, 15, 16, 17, 40, 1025}) {
        for (std::size_t dst_off = 0; dst_off < 16; dst_off += es) {
          for (std::size_t b_off : {std::size_t{0}, dst_off, 16 - es}) {
            for (bool in_place : {false, true}) {
              for (std::size_t threads : {1, 3, 64}) {
                ++seed;
                const std::size_t a_off = in_place ? dst_off : (dst_off + es) % 16;
                const std::size_t bytes = count * es;
                Aligned a(bytes), b(bytes), d_host(bytes), d_emul(bytes);
                random_fill(a.at(a_off), bytes, seed * 3);
                random_fill(b.at(b_off), bytes, seed * 5);
                std::byte* want = d_host.at(dst_off);
                std::byte* got = d_emul.at(dst_off);
                if (in_place) {
                  std::memcpy(want, a.at(a_off), bytes);
                  std::memcpy(got, a.at(a_off), bytes);
                }
                const void* want_a = in_place ? want : a.at(a_off);
                const void* got_a = in_place ? got : a.at(a_off);
                ASSERT_TRUE(host::reduce(dtype, op, want, want_a, b.at(b_off), count).is_ok());
                k::emulate_reduce(type_of(dtype), op_of(op), got, got_a, b.at(b_off), count, threads);
                ASSERT_TRUE(same_bits(dtype, got, want, count))
                    << dtype_name(dtype) << " " << op_name(op) << " count " << count << " dst+"
                    << dst_off << " a+" << a_off << " b+" << b_off << " threads " << threads
                    << (in_place ? " in place" : "") << ": "
                    << compare_elements(dtype, got, want, count).value_or("(bits differ)");
                ++cases;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 1000u);
}

TEST(CudaKernelsOnHost, DivideMatchesTheHostAdapterBitForBit) {
  std::uint64_t seed = 77;
  for (DataType dtype : kReducible) {
    const std::size_t es = dtype_size(dtype);
    for (std::size_t divisor : {1, 2, 3, 7, 8, 1000}) {
      for (std::size_t count : {0, 1, 9, 16, 33, 4099}) {
        for (std::size_t off = 0; off < 16; off += es) {
          ++seed;
          const std::size_t bytes = count * es;
          Aligned want(bytes), got(bytes);
          random_fill(want.at(off), bytes, seed);
          std::memcpy(got.at(off), want.at(off), bytes);
          ASSERT_TRUE(host::divide(dtype, want.at(off), count, divisor).is_ok());
          k::emulate_divide(type_of(dtype), got.at(off), count, divisor, 5);
          ASSERT_TRUE(same_bits(dtype, got.at(off), want.at(off), count))
              << dtype_name(dtype) << " / " << divisor << " count " << count << " at +" << off
              << ": " << compare_elements(dtype, got.at(off), want.at(off), count).value_or("(bits differ)");
        }
      }
    }
  }
}

}  // namespace
}  // namespace ruccl::test
