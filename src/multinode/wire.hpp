// The fingerprint on the wire: one rank's request (what agree() compares) and
// its local check's outcome, in a fixed-size record of 62 + world words so that
// every rank knows how many bytes to receive from every other.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/request.hpp"

namespace ruccl::multinode {

inline constexpr std::size_t kMaxDims = 16;
std::size_t wire_words(std::size_t world);

// kInvalidArgument for tensors of more than kMaxDims dims or send counts that
// do not fit the world (the local check reports those first in practice).
Result<std::vector<std::uint64_t>> encode(const core::Request& request,
                                          const Result<core::Geometry>& geometry,
                                          std::size_t world);
struct Decoded {
  core::Request request;
  Result<core::Geometry> geometry = Status(ErrorCode::kInternal, "not decoded");
};
// Validates before it trusts: the record's length, every enum (kind, dtype,
// op, error code) in range, flags 0 or 1, dims and text lengths within their
// fields. kProtocolError naming the first field out of range. Never reads
// outside `words` (fuzzed: tests/fuzz).
Result<Decoded> decode(std::span<const std::uint64_t> words, std::size_t world);

}  // namespace ruccl::multinode
