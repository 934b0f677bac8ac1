// The ring algorithms over TransportRun: every rank owns its own UCX transport
// (as a process would), driven by its own thread, and runs the same
// src/ring functions as the in-process communicator. Messages are cut small so
// that every step carries several pieces per peer.
#include <gtest/gtest.h>

#include <barrier>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ring/algorithms.hpp"
#include "ring/schedule.hpp"
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

TEST(TransportRun, AllReduceAcrossTransports) {
  for (std::size_t world : {2u, 3u}) {
    constexpr std::size_t kCount = 1001;
    auto adapter = make_host_adapter();
    const std::string failures = on_transports(world, [&](std::size_t rank, Transport& t) {
      for (std::uint64_t seq = 0; seq < 3; ++seq) {  // back to back: tags must not mix
        std::vector<float> in(kCount), out(kCount, -1.0f);
        for (std::size_t i = 0; i < kCount; ++i) in[i] = float((rank + 1) * (i % 13) + seq);
        Work w = one_rank_work(DataType::kF32, ReduceOp::kSum, in.data(), kCount, out.data(), kCount);
        TransportRun run(t, *adapter, w, 0, rank, world, {7, seq, 37, 5000ms});
        Status s = ring::ring_all_reduce(run, kCount, 1);
        if (!s.is_ok()) return s.to_string();
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
    EXPECT_TRUE(failures.empty()) << "world " << world << ":\n" << failures;
  }
}

TEST(TransportRun, AllToAllVAndBroadcastAcrossTransports) {
  constexpr std::size_t kWorld = 3, kRow = 3;
  // rows[s][d]: rows rank s sends to rank d (zeros included).
  const std::vector<std::vector<std::size_t>> rows{{1, 0, 4}, {2, 3, 0}, {0, 5, 1}};
  auto adapter = make_host_adapter();
  const std::string failures = on_transports(kWorld, [&](std::size_t rank, Transport& t) {
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
    TransportRun a2a(t, *adapter, w, 0, rank, kWorld, {7, 0, 2 * kRow, 5000ms});
    Status s = ring::pairwise_all_to_all_v(a2a, rows, kRow);
    if (!s.is_ok()) return "all_to_all_v: " + s.to_string();
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
    TransportRun bcast(t, *adapter, bw, 0, rank, kWorld, {7, 1, 50, 5000ms});
    s = ring::chain_broadcast(bcast, ring::segment_ranges(kCount, 101), 1);
    if (!s.is_ok()) return "broadcast: " + s.to_string();
    for (std::size_t i = 0; i < kCount; ++i)
      if (data[i] != double(i) * 0.5) return "broadcast element " + std::to_string(i);
    return std::string();
  });
  EXPECT_TRUE(failures.empty()) << failures;
}

}  // namespace
}  // namespace ruccl::transport
