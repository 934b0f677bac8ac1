// The bitwise and logical reduction ops (band bor bxor land lor lxor) on the
// host kernels: values worked out by hand for every integer dtype, and the
// local check's error for a floating dtype.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/request.hpp"
#include "device/host/host_kernels.hpp"

namespace ruccl {
namespace {

template <typename T>
std::vector<T> reduced(ReduceOp op, DataType dtype, const std::vector<T>& a,
                       const std::vector<T>& b) {
  std::vector<T> out(a.size());
  const Status s = host::reduce(dtype, op, out.data(), a.data(), b.data(), a.size());
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return out;
}

template <typename T>
void check_every_op(DataType dtype) {
  SCOPED_TRACE(std::string(dtype_name(dtype)));
  const std::vector<T> a{T(0x0C), T(0), T(0x05), T(0), T(-1)};
  const std::vector<T> b{T(0x0A), T(0x03), T(0), T(0), T(0x11)};
  EXPECT_EQ(reduced(ReduceOp::kBand, dtype, a, b), (std::vector<T>{8, 0, 0, 0, 0x11}));
  EXPECT_EQ(reduced(ReduceOp::kBor, dtype, a, b), (std::vector<T>{0x0E, 3, 5, 0, T(-1)}));
  EXPECT_EQ(reduced(ReduceOp::kBxor, dtype, a, b),
            (std::vector<T>{6, 3, 5, 0, T(T(-1) ^ T(0x11))}));
  EXPECT_EQ(reduced(ReduceOp::kLand, dtype, a, b), (std::vector<T>{1, 0, 0, 0, 1}));
  EXPECT_EQ(reduced(ReduceOp::kLor, dtype, a, b), (std::vector<T>{1, 1, 1, 0, 1}));
  EXPECT_EQ(reduced(ReduceOp::kLxor, dtype, a, b), (std::vector<T>{0, 1, 1, 0, 0}));
}

TEST(BitwiseOps, EveryIntegerDtypeByHand) {
  check_every_op<std::int8_t>(DataType::kI8);
  check_every_op<std::uint8_t>(DataType::kU8);
  check_every_op<std::int32_t>(DataType::kI32);
  check_every_op<std::int64_t>(DataType::kI64);
  check_every_op<std::uint64_t>(DataType::kU64);
}

TEST(BitwiseOps, InPlaceReduce) {
  std::vector<std::uint64_t> a{0xF0F0, 0x1}, b{0x0FF0, 0x1};
  ASSERT_TRUE(
      host::reduce(DataType::kU64, ReduceOp::kBxor, a.data(), a.data(), b.data(), 2).is_ok());
  EXPECT_EQ(a, (std::vector<std::uint64_t>{0xFF00, 0}));
}

TEST(BitwiseOps, FloatingDtypesAreAnInvalidArgumentNamingOpAndDtype) {
  for (DataType dtype : {DataType::kF16, DataType::kBF16, DataType::kF32, DataType::kF64}) {
    for (ReduceOp op : kIntegerOnlyOps) {
      const Status s = core::check_reducible(dtype, op);
      EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(s.message().find(std::string(op_name(op))), std::string::npos) << s.to_string();
      EXPECT_NE(s.message().find(std::string(dtype_name(dtype))), std::string::npos)
          << s.to_string();
      double x = 1, y = 2, out = 0;
      EXPECT_EQ(host::reduce(dtype, op, &out, &x, &y, 1).code(), ErrorCode::kInvalidArgument);
    }
  }
  EXPECT_TRUE(core::check_reducible(DataType::kI32, ReduceOp::kLxor).is_ok());
  EXPECT_EQ(core::check_reducible(DataType::kBytes, ReduceOp::kBand).code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace ruccl
