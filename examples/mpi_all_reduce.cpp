// mpi_all_reduce: ruccl across processes.
//
//   mpirun -np P build/examples/mpi_all_reduce [--devices-per-process D] [--count N]
//                                               [--mismatch]
//
// Every process drives D host devices, one thread each; the world has P x D
// ranks. Each rank checks Sum and Mean all-reduce over an awkward element count
// against the closed form, that its input is unchanged, a broadcast, and an
// all-to-all-v. The ranks then all-reduce their failure counts (with ruccl), so
// every process knows the verdict; rank 0 prints one summary line. Exit 0 only
// if every rank passed. --mismatch instead makes rank 1 pass op max where the
// others pass sum, and passes only if every rank gets OpMismatch naming rank 1.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ruccl/ruccl.hpp"
#include "ruccl/world.hpp"

namespace {

using namespace ruccl;

float input_value(std::size_t rank, std::size_t i) { return float((rank + 1) * ((i % 17) + 1)); }

// Returns this rank's number of failed checks (and prints what failed).
int check_rank(Communicator& comm, std::size_t rank, std::size_t count) {
  const std::size_t world = comm.world_size();
  const DeviceId dev = comm.devices()[rank - comm.first_rank()];
  int failed = 0;
  auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "rank %zu: %s\n", rank, what.c_str());
    ++failed;
  };
  std::vector<float> in(count);
  for (std::size_t i = 0; i < count; ++i) in[i] = input_value(rank, i);
  const std::vector<float> original = in;
  const TensorView view = TensorView::of(in.data(), DataType::kF32, count, dev);

  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    auto out = comm.all_reduce(rank, view, op);
    if (!out) { fail(std::string(op_name(op)) + ": " + out.status().to_string()); continue; }
    for (std::size_t i = 0; i < count; ++i) {
      const float sum = float(world * (world + 1) / 2 * ((i % 17) + 1));
      const float want = op == ReduceOp::kSum ? sum : sum / float(world);
      if (out->as<float>()[i] != want) {
        fail(std::string(op_name(op)) + " element " + std::to_string(i));
        break;
      }
    }
  }
  if (in != original) fail("input changed");

  const std::size_t root = world > 1 ? 1 : 0;
  auto b = comm.broadcast(rank, rank == root ? &view : nullptr);
  if (!b) {
    fail("broadcast: " + b.status().to_string());
  } else {
    for (std::size_t i = 0; i < count; ++i)
      if (b->as<float>()[i] != input_value(root, i)) {
        fail("broadcast element " + std::to_string(i));
        break;
      }
  }

  // all_to_all_v: (rank + d) % 3 rows of 2 to rank d; value 1000*src + 10*dst + k.
  std::vector<std::size_t> counts(world);
  std::vector<std::int32_t> rows;
  for (std::size_t d = 0; d < world; ++d) {
    counts[d] = (rank + d) % 3;
    for (std::size_t k = 0; k < counts[d] * 2; ++k) rows.push_back(std::int32_t(1000 * rank + 10 * d + k));
  }
  TensorView rv{rows.data(), DataType::kI32, Shape{rows.size() / 2, 2}, dev, nullptr};
  auto a = comm.all_to_all_v(rank, rv, counts);
  if (!a) {
    fail("all_to_all_v: " + a.status().to_string());
  } else {
    std::size_t at = 0;
    for (std::size_t s = 0; s < world; ++s) {
      if (a->recv_counts[s] != (s + rank) % 3) fail("all_to_all_v count from " + std::to_string(s));
      for (std::size_t k = 0; k < a->recv_counts[s] * 2; ++k, ++at)
        if (a->data.as<std::int32_t>()[at] != std::int32_t(1000 * s + 10 * rank + k)) {
          fail("all_to_all_v value from " + std::to_string(s));
          break;
        }
    }
  }
  return failed;
}

// --mismatch: every rank must get the same typed error, naming rank 1.
int check_mismatch(Communicator& comm, std::size_t rank) {
  float x = 1.0f;
  const TensorView v = TensorView::of(&x, DataType::kF32, 1, comm.devices()[rank - comm.first_rank()]);
  auto r = comm.all_reduce(rank, v, rank == 1 ? ReduceOp::kMax : ReduceOp::kSum);
  if (r.status().code() == ErrorCode::kOpMismatch &&
      r.status().message().find("rank 1") != std::string::npos)
    return 0;
  std::fprintf(stderr, "rank %zu: expected OpMismatch naming rank 1, got %s\n", rank,
               r.status().to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t per_process = 1, count = 1003;
  bool mismatch = false;
  for (int i = 1; i < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--mismatch") { mismatch = true; --i; continue; }
    if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", arg.c_str()); return 2; }
    if (arg == "--devices-per-process") per_process = std::strtoul(argv[i + 1], nullptr, 10);
    else if (arg == "--count") count = std::strtoul(argv[i + 1], nullptr, 10);
    else { std::fprintf(stderr, "usage: mpi_all_reduce [--devices-per-process D] [--count N]\n"); return 2; }
  }
  if (per_process == 0) { std::fprintf(stderr, "--devices-per-process must be >= 1\n"); return 2; }
  auto config = Config::from_env(Config().with_timeout(std::chrono::seconds(60)));
  if (!config) { std::fprintf(stderr, "%s\n", config.status().to_string().c_str()); return 2; }
  std::vector<DeviceId> devices;
  for (std::size_t d = 0; d < per_process; ++d) devices.push_back(host_device(d));
  auto comm = create_world_communicator(devices, config.value());
  if (!comm) { std::fprintf(stderr, "create_world_communicator: %s\n", comm.status().to_string().c_str()); return 1; }
  Communicator& c = *comm.value();

  std::vector<int> verdict(per_process, 1);
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < per_process; ++d) {
    threads.emplace_back([&, d] {
      const std::size_t rank = c.first_rank() + d;
      const auto t0 = std::chrono::steady_clock::now();
      std::int32_t failed = mismatch ? check_mismatch(c, rank) : check_rank(c, rank, count);
      // Every rank learns how many checks failed anywhere.
      std::int32_t total = -1;
      const TensorView fv = TensorView::of(&failed, DataType::kI32, 1, c.devices()[d]);
      const TensorView tv = TensorView::of(&total, DataType::kI32, 1, c.devices()[d]);
      Status s = c.all_reduce_into(rank, fv, tv, ReduceOp::kSum);
      verdict[d] = s.is_ok() && total == 0 ? 0 : 1;
      if (!s.is_ok()) std::fprintf(stderr, "rank %zu: verdict: %s\n", rank, s.to_string().c_str());
      if (rank == 0) {
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::printf("mpi_all_reduce: %zu ranks (%zu per process), %s, count %zu: %s (%d failed checks, %.1f ms)\n",
                    c.world_size(), per_process,
                    std::string(global_strategy_name(c.config().global_strategy())).c_str(), count, verdict[d] == 0 ? "PASSED" : "FAILED",
                    s.is_ok() ? total : -1, ms);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int v : verdict) if (v != 0) return 1;
  return 0;
}
