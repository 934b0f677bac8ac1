// Deadlines, abort and the communicator registry.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace ruccl::test {
namespace {

using namespace std::chrono_literals;

TEST(Timeout, MissingRankNamedWithTheSequenceNumber) {
  constexpr std::size_t kWorld = 3;
  auto comm = make_comm(kWorld, test_config(kWorld, 300ms));
  Failures f;
  std::vector<Status> got(kWorld);
  std::vector<double> took(kWorld);
  const auto t0 = Clock::now();
  run_ranks(kWorld, f, [&](std::size_t rank) {
    if (rank == 2) return;  // never calls
    Bytes in(16);
    got[rank] = comm->all_reduce(rank, view1(in, DataType::kF32, rank), ReduceOp::kSum).status();
    took[rank] = seconds_since(t0);
  });
  EXPECT_TRUE(f.empty()) << f.report();
  for (std::size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(got[r].code(), ErrorCode::kTimeout) << "rank " << r << ": " << describe(got[r]);
    EXPECT_TRUE(contains(got[r].message(), "rank 2")) << describe(got[r]);
    EXPECT_TRUE(contains(got[r].message(), "#0")) << describe(got[r]);
    EXPECT_GE(took[r], 0.25) << "gave up before the deadline";
    EXPECT_LT(took[r], 2.5) << "rank " << r << " waited " << took[r] << " s for a 300 ms deadline";
  }
}

TEST(Timeout, LaterCollectiveNamesItsOwnSequenceNumber) {
  constexpr std::size_t kWorld = 4;
  auto comm = make_comm(kWorld, test_config(kWorld, 300ms));
  Failures f;
  std::vector<Status> got(kWorld);
  run_ranks(kWorld, f, [&](std::size_t rank) {
    Bytes in = reduce_input_buffer(DataType::kI32, ReduceOp::kSum, rank, 5);
    auto first = comm->all_reduce(rank, view1(in, DataType::kI32, rank), ReduceOp::kSum);
    RANK_CHECK(f, rank, first.is_ok(), describe(first.status()));
    if (rank == 0 || rank == 3) return;  // skip collective #1
    got[rank] = comm->all_reduce(rank, view1(in, DataType::kI32, rank), ReduceOp::kSum).status();
  });
  EXPECT_TRUE(f.empty()) << f.report();
  for (std::size_t r : {1u, 2u}) {
    EXPECT_EQ(got[r].code(), ErrorCode::kTimeout) << describe(got[r]);
    EXPECT_TRUE(contains(got[r].message(), "#1")) << describe(got[r]);
    EXPECT_TRUE(contains(got[r].message(), "0, 3")) << "missing ranks not named: " << describe(got[r]);
  }
}

// A rank stuck inside its device work for longer than the deadline: the others
// time out at the step barrier, naming it. When the stuck rank resumes, the
// others' calls have returned, so their memory is no longer ruccl's to read
// ("views must stay valid until the call returns on this rank"): the adapter
// records it if the stuck rank then still pulls from a returned peer (and skips
// the read, so the test itself stays memory-safe).
class StallingAdapter : public HostForwardingAdapter {
 public:
  explicit StallingAdapter(std::size_t world) : returned_(world) {}
  // Each rank's state names it, so that begin() sees whose memory a step is
  // about to read (the executor orders after that peer's producer first).
  struct Owner final : AdapterState {
    explicit Owner(std::size_t r) : rank(r) {}
    std::size_t rank;
  };
  Result<std::shared_ptr<AdapterState>> prepare(const TensorView& v, DeviceId d) override {
    RUCCL_TRY(HostForwardingAdapter::prepare(v, d));
    return std::shared_ptr<AdapterState>(std::make_shared<Owner>(d.index));
  }
  Status begin(const Queue& q, const AdapterState* producer) override {
    const auto* owner = dynamic_cast<const Owner*>(producer);
    const std::size_t r = q.device.index;
    if (owner != nullptr && owner->rank != r) {  // a pull from a peer
      if (r == 1 && !stalled_.exchange(true)) std::this_thread::sleep_for(900ms);
      if (owner->rank < returned_.size() && returned_[owner->rank].load()) {
        std::lock_guard lock(mutex_);
        late_reads_.push_back("rank " + std::to_string(r) + " pulled from rank " +
                              std::to_string(owner->rank) + " after rank " +
                              std::to_string(owner->rank) + "'s call had returned");
        return Status(ErrorCode::kDeviceError, "late read skipped by the test adapter");
      }
    }
    return HostForwardingAdapter::begin(q, producer);
  }

  void mark_returned(std::size_t rank) { returned_[rank] = true; }
  std::vector<std::string> late_reads() {
    std::lock_guard lock(mutex_);
    return late_reads_;
  }

 private:
  std::vector<std::atomic<bool>> returned_;
  std::atomic<bool> stalled_{false};
  std::mutex mutex_;
  std::vector<std::string> late_reads_;
};

// Rank 1 stalls inside a step's pull; ranks 0 and 2 time out at the step barrier.
// They must not return while rank 1 may still pull from their buffers (they
// wait for its device call to drain): no rank's memory is touched after that
// rank's call returned.
TEST(Timeout, RankStuckInAStepIsNamed) {
  constexpr std::size_t kWorld = 3;
  auto adapter = std::make_shared<StallingAdapter>(kWorld);
  auto created = Communicator::create(host_devices(kWorld), adapter, test_config(kWorld, 300ms));
  ASSERT_TRUE(created.is_ok()) << describe(created.status());
  auto comm = created.value();
  Failures f;
  std::vector<Status> got(kWorld);
  std::vector<Bytes> inputs(kWorld, Bytes(64));  // outlive the calls (see above)
  const auto t0 = Clock::now();
  run_ranks(kWorld, f, [&](std::size_t rank) {
    got[rank] = comm->all_reduce(rank, view1(inputs[rank], DataType::kF32, rank), ReduceOp::kSum).status();
    adapter->mark_returned(rank);
  });
  EXPECT_TRUE(f.empty()) << f.report();
  EXPECT_LT(seconds_since(t0), 3.0);
  for (std::size_t r = 0; r < kWorld; ++r) {
    EXPECT_EQ(got[r].code(), ErrorCode::kTimeout) << "rank " << r << ": " << describe(got[r]);
    if (r != 1) {
      EXPECT_TRUE(contains(got[r].message(), "rank 1")) << describe(got[r]);
    }
  }
  for (const auto& late : adapter->late_reads()) ADD_FAILURE() << late;
}

TEST(Abort, WakesBlockedRanksQuicklyAndSticks) {
  constexpr std::size_t kWorld = 3;
  auto comm = make_comm(kWorld, test_config(kWorld, 60s));
  Failures f;
  std::vector<Status> got(kWorld);
  std::vector<double> took(kWorld);
  Clock::time_point aborted_at;
  std::thread aborter([&] {
    std::this_thread::sleep_for(200ms);
    aborted_at = Clock::now();
    comm->abort("test abort");
  });
  run_ranks(kWorld, f, [&](std::size_t rank) {
    if (rank == 2) return;  // the missing rank keeps the others blocked
    Bytes in(16);
    got[rank] = comm->all_reduce(rank, view1(in, DataType::kF32, rank), ReduceOp::kSum).status();
  });
  aborter.join();
  const double late = seconds_since(aborted_at);
  EXPECT_TRUE(f.empty()) << f.report();
  EXPECT_LT(late, 1.0) << "blocked ranks woke " << late << " s after abort (the deadline was 60 s)";
  for (std::size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(got[r].code(), ErrorCode::kAborted) << describe(got[r]);
    EXPECT_TRUE(contains(got[r].message(), "test abort")) << describe(got[r]);
  }
  EXPECT_TRUE(comm->aborted());
  // Every later call fails at once, on every rank.
  const auto t0 = Clock::now();
  std::vector<Status> later(kWorld);
  run_ranks(kWorld, f, [&](std::size_t rank) {
    Bytes in(16);
    later[rank] = comm->all_reduce(rank, view1(in, DataType::kF32, rank), ReduceOp::kSum).status();
  });
  EXPECT_LT(seconds_since(t0), 1.0);
  for (std::size_t r = 0; r < kWorld; ++r) EXPECT_EQ(later[r].code(), ErrorCode::kAborted) << describe(later[r]);
}

TEST(Abort, BeforeAnyCall) {
  auto comm = make_comm(2);
  comm->abort("early");
  EXPECT_TRUE(comm->aborted());
  Failures f;
  run_ranks(2, f, [&](std::size_t rank) {
    Bytes in(8);
    auto r = comm->all_gather(rank, view1(in, DataType::kF32, rank));
    RANK_CHECK(f, rank, r.status().code() == ErrorCode::kAborted, describe(r.status()));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST(Registry, SameOrderedGroupSameCommunicator) {
  CommunicatorRegistry reg(make_host_adapter(), test_config(3));
  auto a = reg.communicator(host_devices(3));
  auto b = reg.communicator(host_devices(3));
  auto c = reg.communicator({host_device(2), host_device(1), host_device(0)});
  auto d = reg.communicator(host_devices(2));
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok() && d.is_ok());
  EXPECT_EQ(a.value(), b.value());
  EXPECT_NE(a.value(), c.value());
  EXPECT_NE(a.value(), d.value());
  EXPECT_EQ(c.value()->devices(), (std::vector<DeviceId>{host_device(2), host_device(1), host_device(0)}));
  EXPECT_EQ(d.value()->world_size(), 2u);

  // An aborted communicator is replaced by a fresh one.
  a.value()->abort("gone");
  auto e = reg.communicator(host_devices(3));
  ASSERT_TRUE(e.is_ok());
  EXPECT_NE(e.value(), a.value());
  EXPECT_FALSE(e.value()->aborted());

  // clear aborts and forgets every communicator.
  reg.clear("cleared");
  EXPECT_TRUE(e.value()->aborted());
  EXPECT_TRUE(c.value()->aborted());
  auto g = reg.communicator(host_devices(3));
  ASSERT_TRUE(g.is_ok());
  EXPECT_NE(g.value(), e.value());

  auto dup = reg.communicator({host_device(1), host_device(1)});
  EXPECT_FALSE(dup.is_ok());
}

TEST(Registry, ConcurrentLookupsAgree) {
  CommunicatorRegistry reg(make_host_adapter(), test_config(4));
  std::vector<std::shared_ptr<Communicator>> got(8);
  Failures f;
  run_ranks(8, f, [&](std::size_t i) {
    auto c = reg.communicator(host_devices(4));
    if (!c.is_ok()) return f.add(i, describe(c.status()));
    got[i] = c.value();
  });
  EXPECT_TRUE(f.empty()) << f.report();
  for (const auto& c : got) EXPECT_EQ(c, got[0]);
}

TEST(Registry, ReturnedCommunicatorWorks) {
  CommunicatorRegistry reg(make_host_adapter(), test_config(4));
  auto comm = reg.communicator({host_device(3), host_device(0), host_device(2), host_device(1)});
  ASSERT_TRUE(comm.is_ok()) << describe(comm.status());
  Failures f;
  // Rank r of this group lives on the device at position r.
  const std::vector<std::size_t> dev = {3, 0, 2, 1};
  run_ranks(4, f, [&](std::size_t rank) {
    Bytes in = move_input_buffer(DataType::kI32, rank, 3);
    auto r = (*comm)->all_gather(rank, TensorView{in.data(), DataType::kI32, {3}, host_device(dev[rank])});
    if (!r.is_ok()) return f.add(rank, describe(r.status()));
    Bytes want;
    for (std::size_t s = 0; s < 4; ++s) {
      Bytes p = move_input_buffer(DataType::kI32, s, 3);
      want.insert(want.end(), p.begin(), p.end());
    }
    check_bytes(f, rank, "all_gather over a permuted group", DataType::kI32, r->data(), want);
    RANK_CHECK(f, rank, r->device() == host_device(dev[rank]), "result on " << device_name(r->device()));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

}  // namespace
}  // namespace ruccl::test
