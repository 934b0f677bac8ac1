// all_to_all_v over 1..8 ranks: random counts with zeros, row widths above
// one, results in source order. One body per case, run on the backend of the
// binary (tests/support/backend.hpp): host devices in ruccl_inproc_collectives,
// CUDA devices in ruccl_cuda_tests (skipped, saying why, without a GPU), world
// communicators across processes in ruccl_mpi_world_matrix (comm_factory.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm_factory.hpp"

namespace ruccl::test {
namespace {

using Matrix = std::vector<std::vector<std::size_t>>;  // counts[source][dest] in rows

Matrix random_counts(std::size_t world, std::uint64_t seed) {
  Matrix m(world, std::vector<std::size_t>(world));
  for (std::size_t s = 0; s < world; ++s)
    for (std::size_t d = 0; d < world; ++d) {
      const std::uint64_t h = splitmix64(seed * 1000003 + s * 31 + d);
      m[s][d] = (h % 3 == 0) ? 0 : static_cast<std::size_t>((h >> 8) % 5);
    }
  return m;
}

struct A2ACase {
  DataType dtype;
  std::size_t width;  // elements per row; 1 means a 1-D tensor
  Matrix counts;
  std::uint64_t salt;
};

Shape rows_shape(std::size_t rows, std::size_t width) {
  return width == 1 ? Shape{rows} : Shape{rows, width};
}

void run_a2a(const Backend& b, Communicator& comm, const std::vector<A2ACase>& cases, Failures& f) {
  const std::size_t world = comm.world_size();
  run_local_ranks(comm, f, [&](std::size_t rank) {
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      const A2ACase& c = cases[ci];
      const std::size_t esz = dtype_size(c.dtype);
      const std::size_t row_bytes = c.width * esz;
      auto input_of = [&](std::size_t src) {
        std::size_t rows = 0;
        for (std::size_t d = 0; d < world; ++d) rows += c.counts[src][d];
        return move_input_buffer(c.dtype, src, rows * c.width, c.salt);
      };
      // Expected: the block of every source for me, in source order.
      Bytes want;
      std::vector<std::size_t> want_counts(world);
      for (std::size_t s = 0; s < world; ++s) {
        const Bytes src_in = input_of(s);
        std::size_t before = 0;
        for (std::size_t d = 0; d < rank; ++d) before += c.counts[s][d];
        want.insert(want.end(), src_in.begin() + before * row_bytes,
                    src_in.begin() + (before + c.counts[s][rank]) * row_bytes);
        want_counts[s] = c.counts[s][rank];
      }
      const std::size_t want_rows = want.size() / row_bytes;
      const Bytes original = input_of(rank);
      const Buffer in = b.upload(rank, original);
      const TensorView iv = in.view(c.dtype, rows_shape(original.size() / row_bytes, c.width));
      const std::string what = "all_to_all_v " + std::string(dtype_name(c.dtype)) + " width " +
                               std::to_string(c.width) + " case " + std::to_string(ci);
      if (ci % 2 == 0) {
        auto r = comm.all_to_all_v(rank, iv, c.counts[rank]);
        if (!r.is_ok()) {
          f.add(rank, what + ": " + describe(r.status()));
          continue;
        }
        RANK_CHECK(f, rank, r->recv_counts == want_counts, what << ": recv_counts differ");
        b.check_tensor(f, rank, what, r->data, c.dtype, rows_shape(want_rows, c.width), want);
      } else {
        const Buffer out_buf = b.filled(rank, want.size() + 2 * row_bytes, 0xEE);  // two spare rows
        std::vector<std::size_t> recv_counts{99};
        Status s = comm.all_to_all_v_into(
            rank, iv, c.counts[rank], out_buf.view(c.dtype, rows_shape(want_rows + 2, c.width)),
            recv_counts);
        if (!s.is_ok()) {
          f.add(rank, what + ": " + describe(s));
          continue;
        }
        RANK_CHECK(f, rank, recv_counts == want_counts, what << ": recv_counts differ");
        const Bytes out = out_buf.download();
        check_bytes(f, rank, what, c.dtype, out.data(), want);
        RANK_CHECK(f, rank, Bytes(out.begin() + want.size(), out.end()) == filled(2 * row_bytes, 0xEE),
                   what << ": wrote past the received rows");
      }
      RANK_CHECK(f, rank, in.download() == original, what << ": input changed");
    }
  });
}

class AllToAllV : public BackendWorldTest {};

TEST_P(AllToAllV, RandomCountsWithZerosInSourceOrder) {
  const Backend& b = tested_backend();
  const std::size_t world = GetParam();
  auto comm = tested_factory().make_comm(world);
  std::vector<A2ACase> cases;
  std::uint64_t seed = 1;
  for (DataType dt : {DataType::kF32, DataType::kI64, DataType::kBytes, DataType::kU8,
                      DataType::kF16}) {
    for (std::size_t width : {1u, 3u}) {
      for (int rep = 0; rep < 4; ++rep) {  // even reps: value form, odd: into
        cases.push_back({dt, width, random_counts(world, seed), seed});
        ++seed;
      }
    }
  }
  // Edge cases: nothing moves; everyone sends everything to rank 0; only self.
  const Matrix zeros(world, std::vector<std::size_t>(world, 0));
  Matrix to_zero = zeros, self = zeros;
  for (std::size_t s = 0; s < world; ++s) {
    to_zero[s][0] = 5 + s;
    self[s][s] = 2;
  }
  for (int form = 0; form < 2; ++form) {  // cases alternate value / into by index
    cases.push_back({DataType::kI32, 2, zeros, 90});
    cases.push_back({DataType::kI32, 2, to_zero, 91});
    cases.push_back({DataType::kF64, 1, self, 92});
  }
  // Blocks of 301 rows of 5 (many messages each) between every other pair,
  // and ragged bf16 rows.
  Matrix big = zeros;
  for (std::size_t s = 0; s < world; ++s)
    for (std::size_t d = 0; d < world; ++d) big[s][d] = (s + d) % 2 == 0 ? 301 : 0;
  cases.push_back({DataType::kF32, 5, big, 93});
  cases.push_back({DataType::kBF16, 3, random_counts(world, 94), 94});
  Failures f;
  run_a2a(b, *comm, cases, f);
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST_P(AllToAllV, WrongNumberOfSendCountsIsAnError) {
  const Backend& b = tested_backend();
  const std::size_t world = GetParam();
  auto comm = tested_factory().make_comm(world);
  Failures f;
  run_local_ranks(*comm, f, [&](std::size_t rank) {
    // send_counts must have one entry per rank and sum to the input rows.
    std::vector<std::size_t> counts(world + 1, 0);
    const Buffer in = b.upload(rank, Bytes{});
    auto r = comm->all_to_all_v(rank, in.view(DataType::kF32, {0}), counts);
    RANK_CHECK(f, rank, !r.is_ok(), "world+1 send counts accepted");
    std::vector<std::size_t> too_many(world, 1);  // sums to world rows, input has 1
    const Buffer one = b.filled(rank, 4, 0);
    auto q = comm->all_to_all_v(rank, one.view(DataType::kF32, {1}), too_many);
    if (world != 1) RANK_CHECK(f, rank, !q.is_ok(), "send counts beyond the input accepted");
    // The group still works.
    std::vector<std::size_t> ones(world, 1);
    const Buffer in2 = b.upload(rank, move_input_buffer(DataType::kI32, rank, world));
    auto ok = comm->all_to_all_v(rank, in2.view1(DataType::kI32), ones);
    RANK_CHECK(f, rank, ok.is_ok(), "after errors: " << describe(ok.status()));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// A receiver's output one element short, and a dtype that differs on one
// rank: every rank gets the typed error (across processes on one node the
// lean path sees it in the slots and leaves it to the agreement, which names
// it), and the group works afterwards.
TEST_P(AllToAllV, ShortOutputAndMixedDtypeFailEveryRank) {
  const Backend& b = tested_backend();
  const std::size_t world = GetParam();
  if (world == 1) GTEST_SKIP() << "needs a peer";
  auto comm = tested_factory().make_comm(world);
  Failures f;
  run_local_ranks(*comm, f, [&](std::size_t rank) {
    const std::vector<std::size_t> ones(world, 1);
    const Buffer in = b.upload(rank, move_input_buffer(DataType::kI32, rank, world));
    const Buffer out = b.filled(rank, world * 4, 0);
    std::vector<std::size_t> got;
    const std::size_t room = rank == 0 ? world - 1 : world;
    const Status shortish = comm->all_to_all_v_into(rank, in.view1(DataType::kI32), ones,
                                                    out.view(DataType::kI32, {room}), got);
    RANK_CHECK(f, rank, shortish.code() == ErrorCode::kShapeMismatch,
               "a short output on rank 0: " << describe(shortish));
    RANK_CHECK(f, rank, shortish.message().find("rank 0") != std::string::npos,
               "the error does not name rank 0: " << describe(shortish));
    const DataType dt = rank == world - 1 ? DataType::kF32 : DataType::kI32;
    auto mixed = comm->all_to_all_v(rank, in.view1(dt), ones);
    RANK_CHECK(f, rank, !mixed.is_ok(), "a dtype differing on one rank accepted");
    auto ok = comm->all_to_all_v(rank, in.view1(DataType::kI32), ones);
    RANK_CHECK(f, rank, ok.is_ok(), "after errors: " << describe(ok.status()));
    if (ok.is_ok()) RANK_CHECK(f, rank, ok.value().recv_counts == ones, "recv counts after errors");
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

INSTANTIATE_TEST_SUITE_P(Worlds, AllToAllV, RUCCL_TEST_WORLDS(1, 2, 3, 4, 7, 8), world_name);

}  // namespace
}  // namespace ruccl::test
