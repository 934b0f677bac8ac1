// world_one_shot_test: the small all-reduce across processes (Config::
// one_shot_bytes) gives every rank the same bits, namely the left fold
// x0 op x1 op ... op x(n-1) of the ranks' inputs in rank order.
//
//   mpirun -np P world_one_shot_test [--devices-per-process D] [--expect-one-shot 0|1]
//
// Inputs are pseudo-random floats (not exact in any summation order), which
// every rank can compute for every rank. For each count, dtype (f32, f64,
// f16), op (sum, mean, max, prod) and form (value, out-of-place, in-place):
//   - with --expect-one-shot 1 (the default config, 3 or more ranks): every
//     tensor of at most one_shot_bytes must equal the left fold bit for bit:
//     the ring's other summation orders differ from it in some elements, so
//     this fails if the one-shot path did not run;
//   - every result must be within a few roundings of the left fold (any path);
//   - every rank's result must be bitwise the same as rank 0's (compared
//     through a ruccl all_gather of the bytes), for every size, fast path or not.
// Config comes from the environment (RUCCL_ONE_SHOT_BYTES may differ between
// processes: the fast path then runs nowhere, and results must still agree).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ruccl/ruccl.hpp"
#include "ruccl/world.hpp"
#include "test_support.hpp"

using namespace ruccl;
using ruccl::test::f16_to_f32;
using ruccl::test::f32_to_f16;

namespace {

double input_value(std::size_t rank, std::size_t i, std::uint64_t salt) {
  std::uint64_t x = (rank + 1) * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xBF58476D1CE4E5B9ull ^ salt;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return 0.5 + static_cast<double>(x % 1000003) / 1000003.0;  // (0.5, 1.5): no overflow in prod
}

std::vector<std::byte> input_of(DataType dt, std::size_t rank, std::size_t count, std::uint64_t salt) {
  std::vector<std::byte> out(count * dtype_size(dt));
  for (std::size_t i = 0; i < count; ++i) {
    const double v = input_value(rank, i, salt);
    if (dt == DataType::kF64) std::memcpy(out.data() + i * 8, &v, 8);
    if (dt == DataType::kF32) {
      const float f = static_cast<float>(v);
      std::memcpy(out.data() + i * 4, &f, 4);
    }
    if (dt == DataType::kF16) {
      const std::uint16_t h = f32_to_f16(static_cast<float>(v));
      std::memcpy(out.data() + i * 2, &h, 2);
    }
  }
  return out;
}

double read_at(DataType dt, const std::byte* p, std::size_t i) {
  if (dt == DataType::kF64) { double v; std::memcpy(&v, p + i * 8, 8); return v; }
  if (dt == DataType::kF32) { float v; std::memcpy(&v, p + i * 4, 4); return v; }
  std::uint16_t h;
  std::memcpy(&h, p + i * 2, 2);
  return f16_to_f32(h);
}

// x0 op x1 op ... in the dtype's arithmetic as the host adapter does it
// (f16 accumulates each step in f32 and rounds back), then Mean's division.
std::vector<std::byte> left_fold(DataType dt, ReduceOp op, std::size_t world, std::size_t count,
                                 std::uint64_t salt) {
  std::vector<std::vector<std::byte>> in;
  for (std::size_t r = 0; r < world; ++r) in.push_back(input_of(dt, r, count, salt));
  std::vector<std::byte> out = in[0];
  for (std::size_t i = 0; i < count; ++i) {
    auto combine = [op](auto a, auto b) {
      switch (op) {
        case ReduceOp::kMax: return a > b ? a : b;
        case ReduceOp::kProd: return a * b;
        default: return a + b;
      }
    };
    if (dt == DataType::kF64) {
      double acc = read_at(dt, in[0].data(), i);
      for (std::size_t r = 1; r < world; ++r) acc = combine(acc, read_at(dt, in[r].data(), i));
      if (op == ReduceOp::kMean) acc /= static_cast<double>(world);
      std::memcpy(out.data() + i * 8, &acc, 8);
    } else if (dt == DataType::kF32) {
      float acc = static_cast<float>(read_at(dt, in[0].data(), i));
      for (std::size_t r = 1; r < world; ++r)
        acc = combine(acc, static_cast<float>(read_at(dt, in[r].data(), i)));
      if (op == ReduceOp::kMean) acc /= static_cast<float>(world);
      std::memcpy(out.data() + i * 4, &acc, 4);
    } else {
      std::uint16_t acc;
      std::memcpy(&acc, in[0].data() + i * 2, 2);
      for (std::size_t r = 1; r < world; ++r)
        acc = f32_to_f16(combine(f16_to_f32(acc), static_cast<float>(read_at(dt, in[r].data(), i))));
      if (op == ReduceOp::kMean) acc = f32_to_f16(f16_to_f32(acc) / static_cast<float>(world));
      std::memcpy(out.data() + i * 2, &acc, 2);
    }
  }
  return out;
}

struct Counter {
  std::mutex mutex;
  std::size_t failures = 0, one_shot_checked = 0, cases = 0;
  void fail(const std::string& what) {
    std::lock_guard lock(mutex);
    if (++failures <= 20) std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  }
};

void run_rank(Communicator& comm, std::size_t local, bool expect_one_shot, Counter& c) {
  const std::size_t rank = comm.first_rank() + local;
  const std::size_t world = comm.world_size();
  const DeviceId dev = comm.devices()[local];
  const std::size_t limit = Config::kDefaultOneShotBytes;
  const DataType dtypes[] = {DataType::kF32, DataType::kF64, DataType::kF16};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kProd};
  std::uint64_t salt = 1;
  for (std::size_t count : {1, 2, 5, 63, 511, 1000, 1024, 1025, 3000}) {
    for (DataType dt : dtypes) {
      for (ReduceOp op : ops) {
        for (int form = 0; form < 3; ++form, ++salt) {
          const std::string what = "rank " + std::to_string(rank) + " count " +
                                   std::to_string(count) + " " + std::string(dtype_name(dt)) + " " +
                                   std::string(op_name(op)) + " form " + std::to_string(form);
          const std::size_t bytes = count * dtype_size(dt);
          std::vector<std::byte> in = input_of(dt, rank, count, salt);
          std::vector<std::byte> out(bytes);
          const TensorView iv = TensorView::of(in.data(), dt, count, dev);
          std::vector<std::byte> got;
          if (form == 0) {
            auto r = comm.all_reduce(rank, iv, op);
            if (!r) { c.fail(what + ": " + r.status().to_string()); return; }
            const auto* p = static_cast<const std::byte*>(r.value().data());
            got.assign(p, p + bytes);
          } else {
            const TensorView ov = form == 1 ? TensorView::of(out.data(), dt, count, dev) : iv;
            if (Status s = comm.all_reduce_into(rank, iv, ov, op); !s) {
              c.fail(what + ": " + s.to_string());
              return;
            }
            got = form == 1 ? out : in;
          }
          const std::vector<std::byte> want = left_fold(dt, op, world, count, salt);
          if (expect_one_shot && bytes <= limit && got != want)
            c.fail(what + ": not the rank-order fold bit for bit (the one-shot path)");
          // A few roundings apart at most, whatever the order of the sum.
          const double tolerance = dt == DataType::kF16 ? 8e-3 : dt == DataType::kF32 ? 1e-5 : 1e-12;
          for (std::size_t i = 0; i < count; ++i) {
            const double g = read_at(dt, got.data(), i), w = read_at(dt, want.data(), i);
            if (!(std::fabs(g - w) <= tolerance * std::fabs(w))) {
              c.fail(what + ": element " + std::to_string(i) + " is " + std::to_string(g) +
                     ", expected about " + std::to_string(w));
              break;
            }
          }
          // Every rank the same bits: gather them all.
          auto all = comm.all_gather(rank, TensorView::of(got.data(), DataType::kBytes, bytes, dev));
          if (!all) { c.fail(what + ": all_gather: " + all.status().to_string()); return; }
          const auto* g = static_cast<const std::byte*>(all.value().data());
          for (std::size_t r = 1; r < world; ++r)
            if (std::memcmp(g, g + r * bytes, bytes) != 0) {
              c.fail(what + ": rank " + std::to_string(r) + "'s result differs from rank 0's");
              break;
            }
          std::lock_guard lock(c.mutex);
          ++c.cases;
          if (expect_one_shot && bytes <= limit) ++c.one_shot_checked;
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t per_process = 1;
  bool expect_one_shot = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--devices-per-process") per_process = std::strtoul(argv[i + 1], nullptr, 10);
    else if (arg == "--expect-one-shot") expect_one_shot = std::string(argv[i + 1]) == "1";
    else { std::fprintf(stderr, "unknown option %s\n", arg.c_str()); return 2; }
  }
  auto config = Config::from_env(Config().with_timeout(std::chrono::seconds(30)));
  if (!config) { std::fprintf(stderr, "%s\n", config.status().to_string().c_str()); return 2; }
  std::vector<DeviceId> devices;
  for (std::size_t d = 0; d < per_process; ++d) devices.push_back(host_device(d));
  auto created = create_world_communicator(devices, config.value());
  if (!created) { std::fprintf(stderr, "create: %s\n", created.status().to_string().c_str()); return 1; }
  auto comm = created.value();
  if (expect_one_shot && comm->world_size() < 3) {
    std::fprintf(stderr, "--expect-one-shot 1 needs 3 or more ranks (2 sum in one order anyway)\n");
    return 2;
  }
  Counter c;
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < per_process; ++d)
    threads.emplace_back([&, d] { run_rank(*comm, d, expect_one_shot, c); });
  for (auto& t : threads) t.join();
  const std::size_t first = comm->first_rank();
  comm.reset();
  std::printf("world_one_shot_test ranks %zu..%zu: %zu cases (%zu bit-exact one-shot checks), %zu failures: %s\n",
              first, first + per_process - 1, c.cases, c.one_shot_checked, c.failures,
              c.failures == 0 && c.cases > 0 ? "PASSED" : "FAILED");
  return c.failures == 0 && c.cases > 0 ? 0 : 1;
}
