// Message tags of the transport: which collective, step, sender and piece a
// message belongs to. Pure code, no UCX: unit-tested on every build.
//
// Layout of the 64-bit tag (most significant bit first):
//
//   63      56 55             40 39        28 27             12 11        0
//   +---------+-----------------+------------+-----------------+-----------+
//   | comm  8 |     seq  16     |  step  12  |     src  16     | piece  12 |
//   +---------+-----------------+------------+-----------------+-----------+
//
// Every field is stored modulo 2^bits (it wraps; make_tag never fails), and
// split_tag returns the stored, wrapped values. Receives match the full tag
// (mask of all ones), so two messages are confused only if every field agrees.
// Why each width is enough:
//
//  - src (16 bits, 65536 ranks): the only field that separates *different*
//    senders to one receiver, whose messages UCX does not order against each
//    other. It must not wrap: a transport refuses to connect more than 2^16 peers.
//  - piece (12 bits) and step (12 bits) may wrap inside one collective (a chain
//    pass with many segments, a small byte budget cutting a chunk into thousands
//    of messages). That is safe: messages from one sender travel on one UCX
//    endpoint, UCX matches same-tag messages from one endpoint in send order,
//    and both sides post their pieces and steps in the same order.
//  - seq (16 bits) separates back-to-back collectives of one communicator, and
//    keeps a message left over by a failed collective (a peer's send that
//    arrived after this rank gave up) from matching a later one. A leftover
//    could only match again 65536 collectives later, and then only if every
//    other field and the exact size agree; a communicator that saw an error
//    should rebuild its transport anyway (see transport.hpp).
//  - comm (8 bits) separates communicators that share one transport. Ids that
//    are equal modulo 256 must not run collectives at the same time on the
//    same transport.
#pragma once

#include <cstdint>
#include <string>

namespace ruccl::transport {

// The fields of a tag, in the order of the layout above.
struct TagFields {
  std::uint32_t comm = 0;   // communicator id
  std::uint64_t seq = 0;    // collective sequence number within the communicator
  std::uint32_t step = 0;   // step of the algorithm within the collective
  std::uint32_t src = 0;    // rank of the sender
  std::uint32_t piece = 0;  // index of the message within the step (sender -> receiver)
  friend bool operator==(const TagFields&, const TagFields&) = default;
};

// Field widths and positions (bit index of each field's least significant bit).
inline constexpr unsigned kTagCommBits = 8;
inline constexpr unsigned kTagSeqBits = 16;
inline constexpr unsigned kTagStepBits = 12;
inline constexpr unsigned kTagSrcBits = 16;
inline constexpr unsigned kTagPieceBits = 12;

inline constexpr unsigned kTagPieceShift = 0;
inline constexpr unsigned kTagSrcShift = kTagPieceShift + kTagPieceBits;
inline constexpr unsigned kTagStepShift = kTagSrcShift + kTagSrcBits;
inline constexpr unsigned kTagSeqShift = kTagStepShift + kTagStepBits;
inline constexpr unsigned kTagCommShift = kTagSeqShift + kTagSeqBits;
static_assert(kTagCommShift + kTagCommBits == 64, "the tag fields fill 64 bits exactly");

// Communicator ids the transport keeps for itself; callers use ids below
// kFirstReservedComm. A message whose payload travels apart from its header
// (wire_header.hpp) sends the header under the payload's tag with
// kHeaderCommBit set in comm.
inline constexpr std::uint32_t kFirstReservedComm = 0x7D;
inline constexpr std::uint32_t kHelloComm = 0x7D;   // connection handshake
inline constexpr std::uint32_t kNoticeComm = 0x7E;  // failure notices
inline constexpr std::uint32_t kHeaderCommBit = 0x80;

// The most peers one transport serves: src must not wrap (see above).
inline constexpr std::uint64_t kMaxTagPeers = std::uint64_t{1} << kTagSrcBits;

namespace detail {
constexpr std::uint64_t field_mask(unsigned bits) { return (std::uint64_t{1} << bits) - 1; }
}  // namespace detail

// Packs the fields, each taken modulo 2^width.
constexpr std::uint64_t make_tag(const TagFields& f) {
  using detail::field_mask;
  return ((std::uint64_t{f.comm} & field_mask(kTagCommBits)) << kTagCommShift) |
         ((f.seq & field_mask(kTagSeqBits)) << kTagSeqShift) |
         ((std::uint64_t{f.step} & field_mask(kTagStepBits)) << kTagStepShift) |
         ((std::uint64_t{f.src} & field_mask(kTagSrcBits)) << kTagSrcShift) |
         ((std::uint64_t{f.piece} & field_mask(kTagPieceBits)) << kTagPieceShift);
}

// Unpacks a tag. split_tag(make_tag(f)) == f when every field is in range.
constexpr TagFields split_tag(std::uint64_t tag) {
  using detail::field_mask;
  TagFields f;
  f.comm = static_cast<std::uint32_t>((tag >> kTagCommShift) & field_mask(kTagCommBits));
  f.seq = (tag >> kTagSeqShift) & field_mask(kTagSeqBits);
  f.step = static_cast<std::uint32_t>((tag >> kTagStepShift) & field_mask(kTagStepBits));
  f.src = static_cast<std::uint32_t>((tag >> kTagSrcShift) & field_mask(kTagSrcBits));
  f.piece = static_cast<std::uint32_t>((tag >> kTagPieceShift) & field_mask(kTagPieceBits));
  return f;
}

// "0x0100050000102003 (comm 1 seq 5 step 0 src 258 piece 3)", for error messages.
std::string tag_string(std::uint64_t tag);

}  // namespace ruccl::transport
