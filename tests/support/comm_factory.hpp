// Where the communicators of the shared collective bodies come from
// (tests/inproc/{all_reduce,collectives,all_to_all_v,budget}_test.cpp):
//   in process   every rank a thread of this process, over tested_backend()'s
//                devices (ruccl_inproc_*, ruccl_cuda_tests);
//   world        a world communicator across the processes of mpirun, under
//                one global strategy (hierarchical or flat_ring); each process
//                drives its local ranks as threads (ruccl_mpi_world_matrix).
// A body asks the factory for a communicator of n ranks and runs its rank
// function on the ranks this process drives (run_local_ranks); everything
// else (the cases, the closed forms, the checks) is the same everywhere.
// tested_factory() is a link-time choice per binary, like tested_backend():
// support/tested_host.cpp and tests/cuda/cuda_tested_backend.cpp pick the
// in-process factory, tests/mpi/world_matrix_main.cpp a world one
// (support/world_factory.hpp, from its --strategy and --devices-per-process).
// The MPI binary's main is tests/mpi/bootstrap_main.cpp, in the role of
// MSCCL++'s MultiProcessTestEnv: MPI once for the whole run, every test on
// every process in the same order, the processes' outcomes agreed at the end.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"

namespace ruccl::test {

class CommFactory {
 public:
  virtual ~CommFactory() = default;
  virtual std::string name() const = 0;  // "in-process", "world hierarchical", ...
  virtual bool in_process() const = 0;
  // The worlds a test written for `wanted` runs on here: all of them in
  // process; across processes the one world mpirun made (whatever its size).
  virtual std::vector<std::size_t> worlds(std::vector<std::size_t> wanted) const = 0;
  virtual bool can_make(std::size_t n) const = 0;
  // A communicator of n ranks (can_make(n)); throws std::runtime_error on
  // failure. Across processes every process must call it at the same point.
  virtual std::shared_ptr<Communicator> make_comm(std::size_t n, const Config& config) const = 0;
  std::shared_ptr<Communicator> make_comm(std::size_t n) const {
    return make_comm(n, test_config(n));
  }
};

// Every rank a thread of this process, over tested_backend().
const CommFactory& in_process_factory();

// The factory of this test binary (see the top of this file).
const CommFactory& tested_factory();

// The ranks of `comm` this process drives: first_rank() .. + devices().size().
std::vector<std::size_t> local_ranks(const Communicator& comm);
// run_ranks over those ranks: fn(global rank) on one thread each.
void run_local_ranks(const Communicator& comm, Failures& failures,
                     const std::function<void(std::size_t rank)>& fn);

// The parameter list of a test written for worlds `...` (see worlds()).
#define RUCCL_TEST_WORLDS(...) \
  ::testing::ValuesIn(::ruccl::test::tested_factory().worlds({__VA_ARGS__}))

// In a test body: skips unless the factory makes n-rank worlds here.
#define RUCCL_SKIP_UNLESS_WORLD(n)                                                  \
  do {                                                                              \
    if (!::ruccl::test::tested_factory().can_make(n))                               \
      GTEST_SKIP() << ::ruccl::test::tested_factory().name() << " makes no " << (n) \
                   << "-rank world here";                                           \
  } while (0)

}  // namespace ruccl::test
