// Every src/ring algorithm replayed on one thread through a RecordingRun (a
// fake ring::RankRun that records each step instead of moving bytes), for
// worlds 1..16 x message budgets x counts {0, 1, n-1, odd, large}. The replay
// then checks, without any executor:
//  - message matching: at every step, the i-th message rank s sends to rank d
//    is the i-th message d receives from s, with the same source range,
//    destination offset and source buffer (TransportRun tags a message with
//    (step, src, piece = i) and trusts exactly this), and every message holds
//    1..message_elements() elements, whole units;
//  - step agreement: every rank of a group runs the same number of steps (a
//    rank left waiting is reported as a deadlock);
//  - dataflow: each element carries the set of (rank, index) contributions it
//    holds; reductions must combine the same index, no step reads an element
//    a peer writes in that step (the in-process executor reads peers' memory
//    during the step), and at the end every output element holds every rank's
//    contribution exactly once (reductions) or the right source element
//    (copies), as the collective's contract says.
// The Broken* tests at the bottom feed deliberately wrong schedules through
// the same checks and expect them to fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ring/algorithms.hpp"
#include "ring/passes.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {
namespace {

constexpr std::size_t kMaxWorld = 16;

// What one element holds: how often each rank's input element `index` went in.
struct Val {
  std::array<std::uint8_t, kMaxWorld> from{};
  std::size_t index = 0;
  bool written = false;
  friend bool operator==(const Val&, const Val&) = default;
};
Val input_val(std::size_t rank, std::size_t index) {
  Val v;
  v.from[rank] = 1;
  v.index = index;
  v.written = true;
  return v;
}
Val reduced_val(std::size_t world, std::size_t index) {
  Val v;
  for (std::size_t r = 0; r < world; ++r) v.from[r] = 1;
  v.index = index;
  v.written = true;
  return v;
}
std::string val_string(const Val& v) {
  if (!v.written) return "unwritten";
  std::string s = "index " + std::to_string(v.index) + " from {";
  for (std::size_t r = 0; r < kMaxWorld; ++r)
    if (v.from[r])
      s += " " + std::to_string(r) + (v.from[r] > 1 ? "x" + std::to_string(v.from[r]) : "");
  return s + " }";
}

std::vector<Val> inputs(std::size_t rank, std::size_t n) {
  std::vector<Val> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = input_val(rank, i);
  return v;
}

struct Recorded {
  std::vector<Transfer> sends, recvs;
  Combine combine = Combine::kCopy;
};

// One rank's memory in the replay (see src/core/engine.cpp's layouts).
struct RankState {
  std::vector<Val> input;
  std::vector<Val> buf;        // the recv buffer (and send buffer unless send_is_input)
  bool send_is_input = false;  // all_to_all_v, the broadcast root
  bool aliased = false;        // in place: input is buf
  const std::vector<Val>& in() const { return aliased ? buf : input; }
  const std::vector<Val>& send() const { return send_is_input ? in() : buf; }
};

class Replay;

// The fake executor: records each step, moves nothing.
class RecordingRun final : public RankRun {
 public:
  RecordingRun(Replay& replay, std::size_t group, std::size_t rank, std::size_t world,
               std::size_t message_elements)
      : replay_(replay), group_(group), rank_(rank), world_(world), max_(message_elements) {}
  std::size_t rank() const override { return rank_; }
  std::size_t world() const override { return world_; }
  std::size_t message_elements() const override { return max_; }
  Status step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
              Combine combine) override;
  // With barrier_share (a level whose share is a barrier, as in-process), a
  // share counts as an empty step: a rank that shares once more or less than
  // its group's others fails the replay as one that steps so.
  Status share(Status mine) override {
    if (barrier_share) (void)step({}, {}, Combine::kCopy);
    return mine;
  }
  bool barrier_share = false;

 private:
  Replay& replay_;
  std::size_t group_, rank_, world_, max_;
};

// A group of ranks that step together (all ranks; a process's local ranks; the
// ranks with one local index across processes), and what each recorded.
struct Group {
  std::vector<std::size_t> members;          // global ranks, by rank in group
  std::vector<std::vector<Recorded>> steps;  // [rank in group][step]
};

class Replay {
 public:
  Replay(std::size_t world, std::size_t unit, std::size_t max)
      : states(world), unit_(unit), max_(max), events_(world) {}
  std::vector<RankState> states;
  std::vector<std::string> errors;

  // Every rank: input element i is (rank, i); a buffer of n unwritten elements.
  void fill(std::size_t n) {
    for (std::size_t r = 0; r < states.size(); ++r) {
      states[r].input = inputs(r, n);
      states[r].buf.assign(n, Val{});
    }
  }
  std::size_t add_group(std::vector<std::size_t> members) {
    groups_.push_back(Group{members, std::vector<std::vector<Recorded>>(members.size())});
    return groups_.size() - 1;
  }
  RecordingRun run(std::size_t group, std::size_t rank_in_group) {
    return RecordingRun(*this, group, rank_in_group, groups_[group].members.size(), max_);
  }
  void record(std::size_t group, std::size_t rank, std::span<const Transfer> sends,
              std::span<const Transfer> recvs, Combine combine) {
    Group& g = groups_[group];
    g.steps[rank].push_back({{sends.begin(), sends.end()}, {recvs.begin(), recvs.end()}, combine});
    events_[g.members[rank]].push_back({group, g.steps[rank].size() - 1});
  }
  void fail(const std::string& what) {
    if (errors.size() < 8) errors.push_back(what);
  }

  // Runs the recorded steps in an order every group allows (a group's step k
  // once all its members reached it), reporting what goes wrong.
  void simulate() {
    std::vector<std::size_t> next(events_.size(), 0), group_step(groups_.size(), 0);
    for (bool progress = true; progress;) {
      progress = false;
      for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
        const Group& g = groups_[gi];
        bool ready = true;
        for (std::size_t m : g.members)
          ready = ready && next[m] < events_[m].size() && events_[m][next[m]].group == gi &&
                  events_[m][next[m]].step == group_step[gi];
        if (!ready) continue;
        execute(gi, group_step[gi]++);
        for (std::size_t m : g.members) ++next[m];
        progress = true;
      }
    }
    for (std::size_t m = 0; m < events_.size(); ++m)
      if (next[m] != events_[m].size())
        return fail("deadlock: rank " + std::to_string(m) + " waits at its event " +
                    std::to_string(next[m]) + " of " + std::to_string(events_[m].size()) +
                    " (group " + std::to_string(events_[m][next[m]].group) + " step " +
                    std::to_string(events_[m][next[m]].step) + ")");
  }

  void expect(std::size_t rank, std::size_t at, const Val& want) {
    const Val& got = states[rank].buf.at(at);
    if (!(got == want))
      fail("rank " + std::to_string(rank) + " element " + std::to_string(at) + ": holds " +
           val_string(got) + ", expected " + val_string(want));
  }

 private:
  struct Event {
    std::size_t group, step;
  };

  void check_message(const std::string& where, const Transfer& t, std::size_t world) {
    if (t.peer >= world) fail(where + ": peer " + std::to_string(t.peer) + " out of the group");
    if (t.src.count == 0 || t.src.count > max_)
      fail(where + ": " + std::to_string(t.src.count) + " elements, budget " +
           std::to_string(max_));
    if (t.src.count % unit_ || t.src.offset % unit_ || t.dst_offset % unit_)
      fail(where + ": not whole units of " + std::to_string(unit_));
  }

  void execute(std::size_t gi, std::size_t k) {
    const Group& g = groups_[gi];
    const std::size_t n = g.members.size();
    const std::string at = "group " + std::to_string(gi) + " step " + std::to_string(k);
    // Matching: piece i of s -> d is piece i of d <- s.
    for (std::size_t s = 0; s < n; ++s) {
      for (const Transfer& t : g.steps[s][k].sends)
        check_message(at + " send of " + std::to_string(s), t, n);
      for (const Transfer& t : g.steps[s][k].recvs)
        check_message(at + " recv of " + std::to_string(s), t, n);
    }
    // out[s][d]: what s sends to d, in piece order; in[d][s]: what d takes from s.
    auto& out = out_;
    auto& in = in_;
    out.resize(std::max(out.size(), n));
    in.resize(std::max(in.size(), n));
    for (std::size_t r = 0; r < n; ++r) {
      out[r].resize(std::max(out[r].size(), n));
      in[r].resize(std::max(in[r].size(), n));
      for (std::size_t p = 0; p < n; ++p) out[r][p].clear(), in[r][p].clear();
    }
    for (std::size_t r = 0; r < n; ++r) {
      for (const Transfer& t : g.steps[r][k].sends)
        if (t.peer < n) out[r][t.peer].push_back(Transfer{0, t.src, t.dst_offset, t.source});
      for (const Transfer& t : g.steps[r][k].recvs)
        if (t.peer < n) in[r][t.peer].push_back(Transfer{0, t.src, t.dst_offset, t.source});
    }
    for (std::size_t s = 0; s < n; ++s)
      for (std::size_t d = 0; d < n; ++d) {
        // A rank's receive from itself with no send to itself is a local read
        // (the one-shot all-reduce's own input); otherwise pieces must pair.
        if (s == d && out[s][d].empty()) continue;
        if (out[s][d] != in[d][s])
          fail(at + ": rank " + std::to_string(s) + " sends " + std::to_string(out[s][d].size()) +
               " piece(s) to " + std::to_string(d) + ", which receives " +
               std::to_string(in[d][s].size()) + " that differ in size, offset or buffer");
      }
    // Dataflow: every read sees the state before the step.
    std::vector<std::vector<Val>> got(n);
    std::vector<std::vector<char>> read_buf(n);  // elements of buf a peer read
    for (std::size_t d = 0; d < n; ++d)
      for (const Transfer& t : g.steps[d][k].recvs) {
        if (t.peer >= n) continue;
        const RankState& src = states[g.members[t.peer]];
        const std::vector<Val>& mem = t.source == Source::kInput ? src.in() : src.send();
        const bool from_buf = &mem == &src.buf;
        if (read_buf[t.peer].empty()) read_buf[t.peer].assign(src.buf.size(), 0);
        for (std::size_t i = 0; i < t.src.count; ++i) {
          const std::size_t e = t.src.offset + i;
          if (e >= mem.size()) {
            fail(at + ": rank " + std::to_string(d) + " reads element " + std::to_string(e) +
                 " of a " + std::to_string(mem.size()) + "-element buffer");
            got[d].push_back(Val{});
            continue;
          }
          if (from_buf) read_buf[t.peer][e] = 1;
          got[d].push_back(mem[e]);
        }
      }
    for (std::size_t d = 0; d < n; ++d) {
      RankState& me = states[g.members[d]];
      std::vector<char> written(me.buf.size(), 0);
      std::size_t next = 0;
      for (const Transfer& t : g.steps[d][k].recvs) {
        if (t.peer >= n) continue;
        for (std::size_t i = 0; i < t.src.count; ++i, ++next) {
          const std::size_t e = t.dst_offset + i;
          auto where = [&] {
            return at + ": rank " + std::to_string(d) + " element " + std::to_string(e);
          };
          if (e >= me.buf.size()) {
            fail(where() + ": past its " + std::to_string(me.buf.size()) + "-element buffer");
            continue;
          }
          if (written[e]) fail(where() + ": written twice in one step");
          if (!read_buf[d].empty() && read_buf[d][e])
            fail(where() + ": written while a peer reads it");
          written[e] = 1;
          const Val in = got[d][next];
          if (!in.written) fail(where() + ": receives an unwritten element");
          Val base;
          switch (g.steps[d][k].combine) {
            case Combine::kCopy: me.buf[e] = in; continue;
            case Combine::kReduce: base = me.buf[e]; break;
            case Combine::kReduceInput: base = e < me.in().size() ? me.in()[e] : Val{}; break;
          }
          if (!base.written) fail(where() + ": reduces into an unwritten element");
          if (base.index != in.index)
            fail(where() + ": combines index " + std::to_string(base.index) + " with " +
                 std::to_string(in.index));
          for (std::size_t r = 0; r < kMaxWorld; ++r) base.from[r] += in.from[r];
          me.buf[e] = base;
        }
      }
    }
  }

  std::vector<Group> groups_;
  std::vector<std::vector<std::vector<Transfer>>> out_, in_;  // reused by execute()
  std::size_t unit_, max_;
  std::vector<std::vector<Event>> events_;
};

Status RecordingRun::step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
                          Combine combine) {
  replay_.record(group_, rank_, sends, recvs, combine);
  return Status::ok();
}

// ---- the algorithms, each with its layout and its contract ------------------

struct Shape {
  std::size_t world, units, unit, max;  // max: elements per message (a multiple of unit)
  std::string name() const {
    return "world " + std::to_string(world) + " units " + std::to_string(units) + " unit " +
           std::to_string(unit) + " budget " + std::to_string(max);
  }
};

// One group of all ranks; fn(run, rank) runs the algorithm of one rank.
void run_flat(Replay& rp, std::size_t world,
              const std::function<Status(RankRun&, std::size_t)>& fn) {
  std::vector<std::size_t> all(world);
  for (std::size_t r = 0; r < world; ++r) all[r] = r;
  const std::size_t g = rp.add_group(all);
  for (std::size_t r = 0; r < world; ++r) {
    RecordingRun run = rp.run(g, r);
    const Status s = fn(run, r);
    if (!s.is_ok()) rp.fail("rank " + std::to_string(r) + ": " + s.to_string());
  }
}

void finish(Replay& rp, const std::string& what) {
  if (rp.errors.empty()) rp.simulate();
  std::string all;
  for (const std::string& e : rp.errors) all += "\n  " + e;
  EXPECT_TRUE(rp.errors.empty()) << what << ":" << all;
}

// Reduce-scatter, all-gather and all-reduce share a layout: buf = send = recv
// of units * unit elements; reductions in place or not.
enum class Ring { kReduceScatter, kAllGather, kAllReduce };
void replay_ring(Ring kind, const Shape& sh, bool in_place) {
  const std::size_t n = sh.units * sh.unit, w = sh.world;
  const std::vector<Range> chunks = balanced_ranges(sh.units, w, sh.unit);
  Replay rp(w, sh.unit, sh.max);
  rp.fill(n);
  for (std::size_t r = 0; r < w; ++r) {
    RankState& s = rp.states[r];
    if (kind == Ring::kAllGather) {
      for (std::size_t e = chunks[r].offset; e < chunks[r].end(); ++e) s.buf[e] = s.input[e];
    } else if (in_place || w == 1) {  // in place, or the caller's copy when no step runs
      s.buf = s.input;
      s.aliased = in_place;
    }
  }
  run_flat(rp, w, [&](RankRun& run, std::size_t) {
    switch (kind) {
      case Ring::kReduceScatter: return ring_reduce_scatter(run, chunks);
      case Ring::kAllGather: return ring_all_gather(run, chunks);
      case Ring::kAllReduce: return ring_all_reduce(run, sh.units, sh.unit);
    }
    return Status::ok();
  });
  if (rp.errors.empty()) rp.simulate();
  for (std::size_t r = 0; r < w; ++r)
    for (std::size_t c = 0; c < w; ++c)
      for (std::size_t e = chunks[c].offset; e < chunks[c].end(); ++e) {
        if (kind == Ring::kReduceScatter && c != r) continue;  // partials
        rp.expect(r, e, kind == Ring::kAllGather ? input_val(c, e) : reduced_val(w, e));
      }
  const char* names[] = {"ring_reduce_scatter", "ring_all_gather", "ring_all_reduce"};
  finish(rp,
         std::string(names[static_cast<int>(kind)]) + (in_place ? " in place " : " ") + sh.name());
}

// The groups of N nodes x P processes x D local ranks (global rank
// (n * P + p) * D + d): per process its local ranks (local[n * P + p]), per
// node and local index its processes (node[n * D + d]), per process and local
// index the nodes (across[p * D + d]).
struct LevelGroups {
  std::vector<std::size_t> local, node, across;
};
LevelGroups level_groups(Replay& rp, std::size_t N, std::size_t P, std::size_t D) {
  auto rank = [&](std::size_t node, std::size_t p, std::size_t d) {
    return (node * P + p) * D + d;
  };
  auto group = [&](auto&& member, std::size_t size) {
    std::vector<std::size_t> m;
    for (std::size_t i = 0; i < size; ++i) m.push_back(member(i));
    return rp.add_group(m);
  };
  LevelGroups g{std::vector<std::size_t>(N * P), std::vector<std::size_t>(N * D),
                std::vector<std::size_t>(P * D)};
  for (std::size_t k = 0; k < N; ++k)
    for (std::size_t p = 0; p < P; ++p)
      g.local[k * P + p] = group([&](std::size_t d) { return rank(k, p, d); }, D);
  for (std::size_t k = 0; k < N; ++k)
    for (std::size_t d = 0; d < D; ++d)
      g.node[k * D + d] = group([&](std::size_t p) { return rank(k, p, d); }, P);
  for (std::size_t p = 0; p < P; ++p)
    for (std::size_t d = 0; d < D; ++d)
      g.across[p * D + d] = group([&](std::size_t k) { return rank(k, p, d); }, N);
  return g;
}

// Hierarchical all-reduce over N nodes x P processes x D local ranks (global
// (n * P + p) * D + d). One node: two levels (local, across processes); more:
// three (local, the node's processes, across nodes).
void replay_hierarchical(std::size_t N, std::size_t P, std::size_t D, const Shape& sh,
                         bool in_place) {
  const std::size_t n = sh.units * sh.unit, w = N * P * D;
  Replay rp(w, sh.unit, sh.max);
  const LevelGroups groups = level_groups(rp, N, P, D);
  const std::vector<std::size_t>&local = groups.local, &node = groups.node, &across = groups.across;
  rp.fill(n);
  for (std::size_t g = 0; g < w; ++g) {
    RankState& s = rp.states[g];
    if (in_place || w == 1) {
      s.buf = s.input;
      s.aliased = in_place;
    }
    const std::size_t d = g % D, p = g / D % P, k = g / D / P;
    RecordingRun l = rp.run(local[k * P + p], d), m = rp.run(node[k * D + d], p),
                 a = rp.run(across[p * D + d], k);
    // One node: the processes are the level across (as a world on one node runs it).
    RecordingRun c = rp.run(node[d], p);
    RankRun* const three[] = {&l, &m, &a};
    RankRun* const two[] = {&l, &c};
    const Status st = N > 1 ? hierarchical_all_reduce(three, sh.units, sh.unit)
                            : hierarchical_all_reduce(two, sh.units, sh.unit);
    if (!st.is_ok()) rp.fail("rank " + std::to_string(g) + ": " + st.to_string());
  }
  if (rp.errors.empty()) rp.simulate();
  for (std::size_t g = 0; g < w; ++g)
    for (std::size_t e = 0; e < n; ++e) rp.expect(g, e, reduced_val(w, e));
  finish(rp, "hierarchical_all_reduce " + std::to_string(N) + " x " + std::to_string(P) + " x " +
                 std::to_string(D) + (in_place ? " in place " : " ") + sh.name());
}

void replay_one_shot(const Shape& sh) {
  const std::size_t n = sh.units, w = sh.world;
  Replay rp(w, 1, sh.max);
  for (std::size_t r = 0; r < w; ++r) {
    rp.states[r].input = inputs(r, n);
    rp.states[r].buf = w == 1 ? rp.states[r].input : std::vector<Val>(n);
  }
  run_flat(rp, w, [&](RankRun& run, std::size_t) { return one_shot_all_reduce(run, n); });
  if (rp.errors.empty()) rp.simulate();
  for (std::size_t r = 0; r < w; ++r)
    for (std::size_t e = 0; e < n; ++e) rp.expect(r, e, reduced_val(w, e));
  finish(rp, "one_shot_all_reduce " + sh.name());
}

// Broadcast and reduce along a chain; segments of `segment_units` units.
void replay_chain(bool broadcast, const Shape& sh, std::size_t root, std::size_t segment_units) {
  const std::size_t n = sh.units * sh.unit, w = sh.world;
  const std::vector<Range> segments = segment_ranges(sh.units, segment_units, sh.unit);
  Replay rp(w, sh.unit, sh.max);
  rp.fill(n);
  for (std::size_t r = 0; r < w; ++r) {
    RankState& s = rp.states[r];
    if (broadcast && r == root) s.send_is_input = true;
    if (!broadcast && r == root && w == 1) s.buf = s.input;  // the caller's copy
  }
  run_flat(rp, w, [&](RankRun& run, std::size_t) {
    return broadcast ? chain_broadcast(run, segments, root) : chain_reduce(run, segments, root);
  });
  if (rp.errors.empty()) rp.simulate();
  for (std::size_t r = 0; r < w; ++r) {
    if (broadcast == (r == root)) continue;  // the root's own copy is the caller's
    for (std::size_t e = 0; e < n; ++e)
      rp.expect(r, e, broadcast ? input_val(root, e) : reduced_val(w, e));
  }
  finish(rp, std::string(broadcast ? "chain_broadcast" : "chain_reduce") + " root " +
                 std::to_string(root) + " segment units " + std::to_string(segment_units) + " " +
                 sh.name());
}

// all_to_all_v: rows[s][d] rows of sh.unit elements; send = input, recv = buf.
void replay_all_to_all_v(const Shape& sh, std::size_t most) {
  const std::size_t w = sh.world, row = sh.unit;
  std::vector<std::vector<std::size_t>> rows(w, std::vector<std::size_t>(w));
  for (std::size_t s = 0; s < w; ++s)
    for (std::size_t d = 0; d < w; ++d) rows[s][d] = (s * 7 + d * 3 + most) % (most + 1);
  Replay rp(w, row, sh.max);
  for (std::size_t r = 0; r < w; ++r) {
    std::size_t out = 0, in = 0;
    for (std::size_t p = 0; p < w; ++p) out += rows[r][p], in += rows[p][r];
    rp.states[r].input = inputs(r, out * row);
    rp.states[r].buf.assign(in * row, Val{});
    rp.states[r].send_is_input = true;
  }
  run_flat(rp, w, [&](RankRun& run, std::size_t) { return pairwise_all_to_all_v(run, rows, row); });
  if (rp.errors.empty()) rp.simulate();
  for (std::size_t d = 0; d < w; ++d) {
    std::size_t at = 0;  // rows landed so far at d, in source order
    for (std::size_t s = 0; s < w; ++s) {
      std::size_t send_at = 0;
      for (std::size_t p = 0; p < d; ++p) send_at += rows[s][p];
      for (std::size_t e = 0; e < rows[s][d] * row; ++e)
        rp.expect(d, at * row + e, input_val(s, send_at * row + e));
      at += rows[s][d];
    }
  }
  finish(rp, "pairwise_all_to_all_v most " + std::to_string(most) + " " + sh.name());
}

// Counts {0, 1, n-1, odd, large} in units, budgets of 1, 2 and 3 units and
// one larger than any count.
std::vector<std::size_t> counts(std::size_t w) { return {0, 1, w - 1, 2 * w + 3, 203}; }
std::vector<std::size_t> budgets() { return {1, 2, 3, 1 << 20}; }

TEST(RingReplay, RingPassesEveryWorldBudgetAndCount) {
  for (std::size_t w = 1; w <= kMaxWorld; ++w)
    for (std::size_t unit : {1, 3})
      for (std::size_t b : budgets())
        for (std::size_t c : counts(w)) {
          const Shape sh{w, c, unit, b * unit};
          for (Ring k : {Ring::kReduceScatter, Ring::kAllGather, Ring::kAllReduce})
            replay_ring(k, sh, false);
          replay_ring(Ring::kReduceScatter, sh, true);
          replay_ring(Ring::kAllReduce, sh, true);
        }
}

TEST(RingReplay, HierarchicalAllReduceEveryProcessByDeviceSplit) {
  for (std::size_t P = 1; P <= kMaxWorld; ++P)
    for (std::size_t D = 1; P * D <= kMaxWorld; ++D)
      for (std::size_t b : budgets())
        for (std::size_t c : counts(P * D)) {
          replay_hierarchical(1, P, D, Shape{P * D, c, 1, b}, false);
          if (c % 2) replay_hierarchical(1, P, D, Shape{P * D, c, 2, 2 * b}, true);
        }
}

// With a node level: every split of the world into nodes x processes x devices.
TEST(RingReplay, HierarchicalAllReduceEveryNodeByProcessByDeviceSplit) {
  for (std::size_t N = 2; N <= kMaxWorld; ++N)
    for (std::size_t P = 1; N * P <= kMaxWorld; ++P)
      for (std::size_t D = 1; N * P * D <= kMaxWorld; ++D)
        for (std::size_t b : budgets())
          for (std::size_t c : counts(N * P * D)) {
            const std::size_t w = N * P * D;
            replay_hierarchical(N, P, D, Shape{w, c, 1, b}, false);
            if (c % 2) replay_hierarchical(N, P, D, Shape{w, c, 2, 2 * b}, true);
          }
}

TEST(RingReplay, OneShotAllReduce) {
  for (std::size_t w = 1; w <= kMaxWorld; ++w)
    for (std::size_t b : budgets())
      for (std::size_t c : counts(w)) replay_one_shot(Shape{w, c, 1, b});
}

TEST(RingReplay, ChainBroadcastAndReduceEveryRoot) {
  for (std::size_t w = 1; w <= kMaxWorld; ++w)
    for (std::size_t unit : {1, 3})
      for (std::size_t b : budgets())
        for (std::size_t c : counts(w))
          for (std::size_t root : std::set<std::size_t>{0, w / 2, w - 1})
            for (std::size_t seg : {b, 3 * b + 1}) {  // one message per segment, or (budget 1) four
              if (seg != b && (unit > 1 || b > 1)) continue;
              replay_chain(true, Shape{w, c, unit, b * unit}, root, seg);
              replay_chain(false, Shape{w, c, unit, b * unit}, root, seg);
            }
}

TEST(RingReplay, PairwiseAllToAllV) {
  for (std::size_t w = 1; w <= kMaxWorld; ++w)
    for (std::size_t unit : {1, 3})
      for (std::size_t b : budgets())
        for (std::size_t most : {std::size_t{0}, std::size_t{1}, w - 1, 2 * w + 3, std::size_t{61}})
          replay_all_to_all_v(Shape{w, 0, unit, b * unit}, most);
}

// ---- the level-by-level collectives (ring/hierarchical_*.cpp) ---------------
// N nodes x P processes x D devices, ranks numbered innermost level first;
// with one node the levels are local and across processes (no node level).
enum class HKind { kBroadcast, kReduce, kAllGather, kReduceScatter };
void replay_hier_coll(HKind kind, std::size_t N, std::size_t P, std::size_t D, const Shape& sh,
                      std::size_t root, bool in_place, std::size_t segment_units) {
  const std::size_t w = N * P * D;
  const std::size_t per = sh.units * sh.unit;  // all-gather: each rank's block
  const std::size_t n = kind == HKind::kAllGather ? per * w : per;
  Replay rp(w, sh.unit, sh.max);
  const LevelGroups groups = level_groups(rp, N, P, D);
  const std::vector<std::size_t>&local = groups.local, &node = groups.node, &across = groups.across;
  rp.fill(n);
  std::vector<Range> blocks;
  if (kind == HKind::kAllGather)
    for (std::size_t r = 0; r < w; ++r) blocks.push_back(Range{r * per, per});
  if (kind == HKind::kReduceScatter) blocks = balanced_ranges(sh.units, w, sh.unit);
  const std::vector<Range> segments = segment_ranges(sh.units, segment_units, sh.unit);
  for (std::size_t g = 0; g < w; ++g) {
    RankState& s = rp.states[g];
    switch (kind) {
      case HKind::kBroadcast:
        if (g == root) s.send_is_input = true;
        break;
      case HKind::kReduce:
        if (g == root && (in_place || w == 1)) {
          s.buf = s.input;
          s.aliased = in_place;
        }
        break;
      case HKind::kAllGather:
        for (std::size_t e = blocks[g].offset; e < blocks[g].end(); ++e) s.buf[e] = s.input[e];
        break;
      case HKind::kReduceScatter:
        if (in_place || w == 1) {
          s.buf = s.input;
          s.aliased = in_place;
        }
        break;
    }
    const std::size_t d = g % D, p = g / D % P, k = g / D / P;
    RecordingRun l = rp.run(local[k * P + p], d), m = rp.run(node[k * D + d], p),
                 a = rp.run(across[p * D + d], k);
    l.barrier_share = true;
    RecordingRun c = rp.run(node[d], p);
    RankRun* const three[] = {&l, &m, &a};
    RankRun* const two[] = {&l, &c};
    std::span<RankRun* const> lv =
        N > 1 ? std::span<RankRun* const>(three) : std::span<RankRun* const>(two);
    Status st;
    switch (kind) {
      case HKind::kBroadcast: st = hierarchical_broadcast(lv, segments, root); break;
      case HKind::kReduce: st = hierarchical_reduce(lv, segments, root); break;
      case HKind::kAllGather: st = hierarchical_all_gather(lv, blocks); break;
      case HKind::kReduceScatter: st = hierarchical_reduce_scatter(lv, blocks); break;
    }
    if (!st.is_ok()) rp.fail("rank " + std::to_string(g) + ": " + st.to_string());
  }
  if (rp.errors.empty()) rp.simulate();
  for (std::size_t g = 0; g < w; ++g) {
    switch (kind) {
      case HKind::kBroadcast:
        if (g != root)
          for (std::size_t e = 0; e < n; ++e) rp.expect(g, e, input_val(root, e));
        break;
      case HKind::kReduce:
        if (g == root)
          for (std::size_t e = 0; e < n; ++e) rp.expect(g, e, reduced_val(w, e));
        break;
      case HKind::kAllGather:
        for (std::size_t c = 0; c < w; ++c)
          for (std::size_t e = blocks[c].offset; e < blocks[c].end(); ++e)
            rp.expect(g, e, input_val(c, e));
        break;
      case HKind::kReduceScatter:
        for (std::size_t e = blocks[g].offset; e < blocks[g].end(); ++e)
          rp.expect(g, e, reduced_val(w, e));
        break;
    }
  }
  const char* names[] = {"hbcast", "hreduce", "hallgather", "hreducescatter"};
  finish(rp, std::string(names[int(kind)]) + " " + std::to_string(N) + "x" + std::to_string(P) +
                 "x" + std::to_string(D) + " root " + std::to_string(root) +
                 (in_place ? " in place " : " ") + sh.name());
}

TEST(RingReplay, LevelByLevelCollectivesEveryNodeByProcessByDeviceSplit) {
  for (std::size_t N = 1; N <= 4; ++N)
    for (std::size_t P = 1; N * P <= 8; ++P)
      for (std::size_t D = 1; N * P * D <= 12; ++D) {
        const std::size_t w = N * P * D;
        for (std::size_t unit : {1, 3})
          for (std::size_t b : {1, 2, 1 << 20})
            for (std::size_t c : {std::size_t{0}, std::size_t{1}, w - 1, 2 * w + 3}) {
              const Shape sh{w, c, unit, b * unit};
              for (std::size_t root = 0; root < w; ++root)
                for (std::size_t seg : {b, 3 * b + 1}) {
                  if (seg != b && (unit > 1 || b > 1)) continue;
                  replay_hier_coll(HKind::kBroadcast, N, P, D, sh, root, false, seg);
                  replay_hier_coll(HKind::kReduce, N, P, D, sh, root, false, seg);
                  replay_hier_coll(HKind::kReduce, N, P, D, sh, root, true, seg);
                }
              replay_hier_coll(HKind::kAllGather, N, P, D, sh, 0, false, 1);
              replay_hier_coll(HKind::kReduceScatter, N, P, D, sh, 0, false, 1);
              replay_hier_coll(HKind::kReduceScatter, N, P, D, sh, 0, true, 1);
            }
      }
}

// ---- the checks can fail -----------------------------------------------------
// Each broken schedule below must be caught; the replay's messages name why.
std::vector<std::string> broken(std::size_t w, std::size_t n,
                                const std::function<Status(RankRun&, std::size_t)>& fn,
                                std::size_t max = 2) {
  Replay rp(w, 1, max);
  rp.fill(n);
  run_flat(rp, w, fn);
  if (rp.errors.empty()) rp.simulate();
  for (std::size_t r = 0; r < w; ++r)
    for (std::size_t e = 0; e < n; ++e) rp.expect(r, e, reduced_val(w, e));
  return rp.errors;
}
bool any_contains(const std::vector<std::string>& v, const std::string& needle) {
  for (const std::string& s : v)
    if (s.find(needle) != std::string::npos) return true;
  return false;
}

TEST(RingReplayBroken, ReceiverCutsMessagesDifferentlyThanSender) {
  const auto errors = broken(4, 40, [](RankRun& run, std::size_t rank) {
    const auto chunks = balanced_ranges(40, 4);
    std::vector<Transfer> sends, recvs;
    const RingStep s = reduce_scatter_step(rank, 4, 0);
    append_messages(sends, ring_next(rank, 4), chunks[s.send_chunk], chunks[s.send_chunk].offset,
                    2);
    append_messages(recvs, ring_prev(rank, 4), chunks[s.recv_chunk], chunks[s.recv_chunk].offset,
                    1);
    return run.step(sends, recvs, Combine::kReduceInput);
  });
  EXPECT_TRUE(any_contains(errors, "that differ in size")) << ::testing::PrintToString(errors);
}

TEST(RingReplayBroken, OneRankStepsOnceMore) {
  const auto errors = broken(3, 9, [](RankRun& run, std::size_t rank) {
    RUCCL_TRY(ring_all_reduce(run, 9, 1));
    return rank == 1 ? run.step({}, {}, Combine::kCopy) : Status::ok();
  });
  EXPECT_TRUE(any_contains(errors, "deadlock: rank 1")) << ::testing::PrintToString(errors);
}

TEST(RingReplayBroken, AllGatherThatReducesCountsChunksTwice) {
  const auto errors = broken(4, 12, [](RankRun& run, std::size_t) {
    const auto chunks = balanced_ranges(12, 4);
    RUCCL_TRY(ring_all_reduce(run, 12, 1));
    return ring_pass(run, chunks, all_gather_step, Combine::kReduce, Source::kSend);
  });
  EXPECT_TRUE(any_contains(errors, "x2")) << ::testing::PrintToString(errors);
}

TEST(RingReplayBroken, AllGatherPatternInAReduceScatterLeavesAChunkShort) {
  const auto errors = broken(4, 12, [](RankRun& run, std::size_t) {
    const auto chunks = balanced_ranges(12, 4);
    RUCCL_TRY(ring_pass(run, chunks, all_gather_step, Combine::kReduceInput, Source::kInput));
    return ring_all_gather(run, chunks);
  });
  EXPECT_FALSE(errors.empty());
}

TEST(RingReplayBroken, SkippingTheAllGatherLeavesOutputsUnwritten) {
  const auto errors = broken(3, 9, [](RankRun& run, std::size_t) {
    return ring_reduce_scatter(run, balanced_ranges(9, 3));
  });
  EXPECT_TRUE(any_contains(errors, "holds unwritten")) << ::testing::PrintToString(errors);
}

}  // namespace
}  // namespace ruccl::ring
