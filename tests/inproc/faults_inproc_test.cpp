// Fault injection (RUCCL_FAULT) and the flight recorder on the in-process
// communicator: the plan's grammar, each core-side fault kind (adapter, stall,
// exit) reaching every rank as a typed error naming the rank and collective,
// and the recorder's dumps (on failure, once per burst, and on SIGUSR1).
// Short timeouts (300 ms) keep the whole binary within a few seconds, also
// under the sanitizers.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/fault.hpp"
#include "core/flight_recorder.hpp"
#include "test_support.hpp"

namespace ruccl::test {
namespace {

using namespace std::chrono_literals;
using core::FaultKind;
using core::FaultPlan;
using core::CreateStage;
using core::fire_create_fault;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t occurrences(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1))
    ++n;
  return n;
}

// A fresh (removed) log file path in the test's temp dir.
std::string temp_log(const char* name) {
  const std::string path =
      ::testing::TempDir() + "ruccl_faults_" + name + "_" + std::to_string(getpid()) + ".log";
  std::remove(path.c_str());
  return path;
}

// ---- the plan ------------------------------------------------------------------

TEST(FaultPlan, ParsesEveryKind) {
  auto plan = FaultPlan::parse(
      "stall:rank=1,seq=3,ms=2000; exit:rank=2,seq=5,step=3,code=9;drop:rank=0,seq=4,step=1;"
      "corrupt:rank=1,seq=2 ;adapter:rank=0,seq=1,verb=combine;stall:rank=4,seq=0;exit:rank=0,seq=7");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const auto& f = plan->faults();
  ASSERT_EQ(f.size(), 7u);
  EXPECT_EQ(f[0].kind, FaultKind::kStall);
  EXPECT_EQ(f[0].rank, 1u);
  EXPECT_EQ(f[0].seq, 3u);
  EXPECT_EQ(f[0].stall, 2000ms);
  EXPECT_EQ(f[1].kind, FaultKind::kExit);
  EXPECT_EQ(f[1].step, std::optional<std::uint32_t>(3));
  EXPECT_EQ(f[1].exit_code, 9);
  EXPECT_EQ(f[2].kind, FaultKind::kDrop);
  EXPECT_EQ(f[2].step, std::optional<std::uint32_t>(1));
  EXPECT_EQ(f[3].kind, FaultKind::kCorrupt);
  EXPECT_FALSE(f[3].step.has_value());
  EXPECT_EQ(f[4].kind, FaultKind::kAdapter);
  EXPECT_EQ(f[4].verb, "combine");
  EXPECT_EQ(f[5].stall, 0ms);  // until aborted, or timeout + 2 s
  EXPECT_EQ(f[6].exit_code, 1);
  EXPECT_FALSE(f[6].step.has_value());

  for (const char* empty : {"", " ", ";", " ; ;"}) {
    auto e = FaultPlan::parse(empty);
    ASSERT_TRUE(e.is_ok()) << "'" << empty << "': " << e.status().to_string();
    EXPECT_TRUE(e->empty());
  }
  EXPECT_FALSE(plan->empty());
}

TEST(FaultPlan, RejectsBadSpecsNamingTheFaultAndWhy) {
  const std::pair<const char*, const char*> bad[] = {
      {"explode:rank=1,seq=2", "unknown kind"},
      {"stall:seq=2", "rank"},
      {"stall:rank=1", "seq"},
      {"stall", "rank"},
      {"stall:rank=one,seq=2", "rank=one"},
      {"stall:rank=-1,seq=2", "rank=-1"},
      {"stall:rank=1,seq=2x", "seq=2x"},
      {"stall:rank=1,seq=2,ms=", "ms="},
      {"stall:rank=1,seq=2,step=1", "step"},
      {"exit:rank=1,seq=2,code=300", "code=300"},
      {"exit:rank=1,seq=2,step=99999999999", "step"},
      {"drop:rank=0,seq=1,verb=copy", "verb"},
      {"adapter:rank=0,seq=1,verb=explode", "verb=explode"},
      {"adapter:rank=0,seq=1,step=1", "step"},
      {"corrupt:rank=0,seq=1,rank=2", "twice"},
      {"exit:rank=0,seq=1,step", "key=value"},
  };
  for (const auto& [spec, why] : bad) {
    SCOPED_TRACE(spec);
    const std::string good = "stall:rank=0,seq=0;";
    auto plan = FaultPlan::parse(good + spec);
    ASSERT_FALSE(plan.is_ok());
    EXPECT_EQ(plan.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(contains(plan.status().message(), std::string("'") + spec + "'"))
        << plan.status().to_string();
    EXPECT_TRUE(contains(plan.status().message(), why)) << plan.status().to_string();
  }
}

TEST(FaultPlan, ParsesCreateFaults) {
  auto plan = FaultPlan::parse(
      "create:stage=address,process=1; create:stage=handshake,process=3,action=throw;"
      "create:stage=start,process=0,action=exit,code=9");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const auto& f = plan->faults();
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].kind, FaultKind::kCreate);
  EXPECT_EQ(f[0].stage, CreateStage::kAddress);
  EXPECT_EQ(f[0].process, 1u);
  EXPECT_FALSE(f[0].throws);
  EXPECT_EQ(f[0].exit_code, 1);
  EXPECT_EQ(f[1].stage, CreateStage::kHandshake);
  EXPECT_TRUE(f[1].throws);
  EXPECT_EQ(f[2].exit_code, 9);
  EXPECT_EQ(plan->find_create(CreateStage::kAddress, 1), &f[0]);
  EXPECT_EQ(plan->find_create(CreateStage::kAddress, 0), nullptr);
  EXPECT_EQ(plan->find_create(CreateStage::kConnect, 1), nullptr);
  // Not a collective fault: no (rank, seq) finds it.
  EXPECT_EQ(plan->find(FaultKind::kCreate, 1, 0), nullptr);
  for (const char* stage : {"start", "transports", "address", "connect", "handshake", "agreed"})
    EXPECT_TRUE(FaultPlan::parse(std::string("create:process=0,stage=") + stage).is_ok()) << stage;
  // A throw reaches the caller as an exception naming the stage.
  try {
    fire_create_fault(*plan, CreateStage::kHandshake, 3);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains(e.what(), "handshake")) << e.what();
  }
  fire_create_fault(*plan, CreateStage::kHandshake, 2);  // not this process: nothing
}

TEST(FaultPlan, RejectsBadCreateFaults) {
  const std::pair<const char*, const char*> bad[] = {
      {"create:process=1", "stage"},
      {"create:stage=address", "process"},
      {"create:stage=later,process=1", "stage=later"},
      {"create:stage=start,process=x", "process=x"},
      {"create:stage=start,process=1,action=explode", "action=explode"},
      {"create:stage=start,process=1,rank=1", "rank"},
      {"create:stage=start,process=1,seq=1", "seq"},
      {"create:stage=start,process=1,code=256", "code=256"},
      {"create:stage=start,stage=connect,process=1", "twice"},
      {"stall:rank=1,seq=1,stage=start", "stage"},
  };
  for (const auto& [spec, why] : bad) {
    SCOPED_TRACE(spec);
    auto plan = FaultPlan::parse(spec);
    ASSERT_FALSE(plan.is_ok());
    EXPECT_EQ(plan.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(contains(plan.status().message(), why)) << plan.status().to_string();
  }
}

TEST(FaultPlan, FindMatchesKindRankSeqAndStep) {
  auto plan = FaultPlan::parse("drop:rank=1,seq=4,step=2;drop:rank=1,seq=5;exit:rank=1,seq=4");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const auto& f = plan->faults();
  EXPECT_EQ(plan->find(FaultKind::kDrop, 1, 4, 2), &f[0]);
  EXPECT_EQ(plan->find(FaultKind::kDrop, 1, 4, 1), nullptr);   // another step
  EXPECT_EQ(plan->find(FaultKind::kDrop, 1, 4), nullptr);      // a stepped fault needs the step
  EXPECT_EQ(plan->find(FaultKind::kDrop, 0, 4, 2), nullptr);   // another rank
  EXPECT_EQ(plan->find(FaultKind::kDrop, 1, 3, 2), nullptr);   // another collective
  EXPECT_EQ(plan->find(FaultKind::kDrop, 1, 5, 0), &f[1]);     // no step: any step
  EXPECT_EQ(plan->find(FaultKind::kDrop, 1, 5, 7), &f[1]);
  EXPECT_EQ(plan->find(FaultKind::kDrop, 1, 5), &f[1]);
  EXPECT_EQ(plan->find(FaultKind::kExit, 1, 4, 9), &f[2]);
  EXPECT_EQ(plan->find(FaultKind::kCorrupt, 1, 4, 2), nullptr);  // another kind
  EXPECT_TRUE(plan->any(FaultKind::kDrop, 1, 4));
  EXPECT_FALSE(plan->any(FaultKind::kDrop, 2, 4));
}

TEST(FaultPlan, ABadPlanFailsCreation) {
  auto comm = Communicator::create(host_devices(2), make_host_adapter(),
                                   test_config(2).with_fault("stall:rank=1"));
  ASSERT_FALSE(comm.is_ok());
  EXPECT_EQ(comm.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(comm.status().message(), "RUCCL_FAULT")) << comm.status().to_string();
}

// ---- adapter faults ------------------------------------------------------------

struct VerbCase {
  const char* verb;  // "" = any verb: the first one called (prepare)
  const char* fails;
  ReduceOp op;
  bool gather;  // all_gather (copies its input), else all_reduce
};

TEST(AdapterFault, EveryRankGetsTheDeviceErrorAndTheGroupRecovers) {
  constexpr std::size_t kRanks = 4;
  const VerbCase cases[] = {
      {"", "prepare", ReduceOp::kSum, false},       {"prepare", "prepare", ReduceOp::kSum, false},
      {"begin", "begin", ReduceOp::kSum, false},    {"allocate", "allocate", ReduceOp::kSum, false},
      {"exchange", "exchange", ReduceOp::kSum, false}, {"scale", "scale", ReduceOp::kMean, false},
      {"finish", "finish", ReduceOp::kSum, false},  {"copy", "copy", ReduceOp::kSum, true},
  };
  for (const VerbCase& c : cases) {
    SCOPED_TRACE(std::string("verb '") + c.verb + "'");
    const std::string log = temp_log("adapter");
    const std::string spec = std::string("adapter:rank=2,seq=1") + (*c.verb ? ",verb=" : "") + c.verb;
    auto comm = make_comm(kRanks, test_config(kRanks, 5s).with_fault(spec).with_log_file(log));
    ASSERT_EQ(run_good(*comm, 1), "");  // #0 is untouched
    Failures f;
    run_ranks(kRanks, f, [&](std::size_t rank) {
      Bytes in = reduce_input_buffer(DataType::kF32, c.op, rank, 12, 1);
      const Status s = c.gather ? comm->all_gather(rank, view1(in, DataType::kF32, rank)).status()
                                : comm->all_reduce(rank, view1(in, DataType::kF32, rank), c.op).status();
      RANK_CHECK(f, rank, s.code() == ErrorCode::kDeviceError, describe(s));
      const std::string injected =
          std::string("injected fault: ") + c.fails + " failed on rank 2 in collective #1";
      RANK_CHECK(f, rank, contains(s.message(), injected), describe(s));
      RANK_CHECK(f, rank, contains(s.message(), "flight recorder dumped to " + log), describe(s));
    });
    EXPECT_TRUE(f.empty()) << f.report();
    ASSERT_EQ(run_good(*comm, 2),
              "");  // #2 and #3 work again: a device error does not break the group
    std::remove(log.c_str());
  }
}

// ---- stall faults --------------------------------------------------------------

TEST(StallFault, PeersTimeOutNamingTheStalledRankAndTheRecorderDumps) {
  constexpr std::size_t kRanks = 3;
  constexpr auto kTimeout = 300ms;
  const std::string log = temp_log("stall");
  auto comm = make_comm(kRanks, test_config(kRanks, kTimeout)
                                    .with_fault("stall:rank=1,seq=2,ms=2000")
                                    .with_log_file(log));
  ASSERT_EQ(run_good(*comm, 2), "");
  Failures f;
  std::vector<double> took(kRanks);
  std::vector<Status> got(kRanks);
  run_ranks(kRanks, f, [&](std::size_t rank) {
    const auto t0 = Clock::now();
    got[rank] = sum_on(*comm, rank);
    took[rank] = seconds_since(t0);
  });
  ASSERT_TRUE(f.empty()) << f.report();
  for (std::size_t rank = 0; rank < kRanks; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(got[rank].code(), ErrorCode::kTimeout) << describe(got[rank]);
    EXPECT_TRUE(contains(got[rank].message(), "collective #2")) << describe(got[rank]);
    EXPECT_TRUE(contains(got[rank].message(), "rank 1 did not arrive")) << describe(got[rank]);
    // Generous: the timeout plus the drain grace, never the 2 s stall.
    EXPECT_LT(took[rank], 0.3 + 1.5) << "took " << took[rank] << " s";
  }
  for (std::size_t rank : {0u, 2u})
    EXPECT_TRUE(contains(got[rank].message(), "; flight recorder dumped to " + log))
        << describe(got[rank]);

  const std::string dump = slurp(log);
  std::remove(log.c_str());
  // One dump for the burst: one header per local rank.
  EXPECT_EQ(occurrences(dump, "] FLIGHT recorder ("), kRanks) << dump;
  for (std::size_t rank = 0; rank < kRanks; ++rank) {
    const std::string head = "rank " + std::to_string(rank) + "] FLIGHT ";
    EXPECT_TRUE(contains(dump, head + "all_reduce #0 bytes=36 dtype=f32 op=sum state=done")) << dump;
    EXPECT_TRUE(contains(dump, head + "all_reduce #1 bytes=36 dtype=f32 op=sum state=done")) << dump;
  }
  // The ranks that timed out ended #2 failed; the stalled one was still before it.
  EXPECT_TRUE(contains(dump, "rank 0] FLIGHT all_reduce #2 bytes=36 dtype=f32 op=sum state=failed(Timeout)") ||
              contains(dump, "rank 2] FLIGHT all_reduce #2 bytes=36 dtype=f32 op=sum state=failed(Timeout)"))
      << dump;
  // The stalled rank wakes within ~10 ms of the break: the dump may catch it
  // before or after it noticed.
  EXPECT_TRUE(contains(dump, "rank 1] FLIGHT all_reduce #2 bytes=36 dtype=f32 op=sum state=started") ||
              contains(dump, "rank 1] FLIGHT all_reduce #2 bytes=36 dtype=f32 op=sum state=failed(Timeout)"))
      << dump;

  // A later call gets the same timeout at once, without another dump.
  Failures later;
  run_ranks(kRanks, later, [&](std::size_t rank) {
    const Status s = sum_on(*comm, rank);
    RANK_CHECK(later, rank, s.code() == ErrorCode::kTimeout, describe(s));
  });
  EXPECT_TRUE(later.empty()) << later.report();
  EXPECT_EQ(slurp(log), "");
}

// ---- exit faults ---------------------------------------------------------------

// Runs two collectives on a 2-rank communicator with `spec`; returns normally
// only if no fault fired.
void two_collectives(const std::string& spec) {
  auto comm = make_comm(2, test_config(2, 5s).with_fault(spec).with_flight_recorder(0));
  Failures f;
  run_ranks(2, f, [&](std::size_t rank) {
    for (int i = 0; i < 2; ++i) (void)sum_on(*comm, rank);
  });
}

TEST(ExitFault, TheProcessExitsWithTheCodeAtThePlannedStep) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(two_collectives("exit:rank=1,seq=1,step=1,code=9"), ::testing::ExitedWithCode(9),
              "ruccl fault injection: rank 1 exits in collective #1 step 1");
  EXPECT_EXIT(two_collectives("exit:rank=0,seq=0"), ::testing::ExitedWithCode(1),
              "ruccl fault injection: rank 0 exits in collective #0 step 0");
}

TEST(ExitFault, AStepBeyondTheCollectiveNeverFires) {
  // A 2-rank ring all-reduce has 2 steps (0 and 1): step 2 never starts.
  two_collectives("exit:rank=1,seq=1,step=2,code=9");
  SUCCEED();
}

// ---- the flight recorder -------------------------------------------------------

TEST(FlightRecorder, KeepsTheLastNAndDumpsOncePerBurst) {
  constexpr std::size_t kRanks = 2;
  const std::string log = temp_log("burst");
  auto comm = make_comm(kRanks, test_config(kRanks, 5s)
                                    .with_flight_recorder(4)
                                    .with_fault("adapter:rank=1,seq=6;adapter:rank=0,seq=7;"
                                                "adapter:rank=0,seq=9,verb=exchange")
                                    .with_log_file(log));
  ASSERT_EQ(run_good(*comm, 6), "");  // #0..#5
  Failures f;
  run_ranks(kRanks, f, [&](std::size_t rank) {
    for (std::uint64_t seq = 6; seq < 10; ++seq) {
      const Status s = sum_on(*comm, rank);
      const bool fails = seq != 8;
      RANK_CHECK(f, rank, (s.code() == ErrorCode::kDeviceError) == fails,
                 "#" << seq << ": " << describe(s));
      RANK_CHECK(f, rank, contains(s.message(), "flight recorder dumped to " + log) == fails,
                 "#" << seq << ": " << describe(s));
    }
  });
  ASSERT_TRUE(f.empty()) << f.report();
  const std::string dump = slurp(log);
  std::remove(log.c_str());
  // #6 and #7 are one burst (one dump), #8 succeeds, #9 starts a new burst.
  EXPECT_EQ(occurrences(dump, "rank 0] FLIGHT recorder ("), 2u) << dump;
  EXPECT_EQ(occurrences(dump, "rank 1] FLIGHT recorder ("), 2u) << dump;
  EXPECT_TRUE(contains(dump, "rank 0] FLIGHT recorder (all_reduce #6 failed with DeviceError, seen by rank")) << dump;
  EXPECT_TRUE(contains(dump, "] FLIGHT recorder (all_reduce #9 failed with DeviceError")) << dump;
  EXPECT_TRUE(contains(dump, "last 4 of 7 collectives, oldest first")) << dump;
  EXPECT_TRUE(contains(dump, "last 4 of 10 collectives, oldest first")) << dump;
  // The first dump holds #3..#6 only, the second #6..#9.
  EXPECT_EQ(occurrences(dump, "FLIGHT all_reduce #2 "), 0u) << dump;
  EXPECT_EQ(occurrences(dump, "FLIGHT all_reduce #3 "), kRanks) << dump;
  // #6 failed on every rank: in the second dump for sure, in the first at
  // least on the rank that dumped (its peer may not have ended #6 yet).
  EXPECT_GE(occurrences(dump, "FLIGHT all_reduce #6 bytes=36 dtype=f32 op=sum state=failed(DeviceError)"),
            kRanks + 1) << dump;
  EXPECT_EQ(occurrences(dump, "FLIGHT all_reduce #8 bytes=36 dtype=f32 op=sum state=done"), kRanks) << dump;
  EXPECT_TRUE(contains(dump, " wall=20")) << dump;
  EXPECT_TRUE(contains(dump, " start=-")) << dump;
}

TEST(FlightRecorder, OffOrAUserAbortDumpsNothing) {
  const std::string log = temp_log("quiet");
  {
    auto off = make_comm(2, test_config(2, 5s).with_flight_recorder(0)
                                .with_fault("adapter:rank=0,seq=0").with_log_file(log));
    Failures f;
    run_ranks(2, f, [&](std::size_t rank) {
      const Status s = sum_on(*off, rank);
      RANK_CHECK(f, rank, s.code() == ErrorCode::kDeviceError, describe(s));
      RANK_CHECK(f, rank, !contains(s.message(), "flight recorder"), describe(s));
    });
    EXPECT_TRUE(f.empty()) << f.report();
  }
  {
    auto comm = make_comm(2, test_config(2, 5s).with_log_file(log));
    Failures f;
    std::thread aborter([&] {
      std::this_thread::sleep_for(50ms);
      comm->abort("the user gave up");
    });
    const Status s = sum_on(*comm, 0);  // rank 1 never comes: the abort ends it
    aborter.join();
    EXPECT_EQ(s.code(), ErrorCode::kAborted) << describe(s);
    EXPECT_FALSE(contains(s.message(), "flight recorder")) << describe(s);
  }
  EXPECT_FALSE(std::ifstream(log).good()) << slurp(log);
}

// A dump reads a ring while its rank writes it (the SIGUSR1 dumper, a peer's
// failure): every entry it shows is one the rank wrote whole, in order.
TEST(FlightRecorder, ADumpWhileItsRankWritesShowsWholeEntries) {
  core::FlightRecorder recorder(0, 1,
                                Config().with_flight_recorder(8).with_flight_recorder_signal(
                                    false));
  constexpr std::size_t kDumps = 3000;
  std::atomic<bool> dumped{false}, writing{false};
  std::uint64_t calls = 0;
  std::thread rank([&] {  // writes until the reader has its dumps
    core::Request req;
    req.kind = CollectiveKind::kReduce;
    for (; !dumped.load(std::memory_order_relaxed) || calls < 16; ++calls) {
      req.root = calls % 7;
      recorder.begin(0, calls, req, calls * 3, std::chrono::steady_clock::now());
      recorder.mark(0, core::FlightState::kAgreed);
      (void)recorder.end(0, Status::ok(), false);
      writing.store(true, std::memory_order_relaxed);
    }
  });
  while (!writing.load()) std::this_thread::yield();  // (the dumps below overlap the writes)
  std::size_t entries = 0;
  for (std::size_t dump = 0; dump < kDumps; ++dump) {
    const std::string text = recorder.render("test");
    std::istringstream lines(text);
    std::string line;
    std::optional<unsigned long long> last;
    while (std::getline(lines, line)) {
      const auto at = line.find("FLIGHT reduce #");
      if (at == std::string::npos) continue;
      unsigned long long seq = 0, bytes = 0, root = 0;
      ASSERT_EQ(std::sscanf(line.c_str() + at,
                            "FLIGHT reduce #%llu bytes=%llu dtype=f32 op=sum root=%llu", &seq,
                            &bytes, &root),
                3)
          << line;
      EXPECT_EQ(bytes, seq * 3) << line;
      EXPECT_EQ(root, seq % 7) << line;
      if (last) {
        EXPECT_EQ(seq, *last + 1) << text;
      }
      last = seq;
      ++entries;
    }
  }
  dumped.store(true);
  rank.join();
  const std::string end = recorder.render("end");
  const unsigned long long final_seq = calls - 1;
  EXPECT_TRUE(contains(end, "last 8 of " + std::to_string(calls) + " collectives")) << end;
  EXPECT_TRUE(contains(end, "FLIGHT reduce #" + std::to_string(final_seq) +
                                " bytes=" + std::to_string(final_seq * 3) +
                                " dtype=f32 op=sum root=" + std::to_string(final_seq % 7) +
                                " state=done"))
      << end;
  EXPECT_GT(entries, 0u);
}

TEST(FlightRecorder, Sigusr1DumpsEveryLiveCommunicator) {
  struct sigaction before {};
  ASSERT_EQ(::sigaction(SIGUSR1, nullptr, &before), 0);
  if (before.sa_handler == SIG_IGN) GTEST_SKIP() << "SIGUSR1 is ignored in this process";
  const std::string log = temp_log("signal");
  auto comm = make_comm(2, test_config(2, 5s).with_log_file(log));
  ASSERT_EQ(run_good(*comm, 3), "");
  struct sigaction now {};
  ASSERT_EQ(::sigaction(SIGUSR1, nullptr, &now), 0);
  ASSERT_NE(now.sa_handler, SIG_DFL) << "no SIGUSR1 handler was installed";
  ASSERT_EQ(::raise(SIGUSR1), 0);
  std::string dump;
  for (auto until = Clock::now() + 2s; Clock::now() < until; std::this_thread::sleep_for(10ms)) {
    dump = slurp(log);
    if (occurrences(dump, "FLIGHT all_reduce #2 ") == 2) break;
  }
  std::remove(log.c_str());
  EXPECT_TRUE(contains(dump, "rank 0] FLIGHT recorder (SIGUSR1): last 3 of 3")) << dump;
  EXPECT_TRUE(contains(dump, "rank 1] FLIGHT recorder (SIGUSR1): last 3 of 3")) << dump;
  EXPECT_EQ(occurrences(dump, "FLIGHT all_reduce #2 bytes=36 dtype=f32 op=sum state=done"), 2u) << dump;
}

// In a fresh process (death-test child): is SIGUSR1 still at its default action
// after a communicator was created over `config`, with `app_handler` installed
// first when set? Exit code 0: default, 1: ruccl's handler, 2: the app's.
void handler_after_creation(const Config& config, bool app_handler) {
  if (app_handler) ::signal(SIGUSR1, +[](int) {});
  const auto app = ::signal(SIGUSR1, SIG_DFL);  // read it back...
  ::signal(SIGUSR1, app);                        // ...and restore it
  auto comm = make_comm(2, config);
  struct sigaction now {};
  ::sigaction(SIGUSR1, nullptr, &now);
  std::fflush(stderr);
  ::_exit(now.sa_handler == SIG_DFL ? 0 : now.sa_handler == app ? 2 : 1);
}

TEST(FlightRecorder, TheHandlerNeverReplacesAnApplicationsAndCanBeTurnedOff) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(handler_after_creation(test_config(2), false), ::testing::ExitedWithCode(1), "");
  EXPECT_EXIT(handler_after_creation(test_config(2), true), ::testing::ExitedWithCode(2), "");
  EXPECT_EXIT(handler_after_creation(test_config(2).with_flight_recorder_signal(false), false),
              ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(handler_after_creation(test_config(2).with_flight_recorder(0), false),
              ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace ruccl::test
