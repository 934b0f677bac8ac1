// The lean path's fingerprint, its slot forms and its decision
// (WorldRemoteRanks::lean_post and lean_collect in world_agreement.cpp): pure functions of the
// slots every rank of the node reads, so every rank decides alike. A slot is
// a peer's bytes: every field is checked before use (fuzzed:
// tests/fuzz/fuzz_lean.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/request.hpp"

namespace ruccl::world {

// Eight words: dtype | op << 8 | dims << 16 | kind << 24 | has_input << 32 |
// has_output << 33; count; budget; root; up to kLeanDims dims of the tensor.
constexpr std::size_t kLeanDims = 4;
constexpr std::size_t kLeanHeader = 64;
// The direct form (Config::lean_direct_bytes): h[0] bit 34, and in place of
// the input (after an all-to-all-v's counts) its address in the rank's
// process and its bytes, two words; the readers copy it themselves.
constexpr std::uint64_t kDirectBit = std::uint64_t{1} << 34;
constexpr std::size_t kLeanAddress = 2 * sizeof(std::uint64_t);
// An all-reduce's direct form (core::lean_reduction_direct): its input's
// address and bytes, then its output's address, three words; a broadcast
// root's: then the bytes it writes at the end of each receiver's output
// that a receiver posted in its own two words (its output's address and
// bytes) with kDirectBit.
constexpr std::size_t kLeanReduceAddress = 3 * sizeof(std::uint64_t);
using LeanHeader = std::array<std::uint64_t, kLeanHeader / 8>;

// The slot's form of a header. 16 bytes where it fits (kCompactBit in word
// 0; the root in bits 36..63; count and budget as 32-bit halves of word 1):
// no all-to-all-v, at most one dim (then the count), count and budget under
// 2^32, root under 2^28. Then the header, the slot's flag and up to 32 bytes of
// input share one cache line: a small collective's reader misses one line per
// peer, not two, and its writer owns one before its flag goes out. Else the
// 64 bytes as they are.
constexpr std::uint64_t kCompactBit = std::uint64_t{1} << 35;
constexpr std::size_t kCompactHeader = 16;
constexpr unsigned kCompactRootShift = 36;

// Writes `h` in its slot form at `out` (room for kLeanHeader); its bytes.
std::size_t encode_lean_head(const LeanHeader& h, std::byte* out);

// A peer's header from its slot, either form, into `h`, and the form's bytes
// (its input follows). False for a slot too short for its form, or a compact
// one of more than one dim.
bool decode_lean_head(std::span<const std::byte> got, LeanHeader& h, std::size_t& head_bytes);

// The collectives the lean path runs.
bool lean_kind(CollectiveKind kind);

// A rank's header of its request (its checked geometry; `view` its input, a
// broadcast receiver's output). An all_to_all_v's header: h[1] is the row
// width (elements), h[3] this rank's output capacity (elements; kNoCapacity
// for the value form), no dims; its slot holds the send counts (one word per
// rank) before the rows.
constexpr std::uint64_t kNoCapacity = ~std::uint64_t{0};
LeanHeader lean_header(const core::Request& req, const core::Geometry& g, const TensorView* view);

struct LeanPlan {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  DataType dtype = DataType::kBytes;
  ReduceOp op = ReduceOp::kSum;
  std::size_t count = 0;  // elements of each input (the sender's, for a broadcast)
  std::size_t root = 0;   // reduce's root, broadcast's sender
  Shape shape;            // of each input (the sender's)
  // all_to_all_v: `count` is the row width; rows[s * world + d] rows go from s to d.
  std::vector<std::size_t> rows;
  std::vector<std::size_t> received;  // lean_fits' own: rows per receiver
};

// Whether the ranks' lean slots (their headers, payload sizes and payloads)
// make one collective that the lean path runs; the same answer on every rank.
// Every rank's payload is its input (of the count's bytes), but a
// broadcast receiver's (none) and a reduce's root's (its input or none: it
// reduces from its own input).
// What it refuses (any difference) goes to the agreement, which names it.
// `plan` (the caller's, reused: no allocation per call) is filled when it fits.
bool lean_fits(const std::vector<LeanHeader>& heads, const std::vector<std::size_t>& sizes,
               const std::vector<const std::byte*>& inputs, std::size_t world, LeanPlan& plan);

// An all_to_all_v's rows that source `s` sends to the ranks before `d`: where
// its block for `d` starts in its payload.
std::size_t rows_before(const LeanPlan& plan, std::size_t world, std::size_t s, std::size_t d);

}  // namespace ruccl::world
