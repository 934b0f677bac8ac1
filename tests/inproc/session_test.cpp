// The seed's Session API: registration by peer id, collectives by peer id,
// finish/reset, and the registration errors.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace ruccl::test {
namespace {

using namespace std::chrono_literals;

// Peers 30, 10, 20 on devices host:0, host:1, host:2: ranks follow peer ids
// (10 -> 0, 20 -> 1, 30 -> 2), not devices or registration order.
const std::vector<PeerId> kPeers = {30, 10, 20};
const std::map<PeerId, std::size_t> kDevice = {{30, 0}, {10, 1}, {20, 2}};
const std::map<PeerId, std::size_t> kRank = {{10, 0}, {20, 1}, {30, 2}};

TensorView peer_view(Bytes& buf, DataType dt, Shape shape, PeerId peer) {
  return TensorView{buf.empty() ? nullptr : buf.data(), dt, std::move(shape),
                    host_device(kDevice.at(peer)), nullptr};
}

// Every collective of the session API for one round, with closed-form checks.
void one_round(Session& s, Failures& f, std::uint64_t salt) {
  const std::size_t world = kPeers.size();
  run_ranks(world, f, [&](std::size_t i) {
    const PeerId peer = kPeers[i];
    const std::size_t rank = kRank.at(peer);
    const DeviceId my_device = host_device(kDevice.at(peer));
    Status reg = s.register_peer(peer, host_device(kDevice.at(peer)), test_config(world));
    if (!reg.is_ok()) return f.add(rank, "register_peer: " + describe(reg));

    auto g = s.communicator(peer);
    if (!g.is_ok()) return f.add(rank, "communicator: " + describe(g.status()));
    RANK_CHECK(f, rank, g->first == rank, "peer " << peer << " got rank " << g->first);

    // all_reduce
    Bytes in = reduce_input_buffer(DataType::kI32, ReduceOp::kSum, rank, 11, salt);
    auto ar = s.all_reduce(peer, peer_view(in, DataType::kI32, {11}, peer), ReduceOp::kSum);
    if (ar.is_ok()) {
      RANK_CHECK(f, rank, ar->device() == host_device(kDevice.at(peer)), "all_reduce result device");
      check_bytes(f, rank, "session all_reduce", DataType::kI32, ar->data(),
                  expected_reduction(DataType::kI32, ReduceOp::kSum, world, 11, salt));
    } else {
      f.add(rank, "session all_reduce: " + describe(ar.status()));
    }

    // reduce to peer 20 (rank 1)
    Bytes rin = reduce_input_buffer(DataType::kF32, ReduceOp::kMax, rank, 6, salt);
    auto rd = s.reduce(peer, peer_view(rin, DataType::kF32, {6}, peer), ReduceOp::kMax, 20);
    if (!rd.is_ok()) {
      f.add(rank, "session reduce: " + describe(rd.status()));
    } else if (peer == 20) {
      RANK_CHECK(f, rank, rd->has_value(), "the root peer got nothing");
      if (rd->has_value())
        check_bytes(f, rank, "session reduce", DataType::kF32, (*rd)->data(),
                    expected_reduction(DataType::kF32, ReduceOp::kMax, world, 6, salt));
    } else {
      RANK_CHECK(f, rank, !rd->has_value(), "a non-root peer got a tensor");
    }

    // broadcast from peer 30
    const Bytes bdata = move_input_buffer(DataType::kF64, 2, 5, salt);
    Bytes bin = bdata;
    std::optional<TensorView> bv;
    if (peer == 30) bv = peer_view(bin, DataType::kF64, {5}, peer);
    auto bc = s.broadcast(peer, bv);
    if (bc.is_ok()) check_tensor(f, rank, "session broadcast", *bc, DataType::kF64, {5}, bdata, my_device);
    else f.add(rank, "session broadcast: " + describe(bc.status()));

    // all_gather: rank order = peer-id order
    Bytes gin = move_input_buffer(DataType::kU8, rank, 4, salt);
    auto ag = s.all_gather(peer, peer_view(gin, DataType::kU8, {2, 2}, peer));
    Bytes gwant;
    for (std::size_t r = 0; r < world; ++r) {
      Bytes p = move_input_buffer(DataType::kU8, r, 4, salt);
      gwant.insert(gwant.end(), p.begin(), p.end());
    }
    if (ag.is_ok()) check_tensor(f, rank, "session all_gather", *ag, DataType::kU8, {6, 2}, gwant, my_device);
    else f.add(rank, "session all_gather: " + describe(ag.status()));

    // reduce_scatter of 7 rows x 2: shards of 3, 2, 2 rows
    Bytes sin = reduce_input_buffer(DataType::kI64, ReduceOp::kSum, rank, 14, salt);
    auto rs = s.reduce_scatter(peer, peer_view(sin, DataType::kI64, {7, 2}, peer), ReduceOp::kSum);
    const Bytes full = expected_reduction(DataType::kI64, ReduceOp::kSum, world, 14, salt);
    const std::size_t first[] = {0, 3, 5}, rows[] = {3, 2, 2};
    const Bytes shard(full.begin() + first[rank] * 16, full.begin() + (first[rank] + rows[rank]) * 16);
    if (rs.is_ok()) check_tensor(f, rank, "session reduce_scatter", *rs, DataType::kI64, {rows[rank], 2}, shard, my_device);
    else f.add(rank, "session reduce_scatter: " + describe(rs.status()));

    // all_to_all_v: rank s sends s + d rows to rank d
    std::vector<std::size_t> counts(world);
    std::size_t total = 0;
    for (std::size_t d = 0; d < world; ++d) total += counts[d] = rank + d;
    Bytes ain = move_input_buffer(DataType::kI32, rank, total, salt);
    auto aa = s.all_to_all_v(peer, peer_view(ain, DataType::kI32, {total}, peer), counts);
    if (aa.is_ok()) {
      std::vector<std::size_t> want_counts;
      Bytes want;
      for (std::size_t src = 0; src < world; ++src) {
        std::size_t before = 0, all = 0;
        for (std::size_t d = 0; d < world; ++d) {
          if (d < rank) before += src + d;
          all += src + d;
        }
        Bytes p = move_input_buffer(DataType::kI32, src, all, salt);
        want.insert(want.end(), p.begin() + before * 4, p.begin() + (before + src + rank) * 4);
        want_counts.push_back(src + rank);
      }
      RANK_CHECK(f, rank, aa->recv_counts == want_counts, "session all_to_all_v recv_counts");
      check_tensor(f, rank, "session all_to_all_v", aa->data, DataType::kI32, {want.size() / 4}, want, my_device);
    } else {
      f.add(rank, "session all_to_all_v: " + describe(aa.status()));
    }

    // The into form through the group's communicator, in place.
    Bytes ip = reduce_input_buffer(DataType::kF16, ReduceOp::kMean, rank, 9, salt);
    const TensorView iv = peer_view(ip, DataType::kF16, {9}, peer);
    Status st = g->second->all_reduce_into(g->first, iv, iv, ReduceOp::kMean);
    if (st.is_ok()) check_bytes(f, rank, "communicator() in place", DataType::kF16, ip.data(),
                                expected_reduction(DataType::kF16, ReduceOp::kMean, world, 9, salt));
    else f.add(rank, "communicator() in place: " + describe(st));

    Status fin = s.finish_collective(peer);
    RANK_CHECK(f, rank, fin.is_ok(), "finish_collective: " << describe(fin));
  });
}

TEST(Session, EveryCollectiveByPeerIdAndASecondRound) {
  Session s;
  Failures f;
  one_round(s, f, 1);
  EXPECT_TRUE(f.empty()) << f.report();
  Failures g;
  one_round(s, g, 2);  // the session is empty again after every peer finished
  EXPECT_TRUE(g.empty()) << g.report();
}

TEST(Session, DuplicatePeerOrDeviceIsRejected) {
  Session s;
  ASSERT_TRUE(s.register_peer(10, host_device(0), test_config(2)).is_ok());
  Status dup_peer = s.register_peer(10, host_device(1), test_config(2));
  EXPECT_EQ(dup_peer.code(), ErrorCode::kDuplicateRegistration) << describe(dup_peer);
  EXPECT_TRUE(contains(dup_peer.message(), "10")) << describe(dup_peer);
  Status dup_dev = s.register_peer(11, host_device(0), test_config(2));
  EXPECT_EQ(dup_dev.code(), ErrorCode::kDuplicateRegistration) << describe(dup_dev);
  EXPECT_TRUE(contains(dup_dev.message(), "host:0")) << describe(dup_dev);

  Bytes x(4);
  const auto t0 = Clock::now();
  auto missing = s.all_reduce(99, TensorView::of(x.data(), DataType::kF32, 1, host_device(5)), ReduceOp::kSum);
  EXPECT_EQ(missing.status().code(), ErrorCode::kMissingRegistration) << describe(missing.status());
  EXPECT_TRUE(contains(missing.status().message(), "99")) << describe(missing.status());
  EXPECT_EQ(s.finish_collective(99).code(), ErrorCode::kMissingRegistration);
  EXPECT_LT(seconds_since(t0), 1.0);

  // The rejected registrations left the session usable.
  ASSERT_TRUE(s.register_peer(11, host_device(1), test_config(2)).is_ok());
  EXPECT_FALSE(s.register_peer(12, host_device(2), test_config(2)).is_ok()) << "a third peer in a group of 2";
  Failures f;
  run_ranks(2, f, [&](std::size_t rank) {
    const PeerId peer = rank == 0 ? 10 : 11;
    std::int32_t v = static_cast<std::int32_t>(rank) + 5;
    auto r = s.all_reduce(peer, TensorView::of(&v, DataType::kI32, 1, host_device(rank)), ReduceOp::kSum);
    RANK_CHECK(f, rank, r.is_ok() && r->as<std::int32_t>()[0] == 11, describe(r.status()));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST(Session, DeviceCountDisagreementReachesRegisteredPeers) {
  Session s;
  ASSERT_TRUE(s.register_peer(10, host_device(0), test_config(2, 10s)).is_ok());
  Status bad = s.register_peer(20, host_device(1), test_config(3, 10s));
  EXPECT_EQ(bad.code(), ErrorCode::kDeviceCountMismatch) << describe(bad);
  const auto t0 = Clock::now();
  Bytes x(4);
  auto r = s.all_reduce(10, TensorView::of(x.data(), DataType::kF32, 1, host_device(0)), ReduceOp::kSum);
  EXPECT_EQ(r.status().code(), ErrorCode::kDeviceCountMismatch) << describe(r.status());
  EXPECT_LT(seconds_since(t0), 1.0) << "the registered peer waited instead of seeing the error";

  s.reset_collective();  // a new round registers afresh
  Failures f;
  run_ranks(2, f, [&](std::size_t rank) {
    Status reg = s.register_peer(rank, host_device(rank), test_config(2));
    if (!reg.is_ok()) return f.add(rank, describe(reg));
    std::int32_t v = 3;
    auto q = s.all_reduce(rank, TensorView::of(&v, DataType::kI32, 1, host_device(rank)), ReduceOp::kProd);
    RANK_CHECK(f, rank, q.is_ok() && q->as<std::int32_t>()[0] == 9, describe(q.status()));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST(Session, CallsAfterFinishAreFinished) {
  Session s;
  Failures f;
  std::vector<Status> after(2), again(2);
  run_ranks(2, f, [&](std::size_t rank) {
    const PeerId peer = 100 + rank;
    Status reg = s.register_peer(peer, host_device(rank), test_config(2));
    if (!reg.is_ok()) return f.add(rank, describe(reg));
    std::int32_t v = 1;
    const TensorView tv = TensorView::of(&v, DataType::kI32, 1, host_device(rank));
    auto r = s.all_reduce(peer, tv, ReduceOp::kSum);
    RANK_CHECK(f, rank, r.is_ok(), describe(r.status()));
    if (rank == 0) {
      RANK_CHECK(f, rank, s.finish_collective(peer).is_ok(), "first finish");
      after[rank] = s.all_reduce(peer, tv, ReduceOp::kSum).status();
      again[rank] = s.finish_collective(peer);
    }
  });
  EXPECT_TRUE(f.empty()) << f.report();
  EXPECT_EQ(after[0].code(), ErrorCode::kFinished) << describe(after[0]);
  EXPECT_EQ(again[0].code(), ErrorCode::kFinished) << describe(again[0]);
  EXPECT_TRUE(s.finish_collective(101).is_ok());
}

TEST(Session, UnknownReduceRootIsAnErrorOnEveryPeer) {
  Session s;
  Failures f;
  std::vector<Status> got(3);
  run_ranks(3, f, [&](std::size_t rank) {
    Status reg = s.register_peer(rank, host_device(rank), test_config(3));
    if (!reg.is_ok()) return f.add(rank, describe(reg));
    float v = 1;
    got[rank] = s.reduce(rank, TensorView::of(&v, DataType::kF32, 1, host_device(rank)), ReduceOp::kSum, 77).status();
  });
  EXPECT_TRUE(f.empty()) << f.report();
  for (std::size_t r = 0; r < 3; ++r) EXPECT_EQ(got[r].code(), ErrorCode::kInvalidArgument) << describe(got[r]);
}

// Peers blocked waiting for a missing peer: before the group forms (`form` false)
// or inside a collective (`form` true). reset wakes them with kAborted at once.
void reset_wakes_blocked_peers(bool form) {
  Session s;
  constexpr std::size_t kWorld = 3;
  Failures f;
  std::vector<Status> got(kWorld);
  std::vector<Clock::time_point> woke(kWorld);
  Clock::time_point reset_at;
  std::atomic<int> registered{0};
  std::thread resetter([&] {
    while (registered.load() < (form ? 3 : 2)) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(200ms);
    reset_at = Clock::now();
    s.reset_collective();
  });
  run_ranks(kWorld, f, [&](std::size_t rank) {
    if (rank == 2 && !form) return;  // never registers
    Status reg = s.register_peer(rank, host_device(rank), test_config(kWorld, 30s));
    if (!reg.is_ok()) return f.add(rank, describe(reg));
    ++registered;
    if (rank == 2) return;  // registered, but never calls
    float v = 1;
    got[rank] = s.all_reduce(rank, TensorView::of(&v, DataType::kF32, 1, host_device(rank)), ReduceOp::kSum).status();
    woke[rank] = Clock::now();
  });
  resetter.join();
  EXPECT_TRUE(f.empty()) << f.report();
  for (std::size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(got[r].code(), ErrorCode::kAborted) << describe(got[r]);
    const double late = std::chrono::duration<double>(woke[r] - reset_at).count();
    EXPECT_LT(late, 1.0) << "rank " << r << " woke " << late << " s after reset";
  }
  // Registration works again afterwards.
  Failures g;
  run_ranks(kWorld, g, [&](std::size_t rank) {
    Status reg = s.register_peer(rank, host_device(rank), test_config(kWorld));
    if (!reg.is_ok()) return g.add(rank, "re-register: " + describe(reg));
    std::int64_t v = static_cast<std::int64_t>(rank);
    auto r = s.all_reduce(rank, TensorView::of(&v, DataType::kI64, 1, host_device(rank)), ReduceOp::kMax);
    RANK_CHECK(g, rank, r.is_ok() && r->as<std::int64_t>()[0] == 2, describe(r.status()));
  });
  EXPECT_TRUE(g.empty()) << g.report();
}

TEST(Session, ResetWakesPeersWaitingForTheGroup) { reset_wakes_blocked_peers(false); }
TEST(Session, ResetWakesPeersBlockedInACollective) { reset_wakes_blocked_peers(true); }

TEST(Session, WaitingForAnIncompleteGroupTimesOut) {
  Session s;
  ASSERT_TRUE(s.register_peer(1, host_device(0), test_config(2, 300ms)).is_ok());
  const auto t0 = Clock::now();
  float v = 1;
  auto r = s.all_reduce(1, TensorView::of(&v, DataType::kF32, 1, host_device(0)), ReduceOp::kSum);
  EXPECT_EQ(r.status().code(), ErrorCode::kTimeout) << describe(r.status());
  EXPECT_LT(seconds_since(t0), 2.0);
}

}  // namespace
}  // namespace ruccl::test
