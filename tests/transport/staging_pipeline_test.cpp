// The staged pipeline's schedule (src/transport/staging_pipeline.hpp), checked
// exhaustively over small steps: every action list is run through a model of
// the host buffers that fails on any misuse (a buffer refilled before its
// segment was sent, received into before its stage-in completed, a segment
// sent before its stage-out completed, anything left in flight at the end),
// and through a loopback simulation in which asynchronous copies complete as
// late as allowed, so the bytes must still arrive where they belong.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "transport/staging_pipeline.hpp"

namespace ruccl::transport::staging {
namespace {

using Streams = std::vector<StreamSizes>;

std::string shape(const Streams& streams) {
  std::string out = "{";
  for (const StreamSizes& s : streams) {
    out += "[";
    for (std::size_t m : s) out += std::to_string(m) + " ";
    out += "]";
  }
  return out + "}";
}

// Segments of one direction: each message covered once, in order, by
// segments of 1..segment units; rounds consecutive per stream; round-major.
std::string check_segments(const Streams& streams, const std::vector<Segment>& segs,
                           const std::vector<std::size_t>& begin, const Schedule& p,
                           std::size_t segment, std::size_t slots) {
  if (begin.size() != p.rounds + 1 || begin.front() != 0 || begin.back() != segs.size())
    return "round index does not frame the segments";
  std::vector<std::size_t> next_round(streams.size(), 0);
  std::vector<std::pair<std::size_t, std::size_t>> at(streams.size(), {0, 0});  // message, offset
  for (std::size_t r = 0; r < p.rounds; ++r) {
    for (std::size_t i = begin[r]; i < begin[r + 1]; ++i) {
      const Segment& s = segs[i];
      if (s.round != r) return "segment " + std::to_string(i) + " is outside its round";
      if (s.stream >= streams.size() || s.round != next_round[s.stream]++)
        return "stream rounds are not consecutive";
      if (s.slot != s.round % slots || s.slot >= p.slots) return "wrong slot";
      auto& [m, off] = at[s.stream];
      while (m < streams[s.stream].size() && off == streams[s.stream][m]) ++m, off = 0;
      if (s.message != m || s.offset != off) return "segments skip or repeat units";
      if (s.count == 0 || s.count > segment || s.count > p.segment) return "bad segment size";
      off += s.count;
      if (off > streams[s.stream][m]) return "segment runs past its message";
    }
  }
  for (std::size_t st = 0; st < streams.size(); ++st) {
    auto [m, off] = at[st];
    while (m < streams[st].size() && off == streams[st][m]) ++m, off = 0;
    if (m != streams[st].size()) return "stream " + std::to_string(st) + " not fully covered";
  }
  return {};
}

// The buffer model. Empty when the schedule is sound.
std::string check_schedule(const Streams& sends, const Streams& recvs, std::size_t segment,
                           std::size_t slots) {
  const Schedule p = plan(sends, recvs, segment, slots);
  if (auto e = check_segments(sends, p.sends, p.send_begin, p, segment, slots); !e.empty())
    return "sends: " + e;
  if (auto e = check_segments(recvs, p.recvs, p.recv_begin, p, segment, slots); !e.empty())
    return "recvs: " + e;
  if (p.slots > slots) return "more slots than allowed";

  enum class Buf { kFree, kStaging, kReady, kHolding, kDraining };
  struct State {
    Buf state = Buf::kFree;
    std::size_t segment = 0;
  };
  std::map<std::pair<std::size_t, std::size_t>, State> out_bufs, in_bufs;  // (stream, slot)
  std::vector<int> staged(p.sends.size(), 0), sent(p.sends.size(), 0);
  std::vector<int> received(p.recvs.size(), 0), drained(p.recvs.size(), 0);
  std::vector<std::size_t> stage_out_pos(p.sends.size(), SIZE_MAX);
  std::vector<std::size_t> exchange_pos(p.rounds, SIZE_MAX);
  std::size_t next_round = 0;
  for (std::size_t k = 0; k < p.actions.size(); ++k) {
    const Action& a = p.actions[k];
    const std::string where = "action " + std::to_string(k) + ": ";
    switch (a.kind) {
      case ActionKind::kStageOut: {
        const Segment& s = p.sends.at(a.index);
        State& b = out_bufs[{s.stream, s.slot}];
        if (b.state != Buf::kFree) return where + "stage-out into a busy send buffer";
        if (staged[a.index]++) return where + "segment staged out twice";
        b = {Buf::kStaging, a.index};
        stage_out_pos[a.index] = k;
        break;
      }
      case ActionKind::kAwaitStageOut: {
        const Segment& s = p.sends.at(a.index);
        State& b = out_bufs[{s.stream, s.slot}];
        if (b.state != Buf::kStaging || b.segment != a.index)
          return where + "awaits a stage-out that was not issued";
        b.state = Buf::kReady;
        break;
      }
      case ActionKind::kExchange: {
        if (a.index != next_round++) return where + "rounds out of order";
        exchange_pos[a.index] = k;
        for (std::size_t i = p.send_begin[a.index]; i < p.send_begin[a.index + 1]; ++i) {
          State& b = out_bufs[{p.sends[i].stream, p.sends[i].slot}];
          if (b.state != Buf::kReady || b.segment != i)
            return where + "sends a segment whose stage-out has not completed";
          ++sent[i];
          b = {};
        }
        for (std::size_t i = p.recv_begin[a.index]; i < p.recv_begin[a.index + 1]; ++i) {
          State& b = in_bufs[{p.recvs[i].stream, p.recvs[i].slot}];
          if (b.state != Buf::kFree) return where + "receives into a buffer still in use";
          ++received[i];
          b = {Buf::kHolding, i};
        }
        break;
      }
      case ActionKind::kStageIn: {
        const Segment& s = p.recvs.at(a.index);
        State& b = in_bufs[{s.stream, s.slot}];
        if (b.state != Buf::kHolding || b.segment != a.index)
          return where + "stage-in of a segment not received";
        b.state = Buf::kDraining;
        break;
      }
      case ActionKind::kAwaitStageIn: {
        const Segment& s = p.recvs.at(a.index);
        State& b = in_bufs[{s.stream, s.slot}];
        if (b.state != Buf::kDraining || b.segment != a.index)
          return where + "awaits a stage-in that was not issued";
        ++drained[a.index];
        b = {};
        break;
      }
    }
  }
  if (next_round != p.rounds) return "not every round was exchanged";
  for (const auto* bufs : {&out_bufs, &in_bufs})
    for (const auto& [key, b] : *bufs)
      if (b.state != Buf::kFree) return "a buffer is still in use at the end";
  for (std::size_t i = 0; i < p.sends.size(); ++i)
    if (sent[i] != 1) return "send segment " + std::to_string(i) + " not sent exactly once";
  for (std::size_t i = 0; i < p.recvs.size(); ++i)
    if (received[i] != 1 || drained[i] != 1) return "recv segment not received/staged in once";
  // The overlap: with two buffers or more, every stage-out of round r + 1 is
  // issued before the exchange that sends round r.
  if (slots >= 2)
    for (std::size_t i = 0; i < p.sends.size(); ++i)
      if (p.sends[i].round > 0 && stage_out_pos[i] > exchange_pos[p.sends[i].round - 1])
        return "stage-out of round " + std::to_string(p.sends[i].round) +
               " comes after the exchange of the round before";
  return {};
}

// Loopback: the receive side of the schedule gets exactly what its send side
// sent (same streams). Stage-outs copy when awaited, stage-ins when awaited
// (as late as an asynchronous copy may finish), the exchange copies the send
// buffers of its round into the receive buffers of its round.
std::string check_loopback(const Streams& streams, std::size_t segment, std::size_t slots) {
  const Schedule p = plan(streams, streams, segment, slots);
  auto value = [](std::size_t s, std::size_t m, std::size_t u) {
    return static_cast<std::uint32_t>(s * 1000000 + m * 1000 + u + 1);
  };
  using Buffer = std::vector<std::uint32_t>;
  std::map<std::pair<std::size_t, std::size_t>, Buffer> out_bufs, in_bufs;
  std::vector<std::vector<Buffer>> dst(streams.size());
  for (std::size_t s = 0; s < streams.size(); ++s)
    for (std::size_t size : streams[s]) dst[s].emplace_back(size, 0);
  for (const Action& a : p.actions) {
    if (a.kind == ActionKind::kAwaitStageOut) {
      const Segment& seg = p.sends[a.index];
      Buffer& b = out_bufs[{seg.stream, seg.slot}];
      b.assign(seg.count, 0);
      for (std::size_t u = 0; u < seg.count; ++u)
        b[u] = value(seg.stream, seg.message, seg.offset + u);
    } else if (a.kind == ActionKind::kExchange) {
      for (std::size_t i = p.recv_begin[a.index]; i < p.recv_begin[a.index + 1]; ++i)
        in_bufs[{p.recvs[i].stream, p.recvs[i].slot}] =
            out_bufs[{p.sends[i].stream, p.sends[i].slot}];
    } else if (a.kind == ActionKind::kAwaitStageIn) {
      const Segment& seg = p.recvs[a.index];
      const Buffer& b = in_bufs[{seg.stream, seg.slot}];
      if (b.size() != seg.count) return "received segment has the wrong size";
      for (std::size_t u = 0; u < seg.count; ++u)
        dst[seg.stream][seg.message][seg.offset + u] = b[u];
    }
  }
  for (std::size_t s = 0; s < streams.size(); ++s)
    for (std::size_t m = 0; m < streams[s].size(); ++m)
      for (std::size_t u = 0; u < streams[s][m]; ++u)
        if (dst[s][m][u] != value(s, m, u))
          return "stream " + std::to_string(s) + " message " + std::to_string(m) + " unit " +
                 std::to_string(u) + " wrong";
  return {};
}

// Every stream of up to two messages with sizes from `sizes`.
std::vector<StreamSizes> all_streams() {
  const std::vector<std::size_t> sizes{0, 1, 2, 3, 5, 7};
  std::vector<StreamSizes> out{{}};
  for (std::size_t a : sizes) {
    out.push_back({a});
    for (std::size_t b : sizes) out.push_back({a, b});
  }
  return out;
}

TEST(StagingPipeline, ExhaustiveLoopbackSchedulesAreSound) {
  const auto streams = all_streams();
  std::size_t checked = 0;
  for (std::size_t segment = 1; segment <= 4; ++segment)
    for (std::size_t slots = 1; slots <= 3; ++slots)
      for (const StreamSizes& a : streams)
        for (const StreamSizes& b : streams)
          for (const Streams& shape_ : {Streams{a}, Streams{a, b}}) {
            const std::string sched = check_schedule(shape_, shape_, segment, slots);
            ASSERT_TRUE(sched.empty()) << shape(shape_) << " segment " << segment << " slots "
                                       << slots << ": " << sched;
            const std::string data = check_loopback(shape_, segment, slots);
            ASSERT_TRUE(data.empty()) << shape(shape_) << " segment " << segment << " slots "
                                      << slots << ": " << data;
            ++checked;
          }
  EXPECT_GT(checked, 20000u);
}

TEST(StagingPipeline, AsymmetricDirectionsAreSound) {
  // Sends and receives of different shapes (a ring step: to one peer, from
  // another; all-to-all: several each way), sampled.
  const auto streams = all_streams();
  std::mt19937 rng(12345);
  std::uniform_int_distribution<std::size_t> pick(0, streams.size() - 1), count(0, 3);
  for (int i = 0; i < 20000; ++i) {
    Streams sends(count(rng)), recvs(count(rng));
    for (auto& s : sends) s = streams[pick(rng)];
    for (auto& s : recvs) s = streams[pick(rng)];
    const std::size_t segment = 1 + count(rng), slots = 1 + count(rng);
    const std::string e = check_schedule(sends, recvs, segment, slots);
    ASSERT_TRUE(e.empty()) << "sends " << shape(sends) << " recvs " << shape(recvs)
                           << " segment " << segment << " slots " << slots << ": " << e;
  }
}

TEST(StagingPipeline, NothingToMoveHasNoActions) {
  for (const Streams& s : {Streams{}, Streams{{}}, Streams{{0, 0}, {0}}}) {
    const Schedule p = plan(s, s, 4, 2);
    EXPECT_EQ(p.rounds, 0u);
    EXPECT_EQ(p.slots, 0u);
    EXPECT_EQ(p.segment, 0u);
    EXPECT_TRUE(p.actions.empty());
    EXPECT_TRUE(p.sends.empty());
  }
}

TEST(StagingPipeline, TwoSlotsOverlapTheNextCopyWithTheSend) {
  // One 10-unit message each way, segments of 4: 4 + 4 + 2 in three rounds.
  const Streams s{{10}};
  const Schedule p = plan(s, s, 4, 2);
  ASSERT_EQ(p.rounds, 3u);
  EXPECT_EQ(p.slots, 2u);
  EXPECT_EQ(p.segment, 4u);
  ASSERT_EQ(p.sends.size(), 3u);
  EXPECT_EQ(p.sends[2].offset, 8u);
  EXPECT_EQ(p.sends[2].count, 2u);
  EXPECT_EQ(p.sends[2].slot, 0u);
  using K = ActionKind;
  const std::vector<Action> want{
      {K::kStageOut, 0}, {K::kStageOut, 1}, {K::kAwaitStageOut, 0}, {K::kExchange, 0},
      {K::kStageIn, 0},  {K::kStageOut, 2}, {K::kAwaitStageOut, 1}, {K::kExchange, 1},
      {K::kStageIn, 1},  {K::kAwaitStageOut, 2}, {K::kAwaitStageIn, 0}, {K::kExchange, 2},
      {K::kStageIn, 2},  {K::kAwaitStageIn, 1}, {K::kAwaitStageIn, 2}};
  EXPECT_EQ(p.actions, want);
}

TEST(StagingPipeline, OneSlotIsSequential) {
  const Streams s{{3, 2}};
  const Schedule p = plan(s, s, 2, 1);
  ASSERT_EQ(p.rounds, 3u);  // 2 + 1, then 2
  EXPECT_EQ(p.slots, 1u);
  using K = ActionKind;
  std::vector<Action> want;
  for (std::size_t r = 0; r < 3; ++r) {
    if (r > 0) want.push_back({K::kStageOut, r});
    else want.push_back({K::kStageOut, 0});
    want.push_back({K::kAwaitStageOut, r});
    if (r > 0) want.push_back({K::kAwaitStageIn, r - 1});
    want.push_back({K::kExchange, r});
    want.push_back({K::kStageIn, r});
  }
  want.push_back({K::kAwaitStageIn, 2});
  EXPECT_EQ(p.actions, want);
  // Message boundaries: a segment never spans two messages.
  EXPECT_EQ(p.sends[1].message, 0u);
  EXPECT_EQ(p.sends[1].count, 1u);
  EXPECT_EQ(p.sends[2].message, 1u);
}

TEST(StagingPipeline, WholeMessagesWhenTheSegmentIsUnbounded) {
  // TransportRun's default: one segment per message, so the wire carries the
  // direct path's messages; rounds are the messages to each peer.
  const Streams s{{1000, 7, 300}, {5}};
  const Schedule p = plan(s, s, SIZE_MAX, 2);
  EXPECT_EQ(p.rounds, 3u);
  EXPECT_EQ(p.segment, 1000u);
  ASSERT_EQ(p.sends.size(), 4u);
  EXPECT_EQ(p.send_begin, (std::vector<std::size_t>{0, 2, 3, 4}));
  for (const Segment& seg : p.sends) EXPECT_EQ(seg.offset, 0u);
  EXPECT_TRUE(check_schedule(s, s, SIZE_MAX, 2).empty());
}

TEST(StagingPipeline, ZeroSegmentAndSlotsCountAsOne) {
  const Streams s{{3}};
  const Schedule p = plan(s, s, 0, 0);
  EXPECT_EQ(p.rounds, 3u);
  EXPECT_EQ(p.slots, 1u);
  EXPECT_TRUE(check_schedule(s, s, 1, 1).empty());
  EXPECT_EQ(p.actions, plan(s, s, 1, 1).actions);
}

}  // namespace
}  // namespace ruccl::transport::staging
