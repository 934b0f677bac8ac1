// The algorithm selection table (src/core/selection.hpp): the defaults
// reproduce the decisions the world communicator made before the table
// existed, and RUCCL_ALGO's selection strings force algorithms per collective.
#include "core/selection.hpp"

#include <gtest/gtest.h>

namespace ruccl::core {
namespace {

constexpr std::size_t kFused = 7000;  // about what np=2 carries beside a fingerprint

CallShape call(CollectiveKind kind, std::size_t bytes, bool delivered = true,
               std::size_t budget = Config::kDefaultMaxChunkBytes) {
  return CallShape{kind, bytes, budget, kFused, delivered};
}

Topology in_process(std::size_t ranks) { return Topology{ranks, ranks, false, true}; }
Topology world(std::size_t processes, std::size_t local, bool host = true) {
  return Topology{processes * local, local, true, host};
}

Algorithm pick(const Config& config, const CallShape& c, const Topology& t) {
  return choose_algorithm(c, t, make_table(config));
}

const CollectiveKind kAll[] = {CollectiveKind::kAllReduce,     CollectiveKind::kReduce,
                               CollectiveKind::kBroadcast,     CollectiveKind::kAllGather,
                               CollectiveKind::kReduceScatter, CollectiveKind::kAllToAllV};

TEST(Selection, InProcessCommunicatorsAlwaysRunInProcess) {
  for (const Config& config : {Config(), Config().with_global_strategy(GlobalStrategy::kFlatRing)})
    for (CollectiveKind kind : kAll)
      for (std::size_t bytes : {std::size_t{0}, std::size_t{8}, std::size_t{1} << 26})
        EXPECT_EQ(pick(config, call(kind, bytes), in_process(4)), Algorithm::kInProcess)
            << collective_name(kind) << " " << bytes;
}

TEST(Selection, HierarchicalDefaults) {
  const Config c;
  // One process: in-process throughout, even a small all-reduce.
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 8), world(1, 2)), Algorithm::kInProcess);
  EXPECT_EQ(pick(c, call(CollectiveKind::kBroadcast, 8), world(1, 2)), Algorithm::kInProcess);
  // Several processes of several ranks.
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 8), world(2, 2)), Algorithm::kOneShot);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 8, false), world(2, 2)),
            Algorithm::kHierarchical);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 1 << 20), world(2, 2)),
            Algorithm::kHierarchical);
  // Every other collective but the all-to-all-v level by level too (a
  // broadcast from kHierarchicalBroadcastBytes).
  for (CollectiveKind kind : kAll) {
    if (kind == CollectiveKind::kAllReduce) continue;
    const bool flat = kind == CollectiveKind::kAllToAllV || kind == CollectiveKind::kBroadcast;
    EXPECT_EQ(pick(c, call(kind, 8), world(2, 2)),
              flat ? Algorithm::kFlatRing : Algorithm::kHierarchical)
        << collective_name(kind);
  }
  EXPECT_EQ(pick(c, call(CollectiveKind::kBroadcast, kHierarchicalBroadcastBytes - 1), world(2, 2)),
            Algorithm::kFlatRing);
  EXPECT_EQ(pick(c, call(CollectiveKind::kBroadcast, kHierarchicalBroadcastBytes), world(2, 2)),
            Algorithm::kHierarchical);
  // One rank per process: no hierarchy, the flat ring.
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 1 << 20), world(3, 1)), Algorithm::kFlatRing);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 8), world(3, 1)), Algorithm::kOneShot);
}

TEST(Selection, ANodeLevelMakesOneRankPerProcessHierarchical) {
  const Config c;
  // 2 nodes x 2 processes x 1 rank, with a node level: hierarchical above the
  // one-shot's sizes; the other collectives at every size (a broadcast from
  // kHierarchicalBroadcastBytes), but the all-to-all-v, which keeps the flat ring.
  Topology t = world(4, 1);
  t.node = 2;
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 1 << 20), t), Algorithm::kHierarchical);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 8), t), Algorithm::kOneShot);
  for (CollectiveKind kind : kAll) {
    if (kind == CollectiveKind::kAllReduce) continue;
    for (std::size_t bytes : {std::size_t{0}, std::size_t{8}, std::size_t{1} << 20}) {
      const bool flat = kind == CollectiveKind::kAllToAllV ||
                        (kind == CollectiveKind::kBroadcast && bytes < kHierarchicalBroadcastBytes);
      EXPECT_EQ(pick(c, call(kind, bytes), t),
                flat ? Algorithm::kFlatRing : Algorithm::kHierarchical)
          << collective_name(kind) << " " << bytes;
    }
  }
  // The flat strategy keeps the flat ring.
  EXPECT_EQ(pick(Config().with_global_strategy(GlobalStrategy::kFlatRing),
                 call(CollectiveKind::kAllReduce, 1 << 20), t),
            Algorithm::kFlatRing);
  // A "node level" of the whole world, or of one process, is none.
  t.node = 4;
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 1 << 20), t), Algorithm::kFlatRing);
  t.node = 1;
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 1 << 20), t), Algorithm::kFlatRing);
  // Several ranks per process: hierarchical with or without it.
  Topology d = world(4, 2);
  d.node = 4;
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 1 << 20), d), Algorithm::kHierarchical);
}

TEST(Selection, FlatRingDefaults) {
  const Config c = Config().with_global_strategy(GlobalStrategy::kFlatRing);
  // Every transfer is a message, also inside one process.
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 1 << 20), world(1, 2)), Algorithm::kFlatRing);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 8), world(1, 2)), Algorithm::kOneShot);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 1 << 20), world(2, 2)), Algorithm::kFlatRing);
  EXPECT_EQ(pick(c, call(CollectiveKind::kReduce, 8), world(2, 2)), Algorithm::kFlatRing);
  // A world of one has no one-shot (no peer to send to).
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 8), world(1, 1)), Algorithm::kFlatRing);
}

TEST(Selection, OneShotBounds) {
  const Config c;
  const Topology t = world(2, 1);
  const std::size_t limit = Config::kDefaultOneShotBytes;
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, limit), t), Algorithm::kOneShot);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, limit + 1), t), Algorithm::kFlatRing);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 0), t),
            Algorithm::kFlatRing);  // nothing to send
  // RUCCL_ONE_SHOT_BYTES=0: never; larger: up to what one message carries.
  EXPECT_EQ(pick(Config().with_one_shot_bytes(0), call(CollectiveKind::kAllReduce, 8), t),
            Algorithm::kFlatRing);
  const Config big = Config().with_one_shot_bytes(SIZE_MAX);
  EXPECT_EQ(pick(big, call(CollectiveKind::kAllReduce, kFused), t), Algorithm::kOneShot);
  EXPECT_EQ(pick(big, call(CollectiveKind::kAllReduce, kFused + 1), t), Algorithm::kFlatRing);
  // Device buffers never; the other ranks' inputs must fit the byte budget.
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 8), world(2, 1, false)), Algorithm::kFlatRing);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 64, true, 64 * 3), world(4, 1)),
            Algorithm::kOneShot);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 64, true, 64 * 3 - 1), world(4, 1)),
            Algorithm::kFlatRing);
}

// Every rank of the world on one node, asked before the agreement (lean_offer).
CallShape lean_offer(std::size_t bytes, std::size_t budget = Config::kDefaultMaxChunkBytes) {
  return CallShape{CollectiveKind::kAllReduce, bytes, budget, kFused, true, true};
}
Topology node(std::size_t processes, std::size_t local, bool host = true) {
  Topology t = world(processes, local, host);
  t.node_mailbox = true;
  return t;
}

// The lean lane's capacity as the world offers it (the slot holds 64 KiB).
constexpr std::size_t kLean = kNodeMailboxBytes;
CallShape lean_call(std::size_t bytes, std::size_t budget = Config::kDefaultMaxChunkBytes) {
  return CallShape{CollectiveKind::kAllReduce, bytes, budget, kLean, true, true};
}

// A world of one process with several ranks and a mailbox of its own: a
// small collective takes the mailbox, a larger one stays in the process.
TEST(Selection, OneProcessTakesItsMailboxForSmallCollectivesOnly) {
  const Config c;
  for (CollectiveKind kind : kAll) {
    CallShape small = lean_offer(8);
    small.kind = kind;
    EXPECT_EQ(pick(c, small, node(1, 2)), Algorithm::kNodeMailbox) << collective_name(kind);
    EXPECT_EQ(pick(c, small, world(1, 2)), Algorithm::kInProcess) << collective_name(kind);
    CallShape large = lean_call(std::size_t{64} << 20);
    large.kind = kind;
    EXPECT_EQ(pick(c, large, node(1, 2)), Algorithm::kInProcess) << collective_name(kind);
    // Past the slot no direct form (its reads through process_vm_readv were
    // slower than the threads' copies), while processes take it.
    CallShape past = lean_call(std::size_t{1} << 20);
    past.kind = kind;
    past.lean_direct = std::size_t{64} << 10;
    EXPECT_EQ(pick(c, past, node(1, 2)), Algorithm::kInProcess) << collective_name(kind);
    if (kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kAllGather) {
      EXPECT_EQ(pick(c, past, node(2, 1)), Algorithm::kNodeMailbox) << collective_name(kind);
    }
  }
  // Under the flat-ring strategy every transfer is a message, as before.
  EXPECT_EQ(pick(Config().with_global_strategy(GlobalStrategy::kFlatRing), lean_offer(8),
                 node(1, 2)),
            Algorithm::kOneShot);
}

TEST(Selection, NodeMailboxForSmallAllReducesOnOneNode) {
  const Config c;
  for (std::size_t local : {1u, 2u}) {
    EXPECT_EQ(pick(c, lean_offer(8), node(2, local)), Algorithm::kNodeMailbox);
    EXPECT_EQ(pick(c, lean_offer(0), node(2, local)), Algorithm::kNodeMailbox);
  }
  // Up to 64 KiB, and all inputs together within 256 KiB.
  EXPECT_EQ(pick(c, lean_call(kLean), node(2, 1)), Algorithm::kNodeMailbox);
  EXPECT_EQ(pick(c, lean_call(kLean), node(2, 2)), Algorithm::kNodeMailbox);
  EXPECT_NE(pick(c, lean_call(kLean + 1), node(2, 1)), Algorithm::kNodeMailbox);
  EXPECT_EQ(pick(c, lean_call(32 << 10), node(8, 1)), Algorithm::kNodeMailbox);
  EXPECT_NE(pick(c, lean_call((32 << 10) + 1), node(8, 1)), Algorithm::kNodeMailbox);
  // Not without the node's mailboxes, not after the offer (the agreement's
  // own choice), not for device buffers, not for other collectives, not
  // beyond the slot or the budget, not under the flat-ring strategy.
  EXPECT_EQ(pick(c, lean_offer(8), world(2, 1)), Algorithm::kOneShot);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 8), node(2, 1)), Algorithm::kOneShot);
  EXPECT_NE(pick(c, lean_offer(8), node(2, 1, false)), Algorithm::kNodeMailbox);
  // Broadcast, reduce, all-gather, reduce-scatter and all-to-all-v too (a
  // broadcast's receiver holds only the sender's input).
  CallShape other = lean_offer(8);
  for (CollectiveKind kind :
       {CollectiveKind::kBroadcast, CollectiveKind::kReduce, CollectiveKind::kAllGather,
        CollectiveKind::kReduceScatter, CollectiveKind::kAllToAllV}) {
    other.kind = kind;
    EXPECT_EQ(pick(c, other, node(2, 1)), Algorithm::kNodeMailbox) << collective_name(kind);
  }
  other.kind = CollectiveKind::kAllToAllV;
  other.bytes = 65537;  // beyond the slot: the ring, but in the direct form
  EXPECT_EQ(pick(c, other, node(2, 1)), Algorithm::kFlatRing);
  other.lean_direct = Config::kDefaultLeanDirectBytes;
  EXPECT_EQ(pick(c, other, node(2, 1)), Algorithm::kNodeMailbox);
  // The value form holds the others' inputs: within the budget (a slot's
  // 64 KiB at np=2 with a 32 KiB budget: not the lean path).
  // A reduction has no direct form, whatever its size.
  CallShape held = lean_call(kLean, 32 << 10);
  held.lean_direct = Config::kDefaultLeanDirectBytes;
  for (CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kReduce, CollectiveKind::kReduceScatter}) {
    held.kind = kind;
    held.budget = 32 << 10;
    EXPECT_EQ(pick(c, held, node(2, 1)), Algorithm::kFlatRing) << collective_name(kind);
    held.budget = kLean;
    EXPECT_EQ(pick(c, held, node(2, 1)), Algorithm::kNodeMailbox) << collective_name(kind);
  }
  // The direct form holds nothing (each reader copies into its output): up
  // to its cap per rank and its total over the node, whatever the budget.
  other.bytes = kNodeMailboxAllToAllVDirectBytes;
  const std::size_t ranks = kNodeMailboxDirectTotalBytes / kNodeMailboxAllToAllVDirectBytes;
  EXPECT_EQ(pick(c, other, node(2, 1)), Algorithm::kNodeMailbox);
  EXPECT_EQ(pick(c, other, node(ranks, 1)), Algorithm::kNodeMailbox);
  EXPECT_EQ(pick(c, other, node(ranks + 1, 1)), Algorithm::kFlatRing);  // over the total
  other.budget = 32 << 10;
  EXPECT_EQ(pick(c, other, node(ranks, 1)), Algorithm::kNodeMailbox);
  other.budget = Config::kDefaultMaxChunkBytes;
  other.bytes = kNodeMailboxAllToAllVDirectBytes + 1;
  EXPECT_EQ(pick(c, other, node(2, 1)), Algorithm::kFlatRing);
  other.bytes = 65537;
  other.lean_direct = 65538;  // below its threshold, but past the slot: direct all the same
  EXPECT_EQ(pick(c, other, node(2, 1)), Algorithm::kNodeMailbox);
  other.lean_direct = 0;  // never direct (a node whose processes cannot read each other)
  EXPECT_EQ(pick(c, other, node(2, 1)), Algorithm::kFlatRing);
  // Broadcast, all-gather: past the slot in the direct form too, up to
  // their caps within the direct form's total, whatever the budget.
  for (CollectiveKind kind : {CollectiveKind::kBroadcast, CollectiveKind::kAllGather}) {
    other.kind = kind;
    other.bytes = 65537;
    other.lean_direct = Config::kDefaultLeanDirectBytes;
    EXPECT_EQ(pick(c, other, node(2, 1)), Algorithm::kNodeMailbox) << collective_name(kind);
    other.bytes = kind == CollectiveKind::kAllGather ? kNodeMailboxAllGatherDirectBytes
                                                     : kNodeMailboxBroadcastDirectBytes;
    const std::size_t most = kNodeMailboxDirectTotalBytes / other.bytes;
    other.budget = 32 << 10;
    EXPECT_EQ(pick(c, other, node(most, 1)), Algorithm::kNodeMailbox) << collective_name(kind);
    EXPECT_EQ(pick(c, other, node(most + 1, 1)), Algorithm::kFlatRing) << collective_name(kind);
    other.budget = Config::kDefaultMaxChunkBytes;
  }
  // Broadcast and all-gather copy through the slot as far as it holds them
  // (64 KiB, all ranks' inputs within 256 KiB), in the direct form past it
  // (lean_copy_direct), or from a lower configured threshold on.
  for (CollectiveKind kind : {CollectiveKind::kBroadcast, CollectiveKind::kAllGather}) {
    CallShape at = lean_call(kLean);
    at.kind = kind;
    for (std::size_t threshold : {std::size_t{0}, Config::kDefaultLeanDirectBytes}) {
      at.bytes = kLean;
      at.lean_direct = threshold;
      EXPECT_EQ(pick(c, at, node(2, 1)), Algorithm::kNodeMailbox) << collective_name(kind);
      EXPECT_FALSE(lean_copy_direct(kind, kLean, 2, kLean, threshold)) << collective_name(kind);
      // Past the slot: the direct form, or (never direct) the channels.
      at.bytes = kLean + 1;
      EXPECT_EQ(pick(c, at, node(2, 1)),
                threshold == 0 ? Algorithm::kFlatRing : Algorithm::kNodeMailbox)
          << collective_name(kind);
      EXPECT_EQ(lean_copy_direct(kind, kLean + 1, 2, kLean, threshold), threshold > 0);
      // Past the slot's total over the node's inputs (8 ranks x 40 KiB).
      at.bytes = std::size_t{40} << 10;
      EXPECT_EQ(lean_copy_direct(kind, at.bytes, 8, kLean, threshold), threshold > 0);
      EXPECT_FALSE(lean_copy_direct(kind, at.bytes, 4, kLean, threshold));
    }
    // A lower threshold: the direct form from it on, within the slot too.
    EXPECT_TRUE(lean_copy_direct(kind, 1024, 2, kLean, 1024));
    EXPECT_FALSE(lean_copy_direct(kind, 1023, 2, kLean, 1024));
    EXPECT_FALSE(lean_copy_direct(kind, 0, 2, kLean, 1));  // nothing to read
    // Up to the direct form's cap, not past it.
    const std::size_t direct_cap = kind == CollectiveKind::kAllGather
                                       ? kNodeMailboxAllGatherDirectBytes
                                       : kNodeMailboxBroadcastDirectBytes;
    at.lean_direct = Config::kDefaultLeanDirectBytes;
    at.bytes = direct_cap;
    EXPECT_EQ(pick(c, at, node(2, 1)), Algorithm::kNodeMailbox) << collective_name(kind);
    at.bytes = direct_cap + 1;
    EXPECT_EQ(pick(c, at, node(2, 1)), Algorithm::kFlatRing) << collective_name(kind);
    EXPECT_FALSE(lean_copy_direct(kind, direct_cap + 1, 2, kLean, 1));
  }
  // Reductions have no such form.
  for (CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kReduce, CollectiveKind::kReduceScatter})
    EXPECT_FALSE(lean_copy_direct(kind, kLean + 1, 2, kLean, 1)) << collective_name(kind);
  // An all-reduce past the slot (past 64 KiB per rank, past 256 KiB over
  // the node's inputs) has a direct form of its own, up to 8 KiB x ranks x
  // ranks (np=4: 128 KiB, np=8: 512 KiB), whatever the budget; at np=2 that
  // ends within the slot, so past it the ring over the channels runs; a
  // reduce or reduce-scatter has none.
  EXPECT_LT(kNodeMailboxAllReduceShardBytes * 2 * 2, kLean);
  EXPECT_FALSE(lean_reduction_direct(CollectiveKind::kAllReduce, kLean + 1, 2, kLean,
                                     Config::kDefaultLeanDirectBytes));
  {
    CallShape np2 = lean_call(kLean + 1, 32 << 10);
    np2.lean_direct = Config::kDefaultLeanDirectBytes;
    EXPECT_EQ(pick(c, np2, node(2, 1)), Algorithm::kFlatRing);
  }
  EXPECT_FALSE(lean_in_slot(kLean + 1, 2, kLean));
  EXPECT_TRUE(lean_in_slot(kLean, 4, kLean));
  EXPECT_FALSE(lean_in_slot(kLean + 1, 4, kLean));
  EXPECT_FALSE(lean_in_slot(32 << 10, 9, kLean));
  for (auto [ranks, past] : {std::pair{4u, kLean + 1}, std::pair{8u, std::size_t{32 << 10} + 1}}) {
    CallShape big = lean_call(past, 32 << 10);
    big.lean_direct = Config::kDefaultLeanDirectBytes;
    EXPECT_TRUE(lean_reduction_direct(big.kind, past, ranks, kLean, big.lean_direct)) << ranks;
    EXPECT_FALSE(lean_reduction_direct(big.kind, past - 1, ranks, kLean, big.lean_direct)) << ranks;
    EXPECT_EQ(pick(c, big, node(ranks, 1)), Algorithm::kNodeMailbox) << ranks;
    // Up to 8 KiB x ranks x ranks (np=4: 128 KiB, np=8: 512 KiB).
    big.bytes = kNodeMailboxAllReduceShardBytes * ranks * ranks;
    EXPECT_EQ(pick(c, big, node(ranks, 1)), Algorithm::kNodeMailbox) << ranks;
    big.bytes += 1;
    EXPECT_EQ(pick(c, big, node(ranks, 1)), Algorithm::kFlatRing) << ranks;
    big.bytes = past;
    EXPECT_NE(pick(c, big, node(ranks, 1, false)), Algorithm::kNodeMailbox) << ranks;
    // Not with several ranks per process (the hierarchy's in-process level).
    EXPECT_EQ(pick(c, big, node(ranks, 2)), Algorithm::kHierarchical) << ranks;
    big.lean_direct = 0;  // (a node whose processes cannot read each other)
    EXPECT_EQ(pick(c, big, node(ranks, 1)), Algorithm::kFlatRing) << ranks;
    big.lean_direct = Config::kDefaultLeanDirectBytes;
    for (CollectiveKind kind : {CollectiveKind::kReduce, CollectiveKind::kReduceScatter}) {
      big.kind = kind;
      EXPECT_FALSE(lean_reduction_direct(kind, past, ranks, kLean, big.lean_direct));
      EXPECT_EQ(pick(c, big, node(ranks, 1)), Algorithm::kFlatRing) << collective_name(kind);
    }
  }
  // ... not with a smaller slot configured (RUCCL_LEAN_BYTES): the
  // node_mailbox row then ends at it.
  CallShape past_slot = lean_call(kLean + 1);
  past_slot.lean_direct = Config::kDefaultLeanDirectBytes;
  EXPECT_EQ(pick(c, past_slot, node(4, 1)), Algorithm::kNodeMailbox);
  EXPECT_NE(pick(Config().with_lean_bytes(32 << 10), past_slot, node(4, 1)),
            Algorithm::kNodeMailbox);
  EXPECT_EQ(kNodeMailboxAllReduceShardBytes * 4 * 4, std::size_t{128} << 10);
  // Two ranks whose host reductions lack AVX-512: the direct form from the
  // slot's end up to its own bound (64 MiB); more ranks keep the shard bound.
  {
    const std::size_t pair = kNodeMailboxPairAllReduceDirectBytes;
    const std::size_t d = Config::kDefaultLeanDirectBytes;
    EXPECT_EQ(pair, std::size_t{64} << 20);
    EXPECT_TRUE(lean_reduction_direct(CollectiveKind::kAllReduce, kLean + 1, 2, kLean, d, false));
    EXPECT_TRUE(lean_reduction_direct(CollectiveKind::kAllReduce, pair, 2, kLean, d, false));
    EXPECT_FALSE(lean_reduction_direct(CollectiveKind::kAllReduce, pair + 1, 2, kLean, d, false));
    EXPECT_FALSE(lean_reduction_direct(CollectiveKind::kAllReduce, kLean, 2, kLean, d, false));
    EXPECT_FALSE(lean_reduction_direct(CollectiveKind::kAllReduce, pair, 2, kLean, 0, false));
    EXPECT_FALSE(lean_reduction_direct(CollectiveKind::kReduce, pair, 2, kLean, d, false));
    EXPECT_FALSE(lean_reduction_direct(CollectiveKind::kAllReduce, pair, 2, kLean, d, true));
    EXPECT_FALSE(
        lean_reduction_direct(CollectiveKind::kAllReduce, (128 << 10) + 1, 4, kLean, d, false));
    CallShape mid = lean_call(std::size_t{1} << 20, SIZE_MAX);
    mid.lean_direct = d;
    Topology narrow = node(2, 1);
    narrow.wide_reductions = false;
    EXPECT_EQ(pick(c, mid, narrow), Algorithm::kNodeMailbox);
    EXPECT_EQ(pick(c, mid, node(2, 1)), Algorithm::kFlatRing);
    Topology four = node(4, 1);
    four.wide_reductions = false;
    EXPECT_EQ(pick(c, mid, four), Algorithm::kFlatRing);
  }
  EXPECT_FALSE(lean_reduction_direct(CollectiveKind::kAllReduce,
                                     kNodeMailboxAllReduceDirectBytes + 1, 1024, kLean,
                                     Config::kDefaultLeanDirectBytes));
  EXPECT_TRUE(lean_reduction_direct(CollectiveKind::kAllReduce, kNodeMailboxAllReduceDirectBytes,
                                    1024, kLean, Config::kDefaultLeanDirectBytes));
  // An all-to-all-v's slot holds its send counts too (a word per rank): 64
  // KiB of rows do not fit it, so they go in the direct form.
  constexpr CollectiveKind kA2a = CollectiveKind::kAllToAllV;
  EXPECT_TRUE(lean_slot_holds(kA2a, kLean - 16, 2, kLean));
  EXPECT_FALSE(lean_slot_holds(kA2a, kLean - 15, 2, kLean));
  EXPECT_TRUE(lean_slot_holds(CollectiveKind::kBroadcast, kLean, 2, kLean));
  EXPECT_FALSE(lean_slot_holds(kA2a, 0, SIZE_MAX, kLean));  // (no overflow)
  EXPECT_FALSE(lean_copy_direct(kA2a, 32 << 10, 2, kLean, Config::kDefaultLeanDirectBytes));
  EXPECT_TRUE(lean_copy_direct(kA2a, kLean - 15, 2, kLean, Config::kDefaultLeanDirectBytes));
  EXPECT_FALSE(lean_copy_direct(kA2a, kLean - 15, 2, kLean, 0));
  CallShape rows = lean_call(kLean - 15);
  rows.kind = kA2a;
  EXPECT_EQ(pick(c, rows, node(2, 1)), Algorithm::kFlatRing);  // (never direct: the channels)
  rows.lean_direct = Config::kDefaultLeanDirectBytes;
  EXPECT_EQ(pick(c, rows, node(2, 1)), Algorithm::kNodeMailbox);
  // RUCCL_LEAN_BYTES lowers the threshold; 0 turns the lean path off.
  const Config lower = Config().with_lean_bytes(1024);
  EXPECT_EQ(pick(lower, lean_call(1024), node(2, 1)), Algorithm::kNodeMailbox);
  EXPECT_NE(pick(lower, lean_call(1025), node(2, 1)), Algorithm::kNodeMailbox);
  EXPECT_NE(pick(Config().with_lean_bytes(0), lean_offer(8), node(2, 1)), Algorithm::kNodeMailbox);
  CallShape bcast = lean_offer(64, 64);
  bcast.kind = CollectiveKind::kBroadcast;
  EXPECT_EQ(pick(c, bcast, node(4, 1)), Algorithm::kNodeMailbox);
  bcast.budget = 63;
  EXPECT_NE(pick(c, bcast, node(4, 1)), Algorithm::kNodeMailbox);
  // Not beyond what the slot holds (fused_capacity).
  EXPECT_EQ(pick(c, lean_offer(kFused), node(2, 1)), Algorithm::kNodeMailbox);
  EXPECT_NE(pick(c, lean_offer(kFused + 1), node(2, 1)), Algorithm::kNodeMailbox);
  EXPECT_EQ(pick(c, lean_offer(64, 64 * 3), node(4, 1)), Algorithm::kNodeMailbox);
  EXPECT_NE(pick(c, lean_offer(64, 64 * 3 - 1), node(4, 1)), Algorithm::kNodeMailbox);
  const Config flat = Config().with_global_strategy(GlobalStrategy::kFlatRing);
  EXPECT_EQ(pick(flat, lean_offer(8), node(2, 2)), Algorithm::kOneShot);
  // A forced rule comes first: RUCCL_ALGO=all_reduce:@flat_ring keeps the ring.
  const Config forced = Config().with_algorithm("all_reduce:@flat_ring");
  EXPECT_EQ(pick(forced, lean_offer(8), node(2, 2)), Algorithm::kFlatRing);
  const Config forced_lean = Config().with_algorithm("all_reduce:0-1k:@node_mailbox");
  EXPECT_EQ(pick(forced_lean, lean_offer(512), node(2, 2)), Algorithm::kNodeMailbox);
}

TEST(Selection, ForcedRulesComeFirstAndFallThroughWhereInfeasible) {
  Config c;
  c.with_algorithm("all_reduce:0-4k:@one_shot#4k-inf:@flat_ring;broadcast:@flat_ring");
  ASSERT_TRUE(c.validate().is_ok());
  EXPECT_EQ(c.global_strategy(), GlobalStrategy::kHierarchical);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 1 << 20), world(2, 2)), Algorithm::kFlatRing);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 4095), world(2, 2)), Algorithm::kOneShot);
  EXPECT_EQ(pick(c, call(CollectiveKind::kAllReduce, 4096), world(2, 2)), Algorithm::kFlatRing);
  EXPECT_EQ(pick(c, call(CollectiveKind::kBroadcast, 8), world(1, 2)), Algorithm::kFlatRing);
  EXPECT_EQ(pick(c, call(CollectiveKind::kReduce, 8), world(1, 2)), Algorithm::kInProcess);
  // Without a transport, nothing forced can run: in-process.
  EXPECT_EQ(pick(c, call(CollectiveKind::kBroadcast, 8), in_process(2)), Algorithm::kInProcess);
  // A hierarchical all-to-all-v does not exist: the defaults decide. Nor
  // does a hierarchy of one rank per process without a node level.
  Config h;
  h.with_algorithm("all_to_all_v:@hierarchical;broadcast:@hierarchical");
  EXPECT_EQ(pick(h, call(CollectiveKind::kAllToAllV, 8), world(2, 2)), Algorithm::kFlatRing);
  EXPECT_EQ(pick(h, call(CollectiveKind::kBroadcast, 8), world(2, 2)), Algorithm::kHierarchical);
  EXPECT_EQ(pick(h, call(CollectiveKind::kBroadcast, 8), world(3, 1)), Algorithm::kFlatRing);
  // A forced one-shot of device buffers falls to the next rule.
  Config o;
  o.with_algorithm("all_reduce:@one_shot#@in_process");
  EXPECT_EQ(pick(o, call(CollectiveKind::kAllReduce, 8), world(2, 2, false)),
            Algorithm::kHierarchical);  // in_process infeasible across processes
}

TEST(Selection, ShorthandsSetTheStrategy) {
  Config c;
  c.with_algorithm("flat_ring;reduce:@flat_ring");
  EXPECT_EQ(c.global_strategy(), GlobalStrategy::kFlatRing);
  EXPECT_TRUE(c.validate().is_ok());
  c.with_algorithm("flat;hierarchical");
  EXPECT_EQ(c.global_strategy(), GlobalStrategy::kHierarchical);
  auto s = strategy_of("all_reduce:@flat_ring");
  ASSERT_TRUE(s.is_ok());
  EXPECT_FALSE(s.value().has_value());
}

TEST(Selection, ParsesRangesAndNames) {
  auto r = parse_selection(" all_gather : 1k-2M:@flat_ring # 2m-inf:@in_process ; flat ");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r.value().size(), 2u);
  EXPECT_EQ(r.value()[0], (SelectionRule{CollectiveKind::kAllGather, 1024, std::size_t{2} << 20,
                                         Algorithm::kFlatRing}));
  EXPECT_EQ(r.value()[1], (SelectionRule{CollectiveKind::kAllGather, std::size_t{2} << 20, SIZE_MAX,
                                         Algorithm::kInProcess}));
  auto all = parse_selection("all_to_all_v:@flat_ring");
  ASSERT_TRUE(all.is_ok());
  EXPECT_EQ(all.value()[0],
            (SelectionRule{CollectiveKind::kAllToAllV, 0, SIZE_MAX, Algorithm::kFlatRing}));
  EXPECT_TRUE(parse_selection("").is_ok());
}

TEST(Selection, SyntaxErrorsNameTheItem) {
  for (const char* bad :
       {"tree", "all_reduce", "allreduce:@ring", "all_reduce:@ring", "all_reduce:4k-1k:@flat_ring",
        "all_reduce:1k-1k:@flat_ring", "all_reduce:0-4x:@flat_ring", "all_reduce:0-4k@flat_ring",
        "all_reduce:4k:@flat_ring", "all_reduce:0-99999999999999999999:@flat_ring",
        "all_reduce:0-4k:flat_ring", "broadcast:@flat_ring#"}) {
    SCOPED_TRACE(bad);
    auto r = parse_selection(bad);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("algorithm selection item"), std::string::npos);
    Config c;
    c.with_algorithm(bad);
    EXPECT_FALSE(c.validate().is_ok());
  }
}

TEST(Selection, Names) {
  EXPECT_EQ(algorithm_name(Algorithm::kInProcess), "in_process");
  EXPECT_EQ(algorithm_name(Algorithm::kFlatRing), "flat_ring");
  EXPECT_EQ(algorithm_name(Algorithm::kHierarchical), "hierarchical");
  EXPECT_EQ(algorithm_name(Algorithm::kOneShot), "one_shot");
  EXPECT_EQ(algorithm_name(Algorithm::kNodeMailbox), "node_mailbox");
}

}  // namespace
}  // namespace ruccl::core
