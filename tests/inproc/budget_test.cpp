// The per-message byte budget: CallOptions::max_chunk_bytes, Config's budget and
// BoundedCommunicator. Tiny budgets (one element, one row) still give exact
// results; budgets below one element/row are kBudgetTooSmall on every rank.
// Host memory; the communicators come from tested_factory() (comm_factory.hpp):
// in process here, across processes in ruccl_mpi_world_matrix.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm_factory.hpp"

namespace ruccl::test {
namespace {

class Budget : public ::testing::TestWithParam<std::size_t> {};

// The communicators come from tested_factory() (in process, or a world across
// processes in ruccl_mpi_world_matrix); memory is the host's, on the devices
// of tested_backend(). These hide test_support's in-process versions.
std::shared_ptr<Communicator> make_comm(std::size_t n, const Config& config) {
  return tested_factory().make_comm(n, config);
}
std::shared_ptr<Communicator> make_comm(std::size_t n) { return tested_factory().make_comm(n); }
TensorView view(Bytes& buf, DataType dtype, Shape shape, std::size_t rank) {
  return TensorView{buf.empty() ? nullptr : buf.data(), dtype, std::move(shape),
                    tested_backend().device(rank), nullptr};
}
TensorView view1(Bytes& buf, DataType dtype, std::size_t rank) {
  return view(buf, dtype, Shape{buf.size() / dtype_size(dtype)}, rank);
}
void check_result(Failures& f, std::size_t rank, const std::string& what, const Tensor& t,
                  DataType dtype, const Shape& shape, const Bytes& expected) {
  tested_backend().check_tensor(f, rank, what, t, dtype, shape, expected);
}

// Every collective once, under `opts`, with results checked. Rows of `width`.
void every_collective(Communicator& comm, std::size_t rank, CallOptions opts, std::size_t rows,
                      std::size_t width, std::uint64_t salt, Failures& f, const std::string& label) {
  const std::size_t world = comm.world_size();
  const DataType dt = DataType::kF32;
  const std::size_t esz = 4;
  const Shape shape = width == 1 ? Shape{rows} : Shape{rows, width};
  const std::size_t count = rows * width;
  const std::string what = label + " rows " + std::to_string(rows) + " width " + std::to_string(width);

  Bytes in = reduce_input_buffer(dt, ReduceOp::kSum, rank, count, salt);
  const Bytes sum = expected_reduction(dt, ReduceOp::kSum, world, count, salt);
  const TensorView iv = view(in, dt, shape, rank);

  auto ar = comm.all_reduce(rank, iv, ReduceOp::kSum, opts);
  if (ar.is_ok()) check_result(f, rank, what + " all_reduce", *ar, dt, shape, sum);
  else f.add(rank, what + " all_reduce: " + describe(ar.status()));

  const std::size_t root = (salt + 1) % world;
  auto rd = comm.reduce(rank, iv, ReduceOp::kSum, root, opts);
  if (!rd.is_ok()) f.add(rank, what + " reduce: " + describe(rd.status()));
  else if (rank == root && rd->has_value())
    check_result(f, rank, what + " reduce", **rd, dt, shape, sum);
  else RANK_CHECK(f, rank, rd->has_value() == (rank == root), what << " reduce: root/non-root result");

  const Bytes root_data = move_input_buffer(dt, root, count, salt);
  Bytes bin = rank == root ? root_data : Bytes{};
  const TensorView bv = view(bin, dt, shape, rank);
  auto bc = comm.broadcast(rank, rank == root ? &bv : nullptr, opts);
  if (bc.is_ok()) check_result(f, rank, what + " broadcast", *bc, dt, shape, root_data);
  else f.add(rank, what + " broadcast: " + describe(bc.status()));

  Bytes gin = move_input_buffer(dt, rank, count, salt);
  Bytes gathered;
  for (std::size_t r = 0; r < world; ++r) {
    Bytes p = move_input_buffer(dt, r, count, salt);
    gathered.insert(gathered.end(), p.begin(), p.end());
  }
  Shape gshape = shape;
  gshape[0] *= world;
  auto ag = comm.all_gather(rank, view(gin, dt, shape, rank), opts);
  if (ag.is_ok()) check_result(f, rank, what + " all_gather", *ag, dt, gshape, gathered);
  else f.add(rank, what + " all_gather: " + describe(ag.status()));

  const std::size_t base = rows / world, extra = rows % world;
  const std::size_t my_rows = base + (rank < extra ? 1 : 0);
  const std::size_t first = rank * base + std::min(rank, extra);
  Shape sshape = shape;
  sshape[0] = my_rows;
  const Bytes shard(sum.begin() + first * width * esz, sum.begin() + (first + my_rows) * width * esz);
  auto rs = comm.reduce_scatter(rank, iv, ReduceOp::kSum, opts);
  if (rs.is_ok()) check_result(f, rank, what + " reduce_scatter", *rs, dt, sshape, shard);
  else f.add(rank, what + " reduce_scatter: " + describe(rs.status()));

  // all_to_all_v: rank s sends (s + d) % 3 rows to rank d.
  std::vector<std::size_t> counts(world);
  std::size_t send_rows = 0;
  for (std::size_t d = 0; d < world; ++d) send_rows += counts[d] = (rank + d) % 3;
  Bytes ain = move_input_buffer(dt, rank, send_rows * width, salt);
  auto aa = comm.all_to_all_v(rank, view(ain, dt, width == 1 ? Shape{send_rows} : Shape{send_rows, width}, rank),
                              counts, opts);
  if (!aa.is_ok()) {
    f.add(rank, what + " all_to_all_v: " + describe(aa.status()));
    return;
  }
  Bytes want;
  for (std::size_t s = 0; s < world; ++s) {
    std::size_t total = 0, before = 0;
    for (std::size_t d = 0; d < world; ++d) {
      if (d < rank) before += (s + d) % 3;
      total += (s + d) % 3;
    }
    Bytes src = move_input_buffer(dt, s, total * width, salt);
    want.insert(want.end(), src.begin() + before * width * esz,
                src.begin() + (before + (s + rank) % 3) * width * esz);
  }
  check_bytes(f, rank, what + " all_to_all_v", dt, aa->data.data(), want);
}

TEST_P(Budget, OneElementAndOneRowBudgetsGiveExactResults) {
  const std::size_t world = GetParam();
  auto comm = make_comm(world);
  Failures f;
  run_local_ranks(*comm, f, [&](std::size_t rank) {
    std::uint64_t salt = 0;
    for (std::size_t rows : {0u, 1u, 10u, 37u}) {
      // Exactly one f32 element; just under two elements (still one).
      every_collective(*comm, rank, CallOptions{4}, rows, 1, ++salt, f, "budget 4");
      every_collective(*comm, rank, CallOptions{7}, rows, 1, ++salt, f, "budget 7");
      // Exactly one row of 3 f32, and a bit more than one row.
      every_collective(*comm, rank, CallOptions{12}, rows, 3, ++salt, f, "budget 12");
      every_collective(*comm, rank, CallOptions{20}, rows, 3, ++salt, f, "budget 20");
      every_collective(*comm, rank, CallOptions{}, rows, 3, ++salt, f, "default budget");
    }
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST_P(Budget, ConfigBudgetAppliesToEveryCall) {
  const std::size_t world = GetParam();
  auto comm = make_comm(world, test_config(world).with_max_chunk_bytes(12).with_segment_bytes(8));
  Failures f;
  run_local_ranks(*comm, f, [&](std::size_t rank) {
    every_collective(*comm, rank, CallOptions{}, 23, 3, 5, f, "config budget 12");
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// The expected error: kBudgetTooSmall on every rank, naming budget and row size.
void expect_too_small(Failures& f, std::size_t rank, const std::string& what, const Status& s,
                      const std::string& budget, const std::string& row_bytes) {
  RANK_CHECK(f, rank, s.code() == ErrorCode::kBudgetTooSmall, what << ": " << describe(s));
  RANK_CHECK(f, rank, contains(s.message(), budget), what << ": budget not named: " << describe(s));
  RANK_CHECK(f, rank, contains(s.message(), row_bytes), what << ": row size not named: " << describe(s));
}

TEST_P(Budget, BelowOneElementOrRowIsBudgetTooSmallEverywhere) {
  const std::size_t world = GetParam();
  auto comm = make_comm(world);
  Failures f;
  run_local_ranks(*comm, f, [&](std::size_t rank) {
    // f64 elements are 8 bytes; budget 5.
    Bytes in = reduce_input_buffer(DataType::kF64, ReduceOp::kSum, rank, 6);
    const TensorView iv = view1(in, DataType::kF64, rank);
    const CallOptions five{5};
    expect_too_small(f, rank, "all_reduce", comm->all_reduce(rank, iv, ReduceOp::kSum, five).status(), "5", "8");
    expect_too_small(f, rank, "reduce", comm->reduce(rank, iv, ReduceOp::kMax, 0, five).status(), "5", "8");
    const TensorView* bin = rank == world - 1 ? &iv : nullptr;
    expect_too_small(f, rank, "broadcast", comm->broadcast(rank, bin, five).status(), "5", "8");
    // Row-split tensors: rows of 3 x f32 = 12 bytes; budget 11 holds elements but no row.
    Bytes rin = reduce_input_buffer(DataType::kF32, ReduceOp::kSum, rank, 3 * world);
    const TensorView rv = view(rin, DataType::kF32, {world, 3}, rank);
    const CallOptions eleven{11};
    expect_too_small(f, rank, "reduce_scatter",
                     comm->reduce_scatter(rank, rv, ReduceOp::kSum, eleven).status(), "11", "12");
    std::vector<std::size_t> ones(world, 1);
    expect_too_small(f, rank, "all_to_all_v", comm->all_to_all_v(rank, rv, ones, eleven).status(),
                     "11", "12");
    // The group still works with an adequate budget.
    auto ok = comm->all_reduce(rank, iv, ReduceOp::kSum, CallOptions{8});
    if (ok.is_ok()) {
      check_result(f, rank, "all_reduce after errors", *ok, DataType::kF64, {6},
                   expected_reduction(DataType::kF64, ReduceOp::kSum, world, 6));
    } else {
      f.add(rank, "all_reduce after errors: " + describe(ok.status()));
    }
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST_P(Budget, BoundedCommunicatorAppliesItsBudget) {
  const std::size_t world = GetParam();
  auto comm = make_comm(world);
  BoundedCommunicator one_elem(comm, 2);  // exactly one f16 element
  BoundedCommunicator too_small(comm, 1);
  EXPECT_EQ(one_elem.max_chunk_bytes(), 2u);
  EXPECT_EQ(one_elem.world_size(), world);
  EXPECT_EQ(one_elem.inner(), comm);
  Failures f;
  run_local_ranks(*comm, f, [&](std::size_t rank) {
    const std::size_t count = 41;
    Bytes in = reduce_input_buffer(DataType::kF16, ReduceOp::kMean, rank, count, 3);
    const TensorView iv = view1(in, DataType::kF16, rank);
    auto r = one_elem.all_reduce(rank, iv, ReduceOp::kMean);
    if (r.is_ok()) {
      check_result(f, rank, "bounded all_reduce", *r, DataType::kF16, {count},
                   expected_reduction(DataType::kF16, ReduceOp::kMean, world, count, 3));
    } else {
      f.add(rank, "bounded all_reduce: " + describe(r.status()));
    }
    auto g = one_elem.all_gather(rank, iv);
    RANK_CHECK(f, rank, g.is_ok() && g->count() == count * world, "bounded all_gather: " << describe(g.status()));
    auto rs = one_elem.reduce_scatter(rank, iv, ReduceOp::kSum);
    RANK_CHECK(f, rank, rs.is_ok(), "bounded reduce_scatter: " << describe(rs.status()));
    auto rd = one_elem.reduce(rank, iv, ReduceOp::kMin, 0);
    RANK_CHECK(f, rank, rd.is_ok() && rd->has_value() == (rank == 0), "bounded reduce: " << describe(rd.status()));
    const TensorView* bin = rank == 0 ? &iv : nullptr;
    auto bc = one_elem.broadcast(rank, bin);
    RANK_CHECK(f, rank, bc.is_ok() && bc->count() == count, "bounded broadcast: " << describe(bc.status()));
    std::vector<std::size_t> counts(world, 0);
    counts[0] = count;
    auto aa = one_elem.all_to_all_v(rank, iv, counts);
    RANK_CHECK(f, rank, aa.is_ok(), "bounded all_to_all_v: " << describe(aa.status()));

    expect_too_small(f, rank, "bounded(1) all_reduce",
                     too_small.all_reduce(rank, iv, ReduceOp::kSum).status(), "1", "2");
    expect_too_small(f, rank, "bounded(1) all_gather", too_small.all_gather(rank, iv).status(), "1", "2");
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// Empty tensors carry no message: any budget works.
TEST_P(Budget, EmptyTensorsNeedNoBudget) {
  const std::size_t world = GetParam();
  auto comm = make_comm(world);
  Failures f;
  run_local_ranks(*comm, f, [&](std::size_t rank) {
    Bytes none;
    const TensorView iv = view(none, DataType::kF64, {0}, rank);
    auto r = comm->all_reduce(rank, iv, ReduceOp::kSum, CallOptions{1});
    RANK_CHECK(f, rank, r.is_ok() && r->count() == 0, describe(r.status()));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// last_staging in-process: a rank reads its peers' memory directly, so a
// bounded call stages nothing (peak 0) and reports the budget it ran under;
// the into forms of BoundedCommunicator give the same results as the value forms.
TEST_P(Budget, InProcessStagesNothing) {
  if (!tested_factory().in_process())
    GTEST_SKIP() << "staging across processes: world_staging_test";
  const std::size_t world = GetParam();
  auto comm = make_comm(world);
  BoundedCommunicator bounded(comm, 64);  // 16 f32: every range is cut many times
  Failures f;
  run_local_ranks(*comm, f, [&](std::size_t rank) {
    auto none = bounded.last_staging(rank);
    RANK_CHECK(f, rank, !none.is_ok() && none.status().code() == ErrorCode::kInvalidArgument,
               "last_staging before any call: " << describe(none.status()));
    auto expect = [&](const char* what, std::uint64_t seq, std::size_t budget) {
      auto st = comm->last_staging(rank);
      RANK_CHECK(f, rank, st.is_ok() && st->sequence == seq && st->peak_bytes == 0 &&
                              st->budget_bytes == budget,
                 what << ": " << (st.is_ok() ? "seq " + std::to_string(st->sequence) + " peak " +
                                                   std::to_string(st->peak_bytes) + " budget " +
                                                   std::to_string(st->budget_bytes)
                                             : describe(st.status())));
    };
    const std::size_t count = 1000;
    Bytes in = reduce_input_buffer(DataType::kF32, ReduceOp::kSum, rank, count, 9);
    Bytes out(count * 4);
    Status s = bounded.all_reduce_into(rank, view1(in, DataType::kF32, rank),
                                       view1(out, DataType::kF32, rank), ReduceOp::kSum);
    RANK_CHECK(f, rank, s.is_ok(), "bounded all_reduce_into: " << describe(s));
    check_bytes(f, rank, "bounded all_reduce_into", DataType::kF32, out.data(),
                expected_reduction(DataType::kF32, ReduceOp::kSum, world, count, 9));
    expect("bounded all_reduce", 0, 64);

    std::vector<std::size_t> counts(world, 100), recv_counts;
    Bytes a2a_in = move_input_buffer(DataType::kF32, rank, 100 * world, 2);
    Bytes a2a_out(100 * world * 4);
    s = bounded.all_to_all_v_into(rank, view1(a2a_in, DataType::kF32, rank), counts,
                                  view1(a2a_out, DataType::kF32, rank), recv_counts);
    RANK_CHECK(f, rank, s.is_ok() && recv_counts == counts, "bounded all_to_all_v_into: " << describe(s));
    Bytes want;
    for (std::size_t src = 0; src < world; ++src) {
      Bytes theirs = move_input_buffer(DataType::kF32, src, 100 * world, 2);
      want.insert(want.end(), theirs.begin() + rank * 400, theirs.begin() + (rank + 1) * 400);
    }
    check_bytes(f, rank, "bounded all_to_all_v_into", DataType::kF32, a2a_out.data(), want);
    expect("bounded all_to_all_v", 1, 64);

    auto plain = comm->all_reduce(rank, view1(in, DataType::kF32, rank), ReduceOp::kMax);
    RANK_CHECK(f, rank, plain.is_ok(), "all_reduce: " << describe(plain.status()));
    expect("all_reduce with the config's budget", 2, comm->config().max_chunk_bytes());
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

INSTANTIATE_TEST_SUITE_P(Worlds, Budget, RUCCL_TEST_WORLDS(1, 3, 4),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

}  // namespace
}  // namespace ruccl::test
