// The lean path's header forms (src/world/lean_codec.cpp): a header goes into
// its slot compact where it fits and long otherwise, and comes back the same;
// a slot too short for its form, or a compact one claiming more than one dim,
// is refused; the decision (lean_fits) takes both forms alike.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "world/lean_codec.hpp"

namespace ruccl::world {
namespace {

LeanHeader header(CollectiveKind kind, DataType dtype, std::size_t count, std::size_t budget,
                  std::size_t root, std::vector<std::size_t> dims) {
  core::Request req;
  req.kind = kind;
  req.dtype = dtype;
  req.op = ReduceOp::kSum;
  req.root = root;
  req.max_chunk_bytes = budget;
  req.in = TensorView{nullptr, dtype, Shape(dims.begin(), dims.end()), host_device(0), nullptr};
  core::Geometry g;
  g.count = count;
  return lean_header(req, g, &req.in);
}

std::size_t round_trip(const LeanHeader& h, LeanHeader& back) {
  std::array<std::byte, kLeanHeader> slot{};
  const std::size_t written = encode_lean_head(h, slot.data());
  std::size_t read = 0;
  EXPECT_TRUE(decode_lean_head(std::span(slot.data(), written), back, read));
  EXPECT_EQ(read, written);
  return written;
}

TEST(LeanCodec, SmallOneDimHeadersGoCompactAndComeBackTheSame) {
  for (const auto kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kReduce, CollectiveKind::kBroadcast,
        CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    for (const std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{4099}}) {
      const LeanHeader h = header(kind, DataType::kF32, count, 4 << 20, 3, {count});
      LeanHeader back{};
      EXPECT_EQ(round_trip(h, back), kCompactHeader) << static_cast<int>(kind) << " " << count;
      EXPECT_EQ(back, h);
    }
  }
  const LeanHeader scalar = header(CollectiveKind::kAllReduce, DataType::kI64, 1, 64, 0, {});
  LeanHeader back{};
  EXPECT_EQ(round_trip(scalar, back), kCompactHeader);
  EXPECT_EQ(back, scalar);
}

TEST(LeanCodec, WhatTheCompactFormCannotHoldGoesLong) {
  const std::size_t big = std::size_t{1} << 32;
  const LeanHeader cases[] = {
      header(CollectiveKind::kAllReduce, DataType::kF32, 6, 4096, 0, {2, 3}),     // two dims
      header(CollectiveKind::kAllReduce, DataType::kU8, big, 1 << 20, 0, {big}),  // count
      header(CollectiveKind::kAllReduce, DataType::kF32, 2, big, 0, {2}),         // budget
      header(CollectiveKind::kReduce, DataType::kF32, 2, 4096, 1 << 28, {2}),     // root
  };
  for (const LeanHeader& h : cases) {
    LeanHeader back{};
    EXPECT_EQ(round_trip(h, back), kLeanHeader);
    EXPECT_EQ(back, h);
  }
  LeanHeader a2a = header(CollectiveKind::kAllToAllV, DataType::kF32, 0, 4096, 0, {});
  LeanHeader back{};
  EXPECT_EQ(round_trip(a2a, back), kLeanHeader);
  EXPECT_EQ(back, a2a);
}

TEST(LeanCodec, ShortOrImpossibleSlotsAreRefused) {
  std::array<std::byte, kLeanHeader> slot{};
  const LeanHeader small = header(CollectiveKind::kAllReduce, DataType::kF32, 2, 4096, 0, {2});
  const std::size_t compact = encode_lean_head(small, slot.data());
  LeanHeader h{};
  std::size_t bytes = 0;
  EXPECT_FALSE(decode_lean_head(std::span(slot.data(), compact - 1), h, bytes));
  EXPECT_FALSE(decode_lean_head(std::span(slot.data(), 7), h, bytes));
  // A compact word 0 that claims three dims.
  std::uint64_t w0 = 0;
  std::memcpy(&w0, slot.data(), sizeof w0);
  w0 = (w0 & ~(std::uint64_t{0xff} << 16)) | std::uint64_t{3} << 16;
  std::memcpy(slot.data(), &w0, sizeof w0);
  EXPECT_FALSE(decode_lean_head(std::span(slot.data(), compact), h, bytes));
  // A long header needs its 64 bytes.
  const LeanHeader two = header(CollectiveKind::kAllReduce, DataType::kF32, 6, 4096, 0, {2, 3});
  ASSERT_EQ(encode_lean_head(two, slot.data()), kLeanHeader);
  EXPECT_FALSE(decode_lean_head(std::span(slot.data(), kLeanHeader - 1), h, bytes));
}

// A slot in either form decodes to the same header, and the decision reads
// only that: one rank's compact slot and another's long one of the same
// collective fit together.
TEST(LeanCodec, TheDecisionTakesEitherForm) {
  const LeanHeader h = header(CollectiveKind::kAllReduce, DataType::kF32, 2, 4096, 0, {2});
  std::array<std::byte, kLeanHeader + 8> a{}, b{};
  const std::size_t ha = encode_lean_head(h, a.data());
  std::memcpy(b.data(), h.data(), kLeanHeader);  // the long form of the same header
  const float x[2] = {1, 2};
  std::memcpy(a.data() + ha, x, sizeof x);
  std::memcpy(b.data() + kLeanHeader, x, sizeof x);
  std::vector<LeanHeader> heads(2);
  std::size_t na = 0, nb = 0;
  ASSERT_TRUE(decode_lean_head(std::span(a.data(), ha + sizeof x), heads[0], na));
  ASSERT_TRUE(decode_lean_head(std::span(b.data(), kLeanHeader + sizeof x), heads[1], nb));
  EXPECT_EQ(na, kCompactHeader);
  EXPECT_EQ(nb, kLeanHeader);
  const std::vector<std::size_t> sizes = {sizeof x, sizeof x};
  const std::vector<const std::byte*> inputs = {a.data() + na, b.data() + nb};
  LeanPlan plan;
  ASSERT_TRUE(lean_fits(heads, sizes, inputs, 2, plan));
  EXPECT_EQ(plan.count, 2u);
  EXPECT_EQ(plan.shape, Shape{2});
  // A different count on one rank is no fit.
  heads[1][1] = 3;
  heads[1][4] = 3;
  EXPECT_FALSE(lean_fits(heads, sizes, inputs, 2, plan));
}

// A reduce's root may leave its input out of its slot (it reduces from its
// own input; no other rank reads it): an empty slot fits there only, and no
// other collective's rank may send less than its input.
TEST(LeanCodec, OnlyAReducesRootMaySendNothing) {
  const float x[4] = {1, 2, 3, 4};
  const std::vector<const std::byte*> inputs = {reinterpret_cast<const std::byte*>(x),
                                                reinterpret_cast<const std::byte*>(x),
                                                reinterpret_cast<const std::byte*>(x)};
  LeanPlan plan;
  for (std::size_t root = 0; root < 3; ++root) {
    const LeanHeader h = header(CollectiveKind::kReduce, DataType::kF32, 4, 4096, root, {4});
    const std::vector<LeanHeader> heads(3, h);
    for (std::size_t empty = 0; empty < 3; ++empty) {
      std::vector<std::size_t> sizes(3, sizeof x);
      sizes[empty] = 0;
      EXPECT_EQ(lean_fits(heads, sizes, inputs, 3, plan), empty == root)
          << "root " << root << ", empty slot of rank " << empty;
    }
    std::vector<std::size_t> sizes(3, sizeof x);
    EXPECT_TRUE(lean_fits(heads, sizes, inputs, 3, plan)) << root;  // (or its input)
    sizes[root] = sizeof x / 2;
    EXPECT_FALSE(lean_fits(heads, sizes, inputs, 3, plan)) << root;
  }
  const LeanHeader all = header(CollectiveKind::kAllReduce, DataType::kF32, 4, 4096, 0, {4});
  const std::vector<LeanHeader> heads(3, all);
  EXPECT_FALSE(lean_fits(heads, {0, sizeof x, sizeof x}, inputs, 3, plan));
  EXPECT_TRUE(lean_fits(heads, {sizeof x, sizeof x, sizeof x}, inputs, 3, plan));
}

}  // namespace
}  // namespace ruccl::world
