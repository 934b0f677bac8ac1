// The header every transport message carries, and its validation. Pure code,
// no UCX: unit-tested and fuzzed on every build (tests/transport, tests/fuzz).
//
// Why a header when the UCX tag already names comm/seq/step/src/piece: the tag
// fields are truncated (seq to 16 bits, comm to 8), and nothing in a tag says
// that the bytes came from this job, in this protocol version, unharmed. The
// header carries the full sequence number, the payload size, a checksum of the
// payload, sender and receiver, and a MAC of itself; the receiver checks all
// of it against what it posted before any payload is used.
//
// Layout (72 bytes, little-endian, no padding):
//
//   0 magic u32 "RUCL"   4 version u16   6 kind u16    8 comm u32   12 src u32
//  16 seq u64           24 step u32    28 piece u32   32 bytes u64  40 checksum u64
//  48 dst u32           52 key_id u32  56 mac 16 bytes (of bytes 0..55)
//
// The job token is a key and never travels. WireKeys derives from it (keyed
// BLAKE2b as a PRF, libsodium crypto_generichash, one label per purpose):
//   - the header key: mac = SipHash-2-4 with 128-bit output (libsodium
//     crypto_shorthash_siphashx24) of bytes 0..55 under it. A PRF built for
//     short inputs: one header costs tens of nanoseconds (bench/README's
//     wire-header figure). Without the token nobody can make a header that
//     passes, so no process outside the job can pose as a rank; src and dst
//     are covered, so a header cannot be replayed to another receiver.
//   - the key id: 32 public bits that name the key (a one-way function of
//     it). A header whose key id differs comes from another job (told apart
//     from a forged or damaged header, whose MAC fails).
//   - the handshake key: the challenge-response of the connection handshake
//     (handshake_answer below).
// The payload checksum covers the payload only and is no MAC (it detects
// damage, not forgery); `checksum` is 0 and the flag kNoChecksum set when the
// sender does not compute it (RUCCL_CHECKSUM=0). Payload bytes are neither
// authenticated nor encrypted.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ruccl/status.hpp"

namespace ruccl::transport {

inline constexpr std::uint32_t kWireMagic = 0x4C435552;  // "RUCL" in memory order
inline constexpr std::uint16_t kWireVersion = 2;  // 2: MAC and key id instead of token
inline constexpr std::size_t kWireHeaderBytes = 72;

using JobToken = std::array<std::uint8_t, 16>;

enum class WireKind : std::uint16_t {
  kData = 1,   // a message of an algorithm step (or a fingerprint)
  kHello = 2,  // the connection handshake: a nonce, then the answer to the peer's
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
  std::uint32_t dst = 0;       // the receiving rank (connect()'s index)
  std::uint32_t key_id = 0;    // set by write_header (WireKeys::key_id)
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
  std::uint32_t dst = 0;
  bool check_dst = true;  // false: the receiver does not know its own index
  bool check_seq = true;  // false: receives that match any sequence number (notices)
};

// The keys of one job, derived once from its token (see the top of this file).
// Holds no reference to the token. Copyable; all-zero token: a valid key set
// (tests), as good as any other only for as long as the token stays secret.
class WireKeys {
 public:
  static constexpr std::size_t kNonceBytes = 16;
  static constexpr std::size_t kAnswerBytes = 32;
  using Nonce = std::array<std::uint8_t, kNonceBytes>;
  using Answer = std::array<std::uint8_t, kAnswerBytes>;

  WireKeys() : WireKeys(JobToken{}) {}
  explicit WireKeys(const JobToken& token) noexcept;
  ~WireKeys();  // wipes the keys (sodium_memzero)
  WireKeys(const WireKeys&) = default;
  WireKeys& operator=(const WireKeys&) = default;

  std::uint32_t key_id() const { return key_id_; }
  // The 128-bit MAC of `bytes` at `data` under the header key.
  std::array<std::uint8_t, 16> header_mac(const void* data, std::size_t bytes) const noexcept;
  // The connection handshake's answer of `responder` to `challenger`'s nonce:
  // keyed BLAKE2b-256 under the handshake key of (label, challenger's nonce,
  // responder's own nonce, responder, challenger). Ranks in that order tell
  // the two directions apart, the nonces are fresh per connection: an answer
  // copied from another connection, or reflected back, does not match.
  Answer handshake_answer(const Nonce& challenge, const Nonce& own, std::uint32_t responder,
                          std::uint32_t challenger) const noexcept;
  // A fresh random nonce (libsodium randombytes_buf, the OS random source).
  static Nonce fresh_nonce() noexcept;
  // Constant-time comparison of two answers.
  static bool same(const Answer& a, const Answer& b) noexcept;

 private:
  std::array<std::uint8_t, 16> header_key_{};
  std::array<std::uint8_t, 32> handshake_key_{};
  std::uint32_t key_id_ = 0;
};

// A 64-bit checksum of `bytes` at `data`: four interleaved Fletcher-style lanes
// over 64-bit words, finished with a mix. Any change of one bit changes it.
// Runs at several GB/s (the lanes vectorise).
std::uint64_t payload_checksum(const void* data, std::size_t bytes) noexcept;

// Writes `h` into `out[0..kWireHeaderBytes)`, with `keys`' key id and the MAC
// (h.key_id is ignored).
void write_header(const WireHeader& h, const WireKeys& keys,
                  std::span<std::byte, kWireHeaderBytes> out) noexcept;

// Parses and validates a received header against `expect`, in this order:
// length, magic, version, key id, MAC, kind, comm/src/dst/seq/step/piece,
// bytes. Every failure is kProtocolError naming what differed; another key id
// says that the message comes from another job (refused), a failed MAC that
// it was forged or damaged. No message names the token (it is a key).
Result<WireHeader> read_header(std::span<const std::byte> wire, const WireExpect& expect,
                               const WireKeys& keys);

// Checks a payload against its header's checksum (ok when the sender set
// kNoChecksum). kProtocolError on a mismatch.
Status check_payload(const WireHeader& h, const void* payload, std::size_t bytes);

// "3f2a...": a token in hex, for tests (never in an error message: it is a key).
std::string token_hex(const JobToken& token);

}  // namespace ruccl::transport
