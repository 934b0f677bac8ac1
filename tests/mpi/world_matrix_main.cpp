// ruccl_mpi_world_matrix: the shared collective bodies of tests/inproc
// (all_reduce, collectives, all_to_all_v, budget) over a world communicator,
// under mpirun (the main is bootstrap_main.cpp: MPI once, each test body on
// every process, each process driving its local ranks as threads).
//
//   mpirun -np P ruccl_mpi_world_matrix [--devices-per-process D]
//          [--strategy hierarchical|flat_ring] [gtest flags]
//
// Every test makes its own world communicator of P x D ranks (processes pass
// host devices 0..D-1; rank r's device is host_device(r % D)); tests written
// for a fixed world other than P x D skip. Plus, here only: the two global
// strategies side by side, alternately and concurrently.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "bootstrap_world.hpp"
#include "comm_factory.hpp"
#include "world_factory.hpp"

namespace ruccl::test {
namespace {
struct Chosen {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<CommFactory> factory;
};
Chosen& chosen() {
  static Chosen c;
  return c;
}
std::size_t per_process = 1;
}  // namespace

const Backend& tested_backend() { return *chosen().backend; }
const CommFactory& tested_factory() { return *chosen().factory; }

namespace {

// The two strategies at once over the same devices: alternately from the same
// threads, then concurrently (messages of the two communicators must not mix).
TEST(WorldStrategies, SideBySideAlternatelyAndConcurrently) {
  const std::size_t world = tested_factory().worlds({}).front();
  auto hier = world_factory(GlobalStrategy::kHierarchical, per_process, world)->make_comm(world);
  auto flat = world_factory(GlobalStrategy::kFlatRing, per_process, world)->make_comm(world);
  ASSERT_EQ(hier->first_rank(), flat->first_rank());
  Communicator* comms[] = {hier.get(), flat.get()};
  Failures f;
  // x = 7 r + i over i32: the sum is 7 w(w-1)/2 + w i.
  auto sum_case = [&](Communicator& c, std::size_t rank, std::int32_t i, const char* what) {
    std::int32_t x = static_cast<std::int32_t>(7 * rank) + i, y = -1;
    const DeviceId dev = tested_backend().device(rank);
    Status s = c.all_reduce_into(rank, TensorView::of(&x, DataType::kI32, 1, dev),
                                 TensorView::of(&y, DataType::kI32, 1, dev), ReduceOp::kSum);
    const auto w = static_cast<std::int32_t>(world);
    RANK_CHECK(f, rank, s.is_ok() && y == 7 * w * (w - 1) / 2 + w * i,
               what << " " << i << ": " << describe(s) << " got " << y);
  };
  run_local_ranks(*hier, f, [&](std::size_t rank) {
    for (std::int32_t i = 0; i < 20; ++i) sum_case(*comms[i % 2], rank, i, "alternating");
  });
  std::thread other([&] {
    run_local_ranks(*flat, f, [&](std::size_t rank) {
      for (std::int32_t i = 0; i < 20; ++i) sum_case(*flat, rank, i, "concurrent flat_ring");
    });
  });
  run_local_ranks(*hier, f, [&](std::size_t rank) {
    for (std::int32_t i = 0; i < 20; ++i) sum_case(*hier, rank, i, "concurrent hierarchical");
  });
  other.join();
  EXPECT_TRUE(f.empty()) << f.report();
}

}  // namespace
}  // namespace ruccl::test

namespace ruccl::bootstrap::testing {

bool prepare_tests(int& argc, char** argv, Bootstrap& world) {
  using namespace ruccl::test;
  GlobalStrategy strategy = GlobalStrategy::kHierarchical;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--devices-per-process" && i + 1 < argc) {
      per_process = std::strtoul(argv[++i], nullptr, 10);
    } else if (arg == "--strategy" && i + 1 < argc) {
      const std::string s = argv[++i];
      if (s != "hierarchical" && s != "flat_ring") {
        std::fprintf(stderr, "--strategy hierarchical|flat_ring, not %s\n", s.c_str());
        return false;
      }
      strategy = s == "flat_ring" ? GlobalStrategy::kFlatRing : GlobalStrategy::kHierarchical;
    } else {
      argv[kept++] = argv[i];  // gtest's
    }
  }
  argc = kept;
  if (per_process == 0) {
    std::fprintf(stderr, "--devices-per-process must be >= 1\n");
    return false;
  }
  chosen().backend = world_host_backend(per_process);
  chosen().factory = world_factory(strategy, per_process, world.topology().processes * per_process);
  return true;
}

}  // namespace ruccl::bootstrap::testing
