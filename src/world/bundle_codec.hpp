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

// Reads exactly `ranks` messages from `bytes` (another node's bundle: every
// length is checked against what is left, and nothing may follow the last)
// into out[first + j], spans into `bytes`. kProtocolError naming the rank
// where it went wrong, `out` then untouched; kInternal if `out` has no room.
Status bundle_parse(std::span<const std::byte> bytes, std::size_t first, std::size_t ranks,
                    std::span<std::span<const std::byte>> out);

}  // namespace ruccl::world
