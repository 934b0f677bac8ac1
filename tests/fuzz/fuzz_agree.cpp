// libFuzzer: agree() over fingerprint records of N ranks, then the geometry
// one rank runs from the plan. Input: byte 0 picks the world (1..4), byte 1
// the rank whose side runs, byte 2 the segment size; then each rank's record
// (fuzz::agree_record_words words each; its error-message words stay zero).
// Records that fail decode stop there (WorldRemoteRanks::agree_all returns that
// error). For an agreed plan, the rank's side of the algorithm (reduce chain,
// broadcast chain, all-to-all-v and the rings) runs over an executor that
// checks every transfer against the buffers the engine lays out for it and
// its peer, from their own records: a plan that reads or writes past any
// rank's buffer (or would send memory past a peer's input) traps.
#include <algorithm>
#include <cstdlib>

#include "core/agreement.hpp"
#include "fuzz_common.hpp"
#include "ring/algorithms.hpp"
#include "ring/rank_run.hpp"
#include "ring/schedule.hpp"
#include "world/fingerprint_codec.hpp"

namespace {
using namespace ruccl;

// Element counts of one rank's buffers for the plan (engine.cpp's layout).
struct Buffers {
  std::size_t input = 0, send = 0, recv = 0;
};

Buffers layout(const core::Plan& plan, CollectiveKind kind, const core::Request& q,
               const core::Geometry& g, std::size_t rank, std::size_t world) {
  Buffers b;
  b.input = q.has_input ? g.count : 0;
  switch (kind) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kReduceScatter: b.send = b.recv = g.count; break;
    case CollectiveKind::kAllGather: b.send = b.recv = g.count * world; break;
    case CollectiveKind::kReduce:
      if (rank == plan.root || ring::reduce_position(rank, plan.root, world) != 0)
        b.send = b.recv = g.count;
      break;
    case CollectiveKind::kBroadcast:
      if (rank == plan.root) b.send = g.count;
      else b.send = b.recv = plan.geometry.count;
      break;
    case CollectiveKind::kAllToAllV: {
      std::size_t rows = 0;
      for (std::size_t s = 0; s < world; ++s) rows += plan.a2a_rows[s][rank];
      b.send = g.count;
      b.recv = q.out ? q.out->count() : rows * g.unit;
      if (q.out && b.recv < rows * g.unit) std::abort();  // agree() promised the capacity
      break;
    }
  }
  return b;
}

bool fits(Range r, std::size_t count) { return r.offset <= count && r.count <= count - r.offset; }

class CheckedRun final : public ring::RankRun {
 public:
  CheckedRun(std::size_t rank, std::vector<Buffers> buffers)
      : rank_(rank), buffers_(std::move(buffers)) {}
  std::size_t rank() const override { return rank_; }
  std::size_t world() const override { return buffers_.size(); }
  std::size_t message_elements() const override { return SIZE_MAX; }
  Status step(std::span<const Transfer> sends, std::span<const Transfer> recvs, Combine) override {
    if (++steps_ > 100000) std::abort();
    const Buffers& me = buffers_[rank_];
    for (const Transfer& t : sends) {
      if (t.src.count == 0) continue;
      if (t.peer >= world()) std::abort();
      if (!fits(t.src, t.source == Source::kInput ? me.input : me.send)) std::abort();
    }
    for (const Transfer& t : recvs) {
      if (t.src.count == 0) continue;
      if (t.peer >= world()) std::abort();
      const Buffers& from = buffers_[t.peer];
      if (!fits(t.src, t.source == Source::kInput ? from.input : from.send)) std::abort();
      if (!fits(Range{t.dst_offset, t.src.count}, me.recv)) std::abort();
    }
    return Status::ok();
  }

 private:
  std::size_t rank_;
  std::vector<Buffers> buffers_;
  std::size_t steps_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ruccl;
  if (size < 3) return 0;
  const std::size_t world = 1 + data[0] % 4;
  const std::size_t me = data[1] % world;
  const std::size_t segment = 1 + data[2];
  const std::size_t fields = fuzz::agree_record_words(world);
  std::vector<world::Decoded> decoded(world);
  std::size_t at = 3;
  for (std::size_t r = 0; r < world; ++r) {
    std::vector<std::uint64_t> words(world::wire_words(world), 0);
    const std::size_t bytes = std::min(fields * 8, size - std::min(size, at));
    if (bytes > 0) std::memcpy(words.data(), data + at, bytes);
    at += fields * 8;
    auto d = world::decode(words, r, world);
    if (!d) return 0;
    decoded[r] = std::move(d).value();
  }
  std::vector<const core::Request*> requests;
  std::vector<const Result<core::Geometry>*> locals;
  for (const auto& d : decoded) {
    requests.push_back(&d.request);
    locals.push_back(&d.geometry);
  }
  auto plan = core::agree(requests, locals, 5);
  if (!plan) return 0;
  const core::Plan& p = plan.value();
  const CollectiveKind kind = decoded[0].request.kind;
  if (p.root >= world) std::abort();
  std::vector<Buffers> buffers;
  for (std::size_t r = 0; r < world; ++r)
    buffers.push_back(layout(p, kind, decoded[r].request, decoded[r].geometry.value(), r, world));
  const core::Geometry& g = decoded[me].geometry.value();
  CheckedRun run(me, buffers);
  // Segments as the engine cuts them (at most ~64 here, to stay fast).
  const std::size_t per = std::max(segment, p.geometry.count / 64 + 1);
  switch (kind) {
    case CollectiveKind::kReduce:
      (void)ring::chain_reduce(run, ring::segment_ranges(p.geometry.count, per), p.root);
      break;
    case CollectiveKind::kBroadcast:
      (void)ring::chain_broadcast(run, ring::segment_ranges(p.geometry.count, per), p.root);
      break;
    case CollectiveKind::kAllToAllV: (void)ring::pairwise_all_to_all_v(run, p.a2a_rows, g.unit); break;
    case CollectiveKind::kAllReduce: (void)ring::ring_all_reduce(run, g.count, 1); break;
    case CollectiveKind::kAllGather: {
      std::vector<Range> chunks;
      for (std::size_t r = 0; r < world; ++r) chunks.push_back(Range{r * g.count, g.count});
      (void)ring::ring_all_gather(run, chunks);
      break;
    }
    case CollectiveKind::kReduceScatter:
      (void)ring::ring_reduce_scatter(run, ring::balanced_ranges(g.rows, world, g.unit));
      break;
  }
  return 0;
}
