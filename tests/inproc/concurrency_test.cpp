// Many collectives back to back, and independent groups running at once.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace ruccl::test {
namespace {

// Collective number i of a mixed sequence, checked; kinds and sizes vary with i.
void mixed_collective(Communicator& comm, std::size_t rank, std::size_t i, std::uint64_t salt,
                      Failures& f) {
  const std::size_t world = comm.world_size();
  const std::size_t count = (i * 7) % 40;
  const std::string what = "collective " + std::to_string(i) + " (count " + std::to_string(count) + ")";
  switch (i % 6) {
    case 0: {
      const ReduceOp op = kAllReduceOps[(i / 6) % 5];
      const DataType dt = kReducible[(i / 6) % 9];
      Bytes in = reduce_input_buffer(dt, op, rank, count, salt + i);
      auto r = comm.all_reduce(rank, view1(in, dt, rank), op);
      if (!r.is_ok()) return f.add(rank, what + " all_reduce: " + describe(r.status()));
      return check_tensor(f, rank, what + " all_reduce", *r, dt, {count},
                          expected_reduction(dt, op, world, count, salt + i));
    }
    case 1: {
      const std::size_t root = i % world;
      Bytes in = reduce_input_buffer(DataType::kI64, ReduceOp::kSum, rank, count, salt + i);
      auto r = comm.reduce(rank, view1(in, DataType::kI64, rank), ReduceOp::kSum, root);
      if (!r.is_ok()) return f.add(rank, what + " reduce: " + describe(r.status()));
      RANK_CHECK(f, rank, r->has_value() == (rank == root), what << " reduce: result on the wrong ranks");
      if (rank == root && r->has_value())
        check_tensor(f, rank, what + " reduce", **r, DataType::kI64, {count},
                     expected_reduction(DataType::kI64, ReduceOp::kSum, world, count, salt + i));
      return;
    }
    case 2: {
      const std::size_t root = (i / 6) % world;
      const Bytes data = move_input_buffer(DataType::kF32, root, count, salt + i);
      Bytes in = rank == root ? data : Bytes{};
      const TensorView v = view1(in, DataType::kF32, rank);
      TensorView sized = v;
      sized.shape = {count};
      auto r = comm.broadcast(rank, rank == root ? &sized : nullptr);
      if (!r.is_ok()) return f.add(rank, what + " broadcast: " + describe(r.status()));
      return check_tensor(f, rank, what + " broadcast", *r, DataType::kF32, {count}, data);
    }
    case 3: {
      Bytes in = move_input_buffer(DataType::kU8, rank, count, salt + i);
      auto r = comm.all_gather(rank, view1(in, DataType::kU8, rank));
      if (!r.is_ok()) return f.add(rank, what + " all_gather: " + describe(r.status()));
      Bytes want;
      for (std::size_t s = 0; s < world; ++s) {
        Bytes p = move_input_buffer(DataType::kU8, s, count, salt + i);
        want.insert(want.end(), p.begin(), p.end());
      }
      return check_tensor(f, rank, what + " all_gather", *r, DataType::kU8, {count * world}, want);
    }
    case 4: {
      Bytes in = reduce_input_buffer(DataType::kF64, ReduceOp::kMin, rank, count, salt + i);
      auto r = comm.reduce_scatter(rank, view1(in, DataType::kF64, rank), ReduceOp::kMin);
      if (!r.is_ok()) return f.add(rank, what + " reduce_scatter: " + describe(r.status()));
      const Bytes full = expected_reduction(DataType::kF64, ReduceOp::kMin, world, count, salt + i);
      const std::size_t base = count / world, extra = count % world;
      const std::size_t first = rank * base + std::min(rank, extra), n = base + (rank < extra);
      return check_tensor(f, rank, what + " reduce_scatter", *r, DataType::kF64, {n},
                          Bytes(full.begin() + first * 8, full.begin() + (first + n) * 8));
    }
    default: {
      std::vector<std::size_t> counts(world);
      std::size_t total = 0;
      for (std::size_t d = 0; d < world; ++d) total += counts[d] = (rank * 3 + d + i) % 4;
      Bytes in = move_input_buffer(DataType::kI32, rank, total, salt + i);
      auto r = comm.all_to_all_v(rank, view1(in, DataType::kI32, rank), counts);
      if (!r.is_ok()) return f.add(rank, what + " all_to_all_v: " + describe(r.status()));
      Bytes want;
      for (std::size_t s = 0; s < world; ++s) {
        std::size_t before = 0, all = 0;
        for (std::size_t d = 0; d < world; ++d) {
          if (d < rank) before += (s * 3 + d + i) % 4;
          all += (s * 3 + d + i) % 4;
        }
        Bytes p = move_input_buffer(DataType::kI32, s, all, salt + i);
        want.insert(want.end(), p.begin() + before * 4,
                    p.begin() + (before + (s * 3 + rank + i) % 4) * 4);
      }
      return check_bytes(f, rank, what + " all_to_all_v", DataType::kI32, r->data.data(), want);
    }
  }
}

TEST(BackToBack, TwoHundredMixedCollectivesWithoutDeadlock) {
  for (std::size_t world : {4u, 8u}) {
    SCOPED_TRACE("world " + std::to_string(world));
    auto comm = make_comm(world);
    Failures f;
    run_ranks(world, f, [&](std::size_t rank) {
      for (std::size_t i = 0; i < 200; ++i) mixed_collective(*comm, rank, i, 0, f);
    });
    EXPECT_TRUE(f.empty()) << f.report();
    for (std::size_t r = 0; r < world; ++r) EXPECT_EQ(comm->next_sequence(r), 200u);
  }
}

TEST(Concurrent, TwoCommunicatorsOnTheSameDevices) {
  constexpr std::size_t kWorld = 4;
  auto a = make_comm(kWorld);
  auto b = make_comm(kWorld);
  Failures f;
  std::vector<std::thread> groups;
  for (int g = 0; g < 2; ++g) {
    groups.emplace_back([&, g] {
      Communicator& comm = g == 0 ? *a : *b;
      run_ranks(kWorld, f, [&](std::size_t rank) {
        for (std::size_t i = 0; i < 60; ++i) mixed_collective(comm, rank, i + g, 1000 * (g + 1), f);
      });
    });
  }
  for (auto& t : groups) t.join();
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST(Concurrent, TwoSessionsWithTheSamePeersAndDevices) {
  constexpr std::size_t kWorld = 4;
  Session sessions[2];
  Failures f;
  std::vector<std::thread> groups;
  for (int g = 0; g < 2; ++g) {
    groups.emplace_back([&, g] {
      Session& s = sessions[g];
      run_ranks(kWorld, f, [&](std::size_t rank) {
        const PeerId peer = 7 + rank;
        Status reg = s.register_peer(peer, host_device(rank), test_config(kWorld));
        if (!reg.is_ok()) return f.add(rank, "session " + std::to_string(g) + ": " + describe(reg));
        for (std::size_t i = 0; i < 30; ++i) {
          const std::uint64_t salt = 77 * (g + 1) + i;
          const DataType dt = i % 2 ? DataType::kF32 : DataType::kI64;
          Bytes in = reduce_input_buffer(dt, ReduceOp::kSum, rank, 33, salt);
          auto r = s.all_reduce(peer, view1(in, dt, rank), ReduceOp::kSum);
          if (!r.is_ok()) {
            f.add(rank, "session " + std::to_string(g) + ": " + describe(r.status()));
            break;
          }
          check_tensor(f, rank, "session " + std::to_string(g) + " all_reduce " + std::to_string(i), *r, dt,
                       {33}, expected_reduction(dt, ReduceOp::kSum, kWorld, 33, salt));
        }
        Status fin = s.finish_collective(peer);
        RANK_CHECK(f, rank, fin.is_ok(), describe(fin));
      });
    });
  }
  for (auto& t : groups) t.join();
  EXPECT_TRUE(f.empty()) << f.report();
}

}  // namespace
}  // namespace ruccl::test
