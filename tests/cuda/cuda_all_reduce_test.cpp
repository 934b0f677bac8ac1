// all_reduce over the CUDA adapter: logical ranks cuda:0..n-1 (all on GPU 0 of
// a one-GPU machine), every op x every reducible dtype x odd counts x forms,
// against the closed forms of test_support; random bit patterns against the
// host adapter, element for element; Mean's rounding by hand. Skips (with the
// reason) where no GPU is usable.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cuda_test_support.hpp"

namespace ruccl::test::gpu {
namespace {

// kUnaligned: the input starts one element and the output three elements into
// their allocations, so the kernels' 16-byte packs see mismatched offsets.
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
  std::size_t count() const { return shape_count(shape).value_or(0); }
  std::string name() const {
    return std::string(dtype_name(dtype)) + " " + std::string(op_name(op)) + " " +
           shape_of(shape) + " " + form_name(form);
  }
};

void run_cases(Communicator& comm, const std::vector<Case>& cases, Failures& f) {
  const std::size_t world = comm.world_size();
  std::vector<Bytes> expected(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i)
    expected[i] = expected_reduction(cases[i].dtype, cases[i].op, world, cases[i].count(), cases[i].salt);
  run_ranks(world, f, [&](std::size_t rank) {
    const DeviceId dev = cuda_device(rank);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      const std::size_t es = dtype_size(c.dtype);
      const std::string what = "all_reduce " + c.name() + " world " + std::to_string(world);
      const Bytes host_in = reduce_input_buffer(c.dtype, c.op, rank, c.count(), c.salt);
      const std::size_t in_skip = c.form == Form::kUnaligned ? es : 0;
      Bytes padded(in_skip, std::byte{0x11});
      padded.insert(padded.end(), host_in.begin(), host_in.end());
      DeviceBytes in = DeviceBytes::upload(dev, padded);
      const TensorView iv = in.view(c.dtype, c.shape, in_skip);
      Status s;
      Bytes got;
      switch (c.form) {
        case Form::kValue: {
          auto r = comm.all_reduce(rank, iv, c.op);
          if (!r.is_ok()) {
            f.add(rank, what + ": " + describe(r.status()));
            continue;
          }
          check_device_tensor(f, rank, what, r.value(), c.dtype, c.shape, expected[i]);
          break;
        }
        case Form::kInto:
        case Form::kUnaligned: {
          const std::size_t out_skip = c.form == Form::kUnaligned ? 3 * es : 0;
          DeviceBytes out = DeviceBytes::filled(dev, out_skip + host_in.size() + es, 0xA5);
          s = comm.all_reduce_into(rank, iv, out.view(c.dtype, c.shape, out_skip), c.op);
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
          s = comm.all_reduce_into(rank, iv, iv, c.op);
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

class CudaAllReduce : public GpuTestWithParam<std::size_t> {};

TEST_P(CudaAllReduce, EveryOpDtypeOddCountAndForm) {
  const std::size_t world = GetParam();
  auto comm = make_cuda_comm(world);
  std::vector<Case> cases;
  std::uint64_t salt = 0;
  for (DataType dtype : kReducible)
    for (ReduceOp op : kAllReduceOps)
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{3}, world + 1,
                                std::size_t{257}, std::size_t{4099}})
        for (Form form : kForms) cases.push_back({dtype, op, Shape{count}, form, salt++ % 11});
  Failures f;
  run_cases(*comm, cases, f);
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST_P(CudaAllReduce, MultiDimensionalShapes) {
  const std::size_t world = GetParam();
  auto comm = make_cuda_comm(world);
  std::vector<Case> cases;
  for (Form form : kForms) {
    cases.push_back({DataType::kF32, ReduceOp::kSum, Shape{7, 5}, form, 1});
    cases.push_back({DataType::kI32, ReduceOp::kMax, Shape{2, 3, 4}, form, 2});
    cases.push_back({DataType::kBF16, ReduceOp::kMean, Shape{world, 3}, form, 3});
    cases.push_back({DataType::kF64, ReduceOp::kMin, Shape{}, form, 5});  // a scalar
  }
  Failures f;
  run_cases(*comm, cases, f);
  EXPECT_TRUE(f.empty()) << f.report();
}

INSTANTIATE_TEST_SUITE_P(Worlds, CudaAllReduce, ::testing::Values(1, 2, 3, 4, 8),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

class CudaAllReduceLarge : public GpuTest {};

// About a million elements: uneven chunks, long vectorised runs.
TEST_F(CudaAllReduceLarge, MillionElements) {
  constexpr std::size_t kCount = 1000003;
  const struct {
    std::size_t world;
    Case c;
  } larges[] = {
      {4, {DataType::kF32, ReduceOp::kSum, Shape{kCount}, Form::kValue, 1}},
      {4, {DataType::kF32, ReduceOp::kMean, Shape{kCount}, Form::kUnaligned, 6}},
      {7, {DataType::kI64, ReduceOp::kProd, Shape{kCount}, Form::kInPlace, 2}},
      {3, {DataType::kBF16, ReduceOp::kMax, Shape{kCount}, Form::kInto, 3}},
      {5, {DataType::kI8, ReduceOp::kMean, Shape{kCount}, Form::kValue, 5}},
  };
  for (const auto& l : larges) {
    SCOPED_TRACE("world " + std::to_string(l.world) + " " + l.c.name());
    auto comm = make_cuda_comm(l.world);
    Failures f;
    run_cases(*comm, {l.c}, f);
    EXPECT_TRUE(f.empty()) << f.report();
  }
}

// Random bit patterns (NaN, infinities, subnormals, wrapping integers) give
// the same elements on the CUDA adapter as on the host adapter: the same ring,
// the same arithmetic. Any NaN matches any NaN (payloads may differ).
TEST_F(CudaAllReduceLarge, RandomBitsMatchTheHostAdapter) {
  constexpr std::size_t kCount = 4099;
  for (std::size_t world : {2, 3, 4}) {
    auto device_comm = make_cuda_comm(world);
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
          DeviceBytes d = DeviceBytes::upload(cuda_device(rank), in);
          const Status ds = device_comm->all_reduce_into(rank, d.view1(dtype), d.view1(dtype), op);
          if (!hs.is_ok() || !ds.is_ok()) {
            f.add(rank, what + ": host " + describe(hs) + ", cuda " + describe(ds));
            continue;
          }
          check_bytes(f, rank, what + " (cuda vs host)", dtype, d.download().data(), want);
        }
      }
    });
    EXPECT_TRUE(f.empty()) << f.report();
  }
}

// Values known by hand, independent of the codecs: f16/bf16 rounding, integer
// Mean truncating toward zero after wrapping.
TEST_F(CudaAllReduceLarge, ByHand) {
  auto comm = make_cuda_comm(4);
  Failures f;
  run_ranks(4, f, [&](std::size_t rank) {
    const std::uint16_t f16[] = {0x3C00, 0x4000, 0x4200, 0x4400};  // 1 2 3 4
    const std::uint16_t bf16[] = {0x3F80, 0x4000, 0x4040, 0x4080};
    const struct {
      DataType dtype;
      ReduceOp op;
      std::uint16_t bits;
    } wants[] = {{DataType::kF16, ReduceOp::kSum, 0x4900},  {DataType::kF16, ReduceOp::kMean, 0x4100},
                 {DataType::kF16, ReduceOp::kProd, 0x4E00}, {DataType::kBF16, ReduceOp::kSum, 0x4120},
                 {DataType::kBF16, ReduceOp::kMean, 0x4020}, {DataType::kBF16, ReduceOp::kMax, 0x4080}};
    for (const auto& w : wants) {
      const std::uint16_t v = w.dtype == DataType::kF16 ? f16[rank] : bf16[rank];
      Bytes host(2);
      std::memcpy(host.data(), &v, 2);
      DeviceBytes d = DeviceBytes::upload(cuda_device(rank), host);
      Status s = comm->all_reduce_into(rank, d.view1(w.dtype), d.view1(w.dtype), w.op);
      std::uint16_t got = 0;
      std::memcpy(&got, d.download().data(), 2);
      RANK_CHECK(f, rank, s.is_ok() && got == w.bits,
                 describe(s) << " " << dtype_name(w.dtype) << " " << op_name(w.op) << ": got 0x"
                             << std::hex << got << " expected 0x" << w.bits);
    }
    // i8: 100 * 4 wraps to 144 - 256 = -112; Mean truncates -112 / 4 = -28.
    // i32: Mean of {-1, -1, -1, -2} = -5 / 4 = -1 (toward zero).
    const struct {
      DataType dtype;
      ReduceOp op;
      std::int64_t in;
      std::int64_t want;
    } ints[] = {{DataType::kI8, ReduceOp::kSum, 100, -112},
                {DataType::kI8, ReduceOp::kMean, 100, -28},
                {DataType::kI32, ReduceOp::kMean, rank == 3 ? -2 : -1, -1}};
    for (const auto& c : ints) {
      Bytes host(dtype_size(c.dtype));
      encode(c.dtype, static_cast<std::uint64_t>(c.in), host.data());
      Bytes want(host.size());
      encode(c.dtype, static_cast<std::uint64_t>(c.want), want.data());
      DeviceBytes d = DeviceBytes::upload(cuda_device(rank), host);
      Status s = comm->all_reduce_into(rank, d.view1(c.dtype), d.view1(c.dtype), c.op);
      RANK_CHECK(f, rank, s.is_ok(), describe(s));
      check_bytes(f, rank, std::string(dtype_name(c.dtype)) + " " + std::string(op_name(c.op)),
                  c.dtype, d.download().data(), want);
    }
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

}  // namespace
}  // namespace ruccl::test::gpu
