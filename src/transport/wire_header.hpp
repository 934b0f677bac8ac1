// The header every transport message carries, and its validation. Pure code,
// no UCX: unit-tested and fuzzed on every build (tests/transport, tests/fuzz).
//
// Why a header when the UCX tag already names comm/seq/step/src/piece: the tag
// fields are truncated (seq to 16 bits, comm to 8), and nothing in a tag says
// that the bytes came from this job, in this protocol version, unharmed. The
// header carries the full sequence number, the payload size, a checksum of the
// payload and the job token, and a checksum of itself; the receiver checks all
// of it against what it posted before any payload is used.
//
// Layout (72 bytes, little-endian, no padding):
//
//   0 magic u32 "RUCL"   4 version u16   6 kind u16    8 comm u32   12 src u32
//  16 seq u64           24 step u32    28 piece u32   32 bytes u64  40 checksum u64
//  48 token 16 bytes    64 header_check u64 (of bytes 0..63)
//
// The payload checksum covers the payload only; `checksum` is 0 and the flag
// kNoChecksum set when the sender does not compute it (RUCCL_CHECKSUM=0).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ruccl/status.hpp"

namespace ruccl::transport {

inline constexpr std::uint32_t kWireMagic = 0x4C435552;  // "RUCL" in memory order
inline constexpr std::uint16_t kWireVersion = 1;
inline constexpr std::size_t kWireHeaderBytes = 72;

using JobToken = std::array<std::uint8_t, 16>;

enum class WireKind : std::uint16_t {
  kData = 1,   // a message of an algorithm step (or a fingerprint)
  kHello = 2,  // the connection handshake: carries the job token, no payload
  kAbort = 3,  // a failure notice: the payload is the failing rank's error text
};
// Bit set in `kind`'s high byte: the sender computed no payload checksum.
inline constexpr std::uint16_t kNoChecksum = 0x8000;

struct WireHeader {
  std::uint32_t magic = kWireMagic;
  std::uint16_t version = kWireVersion;
  std::uint16_t kind = static_cast<std::uint16_t>(WireKind::kData);
  std::uint32_t comm = 0;
  std::uint32_t src = 0;
  std::uint64_t seq = 0;
  std::uint32_t step = 0;
  std::uint32_t piece = 0;
  std::uint64_t bytes = 0;     // payload bytes that follow (or travel in the next message)
  std::uint64_t checksum = 0;  // payload_checksum of them
  JobToken token{};
  friend bool operator==(const WireHeader&, const WireHeader&) = default;
};

// What the receiver expects of a header: the fields of the receive it posted.
struct WireExpect {
  WireKind kind = WireKind::kData;
  std::uint32_t comm = 0;
  std::uint32_t src = 0;
  std::uint64_t seq = 0;
  std::uint32_t step = 0;
  std::uint32_t piece = 0;
  std::uint64_t bytes = 0;
  JobToken token{};
  bool check_seq = true;  // false: receives that match any sequence number (notices)
};

// A 64-bit checksum of `bytes` at `data`: four interleaved Fletcher-style lanes
// over 64-bit words, finished with a mix. Any change of one bit changes it.
// Runs at several GB/s (the lanes vectorise).
std::uint64_t payload_checksum(const void* data, std::size_t bytes) noexcept;

// Writes `h` (with its header_check) into `out[0..kWireHeaderBytes)`.
void write_header(const WireHeader& h, std::span<std::byte, kWireHeaderBytes> out) noexcept;

// Parses and validates a received header against `expect`, in this order:
// length, magic, version, header_check, kind, token, comm/src/seq/step/piece,
// bytes. Every failure is kProtocolError naming what differed; a token
// mismatch says that the message comes from another job.
Result<WireHeader> read_header(std::span<const std::byte> wire, const WireExpect& expect);

// Checks a payload against its header's checksum (ok when the sender set
// kNoChecksum). kProtocolError on a mismatch.
Status check_payload(const WireHeader& h, const void* payload, std::size_t bytes);

// "3f2a...": a token in hex, for messages.
std::string token_hex(const JobToken& token);

}  // namespace ruccl::transport
