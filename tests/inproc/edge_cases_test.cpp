// Edge cases found in review: slow but healthy ranks, late arrivals at a
// broken group, NaN in Min/Max, zero-width rows, session configs that differ,
// and timeouts too large to add to a clock.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "test_support.hpp"

namespace ruccl::test {
namespace {

using namespace std::chrono_literals;

// Host adapter whose prepare, or whose every copy and reduction (one per step
// here), sleeps on chosen ranks (the queue's device index is the rank).
class SlowAdapter : public HostForwardingAdapter {
 public:
  SlowAdapter(std::vector<std::chrono::milliseconds> prepare_delay,
              std::vector<std::chrono::milliseconds> exchange_delay)
      : prepare_delay_(std::move(prepare_delay)), exchange_delay_(std::move(exchange_delay)) {}
  Result<std::shared_ptr<AdapterState>> prepare(const TensorView& v, DeviceId d) override {
    std::this_thread::sleep_for(prepare_delay_[d.index]);
    return HostForwardingAdapter::prepare(v, d);
  }
  Result<Ticket> copy(const Queue& q, void* dst, const void* src, std::size_t bytes) override {
    std::this_thread::sleep_for(exchange_delay_[q.device.index]);
    return HostForwardingAdapter::copy(q, dst, src, bytes);
  }
  Result<Ticket> reduce(const Queue& q, void* dst, const void* a, const void* b, std::size_t n,
                        DataType dt, ReduceOp op) override {
    std::this_thread::sleep_for(exchange_delay_[q.device.index]);
    return HostForwardingAdapter::reduce(q, dst, a, b, n, dt, op);
  }

 private:
  std::vector<std::chrono::milliseconds> prepare_delay_;
  std::vector<std::chrono::milliseconds> exchange_delay_;
};

// The timeout bounds every wait, not the whole call: 4 steps of ~100 ms each
// (about 420 ms in all) complete under a 300 ms timeout.
TEST(EdgeCases, TimeoutBoundsEachWaitNotTheWholeCall) {
  constexpr std::size_t kWorld = 3;
  auto adapter = std::make_shared<SlowAdapter>(std::vector{0ms, 0ms, 0ms},
                                               std::vector{110ms, 100ms, 100ms});
  auto comm = Communicator::create(host_devices(kWorld), adapter, test_config(kWorld, 300ms));
  ASSERT_TRUE(comm.is_ok()) << describe(comm.status());
  Failures f;
  const auto t0 = Clock::now();
  run_ranks(kWorld, f, [&](std::size_t rank) {
    Bytes in = reduce_input_buffer(DataType::kF32, ReduceOp::kSum, rank, 9);
    auto r = comm.value()->all_reduce(rank, view1(in, DataType::kF32, rank), ReduceOp::kSum);
    if (!r.is_ok()) return f.add(rank, describe(r.status()));
    check_tensor(f, rank, "slow all_reduce", *r, DataType::kF32, {9},
                 expected_reduction(DataType::kF32, ReduceOp::kSum, kWorld, 9));
  });
  EXPECT_TRUE(f.empty()) << f.report();
  EXPECT_GT(seconds_since(t0), 0.3) << "the call should outlast one timeout";
}

// Rank 1 is still preparing when rank 0 times out; when it arrives it must get
// the timeout, never join the broken generation (which still names rank 0's
// finished call).
TEST(EdgeCases, LateRankAtABrokenGroupGetsTheTimeout) {
  constexpr std::size_t kWorld = 2;
  auto adapter = std::make_shared<SlowAdapter>(std::vector{0ms, 400ms}, std::vector{0ms, 0ms});
  auto comm = Communicator::create(host_devices(kWorld), adapter, test_config(kWorld, 200ms));
  ASSERT_TRUE(comm.is_ok()) << describe(comm.status());
  Failures f;
  std::vector<Status> got(kWorld);
  run_ranks(kWorld, f, [&](std::size_t rank) {
    Bytes in(16);
    got[rank] = comm.value()->all_reduce(rank, view1(in, DataType::kF32, rank), ReduceOp::kSum).status();
  });
  EXPECT_TRUE(f.empty()) << f.report();
  for (std::size_t r = 0; r < kWorld; ++r) {
    EXPECT_EQ(got[r].code(), ErrorCode::kTimeout) << "rank " << r << ": " << describe(got[r]);
    EXPECT_TRUE(contains(got[r].message(), "rank 1")) << describe(got[r]);
  }
}

// NaN on any rank makes Min and Max NaN on every rank, wherever it sits.
TEST(EdgeCases, MinMaxPropagateNaNFromAnyRank) {
  for (std::size_t nan_rank : {0u, 1u, 2u}) {
    for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
      auto comm = make_comm(3);
      Failures f;
      run_ranks(3, f, [&](std::size_t rank) {
        std::vector<float> in{rank == nan_rank ? std::numeric_limits<float>::quiet_NaN() : 1.0f,
                              float(rank)};
        auto r = comm->all_reduce(rank, TensorView::of(in.data(), DataType::kF32, 2, host_device(rank)), op);
        if (!r.is_ok()) return f.add(rank, describe(r.status()));
        RANK_CHECK(f, rank, std::isnan(r->as<float>()[0]),
                   op_name(op) << " with NaN on rank " << nan_rank << " gave " << r->as<float>()[0]);
        RANK_CHECK(f, rank, r->as<float>()[1] == (op == ReduceOp::kMin ? 0.0f : 2.0f), "finite lane");
      });
      EXPECT_TRUE(f.empty()) << f.report();
    }
  }
}

// Shapes [rows, 0]: nothing moves, but the row axis is kept.
TEST(EdgeCases, ZeroWidthRowsKeepTheirRowCount) {
  auto comm = make_comm(2);
  Failures f;
  run_ranks(2, f, [&](std::size_t rank) {
    Bytes none;
    const TensorView v = view(none, DataType::kF32, {5, 0}, rank);
    auto g = comm->all_gather(rank, v);
    if (!g.is_ok()) return f.add(rank, "all_gather: " + describe(g.status()));
    RANK_CHECK(f, rank, g->shape() == (Shape{10, 0}), "all_gather shape " << shape_of(g->shape()));
    auto rs = comm->reduce_scatter(rank, v, ReduceOp::kSum);
    if (!rs.is_ok()) return f.add(rank, "reduce_scatter: " + describe(rs.status()));
    RANK_CHECK(f, rank, rs->shape() == (Shape{rank == 0 ? 3u : 2u, 0}),
               "reduce_scatter shape " << shape_of(rs->shape()));
    const std::vector<std::size_t> counts{2, 3};
    auto a = comm->all_to_all_v(rank, v, counts);
    if (!a.is_ok()) return f.add(rank, "all_to_all_v: " + describe(a.status()));
    RANK_CHECK(f, rank, a->recv_counts == (std::vector<std::size_t>{counts[rank], counts[rank]}),
               "recv counts");
    RANK_CHECK(f, rank, a->data.shape() == (Shape{2 * counts[rank], 0}),
               "all_to_all_v shape " << shape_of(a->data.shape()));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// Peers of one session round must register the same config; a later round's
// config is the one its collectives use.
TEST(EdgeCases, SessionConfigsMustAgreeAndEachRoundUsesItsOwn) {
  Session session;
  const Config base = test_config(2);
  ASSERT_TRUE(session.register_peer(0, host_device(0), base).is_ok());
  Status second = session.register_peer(1, host_device(1), Config(base).with_max_chunk_bytes(8));
  EXPECT_EQ(second.code(), ErrorCode::kInvalidArgument) << describe(second);
  EXPECT_TRUE(contains(second.message(), "max_chunk_bytes")) << describe(second);
  Bytes in(16);
  auto first = session.all_reduce(0, view1(in, DataType::kF32, 0), ReduceOp::kSum);
  EXPECT_EQ(first.status().code(), ErrorCode::kInvalidArgument) << "peer 0 sees it too";
  session.reset_collective();

  // A round with a 2-byte budget for f32 fails with BudgetTooSmall on both peers.
  const Config tiny = Config(base).with_max_chunk_bytes(2);
  Failures f;
  std::vector<Status> got(2);
  run_ranks(2, f, [&](std::size_t peer) {
    Status s = session.register_peer(peer, host_device(peer), tiny);
    if (!s.is_ok()) return f.add(peer, describe(s));
    Bytes buf(16);
    got[peer] = session.all_reduce(peer, view1(buf, DataType::kF32, peer), ReduceOp::kSum).status();
  });
  EXPECT_TRUE(f.empty()) << f.report();
  for (std::size_t p = 0; p < 2; ++p) EXPECT_EQ(got[p].code(), ErrorCode::kBudgetTooSmall) << describe(got[p]);
}

// "No timeout" written as milliseconds::max() is refused up front, clearly.
TEST(EdgeCases, HugeTimeoutIsRefused) {
  auto comm = Communicator::create(host_devices(2), make_host_adapter(),
                                   Config().with_timeout(std::chrono::milliseconds::max()));
  EXPECT_EQ(comm.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(comm.status().message(), "timeout")) << describe(comm.status());
}

}  // namespace
}  // namespace ruccl::test
