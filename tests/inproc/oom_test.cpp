// No exception leaves ruccl (issue 13, item 11): an allocation that fails, in
// an adapter or in ruccl's own code, becomes kOutOfMemory on that rank and an
// error on every other rank within a fraction of the deadline, and the
// communicator either runs the next collective (the failure went through the
// protocol) or is cleanly failed (the last-resort guard broke it): every later
// call returns the error at once. Injected with the oom fault kind (ruccl's
// code) and a test adapter that throws (the adapter's).
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>

#include "test_support.hpp"

namespace ruccl::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
constexpr std::size_t kRanks = 4;
constexpr auto kTimeout = 5s;
// Every rank must have its error well before the deadline (no one waits it out).
constexpr auto kPrompt = 2s;

// Inputs big enough for the oom faults' steps.
constexpr std::size_t kElements = 300;

// Collective #1 with the fault; every rank's error, checked against `faulty`'s.
void expect_oom_everywhere(Communicator& comm, std::size_t faulty, ErrorCode others) {
  Failures f;
  run_ranks(kRanks, f, [&](std::size_t rank) {
    const auto t0 = Clock::now();
    const Status s = sum_on(comm, rank, kElements);
    const auto took = Clock::now() - t0;
    const ErrorCode want = rank == faulty ? ErrorCode::kOutOfMemory : others;
    RANK_CHECK(f, rank, s.code() == want, describe(s));
    RANK_CHECK(f, rank, contains(s.message(), "rank " + std::to_string(faulty)), describe(s));
    RANK_CHECK(f, rank, contains(s.message(), "collective #1"), describe(s));
    RANK_CHECK(f, rank, took < kPrompt, "took " << std::chrono::duration<double>(took).count()
                                                << " s: " << describe(s));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// ---- ruccl's own code (RUCCL_FAULT oom) -----------------------------------------

// In the local check (before the agreement) and in a step of the engine: the
// error goes through the agreement / the step barrier; the group goes on.
TEST(OutOfMemory, InTheCheckOrAStepReachesEveryRankAndTheGroupGoesOn) {
  for (const char* at : {"at=check", "at=step", "at=step,step=2"}) {
    SCOPED_TRACE(at);
    auto comm = make_comm(kRanks, test_config(kRanks, kTimeout)
                                      .with_fault(std::string("oom:rank=2,seq=1,") + at));
    ASSERT_EQ(run_good(*comm, 1, kElements), "");  // #0
    expect_oom_everywhere(*comm, 2, ErrorCode::kOutOfMemory);
    EXPECT_FALSE(comm->aborted());
    ASSERT_EQ(run_good(*comm, 2, kElements), "");  // #2, #3
  }
}

// After the rendezvous, outside every finer handler: the call's guard breaks
// the communicator with the error; every rank gets it at once, later calls too.
TEST(OutOfMemory, EscapingBetweenArriveAndDepartFailsTheCommunicatorCleanly) {
  auto comm = make_comm(kRanks, test_config(kRanks, kTimeout).with_fault("oom:rank=1,seq=1,at=run"));
  ASSERT_EQ(run_good(*comm, 1, kElements), "");
  expect_oom_everywhere(*comm, 1, ErrorCode::kOutOfMemory);
  EXPECT_TRUE(comm->aborted());
  Failures f;
  run_ranks(kRanks, f, [&](std::size_t rank) {
    const auto t0 = Clock::now();
    const Status s = sum_on(*comm, rank, kElements);
    RANK_CHECK(f, rank, s.code() == ErrorCode::kOutOfMemory, describe(s));
    RANK_CHECK(f, rank, Clock::now() - t0 < kPrompt, describe(s));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST(OutOfMemory, ThePlanNeedsAPoint) {
  auto comm = Communicator::create(host_devices(2), make_host_adapter(),
                                   test_config(2).with_fault("oom:rank=1,seq=1"));
  ASSERT_FALSE(comm.is_ok());
  EXPECT_TRUE(contains(comm.status().message(), "at=")) << comm.status().to_string();
}

// ---- the adapter's ---------------------------------------------------------------

// The host adapter, except that `verb` throws on `rank` in collective... the
// first time it is called there after arm().
class ThrowingAdapter final : public DeviceAdapter {
 public:
  ThrowingAdapter(std::string verb, std::size_t rank, bool bad_alloc)
      : inner_(make_host_adapter()), verb_(std::move(verb)), rank_(rank), bad_alloc_(bad_alloc) {}
  void arm() { armed_ = true; }
  DeviceKind kind() const noexcept override { return inner_->kind(); }
  Result<std::shared_ptr<AdapterState>> prepare(const TensorView& v, DeviceId d) override {
    if (d.index == rank_) trip("prepare");
    return inner_->prepare(v, d);
  }
  Status begin(const Queue& q, const AdapterState* p) override {
    if (q.device.index == rank_) trip("begin");
    return inner_->begin(q, p);
  }
  Status finish(const Queue& q) override {
    if (q.device.index == rank_) trip("finish");
    return inner_->finish(q);
  }
  Result<std::shared_ptr<void>> allocate(DeviceId d, std::size_t b) override {
    if (d.index == rank_) trip("allocate");
    return inner_->allocate(d, b);
  }
  Result<Ticket> copy(const Queue& q, void* dst, const void* src, std::size_t bytes) override {
    return inner_->copy(q, dst, src, bytes);
  }
  Result<Ticket> reduce(const Queue& q, void* dst, const void* a, const void* b, std::size_t n,
                        DataType dt, ReduceOp op) override {
    if (q.device.index == rank_) trip("reduce");
    return inner_->reduce(q, dst, a, b, n, dt, op);
  }
  Result<Ticket> divide(const Queue& q, void* d, std::size_t n, DataType dt,
                        std::size_t div) override {
    return inner_->divide(q, d, n, dt, div);
  }
  Status wait(const Queue& q, Ticket t) override { return inner_->wait(q, t); }

 private:
  void trip(const char* verb) {
    if (verb_ != verb || !armed_.exchange(false)) return;
    if (bad_alloc_) throw std::bad_alloc();
    throw std::runtime_error(std::string("test adapter: ") + verb + " broke");
  }
  std::shared_ptr<DeviceAdapter> inner_;
  const std::string verb_;
  const std::size_t rank_;
  const bool bad_alloc_;
  std::atomic<bool> armed_{false};
};

// `body` on every rank of a group over a ThrowingAdapter whose `verb` throws
// on rank 3 (bad_alloc, or a runtime_error), armed after one good
// collective, with the code rank 3 must get; then one more good collective.
void with_armed_rank_3(
    const char* verb, bool bad_alloc,
    const std::function<void(Failures&, Communicator&, std::size_t, ErrorCode)>& body) {
  auto adapter = std::make_shared<ThrowingAdapter>(verb, 3, bad_alloc);
  auto comm = Communicator::create(host_devices(kRanks), adapter, test_config(kRanks, kTimeout));
  ASSERT_TRUE(comm.is_ok()) << comm.status().to_string();
  ASSERT_EQ(run_good(*comm.value(), 1, kElements), "");
  adapter->arm();
  const ErrorCode want = bad_alloc ? ErrorCode::kOutOfMemory : ErrorCode::kDeviceError;
  Failures f;
  run_ranks(kRanks, f, [&](std::size_t rank) { body(f, *comm.value(), rank, want); });
  EXPECT_TRUE(f.empty()) << f.report();
  ASSERT_EQ(run_good(*comm.value(), 2, kElements), "");  // the group goes on
}

TEST(OutOfMemory, AnAdaptersBadAllocIsOutOfMemoryItsOtherExceptionsDeviceError) {
  for (const char* verb : {"prepare", "begin", "allocate", "reduce", "finish"}) {
    for (bool bad_alloc : {true, false}) {
      SCOPED_TRACE(std::string(verb) + (bad_alloc ? " bad_alloc" : " runtime_error"));
      with_armed_rank_3(verb, bad_alloc,
                        [&](Failures& f, Communicator& comm, std::size_t rank, ErrorCode want) {
                          const auto t0 = Clock::now();
                          const Status s = sum_on(comm, rank, kElements);
                          RANK_CHECK(f, rank, s.code() == want, describe(s));
                          RANK_CHECK(f, rank, contains(s.message(), "rank 3"), describe(s));
                          RANK_CHECK(f, rank, contains(s.message(), "collective #1"), describe(s));
                          RANK_CHECK(f, rank,
                                     contains(s.message(), bad_alloc ? "out of memory" : "broke"),
                                     describe(s));
                          RANK_CHECK(f, rank, Clock::now() - t0 < kPrompt, describe(s));
                        });
    }
  }
}

// A split gathers every rank's entry through the communicator: a rank whose
// adapter throws while it prepares its words still takes part (with none),
// so that every rank fails that split at once instead of waiting for it
// until the deadline; the group goes on.
TEST(OutOfMemory, ASplitWhoseRankCannotAllocateFailsOnEveryRankAtOnce) {
  for (bool bad_alloc : {true, false}) {
    SCOPED_TRACE(bad_alloc ? "bad_alloc" : "runtime_error");
    with_armed_rank_3("allocate", bad_alloc,
                      [&](Failures& f, Communicator& comm, std::size_t rank, ErrorCode want) {
                        const auto t0 = Clock::now();
                        auto s = comm.split(rank, 0, static_cast<std::int64_t>(rank));
                        RANK_CHECK(f, rank, !s.is_ok(), "the split succeeded");
                        if (rank == 3)
                          RANK_CHECK(f, rank, s.status().code() == want, describe(s.status()));
                        RANK_CHECK(f, rank, Clock::now() - t0 < kPrompt, describe(s.status()));
                      });
  }
}

}  // namespace
}  // namespace ruccl::test
