// The fingerprint on the wire: one rank's request (what agree() compares) and
// its local check's outcome, in a fixed-size record of 62 + world words so that
// every rank knows how many bytes to receive from every other.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/request.hpp"

namespace ruccl::world {

inline constexpr std::size_t kMaxDims = 16;
std::size_t wire_words(std::size_t world);

// What the record cannot carry, as this rank's local error: kShapeMismatch
// for a tensor of more than kMaxDims dims, naming `rank`. The caller puts it in
// place of an ok geometry, encodes that and agrees over it like any local
// error, so every peer returns it at once instead of waiting for a record.
Status check_encodable(const core::Request& request, std::size_t rank);

// The record of `request` and its local outcome. With a failed `geometry` only
// the error travels (no shape), so any request encodes; an ok geometry needs
// check_encodable to have passed (else the shape is cut, which decode rejects).
std::vector<std::uint64_t> encode(const core::Request& request,
                                  const Result<core::Geometry>& geometry, std::size_t world);
struct Decoded {
  core::Request request;
  Result<core::Geometry> geometry = Status(ErrorCode::kInternal, "not decoded");
};
// Validates before it trusts: the record's length, every enum (kind, dtype,
// op, error code) in range, flags 0 or 1, dims and text lengths within their
// fields; and, for an ok geometry, the record against itself and the world:
// only broadcast receivers come without input, the geometry is what the shape
// gives, and the sender's local checks that need no buffer hold
// (core::check_record, core::check_record_geometry: the budget, a reduce root in
// the world, byte sizes within size_t, send counts summing to the input's
// rows). kProtocolError naming the first field out of range; `rank` is the
// sender (errors name it). Never reads outside `words` (fuzzed: tests/fuzz).
Result<Decoded> decode(std::span<const std::uint64_t> words, std::size_t rank, std::size_t world);

}  // namespace ruccl::world
