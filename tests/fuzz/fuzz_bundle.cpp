// libFuzzer: reading another node's bundle of agreement messages
// (src/world/bundle_codec.cpp) on arbitrary bytes. Input: byte 0 picks the
// node's ranks (0..8) and where they start in a world of 16, the rest is the
// bundle. What parses lies within the input, tiles it (every message at its
// length word, padded to 8 bytes, nothing after the last), and bundles again
// to the same size and messages; what does not parse leaves the output alone.
#include <cstdint>
#include <cstring>
#include <vector>

#include "world/bundle_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ruccl;
  using namespace ruccl::world;
  if (size < 1) return 0;
  const std::size_t ranks = data[0] % 9, first = data[0] / 9 % 9;
  // A copy in 8-byte words (the receive buffers' alignment).
  std::vector<std::uint64_t> words((size - 1 + 7) / 8);
  if (size > 1) std::memcpy(words.data(), data + 1, size - 1);
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(words.data()),
                                         size - 1);
  std::vector<std::span<const std::byte>> out(16);
  const Status s = bundle_parse(bytes, first, ranks, out);
  if (!s.is_ok()) {
    for (const auto& m : out)
      if (!m.empty()) __builtin_trap();
    if (s.code() != ErrorCode::kProtocolError) __builtin_trap();
    return 0;
  }
  std::vector<std::uint64_t> again;
  std::size_t at = 0;
  for (std::size_t j = 0; j < ranks; ++j) {
    const std::span<const std::byte> m = out[first + j];
    if (m.data() != bytes.data() + at + 8) __builtin_trap();  // right after its length word
    at += bundle_entry_bytes(m.size());
    if (at > bytes.size()) __builtin_trap();
    bundle_append(again, m);
  }
  if (at != bytes.size() || again.size() * 8 != bytes.size()) __builtin_trap();
  for (std::size_t j = 0; j < 16; ++j)
    if ((j < first || j >= first + ranks) && !out[j].empty()) __builtin_trap();
  return 0;
}
