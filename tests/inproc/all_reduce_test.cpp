// all_reduce over 1..8 ranks: every op x every reducible dtype x sizes x forms
// (value, into, in-place, unaligned), each checked against a closed form; large
// tensors; values known by hand. One body per case, run on the backend of the
// binary (tests/support/backend.hpp): host devices in ruccl_inproc_all_reduce,
// CUDA devices in ruccl_cuda_tests (skipped, saying why, without a GPU), and
// over world communicators across processes in ruccl_mpi_world_matrix (the
// communicators come from tested_factory(), tests/support/comm_factory.hpp;
// tests for a fixed world other than the one mpirun made skip there).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "comm_factory.hpp"

namespace ruccl::test {
namespace {

// kUnaligned: the input starts one element and the output three elements into
// their allocations, so vectorised code (the CUDA kernels' 16-byte packs) sees
// mismatched offsets.
enum class Form { kValue, kInto, kInPlace, kUnaligned };
constexpr Form kForms[] = {Form::kValue, Form::kInto, Form::kInPlace, Form::kUnaligned};
const char* form_name(Form f) {
  switch (f) {
    case Form::kValue: return "value";
    case Form::kInto: return "into";
    case Form::kInPlace: return "in-place";
    case Form::kUnaligned: return "unaligned";
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
// whole list. Records the failures of all ranks.
void run_cases(const Backend& b, Communicator& comm, const std::vector<Case>& cases, Failures& f) {
  const std::size_t world = comm.world_size();
  std::vector<Bytes> expected(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    expected[i] = expected_reduction(c.dtype, c.op, world, c.count(), c.salt);
  }
  run_local_ranks(comm, f, [&](std::size_t rank) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      const std::size_t es = dtype_size(c.dtype);
      const std::string what = "all_reduce " + c.name() + " world " + std::to_string(world);
      const Bytes host_in = reduce_input_buffer(c.dtype, c.op, rank, c.count(), c.salt);
      const std::size_t in_skip = c.form == Form::kUnaligned ? es : 0;
      Bytes padded(in_skip, std::byte{0x11});
      padded.insert(padded.end(), host_in.begin(), host_in.end());
      const Buffer in = b.upload(rank, padded);
      const TensorView iv = in.view(c.dtype, c.shape, in_skip);
      switch (c.form) {
        case Form::kValue: {
          auto r = comm.all_reduce(rank, iv, c.op);
          if (!r.is_ok()) {
            f.add(rank, what + ": " + describe(r.status()));
            continue;
          }
          b.check_tensor(f, rank, what, r.value(), c.dtype, c.shape, expected[i]);
          break;
        }
        case Form::kInto:
        case Form::kUnaligned: {
          // One spare element after the output: it must stay untouched.
          const std::size_t out_skip = c.form == Form::kUnaligned ? 3 * es : 0;
          const Buffer out = b.filled(rank, out_skip + host_in.size() + es, 0xA5);
          Status s = comm.all_reduce_into(rank, iv, out.view(c.dtype, c.shape, out_skip), c.op);
          if (!s.is_ok()) {
            f.add(rank, what + ": " + describe(s));
            continue;
          }
          const Bytes all = out.download();
          check_bytes(f, rank, what, c.dtype, all.data() + out_skip, expected[i]);
          RANK_CHECK(f, rank, all.back() == std::byte{0xA5}, what << ": wrote past the output");
          break;
        }
        case Form::kInPlace: {
          Status s = comm.all_reduce_into(rank, iv, iv, c.op);
          if (!s.is_ok()) {
            f.add(rank, what + ": " + describe(s));
            continue;
          }
          check_bytes(f, rank, what, c.dtype, in.download().data(), expected[i]);
          continue;  // the input is the result
        }
      }
      RANK_CHECK(f, rank, in.download() == padded, what << ": input changed");
    }
  });
}

class AllReduce : public BackendWorldTest {};

// Every reducible dtype x its ops (the integer-only ones too for integers) x
// each of `counts(dtype)` x every form, salted in turn.
template <typename Counts>
std::vector<Case> every_case(Counts counts) {
  std::vector<Case> cases;
  std::uint64_t salt = 0;
  for (DataType dtype : kReducible) {
    std::vector<ReduceOp> ops(std::begin(kAllReduceOps), std::end(kAllReduceOps));
    if (!is_floating(dtype))
      ops.insert(ops.end(), std::begin(kIntegerOnlyOps), std::end(kIntegerOnlyOps));
    for (ReduceOp op : ops)
      for (std::size_t count : counts(dtype))
        for (Form form : kForms) cases.push_back({dtype, op, Shape{count}, form, salt++ % 11});
  }
  return cases;
}

TEST_P(AllReduce, EveryOpDtypeSizeAndForm) {
  const Backend& b = tested_backend();
  const std::size_t world = GetParam();
  auto comm = tested_factory().make_comm(world);
  const std::vector<Case> cases = every_case([world](DataType) {
    return std::vector<std::size_t>{0, 1, 3, world - 1, world + 1, 257, 4099};
  });
  Failures f;
  run_cases(b, *comm, cases, f);
  EXPECT_TRUE(f.empty()) << f.report();
  for (std::size_t r : local_ranks(*comm)) EXPECT_EQ(comm->next_sequence(r), cases.size());
}

TEST_P(AllReduce, MultiDimensionalShapesKeepTheirShape) {
  const Backend& b = tested_backend();
  const std::size_t world = GetParam();
  auto comm = tested_factory().make_comm(world);
  std::vector<Case> cases;
  for (Form form : kForms) {
    cases.push_back({DataType::kF32, ReduceOp::kSum, Shape{7, 5}, form, 1});
    cases.push_back({DataType::kI32, ReduceOp::kMax, Shape{2, 3, 4}, form, 2});
    cases.push_back({DataType::kBF16, ReduceOp::kMean, Shape{world, 3}, form, 3});
    cases.push_back({DataType::kU8, ReduceOp::kProd, Shape{0, 6}, form, 4});
    cases.push_back({DataType::kF64, ReduceOp::kMin, Shape{}, form, 5});  // a scalar
  }
  Failures f;
  run_cases(b, *comm, cases, f);
  EXPECT_TRUE(f.empty()) << f.report();
}

// A count large enough for several messages and pipeline segments per chunk
// in every dtype, and a 2-D shape with rows not divisible by the world.
TEST_P(AllReduce, EveryDtypeAtALargeCountAndOddRows) {
  const Backend& b = tested_backend();
  const std::size_t world = GetParam();
  auto comm = tested_factory().make_comm(world);
  std::vector<Case> cases;
  std::uint64_t k = 0;
  for (DataType dtype : kReducible) {
    cases.push_back({dtype, kAllReduceOps[k % 5], Shape{65537}, kForms[k % 4], 1000 + k});
    cases.push_back(
        {dtype, kAllReduceOps[(k + 2) % 5], Shape{world + 2, 3}, kForms[(k + 1) % 4], 2000 + k});
    ++k;
  }
  Failures f;
  run_cases(b, *comm, cases, f);
  EXPECT_TRUE(f.empty()) << f.report();
}

// Past the node mailbox's 64 KiB slot and within the lean path's direct
// all-reduce (about 96 KiB per rank: up to 128 KiB at 2 processes, 512 KiB
// at 4), every dtype and op in every form, at odd counts: each rank reduces
// its shard (whole cache lines but the last) of the others' inputs into its
// output, then reads theirs. Only across processes (the world matrix): in
// one process no such form exists, and these cases cost minutes under the
// sanitizers.
TEST_P(AllReduce, EveryDtypeAndOpPastTheLeanSlot) {
  if (tested_factory().in_process())
    GTEST_SKIP() << "the direct all-reduce runs between processes (ruccl_mpi_world_matrix)";
  auto comm = tested_factory().make_comm(GetParam());
  Failures f;
  run_cases(tested_backend(), *comm, every_case([](DataType dtype) {
              const std::size_t es = dtype_size(dtype);
              return std::vector<std::size_t>{(((std::size_t{96} << 10) + 4 * es) / es) | 1};
            }),
            f);
  EXPECT_TRUE(f.empty()) << f.report();
}

INSTANTIATE_TEST_SUITE_P(Worlds, AllReduce, RUCCL_TEST_WORLDS(1, 2, 3, 4, 7, 8), world_name);

class AllReduceLarge : public BackendTest {};

// About a million elements: uneven chunks, long vectorised runs.
TEST_F(AllReduceLarge, MillionElements) {
  const Backend& b = tested_backend();
  constexpr std::size_t kCount = 1000003;
  struct Large {
    std::size_t world;
    Case c;
  };
  const Large larges[] = {
      {8, {DataType::kF32, ReduceOp::kSum, Shape{kCount}, Form::kValue, 1}},
      {4, {DataType::kF32, ReduceOp::kSum, Shape{kCount}, Form::kValue, 1}},
      {4, {DataType::kF32, ReduceOp::kMean, Shape{kCount}, Form::kUnaligned, 6}},
      {7, {DataType::kI64, ReduceOp::kProd, Shape{kCount}, Form::kInPlace, 2}},
      {3, {DataType::kBF16, ReduceOp::kMax, Shape{kCount}, Form::kInto, 3}},
      {4, {DataType::kF64, ReduceOp::kMean, Shape{kCount}, Form::kInPlace, 4}},
      {5, {DataType::kI8, ReduceOp::kMean, Shape{kCount}, Form::kValue, 5}},
      // (Two processes on a node without AVX-512: the lean path's direct
      // all-reduce, ranks 0 and 1 reducing in place into their own input.)
      {2, {DataType::kF32, ReduceOp::kSum, Shape{kCount}, Form::kInPlace, 7}},
      {2, {DataType::kBF16, ReduceOp::kMin, Shape{kCount}, Form::kInto, 8}},
  };
  for (const auto& l : larges) {
    if (!tested_factory().can_make(l.world)) continue;
    SCOPED_TRACE("world " + std::to_string(l.world) + " " + l.c.name());
    auto comm = tested_factory().make_comm(l.world);
    Failures f;
    run_cases(b, *comm, {l.c}, f);
    EXPECT_TRUE(f.empty()) << f.report();
  }
}

// Random bit patterns (NaN, infinities, subnormals, wrapping integers) give
// the same elements on the tested backend as on the host adapter: the same
// ring, the same arithmetic. Any NaN matches any NaN (payloads may differ).
TEST_F(AllReduceLarge, RandomBitsMatchTheHostAdapter) {
  const Backend& b = tested_backend();
  if (b.name() == "host") GTEST_SKIP() << "the host adapter is the reference itself";
  if (!tested_factory().in_process()) GTEST_SKIP() << "compares against an in-process reference";
  constexpr std::size_t kCount = 4099;
  for (std::size_t world : {2, 3, 4}) {
    auto device_comm = tested_factory().make_comm(world);
    auto host_comm = make_comm(world);
    Failures f;
    run_ranks(world, f, [&](std::size_t rank) {
      std::uint64_t salt = 0;
      for (DataType dtype : kReducible) {
        for (ReduceOp op : kAllReduceOps) {
          ++salt;
          const std::string what = "all_reduce " + std::string(dtype_name(dtype)) + " " +
                                   std::string(op_name(op)) + " world " + std::to_string(world);
          Bytes in(kCount * dtype_size(dtype));
          for (std::size_t i = 0; i < in.size(); ++i)
            in[i] = static_cast<std::byte>(splitmix64(salt * 1000003 + rank * 7919 + i) >> 24);
          Bytes want = in;
          const Status hs = host_comm->all_reduce_into(rank, view1(want, dtype, rank),
                                                       view1(want, dtype, rank), op);
          const Buffer d = b.upload(rank, in);
          const Status ds = device_comm->all_reduce_into(rank, d.view1(dtype), d.view1(dtype), op);
          if (!hs.is_ok() || !ds.is_ok()) {
            f.add(rank, what + ": host " + describe(hs) + ", " + b.name() + " " + describe(ds));
            continue;
          }
          check_bytes(f, rank, what + " (" + b.name() + " vs host)", dtype, d.download().data(),
                      want);
        }
      }
    });
    EXPECT_TRUE(f.empty()) << f.report();
  }
}

// Values whose reduction is known by hand, independent of the test's codecs.
class AllReduceByHand : public BackendTest {};

// In-place all_reduce of one element on every rank; the result, downloaded.
Bytes reduce_one_in_place(const Backend& b, Communicator& comm, std::size_t rank, DataType dtype,
                          ReduceOp op, std::uint64_t logical, Status& s) {
  Bytes host(dtype_size(dtype));
  encode(dtype, logical, host.data());
  const Buffer d = b.upload(rank, host);
  s = comm.all_reduce_into(rank, d.view1(dtype), d.view1(dtype), op);
  return d.download();
}

TEST_F(AllReduceByHand, HalfPrecisionBitPatterns) {
  const Backend& b = tested_backend();
  RUCCL_SKIP_UNLESS_WORLD(4);
  auto comm = tested_factory().make_comm(4);
  Failures f;
  // f16: rank r holds r+1 -> sum 10 (0x4900), mean 2.5 (0x4100), prod 24 (0x4E00).
  // bf16: same values: sum 10 (0x4120), mean 2.5 (0x4020), max 4 (0x4080).
  run_local_ranks(*comm, f, [&](std::size_t rank) {
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
      Bytes host(2);
      std::memcpy(host.data(), &v, 2);
      const Buffer d = b.upload(rank, host);
      Status s = comm->all_reduce_into(rank, d.view1(w.dtype), d.view1(w.dtype), w.op);
      std::memcpy(&v, d.download().data(), 2);
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
TEST_F(AllReduceByHand, RoundingOfArbitraryValuesOnTwoRanks) {
  const Backend& b = tested_backend();
  constexpr std::size_t kCount = 4099;
  RUCCL_SKIP_UNLESS_WORLD(2);
  auto comm = tested_factory().make_comm(2);
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
          std::uint16_t a = bits16(0, i, salt), b16 = bits16(1, i, salt);
          if (!not_nan16(dt, a)) a = 0x3C00 ^ (dt == DataType::kBF16 ? 0x0380 : 0);  // 1.0
          if (!not_nan16(dt, b16)) b16 = a;
          const float x = to_f32(dt, a), y = to_f32(dt, b16);
          float r = 0;
          switch (op) {
            case ReduceOp::kSum: r = x + y; break;
            case ReduceOp::kMean: r = to_f32(dt, from_f32(dt, x + y)) / 2.0f; break;
            case ReduceOp::kProd: r = x * y; break;
            case ReduceOp::kMin: r = y < x ? y : x; break;
            case ReduceOp::kMax: r = x < y ? y : x; break;
            default: break;  // floating dtypes take no bitwise or logical op
          }
          const std::uint16_t w = from_f32(dt, r);
          std::memcpy(in[0].data() + i * 2, &a, 2);
          std::memcpy(in[1].data() + i * 2, &b16, 2);
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
              default: break;
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
              default: break;
            }
            std::memcpy(in[0].data() + i * 8, &x0, 8);
            std::memcpy(in[1].data() + i * 8, &y0, 8);
            std::memcpy(want.data() + i * 8, &r, 8);
          }
        }
      }
      run_local_ranks(*comm, f, [&](std::size_t rank) {
        const std::string what = std::string("2-rank ") + std::string(dtype_name(dt)) + " " +
                                 std::string(op_name(op));
        const Buffer d = b.upload(rank, in[rank]);
        auto r = comm->all_reduce(rank, d.view1(dt), op);
        if (!r.is_ok()) return f.add(rank, what + ": " + describe(r.status()));
        b.check_tensor(f, rank, what, *r, dt, {kCount}, want);
      });
    }
  }
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST_F(AllReduceByHand, IntegerMeanTruncatesTowardZeroAndSumWraps) {
  const Backend& b = tested_backend();
  const CommFactory& factory = tested_factory();
  if (!factory.can_make(3) && !factory.can_make(4))
    GTEST_SKIP() << factory.name() << " makes neither 3 nor 4 ranks here";
  Failures f;
  auto as_int = [](DataType dtype, const Bytes& bytes) -> std::int64_t {
    switch (dtype) {
      case DataType::kI8: return static_cast<std::int8_t>(bytes.at(0));
      case DataType::kI32: {
        std::int32_t v = 0;
        std::memcpy(&v, bytes.data(), 4);
        return v;
      }
      default: {
        std::int64_t v = 0;
        std::memcpy(&v, bytes.data(), 8);
        return v;
      }
    }
  };
  auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  if (factory.can_make(3)) {
    auto comm = factory.make_comm(3);
    run_local_ranks(*comm, f, [&](std::size_t rank) {
      Status s;
      // i32 mean of {-1, -1, -2} = -4 / 3 = -1 (toward zero, not -2).
      std::int64_t a =
          as_int(DataType::kI32, reduce_one_in_place(b, *comm, rank, DataType::kI32,
                                                     ReduceOp::kMean, u(rank == 2 ? -2 : -1), s));
      RANK_CHECK(f, rank, s.is_ok() && a == -1, describe(s) << " i32 mean got " << a);
      // i8 sum of {100, 100, 100} wraps to 44; mean of the wrapped sum is 14.
      std::int64_t b8 = as_int(DataType::kI8, reduce_one_in_place(b, *comm, rank, DataType::kI8,
                                                                  ReduceOp::kSum, 100, s));
      RANK_CHECK(f, rank, s.is_ok() && b8 == 44, describe(s) << " i8 sum got " << b8);
      std::int64_t c = as_int(DataType::kI8, reduce_one_in_place(b, *comm, rank, DataType::kI8,
                                                                 ReduceOp::kMean, 100, s));
      RANK_CHECK(f, rank, s.is_ok() && c == 14, describe(s) << " i8 mean got " << c);
      // i64 mean of INT64_MIN-ish values: the signed sum divided by 3 (no unsigned division).
      std::int64_t d = as_int(DataType::kI64, reduce_one_in_place(b, *comm, rank, DataType::kI64,
                                                                  ReduceOp::kMean, u(-9), s));
      RANK_CHECK(f, rank, s.is_ok() && d == -9, describe(s) << " i64 mean got " << d);
      // u64 prod wraps: (2^32)^3 = 0 mod 2^64... plus one: (2^32+1)^3 mod 2^64.
      const std::uint64_t x = (std::uint64_t{1} << 32) + 1;
      std::uint64_t e = 0;
      std::memcpy(&e,
                  reduce_one_in_place(b, *comm, rank, DataType::kU64, ReduceOp::kProd, x, s).data(),
                  8);
      RANK_CHECK(f, rank, s.is_ok() && e == x * x * x, describe(s) << " u64 prod got " << e);
    });
  }
  // Four ranks: i8 100 * 4 wraps to 144 - 256 = -112; Mean truncates -112 / 4 =
  // -28. i32 Mean of {-1, -1, -1, -2} = -5 / 4 = -1 (toward zero).
  if (factory.can_make(4)) {
    auto comm4 = factory.make_comm(4);
    run_local_ranks(*comm4, f, [&](std::size_t rank) {
      const struct {
        DataType dtype;
        ReduceOp op;
        std::int64_t in;
        std::int64_t want;
      } ints[] = {{DataType::kI8, ReduceOp::kSum, 100, -112},
                  {DataType::kI8, ReduceOp::kMean, 100, -28},
                  {DataType::kI32, ReduceOp::kMean, rank == 3 ? -2 : -1, -1}};
      for (const auto& c : ints) {
        Status s;
        const Bytes got = reduce_one_in_place(b, *comm4, rank, c.dtype, c.op, u(c.in), s);
        Bytes want(dtype_size(c.dtype));
        encode(c.dtype, u(c.want), want.data());
        RANK_CHECK(f, rank, s.is_ok(), describe(s));
        check_bytes(f, rank,
                    "4-rank " + std::string(dtype_name(c.dtype)) + " " + std::string(op_name(c.op)),
                    c.dtype, got.data(), want);
      }
    });
  }
  EXPECT_TRUE(f.empty()) << f.report();
}

}  // namespace
}  // namespace ruccl::test
