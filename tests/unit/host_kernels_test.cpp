// The host loops per instruction set (host_kernels_loops.inc built for the
// baseline, AVX2 and AVX-512): every set this CPU runs gives the generic
// loops' bits (NaN payloads aside: see same_value) for every dtype and op, in place and out of
// place, at counts around every vector width (the vector bodies and their scalar tails), on inputs
// full of special values (NaN, infinities, signed zeros, subnormals, integer extremes). And
// reduce/divide run the best set the CPU has.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/request.hpp"
#include "device/host/host_kernels.hpp"

namespace ruccl {
namespace {

using host::HostIsa;

// Counts around 16/32/64-byte vectors of 1-8 byte elements, unrolled bodies
// and their tails.
constexpr std::size_t kCounts[] = {0,  1,  2,  3,  7,   8,   15,  16,  17,  31,   32,
                                   33, 63, 64, 65, 127, 128, 129, 255, 257, 1000, 4099};

// `bytes` of inputs: random bits, with every fourth element of a floating
// dtype one of its special values (bit patterns), so that Min/Max meet NaN on
// either side and sums meet infinities of both signs.
std::vector<std::byte> input(DataType dtype, std::size_t count, std::uint32_t seed) {
  const std::size_t es = dtype_size(dtype);
  std::vector<std::byte> v(count * es);
  std::mt19937 draw(seed);
  for (auto& b : v) b = static_cast<std::byte>(draw() & 0xFF);
  std::vector<std::uint64_t> special;
  switch (dtype) {
    case DataType::kF16:
      special = {0x7E00, 0xFE01, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x0001, 0x7BFF};
      break;
    case DataType::kBF16:
      special = {0x7FC0, 0xFF81, 0x7F80, 0xFF80, 0x0000, 0x8000, 0x0001, 0x7F7F};
      break;
    case DataType::kF32:
      special = {0x7FC00000, 0xFF800001, 0x7F800000, 0xFF800000, 0, 0x80000000, 1, 0x7F7FFFFF};
      break;
    case DataType::kF64:
      special = {0x7FF8000000000000,
                 0xFFF0000000000001,
                 0x7FF0000000000000,
                 0xFFF0000000000000,
                 0,
                 0x8000000000000000,
                 1,
                 0x7FEFFFFFFFFFFFFF};
      break;
    default: special = {0, 1, ~std::uint64_t{0}, std::uint64_t{1} << (es * 8 - 1)}; break;
  }
  for (std::size_t i = 0; i < count; i += 4) {
    const std::uint64_t bits = special[draw() % special.size()];
    std::memcpy(v.data() + i * es, &bits, es);  // little-endian: the low bytes
  }
  return v;
}

// The ops `dtype` takes (none for kBytes).
std::vector<ReduceOp> ops_of(DataType dtype) {
  std::vector<ReduceOp> ops;
  for (ReduceOp op : kAllReduceOps)
    if (core::reducible(dtype, op)) ops.push_back(op);
  for (ReduceOp op : kIntegerOnlyOps)
    if (core::reducible(dtype, op)) ops.push_back(op);
  return ops;
}

// The element's bits as an integer (little-endian).
std::uint64_t bits_of(const std::byte* p, std::size_t es) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, es);
  return v;
}

bool is_nan(DataType dtype, std::uint64_t v) {
  switch (dtype) {
    case DataType::kF16: return (v & 0x7C00) == 0x7C00 && (v & 0x03FF) != 0;
    case DataType::kBF16: return (v & 0x7F80) == 0x7F80 && (v & 0x007F) != 0;
    case DataType::kF32: return (v & 0x7F800000) == 0x7F800000 && (v & 0x007FFFFF) != 0;
    case DataType::kF64:
      return (v & 0x7FF0000000000000) == 0x7FF0000000000000 && (v & 0x000FFFFFFFFFFFFF) != 0;
    default: return false;
  }
}

// The same bits, except that a NaN equals any NaN: which operand's payload a
// sum of two NaNs carries depends on the order the compiler gave a commutative
// operation (x86 returns the first operand's), which differs between the
// scalar and the vector loops (seen: bf16 0x7FC0 + 0xFF81, generic 0xFFC1,
// AVX2 0x7FC0). Every other bit is the same.
bool same_value(DataType dtype, const std::byte* want, const std::byte* got) {
  const std::size_t es = dtype_size(dtype);
  const std::uint64_t w = bits_of(want, es), g = bits_of(got, es);
  return w == g || (is_nan(dtype, w) && is_nan(dtype, g));
}

std::string where(HostIsa isa, DataType dtype, ReduceOp op, std::size_t count, bool in_place) {
  return std::string(host::isa_name(isa)) + " " + std::string(dtype_name(dtype)) + " op " +
         std::to_string(static_cast<int>(op)) + " count " + std::to_string(count) +
         (in_place ? " in place" : " out of place");
}

// Every instruction set this CPU runs (the generic one too where
// `with_generic`), dtype, op and count, with two inputs drawn from `seed`:
// f(isa, dtype, op, count, a, b).
template <typename F>
void for_each_case(bool with_generic, std::uint32_t seed, F f) {
  for (HostIsa isa : host::kAllHostIsas) {
    if ((isa == HostIsa::kGeneric && !with_generic) || !host::isa_runs(isa)) continue;
    for (DataType dtype : kAllDataTypes)
      for (ReduceOp op : ops_of(dtype))
        for (std::size_t count : kCounts) {
          const auto a = input(dtype, count, static_cast<std::uint32_t>(count * seed + 7));
          const auto b = input(dtype, count, static_cast<std::uint32_t>(count * seed + 8));
          f(isa, dtype, op, count, a, b);
        }
  }
}

TEST(HostKernels, EveryInstructionSetGivesTheGenericBits) {
  std::size_t compared = 0;
  for_each_case(
      false, 131,
      [&](HostIsa isa, DataType dtype, ReduceOp op, std::size_t count,
          const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
        const std::size_t es = dtype_size(dtype);
        for (bool in_place : {false, true}) {
          SCOPED_TRACE(where(isa, dtype, op, count, in_place));
          // One byte past the end on both sides: no set writes beyond count.
          std::vector<std::byte> want(a.size() + 1, std::byte{0x5A});
          std::vector<std::byte> got(a.size() + 1, std::byte{0x5A});
          if (in_place) {
            std::memcpy(want.data(), a.data(), a.size());
            std::memcpy(got.data(), a.data(), a.size());
          }
          const void* first_w = in_place ? static_cast<const void*>(want.data()) : a.data();
          const void* first_g = in_place ? static_cast<const void*>(got.data()) : a.data();
          ASSERT_TRUE(
              host::reduce_on(HostIsa::kGeneric, dtype, op, want.data(), first_w, b.data(), count));
          ASSERT_TRUE(host::reduce_on(isa, dtype, op, got.data(), first_g, b.data(), count));
          if (op == ReduceOp::kMean) {
            for (std::size_t divisor : {std::size_t{3}, std::size_t{7}}) {
              ASSERT_TRUE(host::divide_on(HostIsa::kGeneric, dtype, want.data(), count, divisor));
              ASSERT_TRUE(host::divide_on(isa, dtype, got.data(), count, divisor));
            }
          }
          ASSERT_EQ(want.back(), std::byte{0x5A});
          ASSERT_EQ(got.back(), std::byte{0x5A});
          for (std::size_t i = 0; i < count; ++i)
            ASSERT_TRUE(same_value(dtype, want.data() + i * es, got.data() + i * es))
                << "element " << i << " of " << count;
          ++compared;
        }
      });
  if (compared == 0) GTEST_SKIP() << "this CPU runs only the generic host loops";
}

// dst may be either operand (the lean path's direct all-reduce reduces in
// place into the second on rank 1): the same values as into a buffer of its
// own, on every set this CPU runs, nothing written past count.
TEST(HostKernels, DstMayBeEitherOperand) {
  for_each_case(true, 17,
                [](HostIsa isa, DataType dtype, ReduceOp op, std::size_t count,
                   const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
                  const std::size_t es = dtype_size(dtype);
                  std::vector<std::byte> want(a.size() + 1, std::byte{0x5A});
                  ASSERT_TRUE(
                      host::reduce_on(isa, dtype, op, want.data(), a.data(), b.data(), count));
                  for (bool second : {false, true}) {
                    SCOPED_TRACE(where(isa, dtype, op, count, true) +
                                 (second ? " into b" : " into a"));
                    std::vector<std::byte> got(a.size() + 1, std::byte{0x5A});
                    std::memcpy(got.data(), second ? b.data() : a.data(), a.size());
                    const void* first = second ? a.data() : static_cast<const void*>(got.data());
                    const void* other = second ? static_cast<const void*>(got.data()) : b.data();
                    ASSERT_TRUE(host::reduce_on(isa, dtype, op, got.data(), first, other, count));
                    ASSERT_EQ(got.back(), std::byte{0x5A});
                    for (std::size_t i = 0; i < count; ++i)
                      ASSERT_TRUE(same_value(dtype, want.data() + i * es, got.data() + i * es))
                          << "element " << i << " of " << count;
                  }
                });
}

TEST(HostKernels, ReduceRunsTheBestSetTheCpuHas) {
  HostIsa best = HostIsa::kGeneric;
  for (HostIsa isa : host::kAllHostIsas)
    if (host::isa_runs(isa)) best = isa;  // kAllHostIsas runs from the least to the most
  EXPECT_EQ(host::host_isa(), best) << host::isa_name(host::host_isa());
  EXPECT_TRUE(host::isa_runs(HostIsa::kGeneric));
}

TEST(HostKernels, ASetThisCpuLacksIsAnErrorAndWritesNothing) {
  for (HostIsa isa : host::kAllHostIsas) {
    if (host::isa_runs(isa)) continue;
    float dst = 1.0F;
    const float b = 2.0F;
    const Status s = host::reduce_on(isa, DataType::kF32, ReduceOp::kSum, &dst, &dst, &b, 1);
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.to_string().find(host::isa_name(isa)), std::string::npos) << s.to_string();
    EXPECT_EQ(dst, 1.0F);
    return;
  }
  GTEST_SKIP() << "this CPU runs every set of this build";
}

TEST(HostKernels, ErrorsAreTheSameOnEverySet) {
  for (HostIsa isa : host::kAllHostIsas) {
    if (!host::isa_runs(isa)) continue;
    SCOPED_TRACE(host::isa_name(isa));
    std::byte d{}, b{};
    EXPECT_EQ(host::reduce_on(isa, DataType::kBytes, ReduceOp::kSum, &d, &d, &b, 1).code(),
              ErrorCode::kInvalidArgument);
    float f = 1.0F;
    EXPECT_EQ(host::reduce_on(isa, DataType::kF32, ReduceOp::kBand, &f, &f, &f, 1).code(),
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(host::divide_on(isa, DataType::kF32, &f, 1, 0).code(), ErrorCode::kInternal);
    EXPECT_EQ(f, 1.0F);
  }
}

}  // namespace
}  // namespace ruccl
