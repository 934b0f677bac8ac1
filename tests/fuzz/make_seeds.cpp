// Writes the seed corpus: valid messages and fingerprints the fuzzers mutate.
//   ruccl_fuzz_seeds <corpus dir>   (writes <dir>/fuzz_wire_header/*, <dir>/fuzz_fingerprint/*)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_common.hpp"
#include "multinode/wire.hpp"

namespace {

void write(const std::filesystem::path& path, const void* data, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ruccl;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const std::filesystem::path root = argv[1];
  std::filesystem::create_directories(root / "fuzz_wire_header");
  std::filesystem::create_directories(root / "fuzz_fingerprint");

  // Headers: with payloads of 0, 5 and 64 bytes, each with and without the
  // repair bit.
  for (std::size_t payload : {0u, 5u, 64u}) {
    const transport::WireExpect e = fuzz::expect_for(transport::kWireHeaderBytes + payload);
    transport::WireHeader h;
    h.comm = e.comm;
    h.src = e.src;
    h.seq = e.seq;
    h.step = e.step;
    h.piece = e.piece;
    h.bytes = payload;
    h.dst = e.dst;
    std::vector<std::byte> message(1 + transport::kWireHeaderBytes + payload);
    for (std::size_t i = 0; i < payload; ++i)
      message[1 + transport::kWireHeaderBytes + i] = static_cast<std::byte>(i * 13);
    h.checksum = transport::payload_checksum(message.data() + 1 + transport::kWireHeaderBytes, payload);
    transport::write_header(
        h, fuzz::fuzz_keys(), std::span<std::byte, transport::kWireHeaderBytes>(message.data() + 1,
                                                             transport::kWireHeaderBytes));
    for (std::uint8_t mode : {0, 1}) {
      message[0] = static_cast<std::byte>(mode);
      write(root / "fuzz_wire_header" / ("valid_" + std::to_string(payload) + "_" +
                                         std::to_string(mode)),
            message.data(), message.size());
    }
  }

  // Fingerprints: an all-reduce, a broadcast receiver, an all-to-all-v and a
  // failed local check, in worlds of 2 and 4.
  for (std::size_t world : {2u, 4u}) {
    std::vector<core::Request> requests(4);
    requests[0].kind = CollectiveKind::kAllReduce;
    requests[0].shape = {1003};
    requests[1].kind = CollectiveKind::kBroadcast;
    requests[1].has_input = false;
    requests[1].root = 1;
    requests[2].kind = CollectiveKind::kAllToAllV;
    requests[2].shape = {8, 3};
    requests[2].send_counts.assign(world, 2);
    requests[3].kind = CollectiveKind::kReduce;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      Result<core::Geometry> geometry = core::Geometry{1003, 1, 1003};
      if (i == 3) geometry = Status(ErrorCode::kInvalidArgument, "null input");
      auto words = multinode::encode(requests[i], geometry, world);
      if (!words) return 1;
      std::vector<std::uint8_t> bytes(1 + words.value().size() * 8);
      bytes[0] = static_cast<std::uint8_t>(world - 1);
      std::memcpy(bytes.data() + 1, words.value().data(), words.value().size() * 8);
      write(root / "fuzz_fingerprint" / ("w" + std::to_string(world) + "_" + std::to_string(i)),
            bytes.data(), bytes.size());
    }
  }
  return 0;
}
