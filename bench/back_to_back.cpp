// ruccl-back-to-back: OSU-style latency, calls back to back. ruccl-perf
// times each call alone after a barrier (and its MPI peer after
// MPI_Barrier, whose exit skew the peer's time then includes); here each side
// makes `iters` calls in a row, no barrier between them, and the time per
// call is the block's time over `iters` (the largest over the ranks). Blocks
// alternate ruccl, MPI, ruccl, MPI ... (`rounds` of each); per size the
// medians and their ratio.
//
//   mpirun -np P ruccl-back-to-back [--coll all_reduce|broadcast|reduce|all_gather]
//          [-b MIN] [-e MAX] [-n ITERS] [-r ROUNDS]
//
// One device rank per process (host:0); f32, sum; sizes in bytes, powers of 2
// (MIN and MAX rounded to whole elements).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ruccl/ruccl.hpp"
#include "ruccl/world.hpp"

namespace {

using namespace ruccl;

struct Options {
  std::string coll = "all_reduce";
  std::size_t min_bytes = 8, max_bytes = 4096, iters = 10000, rounds = 5;
};

bool parse(int argc, char** argv, Options& o) {
  for (int a = 1; a < argc; ++a) {
    const std::string k = argv[a];
    if (a + 1 >= argc) return false;
    const char* v = argv[++a];
    if (k == "--coll") o.coll = v;
    else if (k == "-b") o.min_bytes = std::strtoull(v, nullptr, 10);
    else if (k == "-e") o.max_bytes = std::strtoull(v, nullptr, 10);
    else if (k == "-n") o.iters = std::strtoull(v, nullptr, 10);
    else if (k == "-r") o.rounds = std::strtoull(v, nullptr, 10);
    else return false;
  }
  return o.coll == "all_reduce" || o.coll == "broadcast" || o.coll == "reduce" ||
         o.coll == "all_gather";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int mpi_rank = 0, mpi_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  Options o;
  if (!parse(argc, argv, o) || o.min_bytes < 4 || o.max_bytes < o.min_bytes || o.iters == 0 ||
      o.rounds == 0) {
    if (mpi_rank == 0)
      std::fprintf(stderr,
                   "usage: mpirun -np P %s [--coll all_reduce|broadcast|reduce|all_gather] "
                   "[-b MIN] [-e MAX] [-n ITERS] [-r ROUNDS]\n",
                   argv[0]);
    MPI_Finalize();
    return 2;
  }
  auto config = Config::from_env();
  if (!config) {
    std::fprintf(stderr, "%s\n", config.status().to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  auto made = create_world_communicator({host_device(0)}, config.value());
  if (!made) {
    std::fprintf(stderr, "create_world_communicator: %s\n", made.status().to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  Communicator& comm = *made.value();
  const std::size_t rank = comm.first_rank(), world = comm.world_size();
  const std::size_t max_count = o.max_bytes / sizeof(float);
  std::vector<float> in(max_count * world, 1.0f), out(max_count * world, 0.0f);
  if (mpi_rank == 0)
    std::printf(
        "# ruccl-back-to-back: %s f32 sum, %d processes, %zu calls per block, %zu rounds\n"
        "# %10s %12s %12s %8s\n",
        o.coll.c_str(), mpi_size, o.iters, o.rounds, "bytes", "ruccl (us)", "MPI (us)", "ratio");
  int failed = 0;
  for (std::size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
    const std::size_t n = bytes / sizeof(float);
    const int count = static_cast<int>(n);
    const DeviceId dev = host_device(0);
    const TensorView vin = TensorView::of(in.data(), DataType::kF32, n, dev);
    const TensorView vout =
        TensorView::of(out.data(), DataType::kF32, o.coll == "all_gather" ? n * world : n, dev);
    const auto ruccl_call = [&]() -> Status {
      if (o.coll == "broadcast") return comm.broadcast_into(rank, rank == 0 ? &vin : nullptr, vout);
      if (o.coll == "reduce") return comm.reduce_into(rank, vin, vout, ReduceOp::kSum, 0);
      if (o.coll == "all_gather") return comm.all_gather_into(rank, vin, vout);
      return comm.all_reduce_into(rank, vin, vout, ReduceOp::kSum);
    };
    const auto mpi_call = [&] {
      if (o.coll == "broadcast")
        MPI_Bcast(mpi_rank == 0 ? in.data() : out.data(), count, MPI_FLOAT, 0, MPI_COMM_WORLD);
      else if (o.coll == "reduce")
        MPI_Reduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
      else if (o.coll == "all_gather")
        MPI_Allgather(in.data(), count, MPI_FLOAT, out.data(), count, MPI_FLOAT, MPI_COMM_WORLD);
      else MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    };
    // A block of calls; its time per call, the largest over the processes.
    const auto block = [&](auto&& call) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = std::chrono::steady_clock::now();
      for (std::size_t k = 0; k < o.iters; ++k) call();
      const double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
          static_cast<double>(o.iters);
      double worst = 0;
      MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      return worst;
    };
    for (std::size_t k = 0; k < o.iters / 10 + 1; ++k) {  // warm-up, both
      if (!ruccl_call().is_ok()) failed = 1;
      mpi_call();
    }
    std::vector<double> r_us, m_us;
    for (std::size_t round = 0; round < o.rounds; ++round) {
      r_us.push_back(block([&] {
        if (!ruccl_call().is_ok()) failed = 1;
      }));
      m_us.push_back(block(mpi_call));
    }
    const double r = median(r_us), m = median(m_us);
    if (mpi_rank == 0) std::printf("  %10zu %12.3f %12.3f %8.2f\n", bytes, r, m, r / m);
  }
  if (failed) std::fprintf(stderr, "rank %zu: a ruccl call failed\n", rank);
  made.value().reset();
  MPI_Finalize();
  return failed;
}
