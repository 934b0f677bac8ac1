// Communicator::split's plan (core/split.hpp): membership, order, this
// process's part, the blocks a group across processes needs, the slot; and
// the slot claim rounds (agree_on_slot) over scripted peers.
#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "core/split.hpp"

namespace ruccl::core {
namespace {

std::vector<SplitEntry> entries(std::vector<std::int64_t> colors, std::vector<std::int64_t> keys,
                                std::vector<std::uint64_t> slots = {}) {
  std::vector<SplitEntry> out(colors.size());
  for (std::size_t r = 0; r < out.size(); ++r)
    out[r] = {colors[r], keys.empty() ? 0 : keys[r], slots.empty() ? 1 : slots[r]};
  return out;
}

TEST(SplitPlan, MembersOrderedByKeyThenRank) {
  // in process: ranks 0..5, colors alternate, keys reverse within color 1
  const auto e = entries({0, 1, 0, 1, 0, 1}, {0, 9, 0, 5, 0, 1});
  auto p0 = plan_split(e, 0, 0, 6, false, 64);
  ASSERT_TRUE(p0.is_ok()) << p0.status().to_string();
  EXPECT_EQ(p0->members, (std::vector<std::size_t>{0, 2, 4}));
  EXPECT_EQ(p0->first, 0u);
  EXPECT_EQ(p0->per_process, 3u);
  auto p1 = plan_split(e, 1, 0, 6, false, 64);
  ASSERT_TRUE(p1.is_ok());
  EXPECT_EQ(p1->members, (std::vector<std::size_t>{5, 3, 1}));  // keys 1, 5, 9
}

TEST(SplitPlan, BlocksAcrossProcesses) {
  // 3 processes x 2 ranks. Data parallel (one rank per process): valid.
  const auto dp = entries({0, 1, 0, 1, 0, 1}, {0, 1, 2, 3, 4, 5});
  auto p = plan_split(dp, 1, 2, 2, true, 64);  // process 1 serves ranks 2, 3
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->members, (std::vector<std::size_t>{1, 3, 5}));
  EXPECT_EQ(p->first, 1u);
  EXPECT_EQ(p->per_process, 1u);
  // All ranks reversed: blocks of 2, each a process's: valid.
  auto rev = plan_split(entries({0, 0, 0, 0, 0, 0}, {0, -1, -2, -3, -4, -5}), 0, 0, 2, true, 64);
  ASSERT_TRUE(rev.is_ok()) << rev.status().to_string();
  EXPECT_EQ(rev->members, (std::vector<std::size_t>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(rev->first, 4u);
  // Interleaved processes: invalid.
  auto mixed = plan_split(entries({0, 0, 0, 0, 0, 0}, {0, 3, 1, 4, 2, 5}), 0, 0, 2, true, 64);
  EXPECT_EQ(mixed.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(mixed.status().message().find("consecutive"), std::string::npos);
  // Two ranks from process 0, one from process 1: invalid.
  auto uneven = plan_split(entries({0, 0, 0, 1, 1, 1}, {}), 0, 0, 2, true, 64);
  EXPECT_EQ(uneven.status().code(), ErrorCode::kInvalidArgument);
  // A process's ranks split in two runs (0, 2, 1 with 1 and 0 in one process): invalid.
  auto split_run = plan_split(entries({0, 0, 0, 1}, {0, 2, 1, 0}), 0, 0, 2, true, 64);
  EXPECT_EQ(split_run.status().code(), ErrorCode::kInvalidArgument);
  // The same groups in process are fine.
  EXPECT_TRUE(
      plan_split(entries({0, 0, 0, 0, 0, 0}, {0, 3, 1, 4, 2, 5}), 0, 0, 6, false, 64).is_ok());
}

TEST(SplitPlan, LowestSlotFreeOnEveryMember) {
  // slots in use: rank 0 {0,1}, rank 1 {0,2}, rank 2 {0,1,2,3}
  const auto e = entries({0, 0, 1}, {}, {0b11, 0b101, 0b1111});
  auto p = plan_split(e, 0, 0, 1, true, 64);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->slot, 3u);  // 1 and 2 are taken by a member
  auto q = plan_split(e, 1, 2, 1, true, 64);
  ASSERT_TRUE(q.is_ok());
  EXPECT_EQ(q->slot, 4u);
  // none free below the bound: the bound (the world refuses it)
  auto full = plan_split(entries({0}, {}, {0xFF}), 0, 0, 1, true, 8);
  ASSERT_TRUE(full.is_ok());
  EXPECT_EQ(full->slot, 8u);
}

TEST(SplitPlan, BadColors) {
  EXPECT_TRUE(check_colors(entries({-1, 0, 3}, {})).is_ok());
  const Status s = check_colors(entries({0, -1, -2}, {}));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("rank 2 passed color -2"), std::string::npos);
}

TEST(SlotClaims, Verdict) {
  using C = SlotClaim;
  const std::vector<C> claims = {C::kHeld, C::kCollided, C::kHeld, C::kHeld};
  const std::vector<std::size_t> mine = {0, 2}, theirs = {1, 3};
  ClaimVerdict v = claim_verdict(claims, mine);
  EXPECT_TRUE(v.group_holds);
  EXPECT_TRUE(v.collided);  // another group's member collided: everyone goes on
  EXPECT_FALSE(v.none_free);
  v = claim_verdict(claims, theirs);
  EXPECT_FALSE(v.group_holds);
  EXPECT_FALSE(v.group_none_free);
  v = claim_verdict(std::vector<C>{C::kHeld, C::kNoneFree}, theirs);  // rank 3 is missing
  EXPECT_FALSE(v.group_holds);
  EXPECT_TRUE(v.group_none_free);
  EXPECT_TRUE(v.none_free);
}

// This rank's transport: a mask, and slots another creation takes just
// before this rank's claim (the race the rounds resolve).
struct FakeHolder final : SlotHolder {
  std::uint64_t mask = 1;
  std::deque<std::uint32_t> taken_first;  // per claim: a slot set by "another thread" first
  int claims = 0, releases = 0;
  std::uint64_t in_use() const override { return mask; }
  bool claim(std::uint32_t slot) override {
    ++claims;
    if (!taken_first.empty()) {
      mask |= std::uint64_t{1} << taken_first.front();
      taken_first.pop_front();
    }
    const std::uint64_t bit = std::uint64_t{1} << slot;
    const bool was_free = (mask & bit) == 0;
    mask |= bit;
    return was_free;
  }
  void release(std::uint32_t slot) override {
    ++releases;
    mask &= ~(std::uint64_t{1} << slot);
  }
};

// Rank 0 of a group {0, 1}: rank 1's masks and claims are scripted per attempt.
struct ScriptedRounds final : SlotRounds {
  std::deque<std::uint64_t> peer_masks;
  std::deque<SlotClaim> peer_claims;
  std::vector<std::uint64_t> masks_sent;
  std::vector<SlotClaim> claims_sent;
  Result<std::uint64_t> used_by_group(std::uint64_t mine) override {
    masks_sent.push_back(mine);
    const std::uint64_t peer = peer_masks.empty() ? 1 : peer_masks.front();
    if (!peer_masks.empty()) peer_masks.pop_front();
    return mine | peer | 1;
  }
  Result<ClaimVerdict> claims(SlotClaim c) override {
    claims_sent.push_back(c);
    const SlotClaim peer = peer_claims.empty() ? SlotClaim::kHeld : peer_claims.front();
    if (!peer_claims.empty()) peer_claims.pop_front();
    const std::vector<SlotClaim> all = {c, peer};
    const std::vector<std::size_t> group = {0, 1};
    return claim_verdict(all, group);
  }
  std::uint32_t seed() const override { return 7; }
};

TEST(SlotClaims, AnotherCreationTakesTheSlotFirst) {
  FakeHolder holder;
  holder.taken_first = {1};  // slot 1 goes to another creation between the masks and the claim
  ScriptedRounds rounds;
  auto slot = agree_on_slot(rounds, holder, true, 41, 16, "split");
  ASSERT_TRUE(slot.is_ok()) << slot.status().to_string();
  EXPECT_EQ(slot.value(), 2u);
  EXPECT_EQ(rounds.claims_sent, (std::vector<SlotClaim>{SlotClaim::kCollided, SlotClaim::kHeld}));
  EXPECT_EQ(holder.mask, 0b111u);  // the other creation's slot 1 is left alone
  EXPECT_EQ(holder.releases, 0);
}

TEST(SlotClaims, APeerCollidedSoTheHolderLetsGoAndTriesAgain) {
  FakeHolder holder;
  ScriptedRounds rounds;
  rounds.peer_claims = {SlotClaim::kCollided, SlotClaim::kHeld};
  rounds.peer_masks = {1, 0b11};  // the peer's slot 1 went to another creation
  auto slot = agree_on_slot(rounds, holder, true, 41, 16, "split");
  ASSERT_TRUE(slot.is_ok()) << slot.status().to_string();
  EXPECT_EQ(slot.value(), 2u);
  EXPECT_EQ(holder.releases, 1);   // slot 1, claimed in the first attempt
  EXPECT_EQ(holder.mask, 0b101u);  // holds slot 2 only
}

TEST(SlotClaims, AGroupThatHoldsKeepsItsSlotWhileAnotherTriesAgain) {
  // Rank 0 outside the colliding group: its group {0, 1} holds at once, but
  // a rank of another group collided, so everyone takes part in a second
  // attempt, in which rank 0 claims nothing more.
  struct TwoGroups final : SlotRounds {
    int round = 0;
    Result<std::uint64_t> used_by_group(std::uint64_t mine) override { return mine | 1; }
    Result<ClaimVerdict> claims(SlotClaim c) override {
      const std::vector<SlotClaim> all = {c, SlotClaim::kHeld,
                                          round++ == 0 ? SlotClaim::kCollided : SlotClaim::kHeld};
      const std::vector<std::size_t> group = {0, 1};
      return claim_verdict(all, group);
    }
    std::uint32_t seed() const override { return 1; }
  } rounds;
  FakeHolder holder;
  auto slot = agree_on_slot(rounds, holder, true, 41, 16, "split");
  ASSERT_TRUE(slot.is_ok()) << slot.status().to_string();
  EXPECT_EQ(slot.value(), 1u);
  EXPECT_EQ(rounds.round, 2);
  EXPECT_EQ(holder.claims, 1);
  EXPECT_EQ(holder.mask, 0b11u);
}

TEST(SlotClaims, NoneFreeAndTriesRunOut) {
  FakeHolder full;
  full.mask = 0xFF;
  ScriptedRounds r1;
  auto none = agree_on_slot(r1, full, true, 8, 16, "split");
  EXPECT_EQ(none.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(none.status().message().find("no communicator slot is free"), std::string::npos)
      << none.status().to_string();
  EXPECT_EQ(full.claims, 0);

  FakeHolder holder;
  ScriptedRounds r2;
  r2.peer_claims = {SlotClaim::kCollided, SlotClaim::kCollided, SlotClaim::kCollided};
  auto out = agree_on_slot(r2, holder, true, 41, 3, "split");
  EXPECT_EQ(out.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(out.status().message().find("in 3 tries"), std::string::npos)
      << out.status().to_string();
  EXPECT_EQ(holder.mask, 1u);  // every claim let go
  EXPECT_EQ(holder.claims, 3);
}

TEST(SlotClaims, ARankOutsideEveryGroupTakesPartOnly) {
  FakeHolder holder;
  ScriptedRounds rounds;
  rounds.peer_claims = {SlotClaim::kCollided, SlotClaim::kHeld};
  auto slot = agree_on_slot(rounds, holder, false, 41, 16, "split");
  ASSERT_TRUE(slot.is_ok());
  EXPECT_EQ(slot.value(), 41u);
  EXPECT_EQ(holder.claims, 0);
  EXPECT_EQ(rounds.claims_sent, (std::vector<SlotClaim>{SlotClaim::kHeld, SlotClaim::kHeld}));
}

}  // namespace
}  // namespace ruccl::core
