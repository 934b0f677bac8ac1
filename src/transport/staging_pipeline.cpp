// staging::plan: cuts the messages into segments, numbers their rounds and
// orders the actions (see staging_pipeline.hpp for the model and invariants).
#include "transport/staging_pipeline.hpp"

#include <algorithm>

namespace ruccl::transport::staging {
namespace {

// One direction's segments, round-major, with the index of each round's first.
void cut(std::span<const StreamSizes> streams, std::size_t segment, std::size_t slots,
         std::size_t rounds, std::vector<Segment>& out, std::vector<std::size_t>& begin) {
  std::vector<std::vector<Segment>> by_round(rounds);
  for (std::size_t s = 0; s < streams.size(); ++s) {
    std::size_t round = 0;
    for (std::size_t m = 0; m < streams[s].size(); ++m)
      for (std::size_t offset = 0, count = 0; offset < streams[s][m]; offset += count, ++round) {
        count = std::min(segment, streams[s][m] - offset);
        by_round[round].push_back(Segment{s, m, offset, count, round, round % slots});
      }
  }
  begin.assign(1, 0);
  for (const auto& segments : by_round) {
    out.insert(out.end(), segments.begin(), segments.end());
    begin.push_back(out.size());
  }
}

std::size_t rounds_of(std::span<const StreamSizes> streams, std::size_t segment) {
  std::size_t rounds = 0;
  for (const StreamSizes& stream : streams) {
    std::size_t n = 0;
    for (std::size_t units : stream) n += units / segment + (units % segment != 0);
    rounds = std::max(rounds, n);
  }
  return rounds;
}

}  // namespace

Schedule plan(std::span<const StreamSizes> sends, std::span<const StreamSizes> recvs,
              std::size_t segment, std::size_t slots) {
  segment = std::max<std::size_t>(segment, 1);
  slots = std::max<std::size_t>(slots, 1);
  Schedule p;
  p.rounds = std::max(rounds_of(sends, segment), rounds_of(recvs, segment));
  p.slots = std::min(slots, p.rounds);
  cut(sends, segment, slots, p.rounds, p.sends, p.send_begin);
  cut(recvs, segment, slots, p.rounds, p.recvs, p.recv_begin);
  for (const auto* segments : {&p.sends, &p.recvs})
    for (const Segment& s : *segments) p.segment = std::max(p.segment, s.count);

  auto each = [&p](const std::vector<std::size_t>& begin, std::size_t round, ActionKind kind) {
    for (std::size_t i = begin[round]; i < begin[round + 1]; ++i) p.actions.push_back({kind, i});
  };
  std::size_t staged_out = 0;  // rounds whose stage-outs are issued
  for (std::size_t r = 0; r < p.rounds; ++r) {
    // Round q's buffers were last used by round q - K, sent by an exchange
    // before this one: issue every stage-out up to r + K - 1.
    for (; staged_out < p.rounds && staged_out < r + slots; ++staged_out)
      each(p.send_begin, staged_out, ActionKind::kStageOut);
    each(p.send_begin, r, ActionKind::kAwaitStageOut);
    if (r >= slots) each(p.recv_begin, r - slots, ActionKind::kAwaitStageIn);
    p.actions.push_back({ActionKind::kExchange, r});
    each(p.recv_begin, r, ActionKind::kStageIn);
  }
  for (std::size_t r = p.rounds > slots ? p.rounds - slots : 0; r < p.rounds; ++r)
    each(p.recv_begin, r, ActionKind::kAwaitStageIn);
  return p;
}

}  // namespace ruccl::transport::staging
