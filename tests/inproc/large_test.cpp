// About a million elements per collective, with default and with small
// segment/budget settings (many segments and many messages per step).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_support.hpp"

namespace ruccl::test {
namespace {

struct Setting {
  const char* name;
  std::size_t max_chunk_bytes;
  std::size_t segment_bytes;
};

class Large : public ::testing::TestWithParam<std::size_t> {};

TEST_P(Large, EveryCollectiveOnAMillionElements) {
  const std::size_t world = GetParam();
  constexpr std::size_t kCount = 1000003;
  const Setting settings[] = {{"defaults", Config::kDefaultMaxChunkBytes, Config::kDefaultSegmentBytes},
                              {"small", 40000, 65536}};
  for (const Setting& st : settings) {
    SCOPED_TRACE(st.name);
    auto comm = make_comm(world, test_config(world)
                                     .with_max_chunk_bytes(st.max_chunk_bytes)
                                     .with_segment_bytes(st.segment_bytes));
    const std::size_t root = world / 2;
    const Bytes bcast = move_input_buffer(DataType::kF32, root, kCount, 1);
    const Bytes reduced = expected_reduction(DataType::kI32, ReduceOp::kSum, world, kCount, 2);
    // reduce_scatter of [kCount / 3 rows, 3] f64
    const std::size_t rows = kCount / 3;
    const Bytes rs_full = expected_reduction(DataType::kF64, ReduceOp::kMax, world, rows * 3, 3);
    const std::size_t gather_count = kCount / world;
    Failures f;
    run_ranks(world, f, [&](std::size_t rank) {
      // broadcast
      Bytes bin = rank == root ? bcast : Bytes{};
      const TensorView bv = view(bin, DataType::kF32, {kCount}, rank);
      auto b = comm->broadcast(rank, rank == root ? &bv : nullptr);
      if (b.is_ok()) check_tensor(f, rank, "large broadcast", *b, DataType::kF32, {kCount}, bcast);
      else f.add(rank, "large broadcast: " + describe(b.status()));

      // reduce (into, to the root)
      Bytes rin = reduce_input_buffer(DataType::kI32, ReduceOp::kSum, rank, kCount, 2);
      Bytes rout(rank == root ? rin.size() : 0);
      Status rs = comm->reduce_into(rank, view1(rin, DataType::kI32, rank),
                                    view(rout, DataType::kI32, {rout.size() / 4}, rank), ReduceOp::kSum, root);
      if (!rs.is_ok()) f.add(rank, "large reduce: " + describe(rs));
      else if (rank == root) check_bytes(f, rank, "large reduce", DataType::kI32, rout.data(), reduced);

      // reduce_scatter
      Bytes sin = reduce_input_buffer(DataType::kF64, ReduceOp::kMax, rank, rows * 3, 3);
      auto sc = comm->reduce_scatter(rank, view(sin, DataType::kF64, {rows, 3}, rank), ReduceOp::kMax);
      const std::size_t base = rows / world, extra = rows % world;
      const std::size_t mine = base + (rank < extra ? 1 : 0), first = rank * base + std::min(rank, extra);
      if (sc.is_ok()) {
        check_tensor(f, rank, "large reduce_scatter", *sc, DataType::kF64, {mine, 3},
                     Bytes(rs_full.begin() + first * 24, rs_full.begin() + (first + mine) * 24));
      } else {
        f.add(rank, "large reduce_scatter: " + describe(sc.status()));
      }

      // all_gather
      Bytes gin = move_input_buffer(DataType::kU8, rank, gather_count, 4);
      auto g = comm->all_gather(rank, view1(gin, DataType::kU8, rank));
      if (g.is_ok()) {
        Bytes want;
        for (std::size_t r = 0; r < world; ++r) {
          Bytes p = move_input_buffer(DataType::kU8, r, gather_count, 4);
          want.insert(want.end(), p.begin(), p.end());
        }
        check_tensor(f, rank, "large all_gather", *g, DataType::kU8, {gather_count * world}, want);
      } else {
        f.add(rank, "large all_gather: " + describe(g.status()));
      }

      // all_to_all_v: rank s sends (s + d + 1) * 1009 rows of 2 i64 to rank d
      std::vector<std::size_t> counts(world);
      std::size_t total = 0;
      for (std::size_t d = 0; d < world; ++d) total += counts[d] = (rank + d + 1) * 1009;
      Bytes ain = move_input_buffer(DataType::kI64, rank, total * 2, 5);
      auto a = comm->all_to_all_v(rank, view(ain, DataType::kI64, {total, 2}, rank), counts);
      if (!a.is_ok()) return f.add(rank, "large all_to_all_v: " + describe(a.status()));
      Bytes want;
      for (std::size_t s = 0; s < world; ++s) {
        std::size_t before = 0, all = 0;
        for (std::size_t d = 0; d < world; ++d) {
          if (d < rank) before += (s + d + 1) * 1009;
          all += (s + d + 1) * 1009;
        }
        Bytes p = move_input_buffer(DataType::kI64, s, all * 2, 5);
        want.insert(want.end(), p.begin() + before * 16, p.begin() + (before + (s + rank + 1) * 1009) * 16);
      }
      check_bytes(f, rank, "large all_to_all_v", DataType::kI64, a->data.data(), want);
    });
    EXPECT_TRUE(f.empty()) << f.report();
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, Large, ::testing::Values(3, 8),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

}  // namespace
}  // namespace ruccl::test
