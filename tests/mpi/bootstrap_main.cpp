// The gtest main of the tests under mpirun (ruccl_mpi_bootstrap_test with 1 to
// 4 processes, ruccl_mpi_world_matrix), in the role of MSCCL++'s
// MultiProcessTestEnv: MPI is initialised once, through the bootstrap under
// test (mpi_world_bootstrap), before gtest registers the tests, and finalised
// when it is destroyed, after the last test. Each binary's prepare_tests()
// (bootstrap_world.hpp) reads its own arguments in between. Every process runs the
// same tests in the same order (the tests' collectives must match). Only
// process 0 prints gtest's usual output; the others print their failures to
// stderr, prefixed with their process index. At the end the processes agree on
// the outcome: every process exits non-zero if any process failed a test, so
// mpirun fails either way.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "bootstrap_world.hpp"

namespace ruccl::bootstrap::testing {
namespace {

std::unique_ptr<Bootstrap>& world_holder() {
  static std::unique_ptr<Bootstrap> holder;
  return holder;
}

// Failures of a process that does not print gtest's own output. (The test's
// name is kept from OnTestStart: asking the UnitTest from OnTestPartResult
// would take gtest's lock a second time.)
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(std::size_t process) : process_(process) {}
  void OnTestStart(const ::testing::TestInfo& test) override {
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[process %zu] %s %s:%d: Failure\n%s\n", process_, test_.c_str(),
                 result.file_name() != nullptr ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  std::size_t process_;
  std::string test_;
};

}  // namespace

Bootstrap& world() { return *world_holder(); }

}  // namespace ruccl::bootstrap::testing

int main(int argc, char** argv) {
  using ruccl::bootstrap::testing::world_holder;
  auto created = ruccl::bootstrap::mpi_world_bootstrap();
  if (!created) {
    std::fprintf(stderr, "mpi_world_bootstrap: %s\n", created.status().to_string().c_str());
    return 2;
  }
  world_holder() = std::move(created).value();
  const std::size_t process = world_holder()->topology().process;
  // Before gtest registers the tests: parameter lists may depend on the world.
  if (!ruccl::bootstrap::testing::prepare_tests(argc, argv, *world_holder())) return 2;
  ::testing::InitGoogleTest(&argc, argv);

  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (process != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new ruccl::bootstrap::testing::FailurePrinter(process));
  }

  const bool passed = RUN_ALL_TESTS() == 0;

  // Agree on the outcome: one byte per process.
  const std::byte mine{static_cast<unsigned char>(passed ? 0 : 1)};
  auto outcomes = world_holder()->all_gather(std::span<const std::byte>(&mine, 1));
  int exit_code = passed ? 0 : 1;
  if (!outcomes) {
    std::fprintf(stderr, "[process %zu] gathering outcomes: %s\n", process,
                 outcomes.status().to_string().c_str());
    exit_code = 1;
  } else {
    std::string failed;
    for (std::size_t p = 0; p < outcomes->size(); ++p)
      if ((*outcomes)[p].size() != 1 || (*outcomes)[p][0] != std::byte{0})
        failed += (failed.empty() ? "" : ", ") + std::to_string(p);
    if (!failed.empty()) {
      if (process == 0) std::fprintf(stderr, "tests failed on process(es) %s\n", failed.c_str());
      exit_code = 1;
    }
  }
  world_holder().reset();  // frees the duplicate, then MPI_Finalize
  return exit_code;
}
