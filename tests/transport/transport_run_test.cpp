// The ring algorithms over TransportRun: every rank owns its own UCX transport
// (as a process would), driven by its own thread, and runs the same
// src/ring functions as the in-process communicator. Messages are cut small so
// that every step carries several pieces per peer. Each runs on the direct path
// and, forced, on the staged pipeline (device memory without CUDA-aware UCX),
// whose results must be the same.
#include <gtest/gtest.h>

#include <barrier>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ring/algorithms.hpp"
#include "ring/schedule.hpp"
#include "test_support.hpp"
#include "transport/transport_run.hpp"

namespace ruccl::transport {
namespace {

using namespace std::chrono_literals;

// `world` ranks, each with a connected transport; runs fn(rank, transport) on
// one thread per rank and returns every rank's failure, joined.
std::string on_transports(std::size_t world,
                          const std::function<std::string(std::size_t, Transport&)>& fn) {
  std::vector<std::unique_ptr<Transport>> transports;
  std::vector<std::vector<std::byte>> addresses;
  for (std::size_t r = 0; r < world; ++r) {
    auto t = make_ucx_transport();
    if (!t.is_ok()) return "transport: " + t.status().to_string();
    addresses.push_back(t.value()->address());
    transports.push_back(std::move(t.value()));
  }
  std::mutex mutex;
  std::string failures;
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      std::string err;
      Status c = transports[r]->connect(addresses, Clock::now() + 10s);
      err = c.is_ok() ? fn(r, *transports[r]) : "connect: " + c.to_string();
      // No graceful close: it needs every peer to keep progressing until all
      // closes finish (the transport's own tests cover it); the destructors
      // force-close in bounded time.
      if (!err.empty()) {
        std::lock_guard lock(mutex);
        failures += "rank " + std::to_string(r) + ": " + err + "\n";
      }
    });
  }
  for (auto& t : threads) t.join();
  return failures;
}

// One rank's Work over caller-owned buffers.
Work one_rank_work(DataType dtype, ReduceOp op, const void* input, std::size_t input_count,
                   void* buffer, std::size_t count) {
  Work w;
  w.dtype = dtype;
  w.op = op;
  w.world = 1;
  RankBuffers b;
  b.input = input;
  b.input_count = input_count;
  b.send = buffer;
  b.send_count = count;
  b.recv = buffer;
  b.recv_count = count;
  w.ranks.push_back(b);
  return w;
}

// The host adapter with operations that look asynchronous: copy and reduce
// only queue their work (a copy into host staging first poisons its
// destination), and wait(t) runs the queued work up to ticket t. A staged step
// that sends a buffer before waiting for its stage-out, refills a buffer too
// early, or returns before its stage-ins completed gets wrong results (or
// work left queued, which the tests check); so does any executor that reads a
// result before waiting for its ticket. One instance per rank.
class DeferredStaging final : public test::HostForwardingAdapter {
 public:
  Result<std::shared_ptr<void>> allocate_host_staging(DeviceId d, std::size_t bytes) override {
    auto memory = inner_->allocate_host_staging(d, bytes);
    RUCCL_TRY(memory);
    const auto* base = static_cast<const std::byte*>(memory.value().get());
    staging_.push_back({base, bytes});
    // Forgotten when freed: its addresses may come back as other memory.
    return std::shared_ptr<void>(memory.value().get(), [this, base, inner = memory.value()](void*) {
      std::erase_if(staging_, [base](const auto& range) { return range.first == base; });
    });
  }
  Result<Ticket> copy(const Queue& q, void* dst, const void* src, std::size_t bytes) override {
    if (in_staging(dst)) {  // a stage-out
      std::memset(dst, 0xff, bytes);
      ++stage_outs;
    }
    if (in_staging(src)) ++stage_ins;
    return queue([=, this] { return inner_->copy(q, dst, src, bytes).status(); });
  }
  Result<Ticket> reduce(const Queue& q, void* dst, const void* a, const void* b, std::size_t n,
                        DataType dt, ReduceOp op) override {
    if (in_staging(b)) ++stage_ins;
    return queue([=, this] { return inner_->reduce(q, dst, a, b, n, dt, op).status(); });
  }
  Status wait(const Queue&, Ticket ticket) override {
    while (!queued_.empty() && queued_.front().first <= ticket) {
      RUCCL_TRY(queued_.front().second());
      queued_.erase(queued_.begin());
    }
    return Status::ok();
  }
  std::size_t pending() const { return queued_.size(); }
  std::size_t stage_outs = 0, stage_ins = 0;

 private:
  bool in_staging(const void* p) const {
    const auto* b = static_cast<const std::byte*>(p);
    for (const auto& [base, bytes] : staging_)
      if (b >= base && b < base + bytes) return true;
    return false;
  }
  Ticket queue(std::function<Status()> work) {
    queued_.emplace_back(++next_, std::move(work));
    return next_;
  }
  std::vector<std::pair<Ticket, std::function<Status()>>> queued_;
  std::vector<std::pair<const std::byte*, std::size_t>> staging_;  // live host staging
  Ticket next_ = 0;
};

// How a test runs TransportRun: direct (host memory as it is) or forced
// through the staged pipeline with some segment size and buffer count.
struct Path {
  bool staged = false;
  std::size_t segment_bytes = 0;
  std::size_t slots = 2;
  std::string name() const {
    return staged ? "staged (segment " + std::to_string(segment_bytes) + " B, " +
                        std::to_string(slots) + " slots)"
                  : std::string("direct");
  }
  TransportRunOptions options(std::uint64_t seq, std::size_t message_elements) const {
    TransportRunOptions o{7, seq, message_elements, 5000ms};
    o.staging_bytes = std::numeric_limits<std::size_t>::max();  // two rounds in flight
    o.force_staging = staged;
    o.staging_segment_bytes = segment_bytes;
    o.staging_slots = slots;
    return o;
  }
};
const Path kPaths[] = {{false}, {true, 0, 2}, {true, 40, 2}, {true, 12, 1}, {true, 24, 3}};

// After a collective on `path`: the path was taken, staging happened, and
// nothing is left queued.
std::string check_staging(const Path& path, const TransportRun& run, const DeferredStaging& a) {
  const MemoryPath want = path.staged ? MemoryPath::kStaged : MemoryPath::kHost;
  if (run.memory_path() != want)
    return std::string("memory path ") + memory_path_name(run.memory_path());
  if (path.staged && (a.stage_outs == 0 || a.stage_ins == 0)) return "nothing was staged";
  if (!path.staged && a.stage_outs + a.stage_ins != 0) return "the direct path staged";
  if (a.pending() != 0) return std::to_string(a.pending()) + " staging copies left queued";
  return {};
}

TEST(TransportRun, MemoryPathDecision) {
  EXPECT_EQ(choose_memory_path(DeviceKind::kHost, false, false), MemoryPath::kHost);
  EXPECT_EQ(choose_memory_path(DeviceKind::kHost, true, false), MemoryPath::kHost);
  EXPECT_EQ(choose_memory_path(DeviceKind::kCuda, true, false), MemoryPath::kDirectDevice);
  EXPECT_EQ(choose_memory_path(DeviceKind::kCuda, false, false), MemoryPath::kStaged);
  EXPECT_EQ(choose_memory_path(DeviceKind::kHost, true, true), MemoryPath::kStaged);
  // The decision reaches the log hook once, at construction.
  std::vector<std::string> lines;
  const std::string failures = on_transports(1, [&](std::size_t, Transport& t) {
    auto adapter = make_host_adapter();
    float x = 1.0f;
    Work w = one_rank_work(DataType::kF32, ReduceOp::kSum, &x, 1, &x, 1);
    TransportRunOptions o{7, 4, 1, 5000ms};
    o.force_staging = true;
    o.log = [&](const std::string& line) { lines.push_back(line); };
    TransportRun run(t, *adapter, w, 0, 0, 1, o);
    return std::string();
  });
  ASSERT_TRUE(failures.empty()) << failures;
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("collective #4: memory path staged (host buffers"), std::string::npos)
      << lines[0];
}

TEST(TransportRun, AllReduceAcrossTransports) {
  for (const Path& path : kPaths) {
    for (std::size_t world : {2u, 3u}) {
      constexpr std::size_t kCount = 1001;
      const std::string failures = on_transports(world, [&](std::size_t rank, Transport& t) {
        DeferredStaging adapter;
        for (std::uint64_t seq = 0; seq < 3; ++seq) {  // back to back: tags must not mix
          std::vector<float> in(kCount), out(kCount, -1.0f);
          for (std::size_t i = 0; i < kCount; ++i) in[i] = float((rank + 1) * (i % 13) + seq);
          Work w = one_rank_work(DataType::kF32, ReduceOp::kSum, in.data(), kCount, out.data(),
                                 kCount);
          TransportRun run(t, adapter, w, 0, rank, world, path.options(seq, 37));
          Status s = ring::ring_all_reduce(run, kCount, 1);
          if (!s.is_ok()) return s.to_string();
          if (auto e = check_staging(path, run, adapter); !e.empty()) return e;
          const float ranks_sum = float(world * (world + 1) / 2);
          for (std::size_t i = 0; i < kCount; ++i) {
            const float want = ranks_sum * float(i % 13) + float(world * seq);
            if (out[i] != want)
              return "seq " + std::to_string(seq) + " element " + std::to_string(i) + ": " +
                     std::to_string(out[i]) + " != " + std::to_string(want);
          }
        }
        return std::string();
      });
      EXPECT_TRUE(failures.empty()) << path.name() << ", world " << world << ":\n" << failures;
    }
  }
}

TEST(TransportRun, AllToAllVAndBroadcastAcrossTransports) {
  constexpr std::size_t kWorld = 3, kRow = 3;
  // rows[s][d]: rows rank s sends to rank d (zeros included).
  const std::vector<std::vector<std::size_t>> rows{{1, 0, 4}, {2, 3, 0}, {0, 5, 1}};
  for (const Path& path : kPaths) {
    const std::string failures = on_transports(kWorld, [&](std::size_t rank, Transport& t) {
      DeferredStaging adapter;
      // all_to_all_v: element value = 1000*src + 100*dst + index within the block.
      std::size_t sent = 0, received = 0;
      for (std::size_t d = 0; d < kWorld; ++d) sent += rows[rank][d] * kRow;
      for (std::size_t s = 0; s < kWorld; ++s) received += rows[s][rank] * kRow;
      std::vector<std::int32_t> in, out(received, -1);
      for (std::size_t d = 0; d < kWorld; ++d)
        for (std::size_t i = 0; i < rows[rank][d] * kRow; ++i)
          in.push_back(std::int32_t(1000 * rank + 100 * d + i));
      Work w = one_rank_work(DataType::kI32, ReduceOp::kSum, in.data(), sent, out.data(), received);
      w.ranks[0].send = in.data();
      w.ranks[0].send_count = sent;
      TransportRun a2a(t, adapter, w, 0, rank, kWorld, path.options(0, 2 * kRow));
      Status s = ring::pairwise_all_to_all_v(a2a, rows, kRow);
      if (!s.is_ok()) return "all_to_all_v: " + s.to_string();
      if (adapter.pending() != 0) return std::string("all_to_all_v left staging queued");
      std::size_t at = 0;
      for (std::size_t src = 0; src < kWorld; ++src)
        for (std::size_t i = 0; i < rows[src][rank] * kRow; ++i, ++at)
          if (out[at] != std::int32_t(1000 * src + 100 * rank + i))
            return "all_to_all_v element " + std::to_string(at) + " = " + std::to_string(out[at]);

      // broadcast from rank 1 in 4 segments.
      constexpr std::size_t kCount = 403;
      std::vector<double> data(kCount, -1.0);
      if (rank == 1)
        for (std::size_t i = 0; i < kCount; ++i) data[i] = double(i) * 0.5;
      Work bw = one_rank_work(DataType::kF64, ReduceOp::kSum, nullptr, 0, data.data(), kCount);
      TransportRun bcast(t, adapter, bw, 0, rank, kWorld, path.options(1, 50));
      s = ring::chain_broadcast(bcast, ring::segment_ranges(kCount, 101), 1);
      if (!s.is_ok()) return "broadcast: " + s.to_string();
      if (auto e = check_staging(path, bcast, adapter); !e.empty()) return "broadcast: " + e;
      for (std::size_t i = 0; i < kCount; ++i)
        if (data[i] != double(i) * 0.5) return "broadcast element " + std::to_string(i);
      return std::string();
    });
    EXPECT_TRUE(failures.empty()) << path.name() << ":\n" << failures;
  }
}

// peak_staging_bytes(): what the executor really held for message payload.
// Direct path: a reduction stages one message per round, two rounds in
// flight where two messages fit staging_bytes (peak = twice the largest
// message, however many messages a step has), else one (peak = the largest
// message, at most the budget); copies (all_to_all_v) stage nothing. Staged path: its host buffers,
// one segment per slot and stream (ring: 1 out + 1 in stream x 2 slots).
TEST(TransportRun, PeakStagingBytes) {
  constexpr std::size_t kCount = 1001, kMessage = 37;  // f32: messages of 148 B
  constexpr std::size_t kBudget = kMessage * sizeof(float);
  for (const Path& path : {Path{false}, Path{true, 0, 2}}) {
    for (std::size_t world : {2u, 3u}) {
      const std::string failures = on_transports(world, [&](std::size_t rank, Transport& t) {
        auto adapter = make_host_adapter();
        std::vector<float> in(kCount, float(rank + 1)), out(kCount, -1.0f);
        Work w = one_rank_work(DataType::kF32, ReduceOp::kSum, in.data(), kCount, out.data(), kCount);
        TransportRun ar(t, *adapter, w, 0, rank, world, path.options(0, kMessage));
        if (ar.peak_staging_bytes() != 0) return std::string("staging before any step");
        if (Status s = ring::ring_all_reduce(ar, kCount, 1); !s.is_ok()) return s.to_string();
        const float sum = float(world * (world + 1) / 2);
        for (std::size_t i = 0; i < kCount; ++i)
          if (out[i] != sum) return "all_reduce element " + std::to_string(i);
        // Each chunk (333..501 elements) is cut into several messages of 37.
        const std::size_t want = path.staged ? 2 * 2 * kBudget : 2 * kBudget;
        if (ar.peak_staging_bytes() != want)
          return path.name() + " all_reduce peak " + std::to_string(ar.peak_staging_bytes()) +
                 ", want " + std::to_string(want);
        // Staging of one message less than two: one round at a time.
        std::fill(out.begin(), out.end(), -1.0f);
        TransportRunOptions tight = path.options(3, kMessage);
        tight.staging_bytes = 2 * kBudget - 1;
        TransportRun one(t, *adapter, w, 0, rank, world, tight);
        if (Status s = ring::ring_all_reduce(one, kCount, 1); !s.is_ok()) return s.to_string();
        if (out[kCount - 1] != sum) return std::string("one round at a time: wrong result");
        if (!path.staged && one.peak_staging_bytes() != kBudget)
          return "one round at a time: all_reduce peak " + std::to_string(one.peak_staging_bytes());

        // chain reduce to rank 0: the head receives nothing; the others stage.
        std::fill(out.begin(), out.end(), -1.0f);
        TransportRun rd(t, *adapter, w, 0, rank, world, path.options(1, kMessage));
        if (Status s = ring::chain_reduce(rd, ring::segment_ranges(kCount, 400), 0); !s.is_ok())
          return "reduce: " + s.to_string();
        if (rank == 0 && out[kCount - 1] != sum) return std::string("reduce: wrong result");
        const bool head = ring::reduce_position(rank, 0, world) == 0;
        if (!path.staged && rd.peak_staging_bytes() != (head ? 0 : 2 * kBudget))
          return "reduce peak " + std::to_string(rd.peak_staging_bytes());

        // all_to_all_v: 100 elements to every rank, copies in place.
        std::vector<std::vector<std::size_t>> rows(world, std::vector<std::size_t>(world, 100));
        std::vector<float> send(100 * world, float(rank)), recv(100 * world, -1.0f);
        Work aw = one_rank_work(DataType::kF32, ReduceOp::kSum, send.data(), send.size(),
                                recv.data(), recv.size());
        aw.ranks[0].send = send.data();
        aw.ranks[0].send_count = send.size();
        TransportRun a2a(t, *adapter, aw, 0, rank, world, path.options(2, kMessage));
        if (Status s = ring::pairwise_all_to_all_v(a2a, rows, 1); !s.is_ok())
          return "all_to_all_v: " + s.to_string();
        for (std::size_t i = 0; i < recv.size(); ++i)
          if (recv[i] != float(i / 100)) return "all_to_all_v element " + std::to_string(i);
        const std::size_t a2a_want = path.staged ? 2 * 2 * kBudget : 0;
        if (a2a.peak_staging_bytes() != a2a_want)
          return path.name() + " all_to_all_v peak " + std::to_string(a2a.peak_staging_bytes());
        return std::string();
      });
      EXPECT_TRUE(failures.empty()) << path.name() << ", world " << world << ":\n" << failures;
    }
  }
}

}  // namespace
}  // namespace ruccl::transport
