#include "transport/wire_header.hpp"

#include <sodium.h>

#include <cstring>

namespace ruccl::transport {
namespace {

constexpr std::uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;

std::uint64_t mix(std::uint64_t x) noexcept {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

template <typename T>
void put(std::byte* at, T value) noexcept {
  std::memcpy(at, &value, sizeof value);
}
template <typename T>
T get(const std::byte* at) noexcept {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

std::string hex(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 60; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xF];
  return s;
}

const char* kind_name(std::uint16_t kind) {
  switch (static_cast<WireKind>(kind & ~kNoChecksum)) {
    case WireKind::kData: return "data";
    case WireKind::kHello: return "hello";
    case WireKind::kAbort: return "failure notice";
  }
  return "unknown kind";
}

Status protocol(const std::string& what) { return Status(ErrorCode::kProtocolError, what); }

constexpr std::size_t kMacAt = 56;   // the MAC covers bytes 0..55
constexpr std::size_t kMacBytes = 16;
static_assert(kMacAt + kMacBytes == kWireHeaderBytes);
static_assert(crypto_shorthash_siphashx24_BYTES == kMacBytes);
static_assert(crypto_shorthash_siphashx24_KEYBYTES == 16);

// sodium_init is idempotent and thread-safe; it picks the fastest code paths
// and opens the random source. A failure (no random source) leaves
// randombytes to abort the process, which libsodium does itself.
void ensure_sodium() noexcept {
  [[maybe_unused]] static const int initialised = sodium_init();
}

// A subkey: keyed BLAKE2b of a purpose label, under the token.
template <std::size_t N>
void derive(const JobToken& token, const char* label, std::array<std::uint8_t, N>& out) noexcept {
  static_assert(N >= crypto_generichash_BYTES_MIN && N <= crypto_generichash_BYTES_MAX);
  static_assert(sizeof(JobToken) >= crypto_generichash_KEYBYTES_MIN);
  crypto_generichash(out.data(), out.size(), reinterpret_cast<const unsigned char*>(label),
                     std::strlen(label), token.data(), token.size());
}

std::string hex32(std::uint32_t v) { return hex(v).substr(0, 2) + hex(v).substr(10); }

}  // namespace

std::uint64_t payload_checksum(const void* data, std::size_t bytes) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  // Lane j sums words j, j+4, j+8, ... (a) and the running sums (b): a flipped
  // bit changes a; a swapped pair of words changes b.
  std::uint64_t a[4] = {0, 0, 0, 0};
  std::uint64_t b[4] = {0, 0, 0, 0};
  auto add = [&](const unsigned char* block) {
    std::uint64_t w[4];
    std::memcpy(w, block, 32);
    for (int j = 0; j < 4; ++j) {
      a[j] += w[j];
      b[j] += a[j];
    }
  };
  std::size_t i = 0;
  for (; i + 32 <= bytes; i += 32) add(p + i);
  if (i < bytes) {  // the tail, zero-padded (the length below tells the pads apart)
    unsigned char last[32] = {};
    std::memcpy(last, p + i, bytes - i);
    add(last);
  }
  std::uint64_t h = mix(bytes * kPrime1);
  // a and b enter through separate mixes: a change of both by the same bits
  // (a top bit flip changes a and b by 2^63 alike) cannot cancel out.
  for (int j = 0; j < 4; ++j) h = mix(mix(h ^ (a[j] * kPrime1)) ^ ((b[j] + j) * kPrime2));
  return h;
}

WireKeys::WireKeys(const JobToken& token) noexcept {
  ensure_sodium();
  derive(token, "ruccl v2 header mac key", header_key_);
  derive(token, "ruccl v2 handshake key", handshake_key_);
  std::array<std::uint8_t, 16> id{};
  derive(token, "ruccl v2 public key id", id);
  std::memcpy(&key_id_, id.data(), sizeof key_id_);
}

WireKeys::~WireKeys() {
  sodium_memzero(header_key_.data(), header_key_.size());
  sodium_memzero(handshake_key_.data(), handshake_key_.size());
}

std::array<std::uint8_t, 16> WireKeys::header_mac(const void* data,
                                                 std::size_t bytes) const noexcept {
  std::array<std::uint8_t, 16> mac;
  crypto_shorthash_siphashx24(mac.data(), static_cast<const unsigned char*>(data), bytes,
                              header_key_.data());
  return mac;
}

WireKeys::Answer WireKeys::handshake_answer(const Nonce& challenge, const Nonce& own,
                                            std::uint32_t responder,
                                            std::uint32_t challenger) const noexcept {
  static constexpr char kLabel[] = "ruccl v2 handshake answer";
  unsigned char ranks[8];
  std::memcpy(ranks, &responder, 4);
  std::memcpy(ranks + 4, &challenger, 4);
  crypto_generichash_state state;
  crypto_generichash_init(&state, handshake_key_.data(), handshake_key_.size(), kAnswerBytes);
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(kLabel),
                            sizeof kLabel);
  crypto_generichash_update(&state, challenge.data(), challenge.size());
  crypto_generichash_update(&state, own.data(), own.size());
  crypto_generichash_update(&state, ranks, sizeof ranks);
  Answer answer;
  crypto_generichash_final(&state, answer.data(), answer.size());
  sodium_memzero(&state, sizeof state);
  return answer;
}

WireKeys::Nonce WireKeys::fresh_nonce() noexcept {
  ensure_sodium();
  Nonce nonce;
  randombytes_buf(nonce.data(), nonce.size());
  return nonce;
}

bool WireKeys::same(const Answer& a, const Answer& b) noexcept {
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

void write_header(const WireHeader& h, const WireKeys& keys,
                  std::span<std::byte, kWireHeaderBytes> out) noexcept {
  std::byte* o = out.data();
  put(o + 0, h.magic);
  put(o + 4, h.version);
  put(o + 6, h.kind);
  put(o + 8, h.comm);
  put(o + 12, h.src);
  put(o + 16, h.seq);
  put(o + 24, h.step);
  put(o + 28, h.piece);
  put(o + 32, h.bytes);
  put(o + 40, h.checksum);
  put(o + 48, h.dst);
  put(o + 52, keys.key_id());
  const auto mac = keys.header_mac(o, kMacAt);
  std::memcpy(o + kMacAt, mac.data(), kMacBytes);
}

Result<WireHeader> read_header(std::span<const std::byte> wire, const WireExpect& e,
                               const WireKeys& keys) {
  if (wire.size() < kWireHeaderBytes)
    return protocol("a message of " + std::to_string(wire.size()) +
                    " bytes is shorter than the " + std::to_string(kWireHeaderBytes) +
                    "-byte header");
  const std::byte* w = wire.data();
  WireHeader h;
  h.magic = get<std::uint32_t>(w + 0);
  if (h.magic != kWireMagic)
    return protocol("bad magic " + hex(h.magic) + " (not a ruccl message)");
  h.version = get<std::uint16_t>(w + 4);
  if (h.version != kWireVersion)
    return protocol("protocol version " + std::to_string(h.version) + ", this ruccl speaks " +
                    std::to_string(kWireVersion));
  h.src = get<std::uint32_t>(w + 12);
  h.key_id = get<std::uint32_t>(w + 52);
  if (h.key_id != keys.key_id())
    return protocol("key id " + hex32(h.key_id) + " of a message claiming to be from rank " +
                    std::to_string(h.src) + " differs from this job's " + hex32(keys.key_id()) +
                    ": the message comes from another job (another job token); refused");
  const auto mac = keys.header_mac(w, kMacAt);
  // Constant time: a timing difference must not tell a forger how far it got.
  if (sodium_memcmp(mac.data(), w + kMacAt, kMacBytes) != 0)
    return protocol("the header MAC of a message claiming to be from rank " +
                    std::to_string(h.src) +
                    " does not match: forged (made without this job's token) or damaged in "
                    "transit; refused");
  h.kind = get<std::uint16_t>(w + 6);
  h.comm = get<std::uint32_t>(w + 8);
  h.src = get<std::uint32_t>(w + 12);
  h.seq = get<std::uint64_t>(w + 16);
  h.step = get<std::uint32_t>(w + 24);
  h.piece = get<std::uint32_t>(w + 28);
  h.bytes = get<std::uint64_t>(w + 32);
  h.checksum = get<std::uint64_t>(w + 40);
  h.dst = get<std::uint32_t>(w + 48);

  const auto expected_kind = static_cast<std::uint16_t>(e.kind);
  if ((h.kind & ~kNoChecksum) != expected_kind)
    return protocol(std::string("a ") + kind_name(h.kind) + " message where a " +
                    kind_name(expected_kind) + " message was expected");
  auto field = [](const char* name, std::uint64_t got, std::uint64_t want) {
    return protocol(std::string("header ") + name + " " + std::to_string(got) + ", expected " +
                    std::to_string(want));
  };
  if (h.comm != e.comm) return field("communicator", h.comm, e.comm);
  if (h.src != e.src) return field("source rank", h.src, e.src);
  if (e.check_dst && h.dst != e.dst) return field("destination rank", h.dst, e.dst);
  if (e.check_seq && h.seq != e.seq) return field("sequence number", h.seq, e.seq);
  if (h.step != e.step) return field("step", h.step, e.step);
  if (h.piece != e.piece) return field("piece", h.piece, e.piece);
  if (h.bytes != e.bytes) return field("payload size", h.bytes, e.bytes);
  if (wire.size() != kWireHeaderBytes && wire.size() - kWireHeaderBytes != h.bytes)
    return field("inline payload size", wire.size() - kWireHeaderBytes, h.bytes);
  return h;
}

Status check_payload(const WireHeader& h, const void* payload, std::size_t bytes) {
  if ((h.kind & kNoChecksum) != 0) return Status::ok();
  const std::uint64_t got = payload_checksum(payload, bytes);
  if (got == h.checksum) return Status::ok();
  return protocol("payload checksum " + hex(got) + " of " + std::to_string(bytes) +
                  " bytes from rank " + std::to_string(h.src) + " (collective #" +
                  std::to_string(h.seq) + ", step " + std::to_string(h.step) +
                  ") differs from the sender's " + hex(h.checksum) +
                  ": the payload was corrupted in transit");
}

std::string token_hex(const JobToken& token) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::uint8_t b : token) {
    s += digits[b >> 4];
    s += digits[b & 0xF];
  }
  return s;
}

}  // namespace ruccl::transport
