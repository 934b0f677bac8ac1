// Status/Result, element types, ops, shapes and owned tensors.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "ruccl/ruccl.hpp"
#include "test_support.hpp"

namespace ruccl {
namespace {

using test::contains;

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.is_ok());
  EXPECT_TRUE(static_cast<bool>(s));
  EXPECT_EQ(s.code(), ErrorCode::kOk);
  EXPECT_TRUE(s.message().empty());
  EXPECT_TRUE(Status::ok().is_ok());
}

TEST(Status, ErrorCarriesCodeAndMessage) {
  Status s(ErrorCode::kRootMismatch, "rank 3 passed root 1, rank 0 passed root 2");
  EXPECT_FALSE(s.is_ok());
  EXPECT_FALSE(static_cast<bool>(s));
  EXPECT_EQ(s.code(), ErrorCode::kRootMismatch);
  EXPECT_EQ(s.message(), "rank 3 passed root 1, rank 0 passed root 2");
  const std::string text = s.to_string();
  EXPECT_TRUE(contains(text, std::string(error_code_name(ErrorCode::kRootMismatch)))) << text;
  EXPECT_TRUE(contains(text, "rank 3 passed root 1")) << text;
}

TEST(Status, WithContextPrefixesTheMessageAndKeepsTheCode) {
  Status s(ErrorCode::kTimeout, "rank 2 did not arrive");
  Status c = s.with_context("collective #4 (all_reduce)");
  EXPECT_EQ(c.code(), ErrorCode::kTimeout);
  EXPECT_TRUE(contains(c.message(), "collective #4 (all_reduce)")) << c.message();
  EXPECT_TRUE(contains(c.message(), "rank 2 did not arrive")) << c.message();
  EXPECT_LT(c.message().find("collective #4"), c.message().find("rank 2 did not arrive"));
}

TEST(Status, EveryCodeHasADistinctName) {
  std::set<std::string> names;
  for (int c = 0; c <= static_cast<int>(ErrorCode::kInternal); ++c) {
    const auto name = error_code_name(static_cast<ErrorCode>(c));
    EXPECT_FALSE(name.empty()) << c;
    names.insert(std::string(name));
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(ErrorCode::kInternal) + 1);
}

TEST(Result, HoldsAValueOrAnError) {
  Result<int> v(42);
  ASSERT_TRUE(v.is_ok());
  EXPECT_EQ(v.value(), 42);
  EXPECT_EQ(*v, 42);
  EXPECT_TRUE(v.status().is_ok());

  Result<int> e(Status(ErrorCode::kShapeMismatch, "rank 1 passed [3]"));
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(e.status().message(), "rank 1 passed [3]");
}

TEST(Result, FromAnOkStatusIsInternalError) {
  Result<std::string> r{Status::ok()};
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
}

Status try_status(bool fail) {
  RUCCL_TRY(fail ? Status(ErrorCode::kAborted, "stop") : Status::ok());
  return Status(ErrorCode::kInternal, "reached the end");
}
Status try_result(bool fail) {
  RUCCL_TRY(fail ? Result<int>(Status(ErrorCode::kFinished, "done")) : Result<int>(1));
  return Status::ok();
}

TEST(Result, TryPropagatesOnlyErrors) {
  EXPECT_EQ(try_status(true).code(), ErrorCode::kAborted);
  EXPECT_EQ(try_status(false).code(), ErrorCode::kInternal);
  EXPECT_EQ(try_result(true).code(), ErrorCode::kFinished);
  EXPECT_TRUE(try_result(false).is_ok());
}

TEST(DataTypes, SizesNamesAndRoundTrip) {
  struct Want {
    DataType dtype;
    std::size_t size;
    const char* name;
    bool floating;
  };
  const Want wants[] = {
      {DataType::kF16, 2, "f16", true},    {DataType::kBF16, 2, "bf16", true},
      {DataType::kF32, 4, "f32", true},    {DataType::kF64, 8, "f64", true},
      {DataType::kI8, 1, "i8", false},     {DataType::kU8, 1, "u8", false},
      {DataType::kI32, 4, "i32", false},   {DataType::kI64, 8, "i64", false},
      {DataType::kU64, 8, "u64", false},   {DataType::kBytes, 1, "bytes", false},
  };
  ASSERT_EQ(std::size(wants), std::size(kAllDataTypes));
  for (const auto& w : wants) {
    EXPECT_EQ(dtype_size(w.dtype), w.size) << w.name;
    EXPECT_EQ(dtype_name(w.dtype), w.name);
    EXPECT_EQ(is_floating(w.dtype), w.floating) << w.name;
    EXPECT_TRUE(is_valid(w.dtype)) << w.name;
    auto parsed = parse_dtype(w.name);
    ASSERT_TRUE(parsed.has_value()) << w.name;
    EXPECT_EQ(*parsed, w.dtype);
  }
  for (DataType d : kAllDataTypes) EXPECT_EQ(parse_dtype(dtype_name(d)), d);
}

TEST(DataTypes, UnknownValuesAndNames) {
  const auto bogus = static_cast<DataType>(200);
  EXPECT_FALSE(is_valid(bogus));
  EXPECT_EQ(dtype_name(bogus), "?");
  EXPECT_FALSE(parse_dtype("f128").has_value());
  EXPECT_FALSE(parse_dtype("").has_value());
  EXPECT_FALSE(parse_dtype("?").has_value());
  EXPECT_FALSE(is_valid(static_cast<ReduceOp>(77)));
}

TEST(ReduceOps, NamesRoundTrip) {
  const std::pair<ReduceOp, const char*> wants[] = {
      {ReduceOp::kSum, "sum"}, {ReduceOp::kMean, "mean"}, {ReduceOp::kMin, "min"},
      {ReduceOp::kMax, "max"}, {ReduceOp::kProd, "prod"}, {ReduceOp::kBand, "band"},
      {ReduceOp::kBor, "bor"}, {ReduceOp::kBxor, "bxor"}, {ReduceOp::kLand, "land"},
      {ReduceOp::kLor, "lor"}, {ReduceOp::kLxor, "lxor"}};
  for (const auto& [op, name] : wants) {
    EXPECT_EQ(op_name(op), name);
    EXPECT_TRUE(is_valid(op));
    EXPECT_EQ(parse_op(name), op);
  }
  for (ReduceOp op : kAllReduceOps) {
    EXPECT_EQ(parse_op(op_name(op)), op);
    EXPECT_FALSE(is_integer_only(op));
  }
  for (ReduceOp op : kIntegerOnlyOps) {
    EXPECT_EQ(parse_op(op_name(op)), op);
    EXPECT_TRUE(is_integer_only(op));
  }
  EXPECT_FALSE(parse_op("avg").has_value());
  EXPECT_FALSE(parse_op("").has_value());
}

TEST(Devices, NamesAndOrder) {
  EXPECT_EQ(device_name(host_device(3)), "host:3");
  EXPECT_EQ(device_name(cuda_device(0)), "cuda:0");
  EXPECT_EQ(device_kind_name(DeviceKind::kHost), "host");
  EXPECT_EQ(device_kind_name(DeviceKind::kCuda), "cuda");
  EXPECT_EQ(host_device(1), host_device(1));
  EXPECT_NE(host_device(1), cuda_device(1));
  EXPECT_LT(host_device(1), host_device(2));
}

TEST(Shapes, CountAndOverflow) {
  EXPECT_EQ(shape_count(Shape{}), std::optional<std::size_t>(1));  // a scalar
  EXPECT_EQ(shape_count(Shape{0}), std::optional<std::size_t>(0));
  EXPECT_EQ(shape_count(Shape{2, 3, 4}), std::optional<std::size_t>(24));
  EXPECT_EQ(shape_count(Shape{5, 0, 7}), std::optional<std::size_t>(0));
  EXPECT_EQ(shape_count(Shape{std::size_t{1} << 32, std::size_t{1} << 32}), std::nullopt);
  EXPECT_EQ(shape_count(Shape{std::numeric_limits<std::size_t>::max(), 2}), std::nullopt);
  EXPECT_EQ(shape_count(Shape{std::numeric_limits<std::size_t>::max()}),
            std::optional<std::size_t>(std::numeric_limits<std::size_t>::max()));
  EXPECT_EQ(shape_string(Shape{4, 5}), "[4, 5]");
  EXPECT_EQ(shape_string(Shape{7}), "[7]");
  EXPECT_EQ(shape_string(Shape{}), "[]");
}

TEST(Arithmetic, CheckedMulAndAdd) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(checked_mul(6, 7), std::optional<std::size_t>(42));
  EXPECT_EQ(checked_mul(0, kMax), std::optional<std::size_t>(0));
  EXPECT_EQ(checked_mul(kMax, 1), std::optional<std::size_t>(kMax));
  EXPECT_EQ(checked_mul(kMax / 2 + 1, 2), std::nullopt);
  EXPECT_EQ(checked_add(kMax - 1, 1), std::optional<std::size_t>(kMax));
  EXPECT_EQ(checked_add(kMax, 1), std::nullopt);
}

TEST(TensorView, CountsRowsAndFactory) {
  float data[12] = {};
  TensorView v = TensorView::of(data, DataType::kF32, 12, host_device(2));
  EXPECT_EQ(v.count(), 12u);
  EXPECT_EQ(v.row_count(), 1u);
  EXPECT_EQ(v.device, host_device(2));
  v.shape = {3, 4};
  EXPECT_EQ(v.count(), 12u);
  EXPECT_EQ(v.row_count(), 4u);
  v.shape = {2, 3, 2};
  EXPECT_EQ(v.row_count(), 6u);
  std::vector<std::int32_t> ints(5);
  TensorView s = TensorView::of(std::span<std::int32_t>(ints), DataType::kI32, host_device(1));
  EXPECT_EQ(s.data, ints.data());
  EXPECT_EQ(s.shape, Shape{5});
  EXPECT_EQ(s.device, host_device(1));
}

TEST(Tensor, HostAllocationIsZeroedAlignedAndTyped) {
  auto t = Tensor::host(DataType::kF64, Shape{3, 5}, 2);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->dtype(), DataType::kF64);
  EXPECT_EQ(t->shape(), (Shape{3, 5}));
  EXPECT_EQ(t->count(), 15u);
  EXPECT_EQ(t->bytes(), 120u);
  EXPECT_EQ(t->device(), host_device(2));
  ASSERT_NE(t->data(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t->data()) % 64, 0u);
  for (double d : t->as<double>()) EXPECT_EQ(d, 0.0);
  const TensorView v = t->view();
  EXPECT_EQ(v.data, t->data());
  EXPECT_EQ(v.shape, t->shape());
  EXPECT_EQ(v.device, host_device(2));

  Tensor moved = std::move(t).value();
  EXPECT_EQ(moved.count(), 15u);
}

TEST(Tensor, HostAllocationOfAnOverflowingShapeFails) {
  auto t = Tensor::host(DataType::kF32, Shape{std::size_t{1} << 40, std::size_t{1} << 40});
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument) << t.status().to_string();
  // Element count fits, bytes do not.
  auto b = Tensor::host(DataType::kF64, Shape{std::numeric_limits<std::size_t>::max() / 4});
  ASSERT_FALSE(b.is_ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kInvalidArgument) << b.status().to_string();
}

TEST(Tensor, EmptyHostTensor) {
  auto t = Tensor::host(DataType::kI32, Shape{0, 4});
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->count(), 0u);
  EXPECT_EQ(t->bytes(), 0u);
}

TEST(Names, CollectivesAndStrategies) {
  EXPECT_EQ(collective_name(CollectiveKind::kAllReduce), "all_reduce");
  EXPECT_EQ(collective_name(CollectiveKind::kReduce), "reduce");
  EXPECT_EQ(collective_name(CollectiveKind::kBroadcast), "broadcast");
  EXPECT_EQ(collective_name(CollectiveKind::kAllGather), "all_gather");
  EXPECT_EQ(collective_name(CollectiveKind::kReduceScatter), "reduce_scatter");
  EXPECT_EQ(collective_name(CollectiveKind::kAllToAllV), "all_to_all_v");
  EXPECT_EQ(global_strategy_name(GlobalStrategy::kHierarchical), "hierarchical");
  EXPECT_EQ(global_strategy_name(GlobalStrategy::kFlatRing), "flat_ring");
}

// The test's own half-precision converters: the reference for f16/bf16 tests.
TEST(TestSupport, HalfConvertersKnownBitPatterns) {
  using namespace ruccl::test;
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16(0.5f), 0x3800);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(1e6f), 0x7C00);
  EXPECT_EQ(f32_to_f16(2049.0f), 0x6800);  // tie to even: 2048
  EXPECT_EQ(f32_to_f16(2051.0f), 0x6802);  // tie to even: 2052
  EXPECT_EQ(f32_to_f16(5.960464477539063e-08f), 0x0001);  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x0001), 5.960464477539063e-08f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_bf16(257.0f), 0x4380);  // tie to even: 256
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  for (int i = -2048; i <= 2048; ++i) {
    EXPECT_EQ(f16_to_f32(f32_to_f16(static_cast<float>(i))), static_cast<float>(i));
  }
  for (int i = -256; i <= 256; ++i) {
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(static_cast<float>(i))), static_cast<float>(i));
  }
}

}  // namespace
}  // namespace ruccl
