// A node's bundle of agreement messages (src/world/bundle_codec.cpp): what
// bundle_append writes, bundle_parse reads back at the right ranks; a bundle
// cut short, a length past the end, a message missing or bytes after the last
// are refused, naming the rank, and leave the output as it was.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "world/bundle_codec.hpp"

namespace ruccl::world {
namespace {

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
  return b;
}

std::span<const std::byte> as_bytes(const std::vector<std::uint64_t>& words) {
  return {reinterpret_cast<const std::byte*>(words.data()), words.size() * 8};
}

TEST(BundleCodec, RoundTripAtTheNodesRanks) {
  const std::vector<std::string> messages = {"", "hello", "exactly 16 bytes", "x"};
  std::vector<std::uint64_t> bundle;
  std::size_t expected = 0;
  for (const std::string& m : messages) {
    bundle_append(bundle, bytes_of(m));
    expected += bundle_entry_bytes(m.size());
  }
  ASSERT_EQ(bundle.size() * 8, expected);
  std::vector<std::span<const std::byte>> out(7);
  ASSERT_TRUE(bundle_parse(as_bytes(bundle), 2, messages.size(), out).is_ok());
  EXPECT_TRUE(out[0].empty() && out[1].empty() && out[6].empty());
  for (std::size_t j = 0; j < messages.size(); ++j) {
    ASSERT_EQ(out[2 + j].size(), messages[j].size()) << j;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(out[2 + j].data()), out[2 + j].size()),
              messages[j]);
  }
}

TEST(BundleCodec, RefusesWhatDoesNotParseAndLeavesTheOutputAlone) {
  std::vector<std::uint64_t> bundle;
  bundle_append(bundle, bytes_of("abcdefghij"));  // 8 + 16 bytes
  bundle_append(bundle, bytes_of("k"));           // 8 + 8
  const std::span<const std::byte> whole = as_bytes(bundle);
  const std::byte marker[1] = {std::byte{7}};
  const auto untouched = [&](const std::vector<std::span<const std::byte>>& out) {
    for (const auto& m : out)
      if (m.data() != marker) return false;
    return true;
  };
  const auto refused = [&](std::span<const std::byte> b, std::size_t ranks, const char* says) {
    std::vector<std::span<const std::byte>> out(4, std::span<const std::byte>(marker));
    const Status s = bundle_parse(b, 1, ranks, out);
    EXPECT_EQ(s.code(), ErrorCode::kProtocolError) << s.to_string();
    EXPECT_NE(s.message().find(says), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(out));
  };
  refused(whole.first(whole.size() - 8), 2, "rank 2's message claims 1 bytes, 0 are left");
  refused(whole.first(20), 2, "rank 1's message claims 10 bytes, 12 are left");
  refused(whole.first(24), 2, "rank 2's message is missing");
  refused(whole.first(4), 1, "rank 1's message is missing");
  refused(whole, 1, "16 bytes after the last message");
  std::vector<std::uint64_t> huge = {~std::uint64_t{0}};
  refused(as_bytes(huge), 1, "claims 18446744073709551615 bytes, 0 are left");
  huge = {~std::uint64_t{0} - 3, 0};
  refused(as_bytes(huge), 1, "are left");
  // No room at the ranks named: the caller's mistake, not the peer's.
  std::vector<std::span<const std::byte>> small(2);
  EXPECT_EQ(bundle_parse(whole, 1, 2, small).code(), ErrorCode::kInternal);
  // Zero ranks take exactly nothing.
  EXPECT_TRUE(bundle_parse({}, 0, 0, small).is_ok());
}

TEST(BundleCodec, TwoMessagesOfAPartThenTheRest) {
  constexpr std::size_t part = 8120;
  EXPECT_EQ(bundle_split(16, part), (BundleParts{16, 0, 0}));
  EXPECT_EQ(bundle_split(part, part), (BundleParts{part, 0, 0}));
  EXPECT_EQ(bundle_split(part + 8, part), (BundleParts{part, 8, 0}));
  EXPECT_EQ(bundle_split(2 * part, part), (BundleParts{part, part, 0}));
  EXPECT_EQ(bundle_split(2 * part + 24, part), (BundleParts{part, part, 24}));
  // What arrives is what was cut: the whole bundle's bytes.
  for (const std::size_t whole : {std::size_t{16}, part, part + 8, 2 * part, 2 * part + 24}) {
    const BundleParts p = bundle_split(whole, part);
    auto got = bundle_received(whole - 8, p.first, p.second, 3 * part, part);
    ASSERT_TRUE(got.is_ok()) << whole << ": " << got.status().to_string();
    EXPECT_EQ(got.value(), whole);
  }
  // A size word that is not a multiple of 8, over the bound, or messages
  // that do not match it: kProtocolError.
  const auto refused = [&](std::uint64_t total, std::size_t first, std::size_t second) {
    auto got = bundle_received(total, first, second, 3 * part, part);
    EXPECT_EQ(got.status().code(), ErrorCode::kProtocolError) << total << " " << first;
  };
  refused(12, 20, 0);                 // not whole words
  refused(3 * part + 8, part, part);  // more than a bundle holds
  refused(~std::uint64_t{0} - 7, part, part);
  refused(8, 24, 0);           // the first message longer than the word says
  refused(part, part, 0);      // 8 bytes of it missing from the second
  refused(part - 8, part, 8);  // a second message where none belongs
  refused(0, 4, 0);            // no room for the size word
}

}  // namespace
}  // namespace ruccl::world
