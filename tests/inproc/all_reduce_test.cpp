// all_reduce over 1..8 in-process ranks: every op x every reducible dtype x
// sizes x forms (value, into, in-place), each checked against a closed form.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace ruccl::test {
namespace {

enum class Form { kValue, kInto, kInPlace };
constexpr Form kForms[] = {Form::kValue, Form::kInto, Form::kInPlace};
const char* form_name(Form f) {
  switch (f) {
    case Form::kValue: return "value";
    case Form::kInto: return "into";
    case Form::kInPlace: return "in-place";
  }
  return "?";
}

struct Case {
  DataType dtype;
  ReduceOp op;
  Shape shape;
  Form form;
  std::uint64_t salt;
  std::string name() const {
    return std::string(dtype_name(dtype)) + " " + std::string(op_name(op)) + " " +
           shape_of(shape) + " " + form_name(form);
  }
  std::size_t count() const { return shape_count(shape).value_or(0); }
};

// Runs every case on every rank in the same order; one thread per rank for the
// whole list. Returns the failures of all ranks.
void run_cases(Communicator& comm, const std::vector<Case>& cases, Failures& f) {
  const std::size_t world = comm.world_size();
  std::vector<Bytes> expected(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    expected[i] = expected_reduction(c.dtype, c.op, world, c.count(), c.salt);
  }
  run_ranks(world, f, [&](std::size_t rank) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      const std::string what = "all_reduce " + c.name() + " world " + std::to_string(world);
      Bytes in = reduce_input_buffer(c.dtype, c.op, rank, c.count(), c.salt);
      const Bytes original = in;
      const TensorView in_view = view(in, c.dtype, c.shape, rank);
      switch (c.form) {
        case Form::kValue: {
          auto r = comm.all_reduce(rank, in_view, c.op);
          if (!r.is_ok()) {
            f.add(rank, what + ": " + describe(r.status()));
            continue;
          }
          check_tensor(f, rank, what, r.value(), c.dtype, c.shape, expected[i]);
          RANK_CHECK(f, rank, in == original, what << ": input changed");
          break;
        }
        case Form::kInto: {
          Bytes out = filled(in.size(), 0xA5);
          Status s = comm.all_reduce_into(rank, in_view, view(out, c.dtype, c.shape, rank), c.op);
          if (!s.is_ok()) {
            f.add(rank, what + ": " + describe(s));
            continue;
          }
          check_bytes(f, rank, what, c.dtype, out.data(), expected[i]);
          RANK_CHECK(f, rank, in == original, what << ": input changed");
          break;
        }
        case Form::kInPlace: {
          Status s = comm.all_reduce_into(rank, in_view, in_view, c.op);
          if (!s.is_ok()) {
            f.add(rank, what + ": " + describe(s));
            continue;
          }
          check_bytes(f, rank, what, c.dtype, in.data(), expected[i]);
          break;
        }
      }
    }
  });
}

class AllReduce : public ::testing::TestWithParam<std::size_t> {};

TEST_P(AllReduce, EveryOpDtypeSizeAndForm) {
  const std::size_t world = GetParam();
  auto comm = make_comm(world);
  std::vector<Case> cases;
  std::uint64_t salt = 0;
  for (DataType dtype : kReducible) {
    for (ReduceOp op : kAllReduceOps) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{3}, world - 1,
                                std::size_t{257}}) {
        for (Form form : kForms) cases.push_back({dtype, op, Shape{count}, form, salt++ % 11});
      }
    }
  }
  Failures f;
  run_cases(*comm, cases, f);
  EXPECT_TRUE(f.empty()) << f.report();
  for (std::size_t r = 0; r < world; ++r) EXPECT_EQ(comm->next_sequence(r), cases.size());
}

TEST_P(AllReduce, MultiDimensionalShapesKeepTheirShape) {
  const std::size_t world = GetParam();
  auto comm = make_comm(world);
  std::vector<Case> cases;
  for (Form form : kForms) {
    cases.push_back({DataType::kF32, ReduceOp::kSum, Shape{7, 5}, form, 1});
    cases.push_back({DataType::kI32, ReduceOp::kMax, Shape{2, 3, 4}, form, 2});
    cases.push_back({DataType::kBF16, ReduceOp::kMean, Shape{world, 3}, form, 3});
    cases.push_back({DataType::kU8, ReduceOp::kProd, Shape{0, 6}, form, 4});
    cases.push_back({DataType::kF64, ReduceOp::kMin, Shape{}, form, 5});  // a scalar
  }
  Failures f;
  run_cases(*comm, cases, f);
  EXPECT_TRUE(f.empty()) << f.report();
}

INSTANTIATE_TEST_SUITE_P(Worlds, AllReduce, ::testing::Values(1, 2, 3, 4, 7, 8),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

// A few large tensors (about a million elements), where chunks are uneven.
TEST(AllReduceLarge, MillionElements) {
  constexpr std::size_t kCount = 1000003;
  struct Large {
    std::size_t world;
    Case c;
  };
  const Large larges[] = {
      {8, {DataType::kF32, ReduceOp::kSum, Shape{kCount}, Form::kValue, 1}},
      {7, {DataType::kI64, ReduceOp::kProd, Shape{kCount}, Form::kInPlace, 2}},
      {3, {DataType::kBF16, ReduceOp::kMax, Shape{kCount}, Form::kInto, 3}},
      {4, {DataType::kF64, ReduceOp::kMean, Shape{kCount}, Form::kInPlace, 4}},
      {5, {DataType::kI8, ReduceOp::kMean, Shape{kCount}, Form::kValue, 5}},
  };
  for (const auto& l : larges) {
    SCOPED_TRACE("world " + std::to_string(l.world) + " " + l.c.name());
    auto comm = make_comm(l.world);
    Failures f;
    run_cases(*comm, {l.c}, f);
    EXPECT_TRUE(f.empty()) << f.report();
  }
}

// Values whose reduction is known by hand, independent of the test's codecs.
TEST(AllReduceByHand, HalfPrecisionBitPatterns) {
  auto comm = make_comm(4);
  Failures f;
  // f16: rank r holds r+1 -> sum 10 (0x4900), mean 2.5 (0x4100), prod 24 (0x4E00).
  // bf16: same values: sum 10 (0x4120), mean 2.5 (0x4020), max 4 (0x4080).
  run_ranks(4, f, [&](std::size_t rank) {
    const std::uint16_t f16[] = {0x3C00, 0x4000, 0x4200, 0x4400};  // 1 2 3 4
    const std::uint16_t bf16[] = {0x3F80, 0x4000, 0x4040, 0x4080};
    struct Want {
      DataType dtype;
      ReduceOp op;
      std::uint16_t bits;
    };
    const Want wants[] = {{DataType::kF16, ReduceOp::kSum, 0x4900},
                          {DataType::kF16, ReduceOp::kMean, 0x4100},
                          {DataType::kF16, ReduceOp::kProd, 0x4E00},
                          {DataType::kBF16, ReduceOp::kSum, 0x4120},
                          {DataType::kBF16, ReduceOp::kMean, 0x4020},
                          {DataType::kBF16, ReduceOp::kMax, 0x4080}};
    for (const Want& w : wants) {
      std::uint16_t v = w.dtype == DataType::kF16 ? f16[rank] : bf16[rank];
      Status s = comm->all_reduce_into(rank, TensorView::of(&v, w.dtype, 1, host_device(rank)),
                                       TensorView::of(&v, w.dtype, 1, host_device(rank)), w.op);
      RANK_CHECK(f, rank, s.is_ok(), describe(s));
      RANK_CHECK(f, rank, v == w.bits, dtype_name(w.dtype) << " " << op_name(w.op) << ": got 0x"
                                                          << std::hex << v << " expected 0x"
                                                          << w.bits);
    }
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// Two ranks: every element is combined exactly once (a op b), so arbitrary
// values have a closed form even where rounding happens. f16/bf16 compute in
// f32 and round once per combine; Mean rounds the sum, then the quotient.
TEST(AllReduceByHand, RoundingOfArbitraryValuesOnTwoRanks) {
  constexpr std::size_t kCount = 4099;
  auto comm = make_comm(2);
  Failures f;
  auto bits16 = [](std::size_t rank, std::size_t i, std::uint64_t salt) {
    // Random 16-bit patterns, NaN inputs excluded; all exponents, subnormals, infs.
    std::uint16_t h = static_cast<std::uint16_t>(splitmix64(salt * 977 + rank * 100003 + i));
    return h;
  };
  auto not_nan16 = [](DataType dt, std::uint16_t h) {
    return dt == DataType::kF16 ? !((h & 0x7C00) == 0x7C00 && (h & 0x3FF))
                                : !((h & 0x7F80) == 0x7F80 && (h & 0x7F));
  };
  auto to_f32 = [](DataType dt, std::uint16_t h) {
    return dt == DataType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
  };
  auto from_f32 = [](DataType dt, float x) {
    return dt == DataType::kF16 ? f32_to_f16(x) : f32_to_bf16(x);
  };
  for (DataType dt : {DataType::kF16, DataType::kBF16, DataType::kF32, DataType::kF64}) {
    for (ReduceOp op : kAllReduceOps) {
      const std::uint64_t salt = static_cast<std::uint64_t>(dt) * 10 + static_cast<std::uint64_t>(op);
      const std::size_t es = dtype_size(dt);
      std::vector<Bytes> in(2, Bytes(kCount * es));
      Bytes want(kCount * es);
      for (std::size_t i = 0; i < kCount; ++i) {
        if (es == 2) {
          std::uint16_t a = bits16(0, i, salt), b = bits16(1, i, salt);
          if (!not_nan16(dt, a)) a = 0x3C00 ^ (dt == DataType::kBF16 ? 0x0380 : 0);  // 1.0
          if (!not_nan16(dt, b)) b = a;
          const float x = to_f32(dt, a), y = to_f32(dt, b);
          float r = 0;
          switch (op) {
            case ReduceOp::kSum: r = x + y; break;
            case ReduceOp::kMean: r = to_f32(dt, from_f32(dt, x + y)) / 2.0f; break;
            case ReduceOp::kProd: r = x * y; break;
            case ReduceOp::kMin: r = y < x ? y : x; break;
            case ReduceOp::kMax: r = x < y ? y : x; break;
          }
          const std::uint16_t w = from_f32(dt, r);
          std::memcpy(in[0].data() + i * 2, &a, 2);
          std::memcpy(in[1].data() + i * 2, &b, 2);
          std::memcpy(want.data() + i * 2, &w, 2);
        } else {
          // Finite values of all magnitudes with fractional parts.
          auto value = [&](std::size_t rank) {
            const std::uint64_t h = splitmix64(salt * 31 + rank * 7919 + i);
            const double mant = static_cast<double>(h >> 11) / 9007199254740992.0 - 0.5;
            return std::ldexp(mant, static_cast<int>(h % 60) - 30);
          };
          const double x0 = value(0), y0 = value(1);
          if (dt == DataType::kF32) {
            const float x = static_cast<float>(x0), y = static_cast<float>(y0);
            float r = 0;
            switch (op) {
              case ReduceOp::kSum: r = x + y; break;
              case ReduceOp::kMean: r = (x + y) / 2.0f; break;
              case ReduceOp::kProd: r = x * y; break;
              case ReduceOp::kMin: r = std::min(x, y); break;
              case ReduceOp::kMax: r = std::max(x, y); break;
            }
            std::memcpy(in[0].data() + i * 4, &x, 4);
            std::memcpy(in[1].data() + i * 4, &y, 4);
            std::memcpy(want.data() + i * 4, &r, 4);
          } else {
            double r = 0;
            switch (op) {
              case ReduceOp::kSum: r = x0 + y0; break;
              case ReduceOp::kMean: r = (x0 + y0) / 2.0; break;
              case ReduceOp::kProd: r = x0 * y0; break;
              case ReduceOp::kMin: r = std::min(x0, y0); break;
              case ReduceOp::kMax: r = std::max(x0, y0); break;
            }
            std::memcpy(in[0].data() + i * 8, &x0, 8);
            std::memcpy(in[1].data() + i * 8, &y0, 8);
            std::memcpy(want.data() + i * 8, &r, 8);
          }
        }
      }
      run_ranks(2, f, [&](std::size_t rank) {
        const std::string what = std::string("2-rank ") + std::string(dtype_name(dt)) + " " +
                                 std::string(op_name(op));
        auto r = comm->all_reduce(rank, view1(in[rank], dt, rank), op);
        if (!r.is_ok()) return f.add(rank, what + ": " + describe(r.status()));
        check_tensor(f, rank, what, *r, dt, {kCount}, want);
      });
    }
  }
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST(AllReduceByHand, IntegerMeanTruncatesTowardZeroAndSumWraps) {
  auto comm = make_comm(3);
  Failures f;
  run_ranks(3, f, [&](std::size_t rank) {
    // i32 mean of {-1, -1, -2} = -4 / 3 = -1 (toward zero, not -2).
    std::int32_t a = rank == 2 ? -2 : -1;
    Status s = comm->all_reduce_into(rank, TensorView::of(&a, DataType::kI32, 1, host_device(rank)),
                                     TensorView::of(&a, DataType::kI32, 1, host_device(rank)),
                                     ReduceOp::kMean);
    RANK_CHECK(f, rank, s.is_ok() && a == -1, describe(s) << " i32 mean got " << a);
    // i8 sum of {100, 100, 100} wraps to 44; mean of the wrapped sum is 14.
    std::int8_t b = 100;
    s = comm->all_reduce_into(rank, TensorView::of(&b, DataType::kI8, 1, host_device(rank)),
                              TensorView::of(&b, DataType::kI8, 1, host_device(rank)),
                              ReduceOp::kSum);
    RANK_CHECK(f, rank, s.is_ok() && b == 44, describe(s) << " i8 sum got " << int{b});
    std::int8_t c = 100;
    s = comm->all_reduce_into(rank, TensorView::of(&c, DataType::kI8, 1, host_device(rank)),
                              TensorView::of(&c, DataType::kI8, 1, host_device(rank)),
                              ReduceOp::kMean);
    RANK_CHECK(f, rank, s.is_ok() && c == 14, describe(s) << " i8 mean got " << int{c});
    // i64 mean of INT64_MIN-ish values: the signed sum divided by 3 (no unsigned division).
    std::int64_t d = -9;
    s = comm->all_reduce_into(rank, TensorView::of(&d, DataType::kI64, 1, host_device(rank)),
                              TensorView::of(&d, DataType::kI64, 1, host_device(rank)),
                              ReduceOp::kMean);
    RANK_CHECK(f, rank, s.is_ok() && d == -9, describe(s) << " i64 mean got " << d);
    // u64 prod wraps: (2^32)^3 = 0 mod 2^64... plus one: (2^32+1)^3 mod 2^64.
    std::uint64_t e = (std::uint64_t{1} << 32) + 1;
    s = comm->all_reduce_into(rank, TensorView::of(&e, DataType::kU64, 1, host_device(rank)),
                              TensorView::of(&e, DataType::kU64, 1, host_device(rank)),
                              ReduceOp::kProd);
    const std::uint64_t x = (std::uint64_t{1} << 32) + 1;
    RANK_CHECK(f, rank, s.is_ok() && e == x * x * x, describe(s) << " u64 prod got " << e);
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

}  // namespace
}  // namespace ruccl::test
