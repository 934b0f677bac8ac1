// Communicator::split's plan (core/split.hpp): membership, order, this
// process's part, the blocks a group across processes needs, the slot.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ruccl::core
