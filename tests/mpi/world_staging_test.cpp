// world_staging_test: Communicator::last_staging across processes reports the
// staging memory a rank really held, and a budget bounds it.
//
//   mpirun -np P world_staging_test [--devices-per-process D] [--algo hierarchical|flat_ring]
//                                   [--over-ucx]
//
// Budget B = 4 KiB, tensors of 40 000 bytes (above the fused small all-reduce),
// every result checked. With P > 1 processes:
//   all_reduce, reduce_scatter through BoundedCommunicator(B): a reduction
//     receives one message per round into one staging buffer: peak == B (every
//     chunk here is larger than B, so the largest message is exactly B);
//   the same all_reduce unbounded (max_chunk_bytes SIZE_MAX): one message per
//     chunk, so the peak is a whole chunk, > B (what the executor allocated, not
//     the budget);
//   all_to_all_v through BoundedCommunicator(B): copies land in place: 0.
// With P == 1 everything runs in-process and stages nothing: 0 throughout,
// but under the hierarchical strategy with D > 1 a collective that fits the
// lean path (the process's own mailbox): it holds every other rank's input at
// once, as the one-shot does (#1, #4).
// --over-ucx (no node segment: every byte between processes over UCX) adds an
// all_reduce of 6 MiB, whose 1 MiB pieces go two rounds in flight under an
// 8 MiB budget (staging above one piece) and one at a time under 1.5 MiB
// (staging one piece).
// Also: kInvalidArgument before the first collective and for a rank this
// process does not serve. Exit 0 only if every check on every rank held.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "rank_failures.hpp"
#include "ruccl/ruccl.hpp"
#include "ruccl/world.hpp"

namespace {

using namespace ruccl;

constexpr std::size_t kBudget = 4096;
constexpr std::size_t kCount = 10000;  // f32: 40 000 bytes

using test::fail;
using test::failures;

// The staging of `rank`'s last call must be `want` (or, with `above`, more than it).
void expect_staging(const Communicator& comm, std::size_t rank, const char* what,
                    std::uint64_t seq, std::size_t budget, std::size_t want, bool above = false) {
  auto stats = comm.last_staging(rank);
  if (!stats) return fail(rank, std::string(what) + ": last_staging: " + stats.status().to_string());
  const bool ok = stats->sequence == seq && stats->budget_bytes == budget &&
                  (above ? stats->peak_bytes > want : stats->peak_bytes == want);
  if (!ok)
    fail(rank, std::string(what) + ": staging seq " + std::to_string(stats->sequence) + " peak " +
                   std::to_string(stats->peak_bytes) + " budget " +
                   std::to_string(stats->budget_bytes) + "; want seq " + std::to_string(seq) +
                   (above ? " peak above " : " peak ") + std::to_string(want) + " budget " +
                   std::to_string(budget));
}

void run_rank(const std::shared_ptr<Communicator>& comm, std::size_t local, bool spans,
              bool over_ucx, bool lean) {
  const std::size_t rank = comm->first_rank() + local;
  const std::size_t world = comm->world_size();
  const DeviceId device = comm->devices()[local];
  const std::size_t staged = spans ? kBudget : 0;  // a reduction's peak under the budget
  BoundedCommunicator bounded(comm, kBudget);

  if (auto none = comm->last_staging(rank); none || none.status().code() != ErrorCode::kInvalidArgument)
    fail(rank, "last_staging before any collective: expected InvalidArgument");
  if (auto other = comm->last_staging(world + 5);
      other || other.status().code() != ErrorCode::kInvalidArgument)
    fail(rank, "last_staging of a rank not served: expected InvalidArgument");

  // #0 all_reduce, bounded.
  std::vector<float> in(kCount, float(rank + 1)), out(kCount, -1.0f);
  const float sum = float(world * (world + 1) / 2);
  auto view = [&](std::vector<float>& v) {
    return TensorView::of(v.data(), DataType::kF32, v.size(), device);
  };
  if (Status s = bounded.all_reduce_into(rank, view(in), view(out), ReduceOp::kSum); !s) {
    fail(rank, "bounded all_reduce: " + s.to_string());
    return;
  }
  for (std::size_t i = 0; i < kCount; ++i)
    if (out[i] != sum) {
      fail(rank, "bounded all_reduce element " + std::to_string(i));
      break;
    }
  expect_staging(*comm, rank, "bounded all_reduce", 0, kBudget, staged);

  // #1 the same, unbounded: the peak is a whole chunk (one message), above B.
  constexpr std::size_t kNoBudget = std::numeric_limits<std::size_t>::max();
  std::fill(out.begin(), out.end(), -1.0f);
  if (Status s = comm->all_reduce_into(rank, view(in), view(out), ReduceOp::kSum,
                                       CallOptions{kNoBudget});
      !s) {
    fail(rank, "unbounded all_reduce: " + s.to_string());
    return;
  }
  if (out[kCount - 1] != sum) fail(rank, "unbounded all_reduce: wrong result");
  if (spans) expect_staging(*comm, rank, "unbounded all_reduce", 1, kNoBudget, kBudget, true);
  else
    expect_staging(*comm, rank, "unbounded all_reduce", 1, kNoBudget,
                   lean ? (world - 1) * kCount * sizeof(float) : 0);

  // #2 reduce_scatter, bounded (a flat ring over every rank).
  auto shard = bounded.reduce_scatter(rank, view(in), ReduceOp::kSum);
  if (!shard) {
    fail(rank, "bounded reduce_scatter: " + shard.status().to_string());
    return;
  }
  if (shard->count() == 0 || shard->as<float>()[0] != sum)
    fail(rank, "bounded reduce_scatter: wrong result");
  expect_staging(*comm, rank, "bounded reduce_scatter", 2, kBudget, staged);

  // #3 all_to_all_v, bounded: rows of 3 i32, 500 + (rank + d) % 3 rows to rank d
  // (about 6 KB per block: cut into two messages each).
  constexpr std::size_t kRow = 3;
  auto rows = [](std::size_t s, std::size_t d) { return 500 + (s + d) % 3; };
  std::vector<std::size_t> counts(world);
  std::vector<std::int32_t> a2a_in;
  for (std::size_t d = 0; d < world; ++d) {
    counts[d] = rows(rank, d);
    for (std::size_t i = 0; i < counts[d] * kRow; ++i)
      a2a_in.push_back(std::int32_t(1000000 * rank + 10000 * d + i));
  }
  TensorView a2a_view{a2a_in.data(), DataType::kI32, {a2a_in.size() / kRow, kRow}, device, {}};
  auto got = bounded.all_to_all_v(rank, a2a_view, counts);
  if (!got) {
    fail(rank, "bounded all_to_all_v: " + got.status().to_string());
    return;
  }
  const std::span<std::int32_t> data = got->data.as<std::int32_t>();
  std::size_t at = 0;
  for (std::size_t s = 0; s < world; ++s)
    for (std::size_t i = 0; i < rows(s, rank) * kRow; ++i, ++at)
      if (at >= data.size() || data[at] != std::int32_t(1000000 * s + 10000 * rank + i)) {
        fail(rank, "bounded all_to_all_v element " + std::to_string(at));
        s = world;
        break;
      }
  expect_staging(*comm, rank, "bounded all_to_all_v", 3, kBudget, 0);

  // #4 a small all_reduce, bounded: one-shot across processes (every other
  // rank's 64 bytes held at once), nothing staged in-process.
  std::vector<float> small_in(16, float(rank + 1)), small_out(16, -1.0f);
  if (Status s = bounded.all_reduce_into(rank, view(small_in), view(small_out), ReduceOp::kSum); !s) {
    fail(rank, "small bounded all_reduce: " + s.to_string());
    return;
  }
  if (small_out[15] != sum) fail(rank, "small bounded all_reduce: wrong result");
  expect_staging(*comm, rank, "small bounded all_reduce (one-shot)", 4, kBudget,
                 spans || lean ? (world - 1) * 64 : 0);

  // #5 4 KiB, bounded by 4 KiB: one-shot only where the other ranks' inputs
  // fit the budget (a world of 2); else the ring. Within the budget either way.
  std::vector<float> mid_in(1024, float(rank + 1)), mid_out(1024, -1.0f);
  if (Status s = bounded.all_reduce_into(rank, view(mid_in), view(mid_out), ReduceOp::kSum); !s) {
    fail(rank, "4 KiB bounded all_reduce: " + s.to_string());
    return;
  }
  if (mid_out[0] != sum || mid_out[1023] != sum) fail(rank, "4 KiB bounded all_reduce: wrong result");
  if (auto stats = comm->last_staging(rank);
      !stats || stats->sequence != 5 || stats->peak_bytes > kBudget ||
      (spans && stats->peak_bytes == 0))
    fail(rank, "4 KiB bounded all_reduce: staging " +
                   (stats ? std::to_string(stats->peak_bytes) : stats.status().to_string()) +
                   ", want within " + std::to_string(kBudget) + (spans ? " and above 0" : ""));
  if (!over_ucx) return;

  // Over UCX (--over-ucx: no node segment, as RUCCL_INTRA_NODE_TRANSPORT=tcp): an
  // all_reduce of 6 MiB + 4 KiB cuts each chunk (over 2 MiB at 2-3 ranks)
  // into 1 MiB pieces. #6 under an 8 MiB budget two pieces are in flight
  // (staging above one piece, within the budget); #7 under 1.5 MiB only one
  // fits: one round at a time, staging one piece.
  constexpr std::size_t kPiece = std::size_t{1} << 20;
  std::vector<float> big_in(1572864 + 1024), big_out(big_in.size());
  for (std::size_t i = 0; i < big_in.size(); ++i) big_in[i] = float((rank + 1) * (i % 7));
  for (const std::size_t budget : {std::size_t{8} << 20, kPiece + kPiece / 2}) {
    std::fill(big_out.begin(), big_out.end(), -1.0f);
    const std::string what = "6 MiB all_reduce under " + std::to_string(budget) + " B";
    if (Status s = comm->all_reduce_into(rank, view(big_in), view(big_out), ReduceOp::kSum,
                                         CallOptions{budget});
        !s)
      return fail(rank, what + ": " + s.to_string());
    for (std::size_t i = 0; i < big_out.size(); ++i)
      if (big_out[i] != sum * float(i % 7))
        return fail(rank, what + ": element " + std::to_string(i));
    auto stats = comm->last_staging(rank);
    const bool two = budget >= 2 * kPiece;
    if (!stats || stats->peak_bytes > budget ||
        (two ? stats->peak_bytes <= kPiece : stats->peak_bytes != kPiece))
      fail(rank, what + ": staging " +
                     (stats ? std::to_string(stats->peak_bytes) : stats.status().to_string()) +
                     (two ? ", want above one piece (1 MiB)" : ", want one piece (1 MiB)"));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t devices = 1;
  GlobalStrategy algo = GlobalStrategy::kHierarchical;
  bool over_ucx = false;  // no node segment: every byte between processes over UCX
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--devices-per-process" && i + 1 < argc) devices = std::strtoul(argv[++i], nullptr, 10);
    else if (arg == "--algo" && i + 1 < argc && std::string(argv[i + 1]) == "flat_ring")
      algo = GlobalStrategy::kFlatRing, ++i;
    else if (arg == "--algo" && i + 1 < argc && std::string(argv[i + 1]) == "hierarchical")
      algo = GlobalStrategy::kHierarchical, ++i;
    else if (arg == "--over-ucx") over_ucx = true;
    else {
      std::fprintf(stderr,
                   "usage: world_staging_test [--devices-per-process D] "
                   "[--algo hierarchical|flat_ring] [--over-ucx]\n");
      return 2;
    }
  }
  std::vector<DeviceId> local;
  for (std::size_t d = 0; d < devices; ++d) local.push_back(host_device(d));
  auto created = create_world_communicator(local, Config()
                                                      .with_timeout(std::chrono::seconds(30))
                                                      .with_global_strategy(algo)
                                                      .with_intra_node_shared_memory(!over_ucx));
  if (!created) {
    std::fprintf(stderr, "create: %s\n", created.status().to_string().c_str());
    return 1;
  }
  auto comm = created.value();
  const bool spans = comm->world_size() > devices;  // more than this process
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < devices; ++d)
    threads.emplace_back(run_rank, comm, d, spans, over_ucx,
                         !spans && devices > 1 && algo == GlobalStrategy::kHierarchical);
  for (auto& t : threads) t.join();
  const std::size_t first = comm->first_rank();
  comm.reset();
  std::printf("world_staging_test ranks %zu..%zu: %s\n", first, first + devices - 1,
              failures == 0 ? "PASSED" : "FAILED");
  return failures == 0 ? 0 : 1;
}
