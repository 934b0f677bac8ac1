// The pure ring schedules (src/ring/schedule.hpp), exhaustively for world 1..9.
// Each schedule is checked by simulating what it moves, not by restating it.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "ring/schedule.hpp"

namespace ruccl::ring {
namespace {

constexpr std::size_t kMaxWorld = 9;

std::vector<std::size_t> unit_counts(std::size_t world) {
  return {0, 1, world - 1, world, world + 1, 2 * world + 3, 1000, 1001,
          std::size_t{1} << 40, (std::size_t{1} << 40) + 7};
}

std::string where(std::size_t world, std::size_t a, std::size_t b = 0, std::size_t c = 0) {
  return "world=" + std::to_string(world) + " a=" + std::to_string(a) + " b=" + std::to_string(b) +
         " c=" + std::to_string(c);
}

TEST(BalancedRanges, CoverContiguouslyAndDifferByAtMostOneUnit) {
  for (std::size_t parts = 1; parts <= kMaxWorld; ++parts) {
    for (std::size_t units : unit_counts(parts)) {
      for (std::size_t unit : {std::size_t{1}, std::size_t{3}}) {
        SCOPED_TRACE(where(parts, units, unit));
        const auto ranges = balanced_ranges(units, parts, unit);
        ASSERT_EQ(ranges.size(), parts);
        std::size_t next = 0;
        for (std::size_t i = 0; i < parts; ++i) {
          EXPECT_EQ(ranges[i].offset, next) << "part " << i;
          EXPECT_EQ(ranges[i].count % unit, 0u);
          // The first units % parts parts get one unit more.
          const std::size_t want = (units / parts + (i < units % parts ? 1 : 0)) * unit;
          EXPECT_EQ(ranges[i].count, want) << "part " << i;
          EXPECT_EQ(balanced_range(units, parts, i, unit), ranges[i]) << "part " << i;
          next = ranges[i].end();
        }
        EXPECT_EQ(next, units * unit);
        std::size_t lo = std::numeric_limits<std::size_t>::max(), hi = 0;
        for (const auto& r : ranges) {
          lo = std::min(lo, r.count);
          hi = std::max(hi, r.count);
        }
        EXPECT_LE(hi - lo, unit);
      }
    }
  }
}

// Simulates the ring reduce-scatter: contributors[r][c] = the ranks whose input
// is folded into rank r's copy of chunk c.
TEST(ReduceScatterStep, EveryChunkCollectsEveryRankOnceAndEndsAtItsOwner) {
  for (std::size_t world = 1; world <= kMaxWorld; ++world) {
    std::vector<std::vector<std::set<std::size_t>>> contrib(world,
                                                            std::vector<std::set<std::size_t>>(world));
    for (std::size_t r = 0; r < world; ++r)
      for (std::size_t c = 0; c < world; ++c) contrib[r][c] = {r};
    for (std::size_t step = 0; step + 1 < world; ++step) {
      auto next = contrib;
      for (std::size_t r = 0; r < world; ++r) {
        SCOPED_TRACE(where(world, r, step));
        const std::size_t prev = ring_prev(r, world);
        const RingStep mine = reduce_scatter_step(r, world, step);
        const RingStep theirs = reduce_scatter_step(prev, world, step);
        ASSERT_LT(mine.send_chunk, world);
        ASSERT_LT(mine.recv_chunk, world);
        // What I receive is what my predecessor sends.
        EXPECT_EQ(mine.recv_chunk, theirs.send_chunk);
        // In place: I never overwrite a chunk my successor reads this step.
        EXPECT_NE(mine.recv_chunk, mine.send_chunk);
        const auto& incoming = contrib[prev][theirs.send_chunk];
        auto& target = next[r][mine.recv_chunk];
        for (std::size_t x : incoming) {
          EXPECT_EQ(target.count(x), 0u) << "rank " << x << " folded twice into chunk "
                                         << mine.recv_chunk;
          target.insert(x);
        }
      }
      contrib = std::move(next);
    }
    for (std::size_t r = 0; r < world; ++r) {
      EXPECT_EQ(contrib[r][r].size(), world) << "world " << world << ": chunk " << r
                                             << " incomplete at its owner";
    }
  }
}

TEST(AllGatherStep, EveryRankReceivesEveryChunkExactlyOnce) {
  for (std::size_t world = 1; world <= kMaxWorld; ++world) {
    std::vector<std::set<std::size_t>> have(world);
    for (std::size_t r = 0; r < world; ++r) have[r] = {r};
    for (std::size_t step = 0; step + 1 < world; ++step) {
      auto next = have;
      for (std::size_t r = 0; r < world; ++r) {
        SCOPED_TRACE(where(world, r, step));
        const std::size_t prev = ring_prev(r, world);
        const RingStep mine = all_gather_step(r, world, step);
        const RingStep theirs = all_gather_step(prev, world, step);
        EXPECT_EQ(mine.recv_chunk, theirs.send_chunk);
        EXPECT_NE(mine.recv_chunk, mine.send_chunk);
        EXPECT_EQ(have[r].count(mine.send_chunk), 1u) << "sends a chunk it does not hold";
        EXPECT_EQ(have[r].count(mine.recv_chunk), 0u) << "receives a chunk twice";
        next[r].insert(mine.recv_chunk);
      }
      have = std::move(next);
    }
    for (std::size_t r = 0; r < world; ++r) EXPECT_EQ(have[r].size(), world) << "world " << world;
  }
}

TEST(ChainSchedule, PositionsAndRanksAreInverse) {
  for (std::size_t world = 1; world <= kMaxWorld; ++world) {
    for (std::size_t root = 0; root < world; ++root) {
      SCOPED_TRACE(where(world, root));
      EXPECT_EQ(broadcast_position(root, root, world), 0u);
      EXPECT_EQ(reduce_position(root, root, world), world - 1);
      std::set<std::size_t> bpos, rpos;
      for (std::size_t r = 0; r < world; ++r) {
        const std::size_t b = broadcast_position(r, root, world);
        const std::size_t p = reduce_position(r, root, world);
        ASSERT_LT(b, world);
        ASSERT_LT(p, world);
        bpos.insert(b);
        rpos.insert(p);
        EXPECT_EQ(chain_rank(b, root, world, true), r);
        EXPECT_EQ(chain_rank(p, root, world, false), r);
      }
      EXPECT_EQ(bpos.size(), world);
      EXPECT_EQ(rpos.size(), world);
    }
  }
}

// Flow of segments along the chain: what position p sends at step k arrives
// at position p+1 at step k; nobody forwards what it has not received yet.
TEST(ChainSchedule, BroadcastDeliversEverySegmentEverywhere) {
  for (std::size_t world = 1; world <= kMaxWorld; ++world) {
    for (std::size_t segments : {0u, 1u, 2u, 3u, 5u, 17u}) {
      SCOPED_TRACE(where(world, segments));
      const std::size_t steps = chain_steps(world, segments);
      if (world < 2 || segments == 0) {
        EXPECT_EQ(steps, 0u);
      }
      std::vector<std::set<std::size_t>> have(world);
      for (std::size_t s = 0; s < segments; ++s) have[0].insert(s);
      bool last_step_moves = steps == 0;
      for (std::size_t step = 0; step < steps; ++step) {
        auto next = have;
        for (std::size_t pos = 0; pos < world; ++pos) {
          const auto send = chain_send_segment(pos, world, segments, step);
          const auto recv = chain_recv_segment(pos, world, segments, step);
          if (pos + 1 == world) {
            EXPECT_FALSE(send.has_value()) << "the tail sends";
          }
          if (pos == 0) {
            EXPECT_FALSE(recv.has_value()) << "the head receives";
          }
          if (send) {
            ASSERT_LT(*send, segments);
            EXPECT_EQ(have[pos].count(*send), 1u) << "pos " << pos << " forwards segment " << *send
                                                  << " before receiving it (step " << step << ")";
            EXPECT_EQ(chain_recv_segment(pos + 1, world, segments, step), send);
          }
          if (recv) {
            ASSERT_LT(*recv, segments);
            EXPECT_EQ(chain_send_segment(pos - 1, world, segments, step), recv);
            EXPECT_EQ(have[pos].count(*recv), 0u) << "segment received twice";
            EXPECT_NE(send, recv) << "receives into the segment it sends";
            next[pos].insert(*recv);
            if (step + 1 == steps) last_step_moves = true;
          }
        }
        have = std::move(next);
      }
      for (std::size_t pos = 0; pos < world; ++pos) {
        EXPECT_EQ(have[pos].size(), segments) << "position " << pos;
      }
      EXPECT_TRUE(last_step_moves) << "chain_steps is larger than needed";
    }
  }
}

TEST(ChainSchedule, ReduceBringsEveryContributionToTheRoot) {
  for (std::size_t world = 1; world <= kMaxWorld; ++world) {
    for (std::size_t root = 0; root < world; ++root) {
      for (std::size_t segments : {0u, 1u, 2u, 4u, 9u}) {
        SCOPED_TRACE(where(world, root, segments));
        // contrib[pos][seg]: ranks folded into position pos's copy of seg.
        std::vector<std::vector<std::set<std::size_t>>> contrib(
            world, std::vector<std::set<std::size_t>>(segments));
        for (std::size_t pos = 0; pos < world; ++pos)
          for (std::size_t s = 0; s < segments; ++s)
            contrib[pos][s] = {chain_rank(pos, root, world, false)};
        const std::size_t steps = chain_steps(world, segments);
        for (std::size_t step = 0; step < steps; ++step) {
          auto next = contrib;
          for (std::size_t pos = 0; pos + 1 < world; ++pos) {
            const auto send = chain_send_segment(pos, world, segments, step);
            if (!send) continue;
            // Before forwarding, pos must hold the contributions of positions 0..pos.
            EXPECT_EQ(contrib[pos][*send].size(), pos + 1)
                << "pos " << pos << " forwards segment " << *send << " early (step " << step << ")";
            for (std::size_t x : contrib[pos][*send]) {
              EXPECT_EQ(next[pos + 1][*send].count(x), 0u) << "contribution of rank " << x << " twice";
              next[pos + 1][*send].insert(x);
            }
          }
          contrib = std::move(next);
        }
        for (std::size_t s = 0; s < segments; ++s) {
          EXPECT_EQ(contrib[world - 1][s].size(), world) << "segment " << s << " at the root";
        }
        EXPECT_EQ(chain_rank(world - 1, root, world, false), root);
      }
    }
  }
}

// Grids of nested levels (innermost first) the hierarchical algorithms run
// over: one process of several ranks, processes of one rank, nodes of
// processes of ranks, and levels of one rank anywhere.
const std::vector<std::vector<std::size_t>> kGrids = {{1},       {4},       {2, 3},    {3, 2},
                                                      {1, 3},    {3, 1},    {2, 2, 2}, {3, 1, 2},
                                                      {1, 2, 3}, {2, 3, 2}, {1, 1, 1}};

std::size_t grid_ranks(const std::vector<std::size_t>& worlds) {
  std::size_t n = 1;
  for (std::size_t w : worlds) n *= w;
  return n;
}

// The ranks of `rank`'s level-`level` group: those with its coordinates at
// every other level, in the order of their coordinate at `level`.
std::vector<std::size_t> group_of(std::size_t rank, const std::vector<std::size_t>& worlds,
                                  std::size_t level) {
  const std::vector<std::size_t> mine = level_coordinates(rank, worlds);
  std::vector<std::size_t> group(worlds[level], SIZE_MAX);
  for (std::size_t r = 0; r < grid_ranks(worlds); ++r) {
    const std::vector<std::size_t> c = level_coordinates(r, worlds);
    bool same = true;
    for (std::size_t j = 0; j < worlds.size(); ++j) same = same && (j == level || c[j] == mine[j]);
    if (same) group[c[level]] = r;
  }
  return group;
}

TEST(LevelCoordinates, EveryRankHasItsOwnAndNeighboursDifferInnermostFirst) {
  for (const auto& worlds : kGrids) {
    const std::size_t n = grid_ranks(worlds);
    std::set<std::vector<std::size_t>> seen;
    for (std::size_t r = 0; r < n; ++r) {
      SCOPED_TRACE(where(n, r));
      const std::vector<std::size_t> c = level_coordinates(r, worlds);
      ASSERT_EQ(c.size(), worlds.size());
      for (std::size_t i = 0; i < c.size(); ++i) EXPECT_LT(c[i], worlds[i]);
      EXPECT_TRUE(seen.insert(c).second) << "two ranks with one set of coordinates";
      // The next rank is the next one of the innermost level that is not full.
      if (r + 1 < n) {
        const std::vector<std::size_t> d = level_coordinates(r + 1, worlds);
        std::size_t i = 0;
        while (c[i] + 1 == worlds[i]) EXPECT_EQ(d[i++], 0u);
        EXPECT_EQ(d[i], c[i] + 1);
        for (std::size_t j = i + 1; j < c.size(); ++j) EXPECT_EQ(d[j], c[j]);
      }
    }
    EXPECT_TRUE(level_coordinates(n, worlds).empty()) << "a rank past the grid";
  }
  EXPECT_TRUE(level_coordinates(0, std::vector<std::size_t>{2, 0}).empty());
}

// A broadcast along rooted_levels, outermost level first: a group takes part
// as a whole, its member with the root's coordinate holds the tensor by then,
// and at the end every rank does.
TEST(RootedLevels, ABroadcastOutermostFirstReachesEveryRankOnce) {
  for (const auto& worlds : kGrids) {
    const std::size_t n = grid_ranks(worlds);
    for (std::size_t root = 0; root < n; ++root) {
      SCOPED_TRACE(where(n, root, worlds.size()));
      const std::vector<std::size_t> rc = level_coordinates(root, worlds);
      std::vector<bool> has(n, false);
      has[root] = true;
      std::vector<std::size_t> received(n, 0);
      for (std::size_t level = worlds.size(); level-- > 0;) {
        for (std::size_t r = 0; r < n; ++r) {
          const std::vector<std::size_t> group = group_of(r, worlds, level);
          if (group[0] != r) continue;  // each group once, from its first member
          const bool part = rooted_levels(level_coordinates(r, worlds), rc) > level;
          for (std::size_t m : group)
            EXPECT_EQ(rooted_levels(level_coordinates(m, worlds), rc) > level, part)
                << "a group takes part in level " << level << " only in part";
          if (!part) continue;
          const std::size_t head = group[rc[level]];
          ASSERT_TRUE(has[head]) << "level " << level << ": rank " << head
                                 << " sends before it received";
          for (std::size_t m : group)
            if (m != head) has[m] = true, ++received[m];
        }
      }
      for (std::size_t r = 0; r < n; ++r) {
        EXPECT_TRUE(has[r]) << "rank " << r << " never received";
        EXPECT_EQ(received[r], r == root ? 0u : 1u) << "rank " << r;
      }
      EXPECT_EQ(rooted_levels(rc, rc), worlds.size()) << "the root takes part everywhere";
    }
  }
}

// A reduce along rooted_levels, innermost level first: each taking part
// group folds its members' contributions into the member with the root's
// coordinate, and the root ends with every rank's contribution exactly once.
TEST(RootedLevels, AReduceInnermostFirstBringsEveryContributionToTheRootOnce) {
  for (const auto& worlds : kGrids) {
    const std::size_t n = grid_ranks(worlds);
    for (std::size_t root = 0; root < n; ++root) {
      SCOPED_TRACE(where(n, root, worlds.size()));
      const std::vector<std::size_t> rc = level_coordinates(root, worlds);
      std::vector<std::multiset<std::size_t>> held(n);
      for (std::size_t r = 0; r < n; ++r) held[r] = {r};
      for (std::size_t level = 0; level < worlds.size(); ++level) {
        for (std::size_t r = 0; r < n; ++r) {
          const std::vector<std::size_t> group = group_of(r, worlds, level);
          if (group[0] != r || rooted_levels(level_coordinates(r, worlds), rc) <= level) continue;
          const std::size_t tail = group[rc[level]];
          for (std::size_t m : group) {
            if (m == tail) continue;
            held[tail].insert(held[m].begin(), held[m].end());
            held[m].clear();
          }
        }
      }
      std::multiset<std::size_t> all;
      for (std::size_t r = 0; r < n; ++r) all.insert(r);
      EXPECT_EQ(held[root], all);
    }
  }
}

// Hierarchical all-gather, outermost level first: in each group member m
// brings its chunk (level_blocks), which it holds, every member sees the
// same chunks, they do not overlap, and at the end every rank holds every block.
TEST(LevelBlocks, AnAllGatherOutermostFirstGivesEveryRankEveryBlock) {
  for (const auto& worlds : kGrids) {
    const std::size_t n = grid_ranks(worlds);
    SCOPED_TRACE(where(n, worlds.size()));
    std::vector<std::set<std::size_t>> held(n);
    for (std::size_t r = 0; r < n; ++r) held[r] = {r};
    for (std::size_t level = worlds.size(); level-- > 0;) {
      auto next = held;
      for (std::size_t r = 0; r < n; ++r) {
        const std::vector<std::size_t> group = group_of(r, worlds, level);
        std::set<std::size_t> gathered;
        for (std::size_t m = 0; m < group.size(); ++m) {
          const auto chunk = level_blocks(level_coordinates(r, worlds), worlds, level, m);
          EXPECT_EQ(chunk, level_blocks(level_coordinates(group[m], worlds), worlds, level, m))
              << "rank " << r << " and its member " << group[m] << " see different chunks";
          for (std::size_t b : chunk) {
            EXPECT_EQ(held[group[m]].count(b), 1u) << "member " << group[m] << " sends block " << b
                                                   << " it does not hold (level " << level << ")";
            EXPECT_TRUE(gathered.insert(b).second) << "block " << b << " in two chunks";
          }
        }
        next[r].insert(gathered.begin(), gathered.end());
      }
      held = std::move(next);
    }
    for (std::size_t r = 0; r < n; ++r) EXPECT_EQ(held[r].size(), n) << "rank " << r;
  }
}

// Hierarchical reduce-scatter, innermost level first: member m of each group
// folds the group's partial sums of its chunk's blocks; at the end rank r's
// block r holds every rank's contribution exactly once.
TEST(LevelBlocks, AReduceScatterInnermostFirstLeavesEachRankTheSumOfItsBlock) {
  for (const auto& worlds : kGrids) {
    const std::size_t n = grid_ranks(worlds);
    SCOPED_TRACE(where(n, worlds.size()));
    // sums[r][b]: the contributions in rank r's partial sum of block b.
    std::vector<std::vector<std::multiset<std::size_t>>> sums(
        n, std::vector<std::multiset<std::size_t>>(n));
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t b = 0; b < n; ++b) sums[r][b] = {r};
    for (std::size_t level = 0; level < worlds.size(); ++level) {
      auto next = sums;
      for (std::size_t r = 0; r < n; ++r) {
        const std::vector<std::size_t> group = group_of(r, worlds, level);
        const std::size_t me = level_coordinates(r, worlds)[level];
        for (std::size_t b : level_blocks(level_coordinates(r, worlds), worlds, level, me)) {
          next[r][b].clear();
          for (std::size_t m : group) next[r][b].insert(sums[m][b].begin(), sums[m][b].end());
        }
      }
      sums = std::move(next);
    }
    std::multiset<std::size_t> all;
    for (std::size_t r = 0; r < n; ++r) all.insert(r);
    for (std::size_t r = 0; r < n; ++r) EXPECT_EQ(sums[r][r], all) << "rank " << r;
  }
  EXPECT_TRUE(
      level_blocks(std::vector<std::size_t>{0, 0}, std::vector<std::size_t>{2, 2}, 2, 0).empty());
  EXPECT_TRUE(
      level_blocks(std::vector<std::size_t>{0, 0}, std::vector<std::size_t>{2, 2}, 0, 2).empty());
}

TEST(SegmentRanges, CoverInFullSegments) {
  for (std::size_t units : {0u, 1u, 2u, 7u, 64u, 100u, 1001u}) {
    for (std::size_t seg : {1u, 2u, 3u, 64u, 5000u}) {
      for (std::size_t unit : {1u, 4u}) {
        SCOPED_TRACE(where(units, seg, unit));
        const auto ranges = segment_ranges(units, seg, unit);
        EXPECT_EQ(ranges.size(), (units + seg - 1) / seg);
        std::size_t next = 0;
        for (std::size_t i = 0; i < ranges.size(); ++i) {
          EXPECT_EQ(ranges[i].offset, next);
          EXPECT_GT(ranges[i].count, 0u);
          EXPECT_EQ(ranges[i].count % unit, 0u);
          EXPECT_LE(ranges[i].count, seg * unit);
          if (i + 1 < ranges.size()) {
            EXPECT_EQ(ranges[i].count, seg * unit);
          }
          next = ranges[i].end();
        }
        EXPECT_EQ(next, units * unit);
      }
    }
  }
}

TEST(PairwiseAllToAll, SendAndRecvPeersAreInverse) {
  for (std::size_t world = 1; world <= kMaxWorld; ++world) {
    for (std::size_t r = 0; r < world; ++r) {
      std::set<std::size_t> sent_to, heard_from;
      for (std::size_t step = 0; step < world; ++step) {
        const std::size_t to = a2a_send_peer(r, world, step);
        const std::size_t from = a2a_recv_peer(r, world, step);
        ASSERT_LT(to, world);
        ASSERT_LT(from, world);
        EXPECT_EQ(a2a_recv_peer(to, world, step), r) << where(world, r, step);
        EXPECT_EQ(a2a_send_peer(from, world, step), r) << where(world, r, step);
        if (step == 0) {
          EXPECT_EQ(to, r);
          EXPECT_EQ(from, r);
        }
        sent_to.insert(to);
        heard_from.insert(from);
      }
      EXPECT_EQ(sent_to.size(), world);
      EXPECT_EQ(heard_from.size(), world);
    }
  }
}

// One-shot all-reduce: at step k every rank takes rank k's input (copied at
// step 0, reduced after: the same rank order everywhere), and rank k's sends
// reach every other rank exactly once, matching their receives.
TEST(OneShotStep, EveryRankFoldsEveryInputOnceInRankOrder) {
  for (std::size_t world = 1; world <= kMaxWorld; ++world) {
    for (std::size_t r = 0; r < world; ++r) {
      std::vector<std::size_t> folded;
      std::multiset<std::size_t> sent_to;
      for (std::size_t step = 0; step < world; ++step) {
        const OneShotStep s = one_shot_step(r, world, step);
        folded.push_back(s.recv_from);
        EXPECT_EQ(s.combine, step == 0 ? Combine::kCopy : Combine::kReduce) << where(world, r, step);
        if (step != r) {
          EXPECT_TRUE(s.send_to.empty()) << where(world, r, step);
        }
        for (std::size_t to : s.send_to) {
          EXPECT_NE(to, r) << where(world, r, step);
          EXPECT_EQ(one_shot_step(to, world, step).recv_from, r) << where(world, r, step);
          sent_to.insert(to);
        }
      }
      std::vector<std::size_t> in_order(world);
      for (std::size_t k = 0; k < world; ++k) in_order[k] = k;
      EXPECT_EQ(folded, in_order) << "world " << world << " rank " << r;
      EXPECT_EQ(sent_to.size(), world - 1) << "world " << world << " rank " << r;
      EXPECT_EQ(std::set<std::size_t>(sent_to.begin(), sent_to.end()).size(), world - 1);
    }
  }
}

TEST(ExclusivePrefix, OneMoreEntryWithTheTotalLast) {
  EXPECT_EQ(exclusive_prefix(std::vector<std::size_t>{}), (std::vector<std::size_t>{0}));
  EXPECT_EQ(exclusive_prefix(std::vector<std::size_t>{3, 0, 2}),
            (std::vector<std::size_t>{0, 3, 3, 5}));
  EXPECT_EQ(exclusive_prefix(std::vector<std::size_t>{0, 0}), (std::vector<std::size_t>{0, 0, 0}));
}

TEST(MessageElements, LargestMultipleOfTheUnitThatFits) {
  for (std::size_t budget = 1; budget <= 100; ++budget) {
    for (std::size_t elem : {1u, 2u, 4u, 8u}) {
      for (std::size_t unit : {1u, 3u, 5u}) {
        SCOPED_TRACE(where(budget, elem, unit));
        auto r = message_elements(budget, elem, unit);
        if (budget < elem * unit) {
          ASSERT_FALSE(r.is_ok());
          EXPECT_EQ(r.status().code(), ErrorCode::kBudgetTooSmall);
          continue;
        }
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        const std::size_t n = r.value();
        EXPECT_GT(n, 0u);
        EXPECT_EQ(n % unit, 0u);
        EXPECT_LE(n * elem, budget);
        EXPECT_GT((n + unit) * elem, budget);
      }
    }
  }
  auto huge = message_elements(std::numeric_limits<std::size_t>::max(), 8, 1);
  ASSERT_TRUE(huge.is_ok());
  EXPECT_EQ(huge.value(), std::numeric_limits<std::size_t>::max() / 8);
}

TEST(MessageElements, TooSmallNamesTheBudgetAndTheRow) {
  auto r = message_elements(11, 4, 3);  // a row is 12 bytes
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBudgetTooSmall);
  EXPECT_NE(r.status().message().find("11"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("12"), std::string::npos) << r.status().message();
}

TEST(MessageElements, OverflowingRowIsTooSmallNotUndefined) {
  const std::size_t unit = std::numeric_limits<std::size_t>::max() / 4;
  auto r = message_elements(std::numeric_limits<std::size_t>::max(), 8, unit);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBudgetTooSmall);
}

TEST(AppendMessages, SplitsIntoContiguousPiecesNoneAboveTheMax) {
  for (std::size_t offset : {0u, 5u}) {
    for (std::size_t count : {0u, 1u, 2u, 6u, 7u, 100u}) {
      for (std::size_t max : {1u, 2u, 3u, 7u, 1000u}) {
        SCOPED_TRACE(where(offset, count, max));
        std::vector<Transfer> out{Transfer{9, Range{1, 1}, 1}};  // appends, keeps what is there
        append_messages(out, 4, Range{offset, count}, 50, max);
        ASSERT_GE(out.size(), 1u);
        EXPECT_EQ(out[0], (Transfer{9, Range{1, 1}, 1}));
        EXPECT_EQ(out.size() - 1, (count + max - 1) / max);
        std::size_t done = 0;
        for (std::size_t i = 1; i < out.size(); ++i) {
          EXPECT_EQ(out[i].peer, 4u);
          EXPECT_EQ(out[i].src.offset, offset + done);
          EXPECT_EQ(out[i].dst_offset, 50 + done);
          EXPECT_GT(out[i].src.count, 0u);
          EXPECT_LE(out[i].src.count, max);
          done += out[i].src.count;
        }
        EXPECT_EQ(done, count);
      }
    }
  }
}

// Every transfer of a step lands in exactly one list, in its order: the
// node's (peer renumbered from the range's start) or the wire's (unchanged),
// for every range of every world up to kMaxWorld (the ring's and the
// all-to-all-v's steps, whose peers cover the world).
TEST(SplitByPeer, EachTransferOnceInOrderRenumberedInside) {
  for (std::size_t world = 1; world <= kMaxWorld; ++world) {
    std::vector<Transfer> step;
    for (std::size_t p = 0; p < world; ++p)
      step.push_back(
          Transfer{p, Range{3 * p, p + 1}, 7 * p, p % 2 ? Source::kSend : Source::kInput});
    step.push_back(Transfer{world - 1, Range{0, 0}, 1});  // empty, kept too
    for (std::size_t begin = 0; begin <= world; ++begin)
      for (std::size_t count = 0; begin + count <= world; ++count) {
        std::vector<Transfer> inside{Transfer{99, Range{}, 0}},
            outside{Transfer{98, Range{}, 0}};  // cleared first
        split_by_peer(step, begin, count, inside, outside);
        std::size_t i = 0, o = 0;
        for (const Transfer& t : step) {
          if (t.peer >= begin && t.peer < begin + count) {
            ASSERT_LT(i, inside.size()) << where(world, begin, count);
            Transfer expect = t;
            expect.peer -= begin;
            EXPECT_EQ(inside[i++], expect) << where(world, begin, count);
          } else {
            ASSERT_LT(o, outside.size()) << where(world, begin, count);
            EXPECT_EQ(outside[o++], t) << where(world, begin, count);
          }
        }
        EXPECT_EQ(i, inside.size()) << where(world, begin, count);
        EXPECT_EQ(o, outside.size()) << where(world, begin, count);
      }
  }
  // A range reaching past SIZE_MAX does not wrap.
  std::vector<Transfer> inside, outside;
  const std::vector<Transfer> two{Transfer{0, Range{}, 0}, Transfer{SIZE_MAX, Range{}, 0}};
  split_by_peer(two, 1, SIZE_MAX, inside, outside);
  ASSERT_EQ(inside.size(), 1u);
  EXPECT_EQ(inside[0].peer, SIZE_MAX - 1);
  ASSERT_EQ(outside.size(), 1u);
  EXPECT_EQ(outside[0].peer, 0u);
}

}  // namespace
}  // namespace ruccl::ring
