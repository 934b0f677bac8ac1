// world_host_memory_test: Communicator::allocate_host across processes of one
// node. Every collective on buffers from allocate_host (the node's other
// processes read them in place: node/regions.hpp), out of place and in place,
// odd counts, against the expected values; buffers of mixed kinds; with one
// device per process, the all-reduce on such buffers stages nothing
// (Communicator::last_staging 0: the peer's pieces were combined where they
// lie) while the same call on private buffers stages pieces of the segment.
// Also: 0 bytes is kInvalidArgument; at most 16 live allocations per process
// where the node is shared (kOutOfMemory beyond, and room again once one is
// freed); memory that outlives its communicator stays usable.
//
//   mpirun -np P world_host_memory_test [--devices-per-process D]
//
// Exit 0 only if every check on every rank held.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rank_failures.hpp"
#include "ruccl/ruccl.hpp"
#include "ruccl/world.hpp"

namespace {

using namespace ruccl;

using test::fail;
using test::failures;

// A buffer of `count` floats from allocate_host.
struct Shared {
  std::shared_ptr<std::byte> memory;
  std::size_t count = 0;
  float* data() const { return reinterpret_cast<float*>(memory.get()); }
};

// Input of rank r at element i: small integers, so every sum is exact.
float input(std::size_t r, std::size_t i) { return float((r + 1) * 3 + i % 7); }

class RankTest {
 public:
  RankTest(Communicator& comm, std::size_t local)
      : comm_(comm),
        local_(local),
        rank_(comm.first_rank() + local),
        world_(comm.world_size()),
        device_(comm.devices()[local]) {}

  Shared allocate(std::size_t count, const char* what) {
    auto m = comm_.allocate_host(count * sizeof(float));
    if (!m) {
      fail(rank_, std::string("allocate_host for ") + what + ": " + m.status().to_string());
      return {};
    }
    for (std::size_t i = 0; i < count; ++i)
      if (reinterpret_cast<float*>(m.value().get())[i] != 0.0f) {
        fail(rank_, std::string("allocate_host for ") + what + ": not zero-filled");
        break;
      }
    return Shared{std::move(m).value(), count};
  }
  TensorView view(float* data, std::size_t count) const {
    return TensorView::of(data, DataType::kF32, count, device_);
  }
  void fill(float* data, std::size_t count) const {
    for (std::size_t i = 0; i < count; ++i) data[i] = input(rank_, i);
  }
  float sum(std::size_t i) const {
    float s = 0;
    for (std::size_t r = 0; r < world_; ++r) s += input(r, i);
    return s;
  }
  void expect(const float* got, std::size_t count, const std::string& what, auto&& want) {
    for (std::size_t i = 0; i < count; ++i)
      if (got[i] != want(i)) {
        fail(rank_, what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                        ", want " + std::to_string(want(i)));
        return;
      }
  }
  void expect_ok(const Status& s, const std::string& what) {
    if (!s) fail(rank_, what + ": " + s.to_string());
  }
  std::size_t staging(const std::string& what) {
    auto stats = comm_.last_staging(rank_);
    if (!stats) {
      fail(rank_, what + ": last_staging: " + stats.status().to_string());
      return 0;
    }
    return stats->peak_bytes;
  }

  // out = op over the ranks of in (out may be in), checked against want(i);
  // the call's staging.
  std::size_t all_reduce(float* in, float* out, std::size_t count, ReduceOp op,
                         const std::string& what, auto&& want) {
    expect_ok(comm_.all_reduce_into(rank_, view(in, count), view(out, count), op), what);
    expect(out, count, what, want);
    return staging(what);
  }

  void run(bool measure_staging) {
    // Odd counts: a large one through the node's channels, a smaller one.
    for (const std::size_t count : {std::size_t{300001}, std::size_t{10007}}) {
      const std::string n = " (" + std::to_string(count) + " f32)";
      Shared in = allocate(count, "in"), out = allocate(count * world_, "out");
      if (!in.memory || !out.memory) return;
      fill(in.data(), count);
      // all_reduce out of place, sum and max.
      const auto sums = [&](std::size_t i) { return sum(i); };
      const std::size_t shared_staging =
          all_reduce(in.data(), out.data(), count, ReduceOp::kSum, "all_reduce" + n, sums);
      all_reduce(in.data(), out.data(), count, ReduceOp::kMax, "all_reduce max" + n,
                 [&](std::size_t i) { return input(world_ - 1, i); });
      // The same on private buffers, then mixed (input shared, output private).
      std::vector<float> pin(count), pout(count, -1.0f);
      fill(pin.data(), count);
      const std::size_t private_staging = all_reduce(pin.data(), pout.data(), count, ReduceOp::kSum,
                                                     "private all_reduce" + n, sums);
      if (measure_staging && count > 100000 && (shared_staging != 0 || private_staging == 0))
        fail(rank_, "all_reduce" + n + ": staging " + std::to_string(shared_staging) +
                        " on allocate_host buffers (want 0: read in place), " +
                        std::to_string(private_staging) + " on private ones (want above 0)");
      std::fill(pout.begin(), pout.end(), -1.0f);
      all_reduce(in.data(), pout.data(), count, ReduceOp::kSum, "mixed all_reduce" + n, sums);
      // all_reduce in place.
      all_reduce(in.data(), in.data(), count, ReduceOp::kSum, "in-place all_reduce" + n, sums);
      // reduce to the last rank.
      fill(in.data(), count);
      std::memset(out.data(), 0, count * sizeof(float));
      const std::size_t root = world_ - 1;
      expect_ok(comm_.reduce_into(rank_, view(in.data(), count), view(out.data(), count),
                                  ReduceOp::kSum, root),
                "reduce" + n);
      if (rank_ == root)
        expect(out.data(), count, "reduce" + n, [&](std::size_t i) { return sum(i); });
      // broadcast from rank 1 % world.
      const std::size_t from = 1 % world_;
      const TensorView in_view = view(in.data(), count);
      expect_ok(comm_.broadcast_into(rank_, rank_ == from ? &in_view : nullptr,
                                     view(out.data(), count)),
                "broadcast" + n);
      expect(out.data(), count, "broadcast" + n, [&](std::size_t i) { return input(from, i); });
      // all_gather: block r is rank r's input.
      expect_ok(comm_.all_gather_into(rank_, view(in.data(), count),
                                      view(out.data(), count * world_)),
                "all_gather" + n);
      expect(out.data(), count * world_, "all_gather" + n,
             [&](std::size_t i) { return input(i / count, i % count); });
      // reduce_scatter of world blocks of `count`: this rank's block summed.
      for (std::size_t b = 0; b < world_; ++b) fill(out.data() + b * count, count);
      expect_ok(comm_.reduce_scatter_into(rank_, view(out.data(), count * world_),
                                          view(in.data(), count), ReduceOp::kSum),
                "reduce_scatter" + n);
      expect(in.data(), count, "reduce_scatter" + n, [&](std::size_t i) { return sum(i); });
      // all_to_all_v: `count` / world rows (of one element) to each rank,
      // element value 1000 * source + destination.
      const std::size_t rows = count / world_;
      std::vector<std::size_t> send(world_, rows), recv;
      for (std::size_t d = 0; d < world_; ++d)
        for (std::size_t i = 0; i < rows; ++i) in.data()[d * rows + i] = float(1000 * rank_ + d);
      expect_ok(comm_.all_to_all_v_into(rank_, view(in.data(), rows * world_), send,
                                        view(out.data(), rows * world_), recv),
                "all_to_all_v" + n);
      expect(out.data(), rows * world_, "all_to_all_v" + n,
             [&](std::size_t i) { return float(1000 * (i / rows) + rank_); });
    }
  }

  // 0 bytes; the per-process bound where the node is shared.
  void limits(bool shared_node) {
    auto zero = comm_.allocate_host(0);
    if (zero || zero.status().code() != ErrorCode::kInvalidArgument)
      fail(rank_, "allocate_host(0): want kInvalidArgument, got " +
                      (zero ? std::string("memory") : zero.status().to_string()));
    if (!shared_node) return;
    std::vector<std::shared_ptr<std::byte>> held;
    for (int i = 0; i < 16; ++i) {
      auto m = comm_.allocate_host(100);
      if (!m) return fail(rank_, "allocation " + std::to_string(i) + ": " + m.status().to_string());
      held.push_back(std::move(m).value());
    }
    auto over = comm_.allocate_host(100);
    if (over || over.status().code() != ErrorCode::kOutOfMemory)
      fail(rank_, "a 17th live allocation: want kOutOfMemory, got " +
                      (over ? std::string("memory") : over.status().to_string()));
    held.pop_back();
    if (auto again = comm_.allocate_host(100); !again)
      fail(rank_, "an allocation after one was freed: " + again.status().to_string());
  }

 private:
  Communicator& comm_;
  const std::size_t local_, rank_, world_;
  const DeviceId device_;
};

}  // namespace

int main(int argc, char** argv) {
  std::size_t devices = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--devices-per-process" && i + 1 < argc) {
      devices = std::strtoul(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: world_host_memory_test [--devices-per-process D]\n");
      return 2;
    }
  }
  std::vector<DeviceId> local;
  for (std::size_t d = 0; d < devices; ++d) local.push_back(host_device(d));
  auto created = create_world_communicator(local, Config().with_timeout(std::chrono::seconds(30)));
  if (!created) {
    std::fprintf(stderr, "create: %s\n", created.status().to_string().c_str());
    return 1;
  }
  auto comm = created.value();
  const bool spans = comm->world_size() > devices;  // a node shared with other processes
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < devices; ++d)
    threads.emplace_back([&, d] {
      RankTest t(*comm, d);
      t.run(spans && devices == 1);
    });
  for (auto& t : threads) t.join();
  // A world spanning processes of this node says its allocate_host memory is
  // read in place by them (what the MPI layer's MPI_Alloc_mem asks).
  if (comm->shares_host_memory() != spans)
    fail(comm->first_rank(), std::string("shares_host_memory: want ") + (spans ? "true" : "false"));
  // Once every buffer of the collectives is freed (the bound is per process).
  RankTest(*comm, 0).limits(spans);
  // Memory that outlives its communicator stays usable (and is freed after).
  auto kept = comm->allocate_host(1 << 20);
  const std::size_t first = comm->first_rank();
  comm.reset();
  if (!kept) {
    fail(first, "allocate_host: " + kept.status().to_string());
  } else {
    std::memset(kept.value().get(), 7, 1 << 20);
    kept.value().reset();
  }
  std::printf("world_host_memory_test ranks %zu..%zu: %s\n", first, first + devices - 1,
              failures == 0 ? "PASSED" : "FAILED");
  return failures == 0 ? 0 : 1;
}
