// Writes the seed corpus: valid messages and fingerprints the fuzzers mutate.
//   ruccl_fuzz_seeds <corpus dir>   (writes <dir>/fuzz_wire_header/*, <dir>/fuzz_fingerprint/*,
//                                    <dir>/fuzz_agree/*, <dir>/fuzz_lean/*,
//                                    <dir>/fuzz_bundle/*)
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_common.hpp"
#include "world/bundle_codec.hpp"
#include "world/fingerprint_codec.hpp"
#include "world/lean_codec.hpp"

namespace {
using namespace ruccl;

void write(const std::filesystem::path& path, const void* data, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

core::Request request(CollectiveKind kind, ruccl::Shape shape, std::size_t world) {
  core::Request q;
  q.kind = kind;
  q.shape = shape;
  q.max_chunk_bytes = 4096;
  if (kind == CollectiveKind::kAllToAllV) {  // the rows, spread over the world
    const std::size_t rows = shape.empty() ? 1 : shape[0];
    for (std::size_t d = 0; d < world; ++d) q.send_counts.push_back(rows / world + (d < rows % world));
  }
  return q;
}

// What check_local derives (with input; broadcast receivers without an output: nothing).
core::Geometry geometry_of(const core::Request& q) {
  core::Geometry g;
  if (!q.has_input) return core::Geometry{0, 1, 0};
  const bool rows = q.kind == CollectiveKind::kAllGather ||
                    q.kind == CollectiveKind::kReduceScatter || q.kind == CollectiveKind::kAllToAllV;
  g.count = ruccl::shape_count(q.shape).value_or(0);
  g.unit = rows ? core::row_unit(q.shape) : 1;
  g.rows = rows ? (q.shape.empty() ? 1 : q.shape[0]) : g.count;
  return g;
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
  std::filesystem::create_directories(root / "fuzz_agree");
  std::filesystem::create_directories(root / "fuzz_lean");
  std::filesystem::create_directories(root / "fuzz_bundle");

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
  // failed local check, in worlds of 2 and 4, each geometry what its shape
  // gives (decode refuses others).
  for (std::size_t world : {2u, 4u}) {
    std::vector<core::Request> requests(4);
    requests[0] = request(CollectiveKind::kAllReduce, {1003}, world);
    requests[1] = request(CollectiveKind::kBroadcast, {}, world);
    requests[1].has_input = false;
    requests[1].root = 1;
    requests[2] = request(CollectiveKind::kAllToAllV, {8, 3}, world);
    requests[3] = request(CollectiveKind::kReduce, {1003}, world);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      Result<core::Geometry> geometry = geometry_of(requests[i]);
      if (i == 3) geometry = Status(ErrorCode::kInvalidArgument, "null input");
      const auto words = world::encode(requests[i], geometry, world);
      if (!world::decode(words, 0, world)) return 1;
      std::vector<std::uint8_t> bytes(1 + words.size() * 8);
      bytes[0] = static_cast<std::uint8_t>(world - 1);
      std::memcpy(bytes.data() + 1, words.data(), words.size() * 8);
      write(root / "fuzz_fingerprint" / ("w" + std::to_string(world) + "_" + std::to_string(i)),
            bytes.data(), bytes.size());
    }
  }

  // Agreements: every kind over worlds of 2 and 3, every rank's record valid
  // and agreeing (the broadcast's sender is rank 1, the reduce's root rank 1).
  for (std::size_t world : {2u, 3u}) {
    for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kReduce,
                                CollectiveKind::kBroadcast, CollectiveKind::kAllGather,
                                CollectiveKind::kReduceScatter, CollectiveKind::kAllToAllV}) {
      std::vector<std::uint8_t> bytes = {static_cast<std::uint8_t>(world - 1), 1, 3};
      for (std::size_t r = 0; r < world; ++r) {
        core::Request q = request(kind, {6, 2}, world);
        if (kind == CollectiveKind::kReduce) q.root = 1;
        if (kind == CollectiveKind::kBroadcast && r != 1) {
          q = request(kind, {}, world);
          q.has_input = false;
        }
        const auto words = world::encode(q, geometry_of(q), world);
        if (!world::decode(words, 0, world)) return 1;
        const auto* p = reinterpret_cast<const std::uint8_t*>(words.data());
        bytes.insert(bytes.end(), p, p + fuzz::agree_record_words(world) * 8);
      }
      write(root / "fuzz_agree" /
                (std::string(collective_name(kind)) + "_w" + std::to_string(world)),
            bytes.data(), bytes.size());
    }
  }
  // The lean path's slots: 2 and 3 ranks of an f32 all-reduce (compact
  // headers) and of a 2x3 one (long), as fuzz_lean reads them.
  for (const std::size_t world : {std::size_t{2}, std::size_t{3}}) {
    for (const bool two_dims : {false, true}) {
      core::Request q =
          request(CollectiveKind::kAllReduce, two_dims ? Shape{2, 3} : Shape{6}, world);
      q.in = TensorView{nullptr, DataType::kF32, q.shape, host_device(0), nullptr};
      const world::LeanHeader h = world::lean_header(q, geometry_of(q), &q.in);
      std::vector<std::uint8_t> bytes = {static_cast<std::uint8_t>(world - 1)};
      std::vector<std::uint8_t> slots;
      for (std::size_t r = 0; r < world; ++r) {
        std::byte slot[world::kLeanHeader + 6 * sizeof(float)] = {};
        const std::size_t head = world::encode_lean_head(h, slot);
        for (std::size_t i = 0; i < 6; ++i) {
          const float x = static_cast<float>(r * 10 + i);
          std::memcpy(slot + head + i * sizeof x, &x, sizeof x);
        }
        const std::size_t n = head + 6 * sizeof(float);  // a multiple of 4
        bytes.push_back(static_cast<std::uint8_t>(n / 4));
        const auto* p = reinterpret_cast<const std::uint8_t*>(slot);
        slots.insert(slots.end(), p, p + n);
      }
      bytes.insert(bytes.end(), slots.begin(), slots.end());
      write(root / "fuzz_lean" /
                ("all_reduce_w" + std::to_string(world) + (two_dims ? "_2d" : "_1d")),
            bytes.data(), bytes.size());
    }
  }
  // Another node's bundles, as fuzz_bundle reads them: 2 and 3 ranks (from
  // rank 2, 3) with messages of 0, 5 and 24 bytes.
  for (const std::size_t ranks : {std::size_t{2}, std::size_t{3}}) {
    std::vector<std::uint64_t> bundle;
    const std::size_t lengths[3] = {5, 24, 0};
    for (std::size_t j = 0; j < ranks; ++j) {
      std::vector<std::byte> m(lengths[j]);
      for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<std::byte>(j * 16 + i);
      world::bundle_append(bundle, m);
    }
    std::vector<std::uint8_t> bytes = {static_cast<std::uint8_t>(ranks + 9 * ranks)};
    const auto* p = reinterpret_cast<const std::uint8_t*>(bundle.data());
    bytes.insert(bytes.end(), p, p + bundle.size() * 8);
    write(root / "fuzz_bundle" / ("ranks" + std::to_string(ranks)), bytes.data(), bytes.size());
  }
  return 0;
}
