// What the fuzz targets and the seed writer share: the fixed expectations a
// fuzzed header is checked against, and how input bytes become a fingerprint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "transport/wire_header.hpp"
#include "world/fingerprint_codec.hpp"

namespace ruccl::fuzz {

// Input layout of fuzz_wire_header: byte 0 = mode, the rest = the message.
// Mode bit 0: repair the header's key id and MAC first (under fuzz_keys()),
// so that the fuzzer reaches the field checks behind them instead of stopping
// at the MAC.
inline constexpr std::uint8_t kRepairHeaderCheck = 1;

// The job key the fuzzed headers are checked under (a fixed token).
inline const transport::WireKeys& fuzz_keys() {
  static const transport::WireKeys keys = [] {
    transport::JobToken token{};
    for (std::size_t i = 0; i < token.size(); ++i) token[i] = static_cast<std::uint8_t>(i * 7);
    return transport::WireKeys(token);
  }();
  return keys;
}

inline transport::WireExpect expect_for(std::size_t message_bytes) {
  transport::WireExpect e;
  e.kind = transport::WireKind::kData;
  e.comm = 1;
  e.src = 2;
  e.seq = 3;
  e.step = 4;
  e.piece = 5;
  e.bytes = message_bytes > transport::kWireHeaderBytes
                ? message_bytes - transport::kWireHeaderBytes
                : 0;
  e.dst = 6;
  return e;
}

// Input layout of fuzz_fingerprint: byte 0 picks the world (1..8), the rest
// are the record's 64-bit words (a partial last word is dropped).
inline std::size_t world_for(std::uint8_t b) { return 1 + b % 8; }
inline std::vector<std::uint64_t> words_of(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint64_t> words(size / 8);
  if (!words.empty()) std::memcpy(words.data(), data, words.size() * 8);
  return words;
}

// Input layout of fuzz_agree: bytes 0..2 pick the world (1..4), the rank that
// runs and the segment size; then each rank's record without its error
// message (those words stay zero), this many words per rank.
inline std::size_t agree_record_words(std::size_t world) { return world::wire_words(world) - 32; }

}  // namespace ruccl::fuzz
