// node::Regions (node/regions.hpp) in one process: two views of one table as
// processes 0 (owner) and 1 (reader), the reader mapping the owner's regions
// through /proc/self/fd. Allocation and its bounds, owns(), view() of the
// owner's bytes in place, a freed region no longer viewed and a new one at the
// same entry viewed afresh (never a stale mapping), forged entries refused,
// and detach().
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "node/regions.hpp"

namespace ruccl::node {
namespace {

struct TwoProcesses {
  std::vector<std::byte> tables = std::vector<std::byte>(2 * kRegionsPerProcess * kRegionBytes);
  std::shared_ptr<Regions> owner = std::make_shared<Regions>(tables.data(), 2, 0);
  std::shared_ptr<Regions> reader = std::make_shared<Regions>(tables.data(), 2, 1);
  const std::byte* view(const void* p, std::size_t bytes) {
    return reader->view(0, ::getpid(), reinterpret_cast<std::uintptr_t>(p), bytes);
  }
};

TEST(NodeRegions, AllocationBounds) {
  TwoProcesses t;
  auto zero = Regions::allocate(t.owner, 0);
  ASSERT_FALSE(zero.is_ok());
  EXPECT_EQ(zero.status().code(), ErrorCode::kInvalidArgument);
  auto huge = Regions::allocate(t.owner, kRegionMaxBytes + 1);
  ASSERT_FALSE(huge.is_ok());
  EXPECT_EQ(huge.status().code(), ErrorCode::kInvalidArgument);
  std::vector<std::shared_ptr<std::byte>> held;
  for (std::size_t i = 0; i < kRegionsPerProcess; ++i) {
    auto m = Regions::allocate(t.owner, 64);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    held.push_back(std::move(m).value());
  }
  auto full = Regions::allocate(t.owner, 64);
  ASSERT_FALSE(full.is_ok());
  EXPECT_EQ(full.status().code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(full.status().message().find("16 regions"), std::string::npos);
  held.erase(held.begin() + 3);
  EXPECT_TRUE(Regions::allocate(t.owner, 64).is_ok());
}

TEST(NodeRegions, ReaderSeesTheOwnersBytesInPlace) {
  TwoProcesses t;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto m = Regions::allocate(t.owner, 5000);
  ASSERT_TRUE(m.is_ok());
  std::byte* p = m.value().get();
  for (std::size_t i = 0; i < 5000; ++i) EXPECT_EQ(p[i], std::byte{0});
  std::memset(p, 0x5a, 5000);
  // Whole pages: 5000 bytes round up to two of 4 KiB.
  const std::size_t size = (5000 + page - 1) / page * page;
  EXPECT_TRUE(t.owner->owns(p, size));
  EXPECT_TRUE(t.owner->owns(p + 100, 4000));
  EXPECT_FALSE(t.owner->owns(p + 1, size));
  EXPECT_FALSE(t.owner->owns(p - 1, 10));
  int other = 0;
  EXPECT_FALSE(t.owner->owns(&other, sizeof other));
  EXPECT_FALSE(t.reader->owns(p, 10));  // the reader's own table is empty

  const std::byte* v = t.view(p + 100, 4000);
  ASSERT_NE(v, nullptr);
  EXPECT_NE(v, p + 100);  // a mapping of its own
  EXPECT_EQ(v[0], std::byte{0x5a});
  // Written after the mapping: the same memory.
  p[200] = std::byte{7};
  EXPECT_EQ(v[100], std::byte{7});
  EXPECT_EQ(t.view(p + 100, 4000), v);  // kept
  EXPECT_EQ(t.view(p + 1, size), nullptr);
  EXPECT_EQ(t.view(&other, 4), nullptr);
  // No view of one's own process, nor of a process outside the table.
  EXPECT_EQ(t.owner->view(0, ::getpid(), reinterpret_cast<std::uintptr_t>(p), 8), nullptr);
  EXPECT_EQ(t.reader->view(2, ::getpid(), reinterpret_cast<std::uintptr_t>(p), 8), nullptr);
}

TEST(NodeRegions, AFreedRegionIsNotViewedAndANewOneIsViewedAfresh) {
  TwoProcesses t;
  auto a = Regions::allocate(t.owner, 4096);
  ASSERT_TRUE(a.is_ok());
  std::memset(a.value().get(), 1, 4096);
  const auto address = reinterpret_cast<std::uintptr_t>(a.value().get());
  ASSERT_NE(t.reader->view(0, ::getpid(), address, 4096), nullptr);
  a.value().reset();
  EXPECT_EQ(t.reader->view(0, ::getpid(), address, 4096), nullptr);
  // The next region takes the same entry (and, often, the same address and
  // descriptor number): the reader maps it anew.
  auto b = Regions::allocate(t.owner, 4096);
  ASSERT_TRUE(b.is_ok());
  std::memset(b.value().get(), 2, 4096);
  const std::byte* v =
      t.reader->view(0, ::getpid(), reinterpret_cast<std::uintptr_t>(b.value().get()), 4096);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v[0], std::byte{2});
  EXPECT_EQ(v[4095], std::byte{2});
}

// Entries written by a broken or hostile peer: odd generations, sizes beyond
// the bound or the file, descriptors that are not the region's; the reader
// returns null, never maps beyond a file, never crashes.
TEST(NodeRegions, ForgedEntriesAreRefused) {
  TwoProcesses t;
  auto m = Regions::allocate(t.owner, 4096);
  ASSERT_TRUE(m.is_ok());
  auto* e = reinterpret_cast<std::uint64_t*>(t.tables.data());  // process 0, entry 0
  const std::uint64_t good[4] = {e[0], e[1], e[2], e[3]};
  const auto base = good[1];
  const auto restore = [&] { std::memcpy(e, good, sizeof good); };
  ASSERT_NE(t.reader->view(0, ::getpid(), base, 64), nullptr);

  e[0] = good[0] + 1;  // odd: being written
  EXPECT_EQ(t.reader->view(0, ::getpid(), base, 64), nullptr);
  restore();
  e[0] = good[0] + 2, e[2] = 8192;  // larger than its file
  EXPECT_EQ(t.reader->view(0, ::getpid(), base, 64), nullptr);
  restore();
  e[0] = good[0] + 4, e[2] = kRegionMaxBytes + 4096;
  EXPECT_EQ(t.reader->view(0, ::getpid(), base, 64), nullptr);
  restore();
  e[0] = good[0] + 6, e[3] = std::uint64_t{1} << 40;  // not a descriptor
  EXPECT_EQ(t.reader->view(0, ::getpid(), base, 64), nullptr);
  restore();
  e[0] = good[0] + 8, e[3] = 0;  // a descriptor that is not a region (stdin)
  EXPECT_EQ(t.reader->view(0, ::getpid(), base, 64), nullptr);
  restore();
  e[0] = good[0] + 10, e[1] = UINT64_MAX - 100;  // a base whose end wraps: still
  // only offsets within the region's own mapping
  if (const std::byte* v = t.reader->view(0, ::getpid(), UINT64_MAX - 50, 64)) {
    EXPECT_EQ(v[63], std::byte{0});
  }
  EXPECT_EQ(t.reader->view(0, ::getpid(), UINT64_MAX - 50, 4096), nullptr);
  restore();
  // Random entries everywhere in process 0's table.
  std::mt19937_64 rng(42);
  for (int round = 0; round < 2000; ++round) {
    for (std::size_t w = 0; w < kRegionsPerProcess * kRegionBytes / 8; ++w)
      e[w] = rng() % 4 == 0 ? rng() % 64 : rng();
    const std::uint64_t address = rng() % 3 == 0 ? base : rng();
    const std::size_t bytes = 1 + rng() % 8192;
    const std::byte* v = t.reader->view(0, ::getpid(), address, bytes);
    if (v != nullptr) {  // only ever within the real region
      EXPECT_EQ(v[0], std::byte{0});
      EXPECT_EQ(v[bytes - 1], std::byte{0});
    }
  }
  std::memset(t.tables.data(), 0, kRegionsPerProcess * kRegionBytes);
}

TEST(NodeRegions, DetachLeavesTheTableAlone) {
  TwoProcesses t;
  auto m = Regions::allocate(t.owner, 4096);
  ASSERT_TRUE(m.is_ok());
  const std::vector<std::byte> before = t.tables;
  t.owner->detach();
  EXPECT_FALSE(t.owner->owns(m.value().get(), 8));
  std::memset(m.value().get(), 3, 4096);  // still memory
  m.value().reset();
  EXPECT_EQ(t.tables, before);
  auto after = Regions::allocate(t.owner, 4096);
  EXPECT_FALSE(after.is_ok());
}

}  // namespace
}  // namespace ruccl::node
