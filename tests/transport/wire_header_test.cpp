// The message header: round trip, and every validation failure by name.
#include "transport/wire_header.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace ruccl::transport {
namespace {

struct Message {
  WireExpect expect;
  std::vector<std::byte> bytes;  // header + inline payload
};

Message make(std::size_t payload) {
  Message m;
  m.expect.comm = 1;
  m.expect.src = 7;
  m.expect.seq = 70000;  // beyond the tag's 16 bits
  m.expect.step = 3;
  m.expect.piece = 2;
  m.expect.bytes = payload;
  m.expect.token = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  m.bytes.resize(kWireHeaderBytes + payload);
  for (std::size_t i = 0; i < payload; ++i) m.bytes[kWireHeaderBytes + i] = std::byte(i * 31 + 1);
  WireHeader h;
  h.comm = m.expect.comm;
  h.src = m.expect.src;
  h.seq = m.expect.seq;
  h.step = m.expect.step;
  h.piece = m.expect.piece;
  h.bytes = payload;
  h.token = m.expect.token;
  h.checksum = payload_checksum(m.bytes.data() + kWireHeaderBytes, payload);
  write_header(h, std::span<std::byte, kWireHeaderBytes>(m.bytes.data(), kWireHeaderBytes));
  return m;
}

Status verdict(const Message& m) {
  auto h = read_header(m.bytes, m.expect);
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
    auto h = read_header(m.bytes, m.expect);
    ASSERT_TRUE(h) << h.status().to_string();
    EXPECT_EQ(h.value().seq, 70000u);
    EXPECT_EQ(h.value().src, 7u);
    EXPECT_EQ(h.value().token, m.expect.token);
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
  expect_refused({m.expect, std::vector<std::byte>(m.bytes.begin(), m.bytes.begin() + 40)},
                 "shorter than");
  Message other_job = m;
  other_job.expect.token[0] ^= 1;
  expect_refused(other_job, "another job");
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
  h.token = m.expect.token;
  write_header(h, std::span<std::byte, kWireHeaderBytes>(m.bytes.data(), kWireHeaderBytes));
  m.bytes[kWireHeaderBytes + 3] ^= std::byte{1};
  EXPECT_TRUE(verdict(m));
}

}  // namespace
}  // namespace ruccl::transport
