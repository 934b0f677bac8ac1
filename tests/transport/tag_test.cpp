// make_tag / split_tag: the layout documented in src/transport/tag.hpp.
#include "transport/tag.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace ruccl::transport {
namespace {

constexpr std::uint64_t max_of(unsigned bits) { return (std::uint64_t{1} << bits) - 1; }

// Every field at its largest value, the rest zero.
constexpr TagFields kMaxComm{.comm = max_of(kTagCommBits)};
constexpr TagFields kMaxSeq{.seq = max_of(kTagSeqBits)};
constexpr TagFields kMaxStep{.step = max_of(kTagStepBits)};
constexpr TagFields kMaxSrc{.src = max_of(kTagSrcBits)};
constexpr TagFields kMaxPiece{.piece = max_of(kTagPieceBits)};

// The layout holds at compile time too.
static_assert(make_tag(TagFields{}) == 0);
static_assert(split_tag(make_tag(TagFields{1, 2, 3, 4, 5})) == TagFields{1, 2, 3, 4, 5});
static_assert(make_tag(kMaxComm) == 0xff00'0000'0000'0000ULL);
static_assert(make_tag(kMaxPiece) == 0x0000'0000'0000'0fffULL);

TEST(Tag, FieldsAreDisjointAndCoverAllBits) {
  const std::uint64_t masks[] = {make_tag(kMaxComm), make_tag(kMaxSeq), make_tag(kMaxStep),
                                 make_tag(kMaxSrc), make_tag(kMaxPiece)};
  std::uint64_t all = 0;
  for (std::uint64_t m : masks) {
    EXPECT_EQ(all & m, 0u) << std::hex << m;
    all |= m;
  }
  EXPECT_EQ(all, ~std::uint64_t{0});
  EXPECT_EQ(make_tag({.comm = 1, .seq = 5, .step = 0, .src = 258, .piece = 3}),
            0x0100'0500'0010'2003ULL);
}

TEST(Tag, RoundTripsInRangeValues) {
  const std::vector<std::uint64_t> comms = {0, 1, 2, 127, 128, max_of(kTagCommBits)};
  const std::vector<std::uint64_t> seqs = {0, 1, 255, 256, 4095, 4096, max_of(kTagSeqBits) - 1,
                                           max_of(kTagSeqBits)};
  const std::vector<std::uint64_t> steps = {0, 1, 2, 2046, 2047, 2048, max_of(kTagStepBits)};
  const std::vector<std::uint64_t> srcs = {0, 1, 2, 3, 255, 256, 4095, 4096,
                                           max_of(kTagSrcBits)};
  const std::vector<std::uint64_t> pieces = {0, 1, 2, 255, 256, max_of(kTagPieceBits)};
  std::size_t checked = 0;
  for (auto comm : comms)
    for (auto seq : seqs)
      for (auto step : steps)
        for (auto src : srcs)
          for (auto piece : pieces) {
            const TagFields f{static_cast<std::uint32_t>(comm), seq,
                              static_cast<std::uint32_t>(step), static_cast<std::uint32_t>(src),
                              static_cast<std::uint32_t>(piece)};
            const TagFields back = split_tag(make_tag(f));
            ASSERT_EQ(back, f) << tag_string(make_tag(f));
            ++checked;
          }
  EXPECT_EQ(checked, comms.size() * seqs.size() * steps.size() * srcs.size() * pieces.size());
}

// Tags of neighbouring field values, including across every field's top value
// (where a carry would leak into the next field), are all distinct.
TEST(Tag, DistinctAcrossFieldBoundaries) {
  std::set<std::uint64_t> seen;
  std::size_t made = 0;
  auto edge = [](unsigned bits) {
    return std::vector<std::uint64_t>{0, 1, max_of(bits) - 1, max_of(bits)};
  };
  for (auto comm : edge(kTagCommBits))
    for (auto seq : edge(kTagSeqBits))
      for (auto step : edge(kTagStepBits))
        for (auto src : edge(kTagSrcBits))
          for (auto piece : edge(kTagPieceBits)) {
            seen.insert(make_tag({static_cast<std::uint32_t>(comm), seq,
                                  static_cast<std::uint32_t>(step),
                                  static_cast<std::uint32_t>(src),
                                  static_cast<std::uint32_t>(piece)}));
            ++made;
          }
  EXPECT_EQ(seen.size(), made);
}

// A ring step of 3 ranks and a small all-to-all: every (src, piece) pair of one
// collective step gets its own tag, and back-to-back collectives differ.
TEST(Tag, DistinctWithinAndAcrossCollectives) {
  std::set<std::uint64_t> seen;
  std::size_t made = 0;
  for (std::uint64_t seq = 0; seq < 100; ++seq)
    for (std::uint32_t step = 0; step < 4; ++step)
      for (std::uint32_t src = 0; src < 8; ++src)
        for (std::uint32_t piece = 0; piece < 4; ++piece) {
          seen.insert(make_tag({.comm = 7, .seq = seq, .step = step, .src = src, .piece = piece}));
          ++made;
        }
  EXPECT_EQ(seen.size(), made);
}

// Each field wraps modulo 2^width on its own, without touching its neighbours.
TEST(Tag, FieldsWrapIndependently) {
  const TagFields base{.comm = 3, .seq = 4, .step = 5, .src = 6, .piece = 7};
  const std::uint64_t tag = make_tag(base);

  TagFields f = base;
  f.comm += 1u << kTagCommBits;
  EXPECT_EQ(make_tag(f), tag);
  f = base;
  f.seq += std::uint64_t{1} << kTagSeqBits;
  EXPECT_EQ(make_tag(f), tag);
  f = base;
  f.seq += std::uint64_t{1} << 40;  // high bits of a 64-bit sequence number
  EXPECT_EQ(make_tag(f), tag);
  f = base;
  f.step += 1u << kTagStepBits;
  EXPECT_EQ(make_tag(f), tag);
  f = base;
  f.src += 1u << kTagSrcBits;
  EXPECT_EQ(make_tag(f), tag);
  f = base;
  f.piece += 1u << kTagPieceBits;
  EXPECT_EQ(make_tag(f), tag);

  // The wrapped values come back reduced.
  const TagFields wrapped = split_tag(make_tag({.comm = 256 + 9, .seq = 65536 + 10,
                                                .step = 4096 + 11, .src = 65536 + 12,
                                                .piece = 4096 + 13}));
  EXPECT_EQ(wrapped, (TagFields{9, 10, 11, 12, 13}));
  // A field at its maximum plus one does not carry into its neighbour.
  EXPECT_EQ(split_tag(make_tag({.step = 0, .src = 0, .piece = 4096})), TagFields{});
  EXPECT_EQ(kMaxTagPeers, 65536u);
}

TEST(Tag, StringNamesEveryField) {
  EXPECT_EQ(tag_string(make_tag({.comm = 1, .seq = 5, .step = 0, .src = 258, .piece = 3})),
            "0x0100050000102003 (comm 1 seq 5 step 0 src 258 piece 3)");
}

}  // namespace
}  // namespace ruccl::transport
