// The message header: round trip, every validation failure by name, the MAC
// (no header can be made or moved without the key), and the token never
// appearing in what goes on the wire (headers, handshake nonces and answers).
#include "transport/wire_header.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

namespace ruccl::transport {
namespace {

const JobToken kToken = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

struct Message {
  WireExpect expect;
  WireKeys keys{kToken};
  std::vector<std::byte> bytes;  // header + inline payload
};

Message make(std::size_t payload, const JobToken& sender = kToken) {
  Message m;
  m.expect.comm = 1;
  m.expect.src = 7;
  m.expect.seq = 70000;  // beyond the tag's 16 bits
  m.expect.step = 3;
  m.expect.piece = 2;
  m.expect.bytes = payload;
  m.expect.dst = 4;
  m.bytes.resize(kWireHeaderBytes + payload);
  for (std::size_t i = 0; i < payload; ++i) m.bytes[kWireHeaderBytes + i] = std::byte(i * 31 + 1);
  WireHeader h;
  h.comm = m.expect.comm;
  h.src = m.expect.src;
  h.seq = m.expect.seq;
  h.step = m.expect.step;
  h.piece = m.expect.piece;
  h.bytes = payload;
  h.dst = m.expect.dst;
  h.checksum = payload_checksum(m.bytes.data() + kWireHeaderBytes, payload);
  write_header(h, WireKeys(sender),
               std::span<std::byte, kWireHeaderBytes>(m.bytes.data(), kWireHeaderBytes));
  return m;
}

Status verdict(const Message& m) {
  auto h = read_header(m.bytes, m.expect, m.keys);
  if (!h) return h.status();
  return check_payload(h.value(), m.bytes.data() + kWireHeaderBytes, m.expect.bytes);
}

void expect_refused(const Message& m, const std::string& words) {
  const Status s = verdict(m);
  EXPECT_EQ(s.code(), ErrorCode::kProtocolError) << s.to_string();
  EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
}

TEST(WireHeader, RoundTripKeepsEveryField) {
  for (std::size_t payload : {0u, 1u, 31u, 32u, 33u, 1000u}) {
    const Message m = make(payload);
    auto h = read_header(m.bytes, m.expect, m.keys);
    ASSERT_TRUE(h) << h.status().to_string();
    EXPECT_EQ(h.value().seq, 70000u);
    EXPECT_EQ(h.value().src, 7u);
    EXPECT_EQ(h.value().dst, 4u);
    EXPECT_EQ(h.value().key_id, m.keys.key_id());
    EXPECT_TRUE(check_payload(h.value(), m.bytes.data() + kWireHeaderBytes, payload));
  }
}

TEST(WireHeader, EveryFlippedPayloadBitIsCaught) {
  Message m = make(100);
  for (std::size_t byte = 0; byte < 100; ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      m.bytes[kWireHeaderBytes + byte] ^= std::byte(1 << bit);
      EXPECT_EQ(verdict(m).code(), ErrorCode::kProtocolError) << byte << ":" << bit;
      m.bytes[kWireHeaderBytes + byte] ^= std::byte(1 << bit);
    }
  EXPECT_TRUE(verdict(m));
}

TEST(WireHeader, SwappedWordsAreCaught) {
  Message m = make(64);
  std::byte tmp[8];
  std::memcpy(tmp, m.bytes.data() + kWireHeaderBytes, 8);
  std::memcpy(m.bytes.data() + kWireHeaderBytes, m.bytes.data() + kWireHeaderBytes + 32, 8);
  std::memcpy(m.bytes.data() + kWireHeaderBytes + 32, tmp, 8);
  expect_refused(m, "corrupted");
}

TEST(WireHeader, EveryFlippedHeaderBitIsCaught) {
  Message m = make(8);
  for (std::size_t byte = 0; byte < kWireHeaderBytes; ++byte) {
    m.bytes[byte] ^= std::byte{0x04};
    EXPECT_EQ(verdict(m).code(), ErrorCode::kProtocolError) << byte;
    m.bytes[byte] ^= std::byte{0x04};
  }
}

TEST(WireHeader, NamesWhatDiffers) {
  Message m = make(16);
  Message short_one = m;
  short_one.bytes.resize(40);
  expect_refused(short_one, "shorter than");
  JobToken other = kToken;
  other[0] ^= 1;
  Message other_job = make(16, other);
  expect_refused(other_job, "another job");
  expect_refused(other_job, "rank 7");
  Message dst = m;
  dst.expect.dst = 5;  // a header replayed to another receiver
  expect_refused(dst, "destination rank 4, expected 5");
  Message seq = m;
  seq.expect.seq = 4464;  // equal to 70000 modulo 2^16: only the header tells them apart
  expect_refused(seq, "sequence number 70000, expected 4464");
  Message size = m;
  size.expect.bytes = 17;
  expect_refused(size, "payload size 16, expected 17");
  Message kind = m;
  kind.expect.kind = WireKind::kHello;
  expect_refused(kind, "a data message where a hello message was expected");
  Message magic = m;
  magic.bytes[0] = std::byte{0};
  expect_refused(magic, "bad magic");
  Message src = m;
  src.expect.src = 6;
  expect_refused(src, "source rank 7, expected 6");
}

TEST(WireHeader, UncheckedPayloadsPassWhenTheSenderSaysSo) {
  Message m = make(16);
  WireHeader h;
  h.kind = static_cast<std::uint16_t>(WireKind::kData) | kNoChecksum;
  h.comm = m.expect.comm;
  h.src = m.expect.src;
  h.seq = m.expect.seq;
  h.step = m.expect.step;
  h.piece = m.expect.piece;
  h.bytes = 16;
  h.dst = m.expect.dst;
  write_header(h, m.keys, std::span<std::byte, kWireHeaderBytes>(m.bytes.data(), kWireHeaderBytes));
  m.bytes[kWireHeaderBytes + 3] ^= std::byte{1};
  EXPECT_TRUE(verdict(m));
}

// A forger who knows the layout but not the token: it can copy the key id off
// any header it saw, yet its MAC (made under any other key) fails.
TEST(WireHeader, AHeaderMadeWithoutTheKeyIsRefused) {
  Message forged = make(16);
  JobToken guess = kToken;
  guess[15] ^= 0x80;
  const Message made_by_guess = make(16, guess);
  // The forger's header under its guessed key, with the victim's key id pasted in.
  forged.bytes = made_by_guess.bytes;
  std::memcpy(forged.bytes.data() + 52, make(16).bytes.data() + 52, 4);
  expect_refused(forged, "header MAC");
  expect_refused(forged, "forged");
}

// What goes on the wire: no 4-byte window of the token (nor of the keys'
// material, which the tests cannot see) appears in a header or in the
// handshake's nonces and answers.
bool holds_token_piece(const std::uint8_t* data, std::size_t size, const JobToken& token) {
  for (std::size_t at = 0; at + 4 <= token.size(); ++at)
    if (std::search(data, data + size, token.data() + at, token.data() + at + 4) != data + size)
      return true;
  return false;
}

TEST(WireHeader, TheTokenNeverTravels) {
  // A random-looking token: the fixed kToken's runs (1 2 3 4) would match counters.
  const JobToken token = {0x9c, 0x31, 0xe4, 0x5a, 0x07, 0xbd, 0x62, 0xf8,
                          0x13, 0xa9, 0x4e, 0xc5, 0x70, 0x2b, 0xd6, 0x88};
  const WireKeys keys(token);
  std::vector<std::uint8_t> wire;
  for (std::uint16_t kind : {1, 2, 3}) {
    for (std::uint64_t seq : {0ull, 1ull, 70000ull}) {
      WireHeader h;
      h.kind = kind;
      h.seq = seq;
      h.src = 1;
      h.dst = 2;
      h.bytes = 16;
      std::byte out[kWireHeaderBytes];
      write_header(h, keys, std::span<std::byte, kWireHeaderBytes>(out, kWireHeaderBytes));
      const auto* p = reinterpret_cast<const std::uint8_t*>(out);
      wire.insert(wire.end(), p, p + kWireHeaderBytes);
    }
  }
  for (int i = 0; i < 8; ++i) {  // the handshake: nonces, then answers
    const WireKeys::Nonce mine = WireKeys::fresh_nonce();
    const WireKeys::Nonce theirs = WireKeys::fresh_nonce();
    const WireKeys::Answer answer = keys.handshake_answer(theirs, mine, 0, 1);
    wire.insert(wire.end(), mine.begin(), mine.end());
    wire.insert(wire.end(), answer.begin(), answer.end());
  }
  EXPECT_FALSE(holds_token_piece(wire.data(), wire.size(), token));
  // The check can fail: the version-1 layout carried the token at byte 48.
  std::vector<std::uint8_t> v1(wire.begin(), wire.begin() + kWireHeaderBytes);
  std::copy(token.begin(), token.end(), v1.begin() + 48);
  EXPECT_TRUE(holds_token_piece(v1.data(), v1.size(), token));
}

TEST(WireHeader, HandshakeAnswersBindNoncesRanksAndKey) {
  const WireKeys keys(kToken);
  const WireKeys::Nonce a = WireKeys::fresh_nonce();
  const WireKeys::Nonce b = WireKeys::fresh_nonce();
  EXPECT_NE(a, b);
  const WireKeys::Answer answer = keys.handshake_answer(a, b, 1, 0);
  EXPECT_TRUE(WireKeys::same(answer, WireKeys(kToken).handshake_answer(a, b, 1, 0)));
  // The other direction, another connection's nonce, another key: all differ.
  EXPECT_FALSE(WireKeys::same(answer, keys.handshake_answer(a, b, 0, 1)));
  EXPECT_FALSE(WireKeys::same(answer, keys.handshake_answer(WireKeys::fresh_nonce(), b, 1, 0)));
  EXPECT_FALSE(WireKeys::same(answer, keys.handshake_answer(a, WireKeys::fresh_nonce(), 1, 0)));
  JobToken other = kToken;
  other[3] ^= 1;
  EXPECT_FALSE(WireKeys::same(answer, WireKeys(other).handshake_answer(a, b, 1, 0)));
  EXPECT_NE(WireKeys(other).key_id(), keys.key_id());
}

// The MAC's cost per header (it runs once per message each side). Printed, not
// asserted (timing is not a test): see the report's command.
TEST(WireHeader, CostPerHeader) {
  const WireKeys keys(kToken);
  Message m = make(0);
  constexpr int kRounds = 200000;
  std::uint64_t sink = 0;
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) {
    WireHeader h;
    h.comm = 1;
    h.src = 7;
    h.seq = 70000 + static_cast<std::uint64_t>(i);
    h.dst = 4;
    write_header(h, keys, std::span<std::byte, kWireHeaderBytes>(m.bytes.data(), kWireHeaderBytes));
    m.expect.seq = h.seq;
    m.expect.step = 0;
    m.expect.piece = 0;
    auto read = read_header(m.bytes, m.expect, keys);
    sink += read ? read.value().seq : 1;
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() -
                                                             begin).count() / kRounds;
  const auto mac_begin = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) {
    m.bytes[16] = static_cast<std::byte>(i);
    sink += keys.header_mac(m.bytes.data(), 56)[0];
  }
  const double mac_ns = std::chrono::duration<double, std::nano>(
                            std::chrono::steady_clock::now() - mac_begin).count() / kRounds;
  std::printf("wire header: write+read %.1f ns per header; MAC alone %.1f ns (sink %llu)\n", ns,
              mac_ns, static_cast<unsigned long long>(sink % 10));
  EXPECT_GT(sink, 0u);
}

}  // namespace
}  // namespace ruccl::transport
