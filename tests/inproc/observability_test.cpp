// Logging (RUCCL_DEBUG levels, RUCCL_DEBUG_FILE) and tracing (RUCCL_TRACE):
// what a user reads when something goes wrong or is slow.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "test_support.hpp"

namespace ruccl::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string temp_prefix(const char* name) {
  return ::testing::TempDir() + "ruccl_" + name + "_" + std::to_string(getpid());
}

TEST(Trace, OneFilePerRankWithCollectiveAndPhaseSpans) {
  const std::string pattern = temp_prefix("trace") + "_%r.json";
  {
    auto comm = make_comm(2, test_config(2).with_trace_file(pattern));
    Failures f;
    run_ranks(2, f, [&](std::size_t rank) {
      Bytes in = reduce_input_buffer(DataType::kF32, ReduceOp::kSum, rank, 1000);
      for (int i = 0; i < 2; ++i) {
        auto out = comm->all_reduce(rank, view1(in, DataType::kF32, rank), ReduceOp::kSum);
        RANK_CHECK(f, rank, out.is_ok(), "all_reduce: " << describe(out.status()));
      }
    });
    ASSERT_TRUE(f.empty()) << f.report();
  }  // the files are written when the communicator goes
  for (std::size_t rank = 0; rank < 2; ++rank) {
    const std::string path = temp_prefix("trace") + "_" + std::to_string(rank) + ".json";
    const std::string json = slurp(path);
    std::remove(path.c_str());
    EXPECT_TRUE(contains(json, "\"traceEvents\"")) << path;
    EXPECT_TRUE(contains(json, "\"name\":\"all_reduce #0\"")) << json;
    EXPECT_TRUE(contains(json, "\"name\":\"all_reduce #1\"")) << json;
    EXPECT_TRUE(contains(json, "\"bytes\":4000")) << json;
    EXPECT_TRUE(contains(json, "\"name\":\"reduce-scatter\"")) << json;
    EXPECT_TRUE(contains(json, "\"name\":\"all-gather\"")) << json;
    EXPECT_TRUE(contains(json, "\"pid\":" + std::to_string(rank))) << json;
  }
}

TEST(Log, WarnNamesTheFailedCollectiveInTheLogFile) {
  const std::string path = temp_prefix("log") + ".log";
  std::remove(path.c_str());
  {
    auto comm = make_comm(2, test_config(2).with_log_level(LogLevel::kWarn).with_log_file(path));
    Failures f;
    run_ranks(2, f, [&](std::size_t rank) {
      Bytes in = reduce_input_buffer(DataType::kF32, ReduceOp::kSum, rank, 8);
      const ReduceOp op = rank == 1 ? ReduceOp::kMax : ReduceOp::kSum;
      auto out = comm->all_reduce(rank, view1(in, DataType::kF32, rank), op);
      RANK_CHECK(f, rank, out.status().code() == ErrorCode::kOpMismatch, describe(out.status()));
    });
    ASSERT_TRUE(f.empty()) << f.report();
  }
  const std::string log = slurp(path);
  std::remove(path.c_str());
  EXPECT_TRUE(contains(log, "rank 0] WARN all_reduce #0 failed: OpMismatch")) << log;
  EXPECT_TRUE(contains(log, "rank 1] WARN all_reduce #0 failed: OpMismatch")) << log;
}

TEST(Log, OffWritesNothing) {
  const std::string path = temp_prefix("quiet") + ".log";
  std::remove(path.c_str());
  {
    auto comm = make_comm(2, test_config(2).with_log_file(path));  // level off (default)
    Failures f;
    run_ranks(2, f, [&](std::size_t rank) {
      Bytes in(4);
      (void)comm->all_reduce(rank, view1(in, DataType::kF32, rank),
                             rank == 1 ? ReduceOp::kMax : ReduceOp::kSum);
    });
  }
  EXPECT_FALSE(std::ifstream(path).good()) << "a log file appeared with logging off";
}

}  // namespace
}  // namespace ruccl::test
