// A node's agreement messages bundled for another node (exchange_by_node in
// world_agreement.cpp: across nodes, node rank i sends its node's messages to
// node rank i of every other node). Pure code: unit-tested
// (tests/unit/bundle_codec_test.cpp) and fuzzed (tests/fuzz/fuzz_bundle.cpp).
//
// Layout: for each rank of the node in rank order, the length of its message
// in bytes (a u64 in host order: the ranks of one job share a build) and the
// message, padded with zeros to a multiple of 8 bytes. Nothing follows the
// last message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ruccl/status.hpp"

namespace ruccl::world {

// Appends `message` to `bundle` (one rank's length word and padded bytes).
void bundle_append(std::vector<std::uint64_t>& bundle, std::span<const std::byte> message);

// Bytes bundle_append adds for a message of `bytes` bytes.
constexpr std::size_t bundle_entry_bytes(std::size_t bytes) { return 8 + (bytes + 7) / 8 * 8; }

// A bundle travels behind a u64 with its size in bytes, in two messages of
// at most `part` bytes each (a receive of up to `part` takes either whatever
// was sent; the second is empty where the first holds it all), and what
// exceeds both in a third of its exact size. `part` is a multiple of 8.
struct BundleParts {
  std::size_t first = 0, second = 0, rest = 0;
  friend bool operator==(const BundleParts&, const BundleParts&) = default;
};
// How `bytes` (the size word included) are cut.
BundleParts bundle_split(std::size_t bytes, std::size_t part);
// On arrival (another node's bytes): from the size word `total` and the sizes
// of the first two messages, the whole bundle's bytes (the size word
// included); kProtocolError unless `total` is a multiple of 8 of at most
// `most` and the two messages are what bundle_split cuts of it.
Result<std::size_t> bundle_received(std::uint64_t total, std::size_t first, std::size_t second,
                                    std::size_t most, std::size_t part);

// Reads exactly `ranks` messages from `bytes` (another node's bundle: every
// length is checked against what is left, and nothing may follow the last)
// into out[first + j], spans into `bytes`. kProtocolError naming the rank
// where it went wrong, `out` then untouched; kInternal if `out` has no room.
Status bundle_parse(std::span<const std::byte> bytes, std::size_t first, std::size_t ranks,
                    std::span<std::span<const std::byte>> out);

}  // namespace ruccl::world
