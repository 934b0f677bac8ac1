// Config: setters, validation and the environment (read in one place).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "ruccl/config.hpp"
#include "test_support.hpp"

namespace ruccl {
namespace {

using namespace std::chrono_literals;
using test::contains;

constexpr const char* kVars[] = {"RUCCL_TIMEOUT",
                                 "RUCCL_MAX_CHUNK_BYTES",
                                 "RUCCL_SEGMENT_BYTES",
                                 "RUCCL_ALGO",
                                 "RUCCL_LOCAL_ALGO",
                                 "RUCCL_NUM_DEVICES",
                                 "RUCCL_FAULT",
                                 "RUCCL_FLIGHT_RECORDER",
                                 "RUCCL_FLIGHT_RECORDER_SIGNAL",
                                 "RUCCL_CHECKSUM",
                                 "RUCCL_LEAN_BYTES",
                                 "RUCCL_LEAN_DIRECT_BYTES",
                                 "RUCCL_MPI_ALLOC_MEM_BYTES"};

// Clears every RUCCL_* variable before and after each test.
class ConfigEnv : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* v : kVars) ::unsetenv(v);
  }
  static void set(const char* name, const char* value) { ASSERT_EQ(::setenv(name, value, 1), 0); }
};

TEST(Config, Defaults) {
  Config c;
  EXPECT_EQ(c.num_devices(), 1u);
  EXPECT_EQ(c.max_chunk_bytes(), Config::kDefaultMaxChunkBytes);
  EXPECT_EQ(c.max_chunk_bytes(), std::size_t{4} << 20);
  EXPECT_EQ(c.segment_bytes(), std::size_t{1} << 20);
  EXPECT_EQ(c.timeout(), 300s);
  EXPECT_EQ(c.local_strategy(), LocalStrategy::kRing);
  EXPECT_EQ(c.global_strategy(), GlobalStrategy::kHierarchical);
  EXPECT_EQ(c.fault(), "");
  EXPECT_EQ(c.flight_recorder(), 64u);
  EXPECT_TRUE(c.flight_recorder_signal());
  EXPECT_TRUE(c.validate().is_ok()) << c.validate().to_string();
}

TEST(Config, SettersChain) {
  Config c = Config()
                 .with_num_devices(4)
                 .with_max_chunk_bytes(1000)
                 .with_segment_bytes(64)
                 .with_timeout(250ms)
                 .with_global_strategy(GlobalStrategy::kFlatRing);
  EXPECT_EQ(c.num_devices(), 4u);
  EXPECT_EQ(c.max_chunk_bytes(), 1000u);
  EXPECT_EQ(c.segment_bytes(), 64u);
  EXPECT_EQ(c.timeout(), 250ms);
  EXPECT_EQ(c.global_strategy(), GlobalStrategy::kFlatRing);
  EXPECT_TRUE(c.validate().is_ok());
}

TEST(Config, ValidateRejectsOutOfRangeValues) {
  EXPECT_EQ(Config().with_num_devices(0).validate().code(), ErrorCode::kInvalidArgument);
  // A zero budget cannot hold one element: either code is fine.
  const ErrorCode zero_budget = Config().with_max_chunk_bytes(0).validate().code();
  EXPECT_TRUE(zero_budget == ErrorCode::kInvalidArgument || zero_budget == ErrorCode::kBudgetTooSmall)
      << error_code_name(zero_budget);
  EXPECT_EQ(Config().with_segment_bytes(0).validate().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Config().with_timeout(0ms).validate().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Config().with_timeout(-5ms).validate().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Config().with_max_chunk_bytes(1).with_segment_bytes(1).with_timeout(1ms).validate().is_ok());
}

TEST_F(ConfigEnv, LeanBytes) {
  EXPECT_EQ(Config().lean_bytes(), Config::kMaxLeanBytes);
  set("RUCCL_LEAN_BYTES", "1k");
  auto c = Config::from_env();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->lean_bytes(), 1024u);
  set("RUCCL_LEAN_BYTES", "0");
  ASSERT_TRUE(Config::from_env().is_ok());
  EXPECT_EQ(Config::from_env()->lean_bytes(), 0u);
  set("RUCCL_LEAN_BYTES", "65537");
  const Status big = Config::from_env().status();
  EXPECT_EQ(big.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(big.message(), "RUCCL_LEAN_BYTES")) << big.message();
  EXPECT_TRUE(contains(Config().difference(Config().with_lean_bytes(8)), "lean_bytes"));
}

// A byte count read from `name` (a suffix, 0 allowed, an unparsable value an
// error naming it) into what `get` returns, one a process may set apart from
// the others (Config::difference leaves it out: `with` sets it).
template <typename Get, typename With>
void per_process_size(const char* name, const char* bad_value, Get get, With with) {
  ASSERT_EQ(::setenv(name, "16k", 1), 0);
  auto c = Config::from_env();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(get(c.value()), 16384u);
  ASSERT_EQ(::setenv(name, "0", 1), 0);
  ASSERT_TRUE(Config::from_env().is_ok());
  EXPECT_EQ(get(Config::from_env().value()), 0u);
  ASSERT_EQ(::setenv(name, bad_value, 1), 0);
  const Status bad = Config::from_env().status();
  EXPECT_EQ(bad.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(bad.message(), name)) << bad.message();
  EXPECT_EQ(Config().difference(with(Config(), 8)), "");
}

// Processes may differ in it (a reader takes either form).
TEST_F(ConfigEnv, LeanDirectBytes) {
  EXPECT_EQ(Config().lean_direct_bytes(), Config::kDefaultLeanDirectBytes);
  per_process_size(
      "RUCCL_LEAN_DIRECT_BYTES", "lots", [](const Config& c) { return c.lean_direct_bytes(); },
      [](Config c, std::size_t b) { return c.with_lean_direct_bytes(b); });
}

// The MPI layer's own, per process; off unless asked for.
TEST_F(ConfigEnv, MpiAllocMemBytes) {
  EXPECT_EQ(Config().mpi_alloc_mem_bytes(), 0u);
  per_process_size(
      "RUCCL_MPI_ALLOC_MEM_BYTES", "-1", [](const Config& c) { return c.mpi_alloc_mem_bytes(); },
      [](Config c, std::size_t b) { return c.with_mpi_alloc_mem_bytes(b); });
}

TEST(Config, FaultPlanAndFlightRecorder) {
  Config c = Config()
                 .with_fault("stall:rank=1,seq=3,ms=20;exit:rank=0,seq=2,step=1,code=7")
                 .with_flight_recorder(0)
                 .with_flight_recorder_signal(false);
  EXPECT_EQ(c.fault(), "stall:rank=1,seq=3,ms=20;exit:rank=0,seq=2,step=1,code=7");
  EXPECT_EQ(c.flight_recorder(), 0u);  // 0 = off: still a valid config
  EXPECT_FALSE(c.flight_recorder_signal());
  EXPECT_TRUE(c.validate().is_ok()) << c.validate().to_string();

  for (const char* bad : {"stall", "stall:rank=1", "boom:rank=1,seq=2", "exit:rank=1,seq=2,code=x"}) {
    SCOPED_TRACE(bad);
    const Status s = Config().with_fault(bad).validate();
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
    EXPECT_TRUE(contains(s.message(), "RUCCL_FAULT")) << s.to_string();
    EXPECT_TRUE(contains(s.message(), bad)) << s.to_string();
  }
}

TEST(Config, DifferenceNamesTheNewSettings) {
  const Config a;
  EXPECT_EQ(a.difference(Config()), "");
  EXPECT_TRUE(contains(a.difference(Config().with_fault("stall:rank=0,seq=0")), "fault differs"));
  EXPECT_EQ(a.difference(Config().with_flight_recorder(8)), "flight_recorder 64 vs 8");
  EXPECT_EQ(a.difference(Config().with_flight_recorder_signal(false)), "flight_recorder_signal 1 vs 0");
  EXPECT_NE(a, Config().with_fault("stall:rank=0,seq=0"));
}

TEST_F(ConfigEnv, UnsetEnvironmentGivesTheBase) {
  auto c = Config::from_env();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->timeout(), Config::kDefaultTimeout);
  EXPECT_EQ(c->max_chunk_bytes(), Config::kDefaultMaxChunkBytes);

  Config base = Config().with_num_devices(3).with_timeout(7s).with_max_chunk_bytes(99);
  auto b = Config::from_env(base);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(b->num_devices(), 3u);
  EXPECT_EQ(b->timeout(), 7s);
  EXPECT_EQ(b->max_chunk_bytes(), 99u);
}

TEST_F(ConfigEnv, ReadsEveryVariable) {
  set("RUCCL_TIMEOUT", "0.5");
  set("RUCCL_MAX_CHUNK_BYTES", "1024");
  set("RUCCL_SEGMENT_BYTES", "256");
  set("RUCCL_ALGO", "flat_ring");
  set("RUCCL_LOCAL_ALGO", "ring");
  set("RUCCL_NUM_DEVICES", "4");
  auto c = Config::from_env();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->timeout(), 500ms);
  EXPECT_EQ(c->max_chunk_bytes(), 1024u);
  EXPECT_EQ(c->segment_bytes(), 256u);
  EXPECT_EQ(c->global_strategy(), GlobalStrategy::kFlatRing);
  EXPECT_EQ(c->local_strategy(), LocalStrategy::kRing);
  EXPECT_EQ(c->num_devices(), 4u);

  set("RUCCL_FAULT", "adapter:rank=0,seq=1,verb=combine");
  set("RUCCL_FLIGHT_RECORDER", "16");
  set("RUCCL_FLIGHT_RECORDER_SIGNAL", "0");
  set("RUCCL_CHECKSUM", "1");
  auto e = Config::from_env();
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_TRUE(e->checksum());
  EXPECT_FALSE(Config().checksum());
  EXPECT_NE(e->difference(Config()).find("checksum"), std::string::npos);
  EXPECT_EQ(e->fault(), "adapter:rank=0,seq=1,verb=combine");
  EXPECT_EQ(e->flight_recorder(), 16u);
  EXPECT_FALSE(e->flight_recorder_signal());
  set("RUCCL_FLIGHT_RECORDER", "0");
  set("RUCCL_FLIGHT_RECORDER_SIGNAL", "1");
  set("RUCCL_CHECKSUM", "yes");
  EXPECT_NE(Config::from_env().status().message().find("RUCCL_CHECKSUM"), std::string::npos);
  set("RUCCL_CHECKSUM", "1");
  auto off = Config::from_env(Config().with_flight_recorder_signal(false));
  ASSERT_TRUE(off.is_ok()) << off.status().to_string();
  EXPECT_EQ(off->flight_recorder(), 0u);
  EXPECT_TRUE(off->flight_recorder_signal());

  set("RUCCL_TIMEOUT", "12");
  set("RUCCL_ALGO", "hierarchical");
  auto d = Config::from_env(Config().with_global_strategy(GlobalStrategy::kFlatRing));
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(d->timeout(), 12s);
  EXPECT_EQ(d->global_strategy(), GlobalStrategy::kHierarchical);
}

TEST_F(ConfigEnv, EnvironmentOverridesTheBase) {
  set("RUCCL_MAX_CHUNK_BYTES", "4096");
  auto c = Config::from_env(Config().with_max_chunk_bytes(8).with_num_devices(2));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->max_chunk_bytes(), 4096u);
  EXPECT_EQ(c->num_devices(), 2u);  // untouched
}

TEST_F(ConfigEnv, GarbageIsAnErrorNamingTheVariable) {
  const std::pair<const char*, const char*> bad[] = {
      {"RUCCL_TIMEOUT", "abc"},          {"RUCCL_TIMEOUT", "1.5s"},
      {"RUCCL_MAX_CHUNK_BYTES", "12x"},  {"RUCCL_MAX_CHUNK_BYTES", "-4"},
      {"RUCCL_MAX_CHUNK_BYTES", "99999999999999999999999"},
      {"RUCCL_SEGMENT_BYTES", "lots"},   {"RUCCL_ALGO", "tree"},
      {"RUCCL_LOCAL_ALGO", "star"},      {"RUCCL_NUM_DEVICES", "four"},
      {"RUCCL_FAULT", "stall:rank=1"},   {"RUCCL_FAULT", "boom"},
      {"RUCCL_FLIGHT_RECORDER", "many"}, {"RUCCL_FLIGHT_RECORDER_SIGNAL", "yes"},
  };
  for (const auto& [name, value] : bad) {
    SCOPED_TRACE(std::string(name) + "='" + value + "'");
    clear();
    set(name, value);
    auto c = Config::from_env();
    ASSERT_FALSE(c.is_ok());
    EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument) << c.status().to_string();
    EXPECT_TRUE(contains(c.status().message(), name)) << c.status().to_string();
  }
}

TEST_F(ConfigEnv, OutOfRangeValuesNeverYieldAValidConfig) {
  // Parsable but out of range: from_env may reject them or return a config that
  // validate() rejects; never a valid config. (Only unparsable values are
  // required to name the variable.)
  const std::pair<const char*, const char*> bad[] = {
      {"RUCCL_TIMEOUT", "0"},        {"RUCCL_TIMEOUT", "-1"},
      {"RUCCL_MAX_CHUNK_BYTES", "0"}, {"RUCCL_SEGMENT_BYTES", "0"},
      {"RUCCL_NUM_DEVICES", "0"},
  };
  for (const auto& [name, value] : bad) {
    SCOPED_TRACE(std::string(name) + "='" + value + "'");
    clear();
    set(name, value);
    auto c = Config::from_env();
    const Status s = c.is_ok() ? c->validate() : c.status();
    EXPECT_TRUE(s.code() == ErrorCode::kInvalidArgument || s.code() == ErrorCode::kBudgetTooSmall)
        << s.to_string();
  }
}

}  // namespace
}  // namespace ruccl
