// ruccl_mpi_world_matrix: the shared collective bodies of tests/inproc
// (all_reduce, collectives, all_to_all_v, budget) over a world communicator,
// under mpirun (the main is bootstrap_main.cpp: MPI once, each test body on
// every process, each process driving its local ranks as threads).
//
//   mpirun -np P ruccl_mpi_world_matrix [--devices-per-process D]
//          [--strategy hierarchical|flat_ring] [gtest flags]
//
// Every test makes its own world communicator of P x D ranks (processes pass
// host devices 0..D-1; rank r's device is host_device(r % D)); tests written
// for a fixed world other than P x D skip. Plus, here only: the two global
// strategies side by side, alternately and concurrently.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap_world.hpp"
#include "comm_factory.hpp"
#include "world_factory.hpp"

namespace ruccl::test {
namespace {
struct Chosen {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<CommFactory> factory;
};
Chosen& chosen() {
  static Chosen c;
  return c;
}
std::size_t per_process = 1;
}  // namespace

const Backend& tested_backend() { return *chosen().backend; }
const CommFactory& tested_factory() { return *chosen().factory; }

namespace {

// The two strategies at once over the same devices: alternately from the same
// threads, then concurrently (messages of the two communicators must not mix).
TEST(WorldStrategies, SideBySideAlternatelyAndConcurrently) {
  const std::size_t world = tested_factory().worlds({}).front();
  auto hier = world_factory(GlobalStrategy::kHierarchical, per_process, world)->make_comm(world);
  auto flat = world_factory(GlobalStrategy::kFlatRing, per_process, world)->make_comm(world);
  ASSERT_EQ(hier->first_rank(), flat->first_rank());
  Communicator* comms[] = {hier.get(), flat.get()};
  Failures f;
  // x = 7 r + i over i32: the sum is 7 w(w-1)/2 + w i.
  auto sum_case = [&](Communicator& c, std::size_t rank, std::int32_t i, const char* what) {
    std::int32_t x = static_cast<std::int32_t>(7 * rank) + i, y = -1;
    const DeviceId dev = tested_backend().device(rank);
    Status s = c.all_reduce_into(rank, TensorView::of(&x, DataType::kI32, 1, dev),
                                 TensorView::of(&y, DataType::kI32, 1, dev), ReduceOp::kSum);
    const auto w = static_cast<std::int32_t>(world);
    RANK_CHECK(f, rank, s.is_ok() && y == 7 * w * (w - 1) / 2 + w * i,
               what << " " << i << ": " << describe(s) << " got " << y);
  };
  run_local_ranks(*hier, f, [&](std::size_t rank) {
    for (std::int32_t i = 0; i < 20; ++i) sum_case(*comms[i % 2], rank, i, "alternating");
  });
  std::thread other([&] {
    run_local_ranks(*flat, f, [&](std::size_t rank) {
      for (std::int32_t i = 0; i < 20; ++i) sum_case(*flat, rank, i, "concurrent flat_ring");
    });
  });
  run_local_ranks(*hier, f, [&](std::size_t rank) {
    for (std::int32_t i = 0; i < 20; ++i) sum_case(*hier, rank, i, "concurrent hierarchical");
  });
  other.join();
  EXPECT_TRUE(f.empty()) << f.report();
}

// The lean path's direct form (Config::lean_direct_bytes): inputs that go
// as addresses, read by every other rank straight from the owner's memory.
// Every collective the lean path runs, at sizes on both sides of the
// threshold, in place and not; each rank overwrites its input as soon as the
// call returned, so a reader still at it after the owner's return (or a
// wrong offset) shows in its result. Processes differ in their threshold
// in the second round (a reader takes either form).
TEST(WorldLeanDirect, EveryCollectiveReadsInputsInPlaceAndLeavesThemAtReturn) {
  const std::size_t world = tested_factory().worlds({}).front();
  const char* env_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const std::size_t process = env_rank ? std::strtoul(env_rank, nullptr, 10) : 0;
  for (const std::size_t threshold : {std::size_t{1}, process % 2 == 0 ? std::size_t{0} : 1}) {
    auto comm =
        tested_factory().make_comm(world, test_config(world).with_lean_direct_bytes(threshold));
    Failures f;
    run_local_ranks(*comm, f, [&](std::size_t rank) {
      const DeviceId dev = tested_backend().device(rank);
      const auto w = static_cast<float>(world);
      // (20011 f32: past the 64 KiB slot, a broadcast's and all-gather's
      // direct form only; 300007 f32, 1.2 MB: the direct all-reduce of two
      // ranks without AVX-512, several of its 256 KiB pieces.)
      for (const std::size_t n : {std::size_t{1}, std::size_t{1025}, std::size_t{4099},
                                  std::size_t{20011}, std::size_t{300007}}) {
        const auto value = [&](std::size_t r, std::size_t i) {
          return static_cast<float>(r * 1000 + i % 97);
        };
        std::vector<float> in(n), out(n * world);
        const auto fill = [&] {
          for (std::size_t i = 0; i < n; ++i) in[i] = value(rank, i);
        };
        const auto spoil = [&](std::vector<float>& v) { std::fill(v.begin(), v.end(), -7.0f); };
        for (int round = 0; round < 3; ++round) {
          // all-reduce, out of place then in place
          for (const bool in_place : {false, true}) {
            fill();
            std::vector<float>& dst = in_place ? in : out;
            Status s =
                comm->all_reduce_into(rank, TensorView::of(in.data(), DataType::kF32, n, dev),
                                      TensorView::of(dst.data(), DataType::kF32, n, dev),
                                      ReduceOp::kSum);
            std::vector<float> got(dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(n));
            // (Its output too: the direct all-reduce's peers read its shard there.)
            spoil(in);
            spoil(out);
            bool ok = s.is_ok();
            for (std::size_t i = 0; i < n && ok; ++i)
              ok = got[i] == 1000.0f * w * (w - 1) / 2 + w * static_cast<float>(i % 97);
            RANK_CHECK(f, rank, ok,
                       "all_reduce n=" << n << " in_place=" << in_place << ": " << describe(s));
          }
          // reduce to the last rank
          fill();
          spoil(out);
          Status s = comm->reduce_into(rank, TensorView::of(in.data(), DataType::kF32, n, dev),
                                       TensorView::of(out.data(), DataType::kF32, n, dev),
                                       ReduceOp::kSum, world - 1);
          spoil(in);
          bool ok = s.is_ok();
          for (std::size_t i = 0; i < n && ok && rank == world - 1; ++i)
            ok = out[i] == 1000.0f * w * (w - 1) / 2 + w * static_cast<float>(i % 97);
          RANK_CHECK(f, rank, ok, "reduce n=" << n << ": " << describe(s));
          // broadcast from rank 1 % world, the root in place
          const std::size_t root = 1 % world;
          fill();
          spoil(out);
          std::vector<float>& bdst = rank == root ? in : out;
          const TensorView bin = TensorView::of(in.data(), DataType::kF32, n, dev);
          s = comm->broadcast_into(rank, rank == root ? &bin : nullptr,
                                   TensorView::of(bdst.data(), DataType::kF32, n, dev));
          std::vector<float> bgot(bdst.begin(), bdst.begin() + static_cast<std::ptrdiff_t>(n));
          spoil(in);
          ok = s.is_ok();
          for (std::size_t i = 0; i < n && ok; ++i) ok = bgot[i] == value(root, i);
          RANK_CHECK(f, rank, ok, "broadcast n=" << n << ": " << describe(s));
          // all-gather, out of place then in place (the input is this rank's block)
          for (const bool in_place : {false, true}) {
            spoil(out);
            float* src = in_place ? out.data() + rank * n : in.data();
            for (std::size_t i = 0; i < n; ++i) src[i] = value(rank, i);
            s = comm->all_gather_into(rank, TensorView::of(src, DataType::kF32, n, dev),
                                      TensorView::of(out.data(), DataType::kF32, n * world, dev));
            std::vector<float> got = out;
            if (!in_place) spoil(in);
            ok = s.is_ok();
            for (std::size_t r = 0; r < world && ok; ++r)
              for (std::size_t i = 0; i < n && ok; ++i) ok = got[r * n + i] == value(r, i);
            RANK_CHECK(f, rank, ok,
                       "all_gather n=" << n << " in_place=" << in_place << ": " << describe(s));
          }
          // The value forms (no caller's buffer: the readers read into their
          // scratch, then the new tensor), broadcast and all-gather.
          fill();
          const TensorView vin = TensorView::of(in.data(), DataType::kF32, n, dev);
          auto bval = comm->broadcast(rank, rank == root ? &vin : nullptr);
          auto gval = comm->all_gather(rank, vin);
          spoil(in);
          ok = bval.is_ok() && bval.value().count() == n;
          for (std::size_t i = 0; i < n && ok; ++i)
            ok = bval.value().as<float>()[i] == value(root, i);
          RANK_CHECK(f, rank, ok, "broadcast (value) n=" << n << ": " << describe(bval.status()));
          ok = gval.is_ok() && gval.value().count() == n * world;
          for (std::size_t r = 0; r < world && ok; ++r)
            for (std::size_t i = 0; i < n && ok; ++i)
              ok = gval.value().as<float>()[r * n + i] == value(r, i);
          RANK_CHECK(f, rank, ok, "all_gather (value) n=" << n << ": " << describe(gval.status()));
        }
      }
      // all-to-all-v: rank s sends base + 7 d + 3 s elements to rank d (its
      // element j is s * 100000 + j); each reader takes its block at its offset.
      // base 9000: past the 64 KiB slot (only the direct form takes it lean).
      for (const std::size_t base : {std::size_t{600}, std::size_t{9000}}) {
        const auto sent = [base](std::size_t src, std::size_t dst) {
          return base + 7 * dst + 3 * src;
        };
        std::vector<std::size_t> counts(world), recv;
        std::size_t total = 0, incoming = 0;
        for (std::size_t d = 0; d < world; ++d) total += counts[d] = sent(rank, d);
        for (std::size_t src = 0; src < world; ++src) incoming += sent(src, rank);
        std::vector<float> a_in(total), a_out(incoming);
        for (int round = 0; round < 3; ++round) {
          for (std::size_t j = 0; j < total; ++j) a_in[j] = static_cast<float>(rank * 100000 + j);
          std::fill(a_out.begin(), a_out.end(), -7.0f);
          Status s =
              comm->all_to_all_v_into(rank, TensorView::of(a_in.data(), DataType::kF32, total, dev),
                                      counts,
                                      TensorView::of(a_out.data(), DataType::kF32, incoming, dev),
                                      recv);
          std::fill(a_in.begin(), a_in.end(), -7.0f);
          bool ok = s.is_ok() && recv.size() == world;
          std::size_t at = 0;
          for (std::size_t src = 0; src < world && ok; ++src) {
            std::size_t before = 0;
            for (std::size_t d = 0; d < rank; ++d) before += sent(src, d);
            ok = recv[src] == sent(src, rank);
            for (std::size_t t = 0; t < sent(src, rank) && ok; ++t)
              ok = a_out[at + t] == static_cast<float>(src * 100000 + before + t);
            at += sent(src, rank);
          }
          RANK_CHECK(f, rank, ok, "all_to_all_v base " << base << ": " << describe(s));
          // The value form, the same rows.
          for (std::size_t j = 0; j < total; ++j) a_in[j] = static_cast<float>(rank * 100000 + j);
          auto val =
              comm->all_to_all_v(rank, TensorView::of(a_in.data(), DataType::kF32, total, dev),
                                 counts);
          std::fill(a_in.begin(), a_in.end(), -7.0f);
          ok = val.is_ok() && val.value().recv_counts.size() == world &&
               val.value().data.count() == incoming;
          at = 0;
          for (std::size_t src = 0; src < world && ok; ++src) {
            std::size_t before = 0;
            for (std::size_t d = 0; d < rank; ++d) before += sent(src, d);
            ok = val.value().recv_counts[src] == sent(src, rank);
            for (std::size_t t = 0; t < sent(src, rank) && ok; ++t)
              ok = val.value().data.as<float>()[at + t] ==
                   static_cast<float>(src * 100000 + before + t);
            at += sent(src, rank);
          }
          RANK_CHECK(f, rank, ok,
                     "all_to_all_v (value) base " << base << ": " << describe(val.status()));
        }
      }
    });
    EXPECT_TRUE(f.empty()) << "threshold " << threshold << ": " << f.report();
  }
}

// A broadcast in the lean path's direct form: a root in place writes the
// end of each receiver's output that the receiver passed (its share) while
// the receiver reads the rest from the root's memory; a root out of place
// writes none. Roots first and last, in place and not, receivers into their
// output or the value form (every third), odd byte counts past the slot up
// to the direct form's 2 MiB. A receiver spoils its output as soon as its
// call returned and finds it still spoiled after a barrier: the root wrote
// nothing into it after its return. Before each call a receiver drops the
// pages of its output's last world's share (MADV_DONTNEED), which the root's
// write must fault in, while its own read lands in pages it touched: a
// receiver that returned without waiting for the root would find that
// share unwritten (mutation-checked: it does at np=2-4).
TEST(WorldLeanDirect, BroadcastRootFillsItsShareOfEachReceiverBeforeItReturns) {
  const std::size_t world = tested_factory().worlds({}).front();
  auto comm = tested_factory().make_comm(world, test_config(world).with_lean_direct_bytes(1));
  Failures f;
  run_local_ranks(*comm, f, [&](std::size_t rank) {
    const DeviceId dev = tested_backend().device(rank);
    const auto value = [](std::size_t root, std::size_t i) {
      return static_cast<std::uint8_t>((root * 31 + i * 7 + i / 4099) & 0xff);
    };
    for (const std::size_t n : {std::size_t{65537}, std::size_t{300001}, std::size_t{2097151}}) {
      constexpr std::size_t kPage = 4096;
      std::vector<std::uint8_t> store(n + kPage), out(n);
      const auto aligned =
          (reinterpret_cast<std::uintptr_t>(store.data()) + kPage - 1) / kPage * kPage;
      const std::span<std::uint8_t> buf(
          store.data() + (aligned - reinterpret_cast<std::uintptr_t>(store.data())), n);
      // (The share's first whole page on.)
      const std::size_t dropped = (n - n / world + kPage - 1) / kPage * kPage;
      for (const std::size_t root : {std::size_t{0}, world - 1}) {
        for (const bool root_in_place : {true, false}) {
          const bool me_root = rank == root;
          const bool value_form = !me_root && rank % 3 == 2;
          std::fill(out.begin(), out.end(), std::uint8_t{0x5a});
          if (me_root)
            for (std::size_t i = 0; i < n; ++i) buf[i] = value(root, i);
          else std::fill(buf.begin(), buf.end(), std::uint8_t{0xa5});
          if (!me_root && !value_form && dropped < n)
            ::madvise(buf.data() + dropped, (n - dropped) / kPage * kPage, MADV_DONTNEED);
          const TensorView in = TensorView::of(buf.data(), DataType::kU8, n, dev);
          const TensorView into =
              TensorView::of((me_root && root_in_place) || !me_root ? buf.data() : out.data(),
                             DataType::kU8, n, dev);
          std::vector<std::uint8_t> got;
          Status s;
          if (value_form) {
            auto t = comm->broadcast(rank, nullptr);
            s = t.status();
            if (t.is_ok() && t.value().count() == n) {
              const auto v = t.value().as<std::uint8_t>();
              got.assign(v.begin(), v.end());
            }
          } else {
            s = comm->broadcast_into(rank, me_root ? &in : nullptr, into);
            const auto* at = static_cast<const std::uint8_t*>(into.data);
            // (The root's share ends there: read first.)
            const std::uint8_t last = n > 0 ? at[n - 1] : 0;
            got.assign(at, at + n);
            if (n > 0) got[n - 1] = last;
            if (!me_root) std::fill(buf.begin(), buf.end(), std::uint8_t{0xa5});
          }
          bool ok = s.is_ok() && got.size() == n;
          std::size_t bad = 0;
          for (std::size_t i = 0; i < n && ok; ++i)
            if (got[i] != value(root, i)) ok = false, bad = i;
          RANK_CHECK(f, rank, ok,
                     "broadcast n=" << n << " root " << root << " root_in_place=" << root_in_place
                                    << (value_form ? " (value form)" : "") << ": " << describe(s)
                                    << " first wrong byte " << bad);
          const Status b = comm->barrier(rank);
          RANK_CHECK(f, rank, b.is_ok(), "barrier: " << describe(b));
          bool kept = true;
          for (std::size_t i = 0; i < n && kept && !me_root && !value_form; ++i)
            kept = buf[i] == 0xa5;
          RANK_CHECK(f, rank, kept,
                     "broadcast n=" << n << " root " << root
                                    << ": the receiver's output changed after its call returned");
        }
      }
    }
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// Each local rank of a fresh world communicator of the tested size runs
// `body` (its rank, the world, its device; w and r as i32); the test fails
// with what the ranks reported.
struct RankCase {
  std::size_t rank, world;
  DeviceId dev;
  std::int32_t w, r;
};
template <typename Body>
void on_each_rank(Body&& body) {
  const std::size_t world = tested_factory().worlds({}).front();
  auto comm = tested_factory().make_comm(world, test_config(world));
  Failures f;
  run_local_ranks(*comm, f, [&](std::size_t rank) {
    body(comm.get(), f,
         RankCase{rank, world, tested_backend().device(rank), static_cast<std::int32_t>(world),
                  static_cast<std::int32_t>(rank)});
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// Each call of a rank starts from its own arguments only: kinds, forms
// (value and into), roles (a broadcast's sender then receiver), shapes and
// counts change from call to call, and nothing of the one before (its output
// buffer, root, send counts, shape) carries over, also where only a root or a
// shape differs from the call before, the sizes the same.
TEST(WorldRequests, EachCallStartsFromItsOwnArgumentsOnly) {
  on_each_rank([](Communicator* comm, Failures& f, const RankCase& c) {
    const std::size_t rank = c.rank, world = c.world;
    const DeviceId dev = c.dev;
    const std::int32_t w = c.w, r = c.r;
    const std::int32_t rank_sum = w * (w - 1) / 2;
    const auto i32 = [&](std::int32_t* p, Shape shape) {
      return TensorView{p, DataType::kI32, std::move(shape), dev, nullptr};
    };
    for (int round = 0; round < 3; ++round) {
      // 1. reduce into a caller's buffer, to the last rank
      std::vector<std::int32_t> in(6), kept(6, -7);
      for (std::size_t i = 0; i < in.size(); ++i) in[i] = r + static_cast<std::int32_t>(i);
      Status s = comm->reduce_into(rank, i32(in.data(), {5}), i32(kept.data(), {5}), ReduceOp::kSum,
                                   world - 1);
      RANK_CHECK(f, rank, s.is_ok() && (rank != world - 1 || kept[4] == rank_sum + 4 * w),
                 "reduce_into: " << describe(s) << " got " << kept[4]);
      const std::vector<std::int32_t> before = kept;
      // 2. an all-reduce's value form: a new tensor, the last buffer untouched
      auto t = comm->all_reduce(rank, i32(in.data(), {3}), ReduceOp::kMax);
      RANK_CHECK(f, rank,
                 t.is_ok() && t->shape() == Shape{3} && t->as<std::int32_t>()[2] == w - 1 + 2,
                 "all_reduce value: " << describe(t.status()));
      RANK_CHECK(f, rank, kept == before, "the value form wrote the last call's output");
      // 3. into a 2-D buffer
      std::vector<std::int32_t> grid(6, -7);
      s = comm->all_reduce_into(rank, i32(in.data(), {2, 3}), i32(grid.data(), {2, 3}),
                                ReduceOp::kSum);
      RANK_CHECK(f, rank, s.is_ok() && grid[5] == rank_sum + 5 * w,
                 "all_reduce_into 2x3: " << describe(s) << " got " << grid[5]);
      // 4. broadcast, value form, from rank 0; then into, from the last rank
      std::vector<std::int32_t> b(4);
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = 100 * r + static_cast<std::int32_t>(i);
      const TensorView bin = i32(b.data(), {2, 2});
      auto bt = comm->broadcast(rank, rank == 0 ? &bin : nullptr);
      RANK_CHECK(f, rank,
                 bt.is_ok() && bt->shape() == (Shape{2, 2}) && bt->as<std::int32_t>()[3] == 3,
                 "broadcast value from 0: " << describe(bt.status()));
      std::vector<std::int32_t> bout(4, -7);
      const TensorView bin4 = i32(b.data(), {4});
      s = comm->broadcast_into(rank, rank == world - 1 ? &bin4 : nullptr, i32(bout.data(), {4}));
      RANK_CHECK(f, rank, s.is_ok() && bout[3] == 100 * (w - 1) + 3,
                 "broadcast_into from the last rank: " << describe(s) << " got " << bout[3]);
      // 5. all-to-all-v (one row to every rank), then an all-gather's value form
      std::vector<std::int32_t> a(world), aout(world, -7);
      for (std::size_t d = 0; d < world; ++d) a[d] = 10 * r + static_cast<std::int32_t>(d);
      std::vector<std::size_t> counts(world, 1), recv;
      s = comm->all_to_all_v_into(rank, i32(a.data(), {world}), counts, i32(aout.data(), {world}),
                                  recv);
      RANK_CHECK(f, rank, s.is_ok() && aout[world - 1] == 10 * (w - 1) + r,
                 "all_to_all_v_into: " << describe(s));
      std::int32_t one = r;
      auto g = comm->all_gather(rank, i32(&one, {1}));
      RANK_CHECK(f, rank,
                 g.is_ok() && g->shape() == Shape{world} &&
                     g->as<std::int32_t>()[world - 1] == w - 1,
                 "all_gather value: " << describe(g.status()));
      // 6. a reduce-scatter's value form: each rank its row of the sum
      std::vector<std::int32_t> rows(world * 2);
      for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = r + static_cast<std::int32_t>(i);
      auto rs = comm->reduce_scatter(rank, i32(rows.data(), {world, 2}), ReduceOp::kSum);
      RANK_CHECK(f, rank,
                 rs.is_ok() && rs->shape() == (Shape{1, 2}) &&
                     rs->as<std::int32_t>()[1] == rank_sum + w * (2 * r + 1),
                 "reduce_scatter value: " << describe(rs.status()));
      // The same collective again with the same sizes but another root or
      // shape (the lean path keeps the plan of slots it saw before: only the
      // very same slots may take it) gets its own outcome.
      std::vector<std::int32_t> four(4);
      for (std::size_t i = 0; i < four.size(); ++i) four[i] = r + static_cast<std::int32_t>(i);
      // 7. reduce_into to rank 0, then to the last rank: only the root gets the sum
      for (const std::size_t root : {std::size_t{0}, world - 1, std::size_t{0}}) {
        std::vector<std::int32_t> out(4, -7);
        const Status sent = comm->reduce_into(rank, i32(four.data(), {4}), i32(out.data(), {4}),
                                              ReduceOp::kSum, root);
        const bool ok = rank == root ? out[3] == rank_sum + 3 * w : out[3] == -7;
        RANK_CHECK(f, rank, sent.is_ok() && ok,
                   "reduce_into to root " << root << ": " << describe(sent) << " got " << out[3]);
      }
      // 8. an all-reduce's value form of 4 elements as {4}, then {2, 2}, then {4}
      for (const Shape& shape : {Shape{4}, Shape{2, 2}, Shape{4}}) {
        auto t = comm->all_reduce(rank, i32(four.data(), shape), ReduceOp::kSum);
        RANK_CHECK(f, rank,
                   t.is_ok() && t->shape() == shape && t->as<std::int32_t>()[3] == rank_sum + 3 * w,
                   "all_reduce value of shape " << shape.size() << "-d: " << describe(t.status()));
      }
      // 9. a reduce-scatter's value form of 2 * world elements, 1-d then 2-d
      for (const Shape& shape : {Shape{world * 2}, Shape{world, 2}}) {
        auto part = comm->reduce_scatter(rank, i32(rows.data(), shape), ReduceOp::kSum);
        const Shape want = shape.size() == 1 ? Shape{2} : Shape{1, 2};
        RANK_CHECK(f, rank,
                   part.is_ok() && part->shape() == want &&
                       part->as<std::int32_t>()[1] == rank_sum + w * (2 * r + 1),
                   "reduce_scatter value " << shape.size() << "-d: " << describe(part.status()));
      }
    }
  });
}

// A call that repeats the last one's arguments (the same buffers) takes
// what the communicator kept from them (the local check's geometry, the lean
// header), and nothing more: new data is summed anew, a budget changed
// through the options is checked again, and a peer whose arguments changed
// (another budget, op or count) is still caught, on every rank.
TEST(WorldRequests, ARepeatedCallTakesNothingStaleFromTheOneBefore) {
  on_each_rank([](Communicator* comm, Failures& f, const RankCase& c) {
    const std::size_t rank = c.rank, world = c.world;
    const DeviceId dev = c.dev;
    const std::int32_t w = c.w, r = c.r;
    const bool last = rank == world - 1;
    std::vector<std::int32_t> in(3), out(3, -7);
    const TensorView vin = TensorView::of(in.data(), DataType::kI32, 3, dev);
    const TensorView vout = TensorView::of(out.data(), DataType::kI32, 3, dev);
    const auto sum_of = [&](std::int32_t k) { return w * (w - 1) / 2 + w * k; };
    const TensorView two_in = TensorView::of(in.data(), DataType::kI32, 2, dev);
    const TensorView two_out = TensorView::of(out.data(), DataType::kI32, 2, dev);
    // The same call, summed anew; each change below comes right after one
    // (where the ranks' slots were last the same).
    const auto again = [&](std::int32_t k, const char* what) {
      std::fill(in.begin(), in.end(), r + k);
      const Status s = comm->all_reduce_into(rank, vin, vout, ReduceOp::kSum);
      RANK_CHECK(f, rank, s.is_ok() && out[2] == sum_of(k),
                 what << " " << k << ": " << describe(s) << " got " << out[2]);
    };
    for (int round = 0; round < 3; ++round) {
      for (std::int32_t k = 0; k < 3; ++k) again(k, "repeat");  // the same buffers, new values
      Status s;
      // (A world of one has no other rank to differ from.)
      if (world > 1) {
        // The last rank changes its op while the others repeat.
        s = comm->all_reduce_into(rank, vin, vout, last ? ReduceOp::kMax : ReduceOp::kSum);
        RANK_CHECK(f, rank, s.code() == ErrorCode::kOpMismatch,
                   "the last rank's op changed: " << describe(s));
        again(3, "after the op");
        // ... its count.
        s = comm->all_reduce_into(rank, last ? two_in : vin, last ? two_out : vout, ReduceOp::kSum);
        RANK_CHECK(f, rank, s.code() == ErrorCode::kShapeMismatch,
                   "the last rank's count changed: " << describe(s));
        again(4, "after the count");
        // ... its budget (64 bytes, more than the data): the budgets differ.
        CallOptions other;
        other.max_chunk_bytes = 64;
        s = comm->all_reduce_into(rank, vin, vout, ReduceOp::kSum, last ? other : CallOptions{});
        RANK_CHECK(f, rank,
                   s.code() == ErrorCode::kInvalidArgument &&
                       s.message().find("max_chunk_bytes") != std::string::npos,
                   "the last rank's budget changed: " << describe(s));
      }
      // Every rank's budget of 2 bytes holds no i32: every rank is refused,
      // then the default budget serves the same buffers again.
      CallOptions tiny;
      tiny.max_chunk_bytes = 2;
      s = comm->all_reduce_into(rank, vin, vout, ReduceOp::kSum, tiny);
      RANK_CHECK(f, rank, s.code() == ErrorCode::kBudgetTooSmall,
                 "a 2-byte budget after the same call: " << describe(s));
      again(5, "after the budget");
      // In place, then out of place again, over the same output buffer.
      std::fill(out.begin(), out.end(), r + 6);
      s = comm->all_reduce_into(rank, vout, vout, ReduceOp::kSum);
      RANK_CHECK(f, rank, s.is_ok() && out[0] == sum_of(6), "in place: " << describe(s));
      again(7, "out of place");
    }
  });
}

// An all-to-all-v repeated over the same buffers and send counts takes the
// plan the lean path kept from the last call only while every peer's slot is
// the same too: here the last rank moves a row between its blocks each call
// (its total, so its slot's size, unchanged) while the others repeat theirs
// with new values, and every rank gets each call's rows and counts.
TEST(WorldRequests, ARepeatedAllToAllVSeesEachPeersNewCounts) {
  on_each_rank([](Communicator* comm, Failures& f, const RankCase& c) {
    const std::size_t rank = c.rank, world = c.world;
    const bool last = rank == world - 1;
    // Rows from s to d in call i: 1 + (d % 2), the last rank's 2 to rank
    // (i % world) and 1 to the others.
    const auto rows = [&](std::size_t s, std::size_t d, std::size_t i) -> std::size_t {
      if (s != world - 1) return 1 + d % 2;
      return d == i % world ? 2 : 1;
    };
    const auto value = [](std::size_t s, std::size_t d, std::size_t j, std::size_t i) {
      return static_cast<std::int32_t>(1000 * s + 100 * d + 10 * i + j);
    };
    std::size_t total = 0;
    for (std::size_t d = 0; d < world; ++d) total += rows(rank, d, 0);
    std::vector<std::int32_t> in(total), out(3 * world, -7);
    std::vector<std::size_t> counts(world), recv;
    const TensorView vin = TensorView::of(in.data(), DataType::kI32, total, c.dev);
    const TensorView vout = TensorView::of(out.data(), DataType::kI32, out.size(), c.dev);
    for (std::size_t i = 0; i < 2 * world + 2; ++i) {
      std::size_t at = 0;
      for (std::size_t d = 0; d < world; ++d) {
        counts[d] = rows(rank, d, i);
        for (std::size_t j = 0; j < counts[d]; ++j) in[at++] = value(rank, d, j, i);
      }
      const Status st = comm->all_to_all_v_into(rank, vin, counts, vout, recv);
      RANK_CHECK(f, rank, st.is_ok() && recv.size() == world,
                 "call " << i << (last ? " (the last rank)" : "") << ": " << describe(st));
      if (!st.is_ok() || recv.size() != world) return;
      at = 0;
      for (std::size_t s = 0; s < world; ++s) {
        RANK_CHECK(f, rank, recv[s] == rows(s, rank, i),
                   "call " << i << ": " << recv[s] << " rows from rank " << s << ", expected "
                           << rows(s, rank, i));
        for (std::size_t j = 0; j < recv[s] && at < out.size(); ++j, ++at)
          RANK_CHECK(f, rank, out[at] == value(s, rank, j, i),
                     "call " << i << ": row " << j << " from rank " << s << " is " << out[at]);
      }
    }
  });
}

}  // namespace
}  // namespace ruccl::test

namespace ruccl::bootstrap::testing {

bool prepare_tests(int& argc, char** argv, Bootstrap& world) {
  using namespace ruccl::test;
  GlobalStrategy strategy = GlobalStrategy::kHierarchical;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--devices-per-process" && i + 1 < argc) {
      per_process = std::strtoul(argv[++i], nullptr, 10);
    } else if (arg == "--strategy" && i + 1 < argc) {
      const std::string s = argv[++i];
      if (s != "hierarchical" && s != "flat_ring") {
        std::fprintf(stderr, "--strategy hierarchical|flat_ring, not %s\n", s.c_str());
        return false;
      }
      strategy = s == "flat_ring" ? GlobalStrategy::kFlatRing : GlobalStrategy::kHierarchical;
    } else if (arg == "--hierarchical-everywhere") {
      // Every collective that has a hierarchical form takes it at every size
      // (ahead of the lean path's small sizes), as across nodes: the
      // factory's Config::from_env reads RUCCL_ALGO.
      ::setenv("RUCCL_ALGO",
               "broadcast:@hierarchical;reduce:@hierarchical;all_gather:@hierarchical;"
               "reduce_scatter:@hierarchical;all_reduce:@hierarchical",
               1);
    } else {
      argv[kept++] = argv[i];  // gtest's
    }
  }
  argc = kept;
  if (per_process == 0) {
    std::fprintf(stderr, "--devices-per-process must be >= 1\n");
    return false;
  }
  chosen().backend = world_host_backend(per_process);
  chosen().factory = world_factory(strategy, per_process, world.topology().processes * per_process);
  return true;
}

}  // namespace ruccl::bootstrap::testing
