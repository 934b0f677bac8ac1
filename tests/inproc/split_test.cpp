// Communicator::split and barrier, written once over tested_factory(): in
// process (ruccl_inproc_collectives) and over world communicators across
// processes (ruccl_mpi_world_matrix, where the children share the world's
// transports). Groups are chosen so that they are valid in both: whole
// blocks of a process's ranks (tensor parallel), one rank per process (data
// parallel), everything in reverse order.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "comm_factory.hpp"
#include "ruccl/bounded.hpp"

namespace ruccl::test {
namespace {

class Split : public BackendWorldTest {};

// Ranks per block: a process's ranks across processes, 2 in process (when even).
std::size_t block_of(const Communicator& comm) {
  if (!tested_factory().in_process()) return comm.devices().size();
  return comm.world_size() % 2 == 0 ? 2 : 1;
}

// sum over ranks of `in` (one i64 each) on `comm`; `parent_rank` picks the memory's device.
Result<std::int64_t> sum_i64(Communicator& comm, std::size_t rank, std::size_t parent_rank,
                             std::int64_t value) {
  const Backend& b = tested_backend();
  const Buffer in = b.upload(parent_rank, Bytes(reinterpret_cast<const std::byte*>(&value),
                                                reinterpret_cast<const std::byte*>(&value + 1)));
  auto out = comm.all_reduce(rank, in.view1(DataType::kI64), ReduceOp::kSum);
  RUCCL_TRY(out);
  const Bytes got = b.download(out.value());
  std::int64_t v = 0;
  std::memcpy(&v, got.data(), sizeof(v));
  return v;
}

// The ranks of `comm` (one i64 each, `value`) gathered in rank order.
Result<std::vector<std::int64_t>> gather_i64(Communicator& comm, std::size_t rank,
                                             std::size_t parent_rank, std::int64_t value) {
  const Backend& b = tested_backend();
  const Buffer in = b.upload(parent_rank, Bytes(reinterpret_cast<const std::byte*>(&value),
                                                reinterpret_cast<const std::byte*>(&value + 1)));
  auto out = comm.all_gather(rank, in.view1(DataType::kI64));
  RUCCL_TRY(out);
  const Bytes got = b.download(out.value());
  std::vector<std::int64_t> v(got.size() / sizeof(std::int64_t));
  std::memcpy(v.data(), got.data(), got.size());
  return v;
}

TEST_P(Split, AllRanksInReverseOrderOutliveTheParent) {
  const std::size_t world = GetParam();
  auto parent = tested_factory().make_comm(world);
  const std::vector<std::size_t> mine = local_ranks(*parent);
  std::vector<Communicator::Split> got(mine.size());
  Failures f;
  run_local_ranks(*parent, f, [&](std::size_t rank) {
    auto s = parent->split(rank, 0, -static_cast<std::int64_t>(rank));
    RANK_CHECK(f, rank, s.is_ok(), "split: " << describe(s.status()));
    if (s.is_ok()) got[rank - parent->first_rank()] = std::move(s).value();
  });
  ASSERT_TRUE(f.empty()) << f.report();
  // Only the children hold the shared transports now.
  parent.reset();
  for (std::size_t i = 1; i < got.size(); ++i)
    EXPECT_EQ(got[i].comm.get(), got[0].comm.get()) << "one child per process and color";
  run_local_ranks(*got[0].comm, f, [&](std::size_t child_rank) {
    // child rank c is parent rank world - 1 - c
    const std::size_t rank = world - 1 - child_rank;
    const auto& split = got[rank - mine.front()];
    RANK_CHECK(f, rank, split.rank == child_rank, "child rank " << split.rank);
    RANK_CHECK(f, rank, split.comm->world_size() == world, "size " << split.comm->world_size());
    for (int round = 0; round < 3; ++round) {
      auto g = gather_i64(*split.comm, child_rank, rank, static_cast<std::int64_t>(rank));
      RANK_CHECK(f, rank, g.is_ok(), "all_gather: " << describe(g.status()));
      if (!g.is_ok()) return;
      for (std::size_t c = 0; c < world; ++c)
        RANK_CHECK(f, rank, g.value()[c] == static_cast<std::int64_t>(world - 1 - c),
                   "child rank " << c << " gave " << g.value()[c]);
      auto s = sum_i64(*split.comm, child_rank, rank, static_cast<std::int64_t>(child_rank));
      RANK_CHECK(f, rank,
                 s.is_ok() && s.value() == static_cast<std::int64_t>(world * (world - 1) / 2),
                 "all_reduce: " << describe(s.status()));
      RANK_CHECK(f, rank, split.comm->barrier(child_rank).is_ok(), "barrier");
    }
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// Tensor parallel (a block of ranks) x data parallel (one rank per block)
// through BoundedCommunicator, the two children and the parent in turn, with a
// budget that cuts every message; then a mismatch inside one child stays there.
TEST_P(Split, TensorByDataParallelThroughBoundedCommunicators) {
  const std::size_t world = GetParam();
  auto parent = tested_factory().make_comm(world);
  const std::size_t block = block_of(*parent);
  const std::size_t blocks = world / block;
  const Backend& b = tested_backend();
  Failures f;
  run_local_ranks(*parent, f, [&](std::size_t rank) {
    auto tp = parent->split(rank, static_cast<std::int64_t>(rank / block),
                            static_cast<std::int64_t>(rank));
    auto dp = parent->split(rank, static_cast<std::int64_t>(rank % block),
                            static_cast<std::int64_t>(rank));
    RANK_CHECK(f, rank, tp.is_ok() && dp.is_ok(),
               "split: " << describe(tp.status()) << " / " << describe(dp.status()));
    if (!tp.is_ok() || !dp.is_ok()) return;
    RANK_CHECK(f, rank, tp->rank == rank % block && tp->comm->world_size() == block,
               "tp rank " << tp->rank << " of " << tp->comm->world_size());
    RANK_CHECK(f, rank, dp->rank == rank / block && dp->comm->world_size() == blocks,
               "dp rank " << dp->rank << " of " << dp->comm->world_size());
    BoundedCommunicator tpb(tp->comm, 64), dpb(dp->comm, 64);
    constexpr std::size_t kCount = 100;  // 400 bytes: 7 messages of <= 64 bytes
    for (int round = 0; round < 2; ++round) {
      std::vector<float> x(kCount);
      for (std::size_t i = 0; i < kCount; ++i) x[i] = static_cast<float>(rank * 1000 + i);
      const Bytes raw(reinterpret_cast<const std::byte*>(x.data()),
                      reinterpret_cast<const std::byte*>(x.data() + kCount));
      const Buffer in = b.upload(rank, raw);
      auto t = tpb.all_reduce(tp->rank, in.view1(DataType::kF32), ReduceOp::kSum);
      auto d = dpb.all_reduce(dp->rank, in.view1(DataType::kF32), ReduceOp::kSum);
      RANK_CHECK(f, rank, t.is_ok() && d.is_ok(),
                 "all_reduce: " << describe(t.status()) << " / " << describe(d.status()));
      if (!t.is_ok() || !d.is_ok()) return;
      std::vector<float> tv(kCount), dv(kCount);
      std::memcpy(tv.data(), b.download(t.value()).data(), kCount * sizeof(float));
      std::memcpy(dv.data(), b.download(d.value()).data(), kCount * sizeof(float));
      const std::size_t g = rank / block, l = rank % block;
      for (std::size_t i = 0; i < kCount; ++i) {
        double want_t = 0, want_d = 0;
        for (std::size_t j = 0; j < block; ++j)
          want_t += static_cast<double>((g * block + j) * 1000 + i);
        for (std::size_t j = 0; j < blocks; ++j)
          want_d += static_cast<double>((j * block + l) * 1000 + i);
        RANK_CHECK(f, rank, tv[i] == static_cast<float>(want_t), "tp [" << i << "] " << tv[i]);
        RANK_CHECK(f, rank, dv[i] == static_cast<float>(want_d), "dp [" << i << "] " << dv[i]);
        if (tv[i] != static_cast<float>(want_t) || dv[i] != static_cast<float>(want_d)) return;
      }
      auto all = sum_i64(*parent, rank, rank, 1);
      RANK_CHECK(f, rank, all.is_ok() && all.value() == static_cast<std::int64_t>(world),
                 "parent: " << describe(all.status()));
    }
    // Counts that differ between the data-parallel ranks: a typed error on
    // each of them, and every communicator works on.
    if (blocks > 1) {
      const std::size_t count = dp->rank == 0 ? 3 : 4;
      const Buffer in = b.upload(rank, test::filled(count * 4, 0));
      auto bad = dpb.all_reduce(dp->rank, in.view1(DataType::kF32), ReduceOp::kSum);
      RANK_CHECK(f, rank, bad.status().code() == ErrorCode::kShapeMismatch,
                 "mismatch: " << describe(bad.status()));
    }
    auto again = sum_i64(*dp->comm, dp->rank, rank, 1);
    RANK_CHECK(f, rank, again.is_ok() && again.value() == static_cast<std::int64_t>(blocks),
               "dp after the mismatch: " << describe(again.status()));
    auto tp_again = sum_i64(*tp->comm, tp->rank, rank, 1);
    RANK_CHECK(f, rank, tp_again.is_ok() && tp_again.value() == static_cast<std::int64_t>(block),
               "tp after the mismatch: " << describe(tp_again.status()));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST_P(Split, NoColorBadColorAndBrokenBlocks) {
  const std::size_t world = GetParam();
  auto parent = tested_factory().make_comm(world);
  const std::size_t block = block_of(*parent);
  const std::size_t processes = world / parent->devices().size();
  Failures f;
  run_local_ranks(*parent, f, [&](std::size_t rank) {
    // Only the first rank of each block joins.
    const bool joins = rank % block == 0;
    auto s = parent->split(rank, joins ? 7 : Communicator::kNoColor, 0);
    RANK_CHECK(f, rank, s.is_ok(), "split: " << describe(s.status()));
    if (!s.is_ok()) return;
    RANK_CHECK(f, rank, (s->comm != nullptr) == joins, "joined " << (s->comm != nullptr));
    if (s->comm) {
      RANK_CHECK(f, rank, s->comm->world_size() == world / block && s->rank == rank / block,
                 "rank " << s->rank << " of " << s->comm->world_size());
      auto n = sum_i64(*s->comm, s->rank, rank, 1);
      RANK_CHECK(f, rank, n.is_ok() && n.value() == static_cast<std::int64_t>(world / block),
                 "all_reduce: " << describe(n.status()));
    }
    // A color below kNoColor on rank 0: every rank says so.
    auto bad = parent->split(rank, rank == 0 ? -5 : 0, 0);
    RANK_CHECK(f, rank,
               bad.status().code() == ErrorCode::kInvalidArgument &&
                   contains(bad.status().message(), "rank 0 passed color -5"),
               "bad color: " << describe(bad.status()));
    // Across processes with several ranks each, a key that interleaves the
    // processes breaks the blocks: kInvalidArgument on every rank.
    const std::size_t per = parent->devices().size();
    if (!tested_factory().in_process() && processes > 1 && per > 1) {
      const auto key = static_cast<std::int64_t>((rank % per) * processes + rank / per);
      auto broken = parent->split(rank, 0, key);
      RANK_CHECK(f, rank,
                 broken.status().code() == ErrorCode::kInvalidArgument &&
                     contains(broken.status().message(), "consecutive"),
                 "interleaved: " << describe(broken.status()));
    }
    auto n = sum_i64(*parent, rank, rank, 1);
    RANK_CHECK(f, rank, n.is_ok() && n.value() == static_cast<std::int64_t>(world),
               "parent afterwards: " << describe(n.status()));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// No rank leaves a barrier before the last one has entered it: rank 0 enters
// 300 ms after the others, who must wait that long.
TEST_P(Split, BarrierWaitsForTheLastRank) {
  const std::size_t world = GetParam();
  if (world < 2) GTEST_SKIP() << "one rank waits for nobody";
  auto comm = tested_factory().make_comm(world);
  Failures f;
  run_local_ranks(*comm, f, [&](std::size_t rank) {
    RANK_CHECK(f, rank, comm->barrier(rank).is_ok(), "first barrier");
    if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto started = std::chrono::steady_clock::now();
    const Status s = comm->barrier(rank);
    const auto waited = std::chrono::steady_clock::now() - started;
    RANK_CHECK(f, rank, s.is_ok(), "barrier: " << describe(s));
    if (rank != 0)
      RANK_CHECK(f, rank, waited >= std::chrono::milliseconds(250),
                 "left the barrier after "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                     << " ms, before rank 0 entered it");
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// An abort of a split communicator: every rank of it gets Aborted. Across
// processes the children share the world's transports, one failure domain, so
// the parent ends too; in process a child is a communicator of its own and
// the parent works on.
TEST_P(Split, AbortOfAChild) {
  const std::size_t world = GetParam();
  auto parent = tested_factory().make_comm(world);
  const bool shared = !tested_factory().in_process();
  Failures f;
  run_local_ranks(*parent, f, [&](std::size_t rank) {
    auto s = parent->split(rank, 0, static_cast<std::int64_t>(rank));
    RANK_CHECK(f, rank, s.is_ok(), "split: " << describe(s.status()));
    if (!s.is_ok()) return;
    // Rank 0 aborts once its call returned; another rank may still be
    // completing the same call then, and get the abort instead.
    auto n = sum_i64(*s->comm, s->rank, rank, 1);
    RANK_CHECK(f, rank, n.is_ok() || (rank != 0 && n.status().code() == ErrorCode::kAborted),
               "before the abort: " << describe(n.status()));
    if (rank == 0) s->comm->abort("test aborts the child");
    auto after = sum_i64(*s->comm, s->rank, rank, 1);
    RANK_CHECK(f, rank, after.status().code() == ErrorCode::kAborted,
               "child after the abort: " << describe(after.status()));
    auto p = sum_i64(*parent, rank, rank, 1);
    if (shared)
      RANK_CHECK(f, rank, !p.is_ok(), "the parent shares the aborted transports, yet worked");
    else
      RANK_CHECK(f, rank, p.is_ok() && p.value() == static_cast<std::int64_t>(world),
                 "parent: " << describe(p.status()));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// Twelve exact i64 sums on a child `s` of the communicator whose rank `rank`
// runs this thread (`late`: after 20 ms), with values offset by `salt`;
// counts odd and above the inline size (24 B, about 32 KiB), so that the
// messages of children driven at once are in flight together.
void drive_sums(Failures& f, std::size_t rank, const Communicator::Split& s, bool late,
                std::int64_t salt) {
  const Backend& be = tested_backend();
  if (late) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto n = static_cast<std::int64_t>(s.comm->world_size());
  for (std::int64_t round = 0; round < 12; ++round) {
    const std::size_t count = round % 2 == 0 ? 3 : 4099;
    std::vector<std::int64_t> v(count);
    for (std::size_t i = 0; i < count; ++i)
      v[i] = static_cast<std::int64_t>(s.rank) + salt + round + static_cast<std::int64_t>(i);
    const Buffer in = be.upload(rank, Bytes(reinterpret_cast<const std::byte*>(v.data()),
                                            reinterpret_cast<const std::byte*>(v.data() + count)));
    auto out = s.comm->all_reduce(s.rank, in.view1(DataType::kI64), ReduceOp::kSum);
    RANK_CHECK(f, rank, out.is_ok(),
               "child " << salt << " round " << round << ": " << describe(out.status()));
    if (!out.is_ok()) return;
    const Bytes got = be.download(out.value());
    std::vector<std::int64_t> sum(count);
    std::memcpy(sum.data(), got.data(), std::min(got.size(), count * sizeof(std::int64_t)));
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t want = n * (n - 1) / 2 + n * (salt + round + static_cast<std::int64_t>(i));
      if (sum[i] != want) {
        RANK_CHECK(f, rank, false,
                   "child " << salt << " round " << round << " element " << i << ": " << sum[i]
                            << ", expected " << want);
        return;
      }
    }
  }
}

// Two children of one parent of `world` ranks on every rank (b's ranks in
// reverse order with `b_reversed`), then `body` on each rank with both.
void with_two_children(std::size_t world, bool b_reversed,
                       const std::function<void(Failures&, std::size_t, const Communicator::Split&,
                                                const Communicator::Split&)>& body) {
  auto parent = tested_factory().make_comm(world);
  Failures f;
  run_local_ranks(*parent, f, [&](std::size_t rank) {
    const auto key = static_cast<std::int64_t>(rank);
    auto a = parent->split(rank, 0, key);
    auto b = parent->split(rank, 0, b_reversed ? -key : key);
    RANK_CHECK(f, rank, a.is_ok() && b.is_ok(),
               "split: " << describe(a.status()) << " / " << describe(b.status()));
    if (a.is_ok() && b.is_ok()) body(f, rank, a.value(), b.value());
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// Two children of one parent, each driven by a thread of its own on every
// rank at the same time, the threads starting in opposite orders on
// neighbouring ranks. Across processes both children send through the same
// transports (views of the parent's): their exchanges take turns on each UCX
// worker and complete each other's messages; in process they are
// communicators of their own.
TEST_P(Split, TwoChildrenAtOnceFromTwoThreadsOfEachRank) {
  if (GetParam() < 2) GTEST_SKIP() << "needs two ranks";
  with_two_children(GetParam(), true,
                    [](Failures& f, std::size_t rank, const auto& a, const auto& b) {
                      const bool a_late = rank % 2 == 1;
                      std::thread ta(drive_sums, std::ref(f), rank, std::cref(a), a_late, 100);
                      std::thread tb(drive_sums, std::ref(f), rank, std::cref(b), !a_late, 7);
                      ta.join();
                      tb.join();
                    });
}

// Two communicators split at the same time, by two threads of every rank,
// from two parents that share the transports (children of one world across
// processes): each split picks a communicator slot free on every member, and
// the two must not pick the same one (their messages would then carry the
// same tags and cross). Five rounds, the threads' grandchildren each summing
// exactly while the other's run, then destroyed before the next round.
TEST_P(Split, TwoSplitsAtOnceFromTwoThreadsOfEachRank) {
  if (GetParam() < 2) GTEST_SKIP() << "needs two ranks";
  with_two_children(
      GetParam(), false, [](Failures& f, std::size_t rank, const auto& a, const auto& b) {
        for (std::int64_t round = 0; round < 3; ++round) {
          auto split_and_drive = [&](const Communicator::Split& from, std::int64_t salt) {
            auto s = from.comm->split(from.rank, 0, static_cast<std::int64_t>(from.rank));
            RANK_CHECK(f, rank, s.is_ok(), "split of " << salt << ": " << describe(s.status()));
            if (s.is_ok()) drive_sums(f, rank, s.value(), false, salt + round);
          };
          std::thread ta(split_and_drive, std::cref(a), 100);
          std::thread tb(split_and_drive, std::cref(b), 7);
          ta.join();
          tb.join();
        }
      });
}

INSTANTIATE_TEST_SUITE_P(Worlds, Split, RUCCL_TEST_WORLDS(1, 2, 3, 4, 6), world_name);

}  // namespace
}  // namespace ruccl::test
