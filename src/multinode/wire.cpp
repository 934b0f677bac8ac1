#include "multinode/wire.hpp"

#include <algorithm>
#include <cstring>

namespace ruccl::multinode {
namespace {
constexpr std::size_t kHeader = 13;          // fixed fields before the dims
constexpr std::size_t kMessageWords = 32;    // 256 bytes of error message
}  // namespace

std::size_t wire_words(std::size_t world) { return kHeader + kMaxDims + world + 1 + kMessageWords; }

Result<std::vector<std::uint64_t>> encode(const core::Request& q,
                                          const Result<core::Geometry>& g, std::size_t world) {
  if (q.shape.size() > kMaxDims)
    return Status(ErrorCode::kInvalidArgument,
                  "tensors of more than 16 dims cannot cross processes yet");
  std::vector<std::uint64_t> w(wire_words(world), 0);
  w[0] = static_cast<std::uint64_t>(q.kind);
  w[1] = static_cast<std::uint64_t>(q.dtype);
  w[2] = static_cast<std::uint64_t>(q.op);
  w[3] = q.root;
  w[4] = q.has_input;
  w[5] = q.out.has_value();
  w[6] = q.out ? q.out->count() : 0;
  w[7] = q.max_chunk_bytes;
  w[8] = static_cast<std::uint64_t>(g.status().code());
  if (g.is_ok()) {
    w[9] = g.value().count;
    w[10] = g.value().unit;
    w[11] = g.value().rows;
  }
  w[12] = q.shape.size();
  std::copy(q.shape.begin(), q.shape.end(), w.begin() + kHeader);
  if (q.send_counts.size() == world)
    std::copy(q.send_counts.begin(), q.send_counts.end(), w.begin() + kHeader + kMaxDims);
  const std::string& msg = g.status().message();
  const std::size_t len = std::min(msg.size(), kMessageWords * 8);
  w[kHeader + kMaxDims + world] = len;
  std::memcpy(w.data() + kHeader + kMaxDims + world + 1, msg.data(), len);
  return w;
}

Result<Decoded> decode(std::span<const std::uint64_t> w, std::size_t world) {
  auto bad = [](const std::string& what) {
    return Status(ErrorCode::kProtocolError, "fingerprint record: " + what);
  };
  if (w.size() != wire_words(world))
    return bad(std::to_string(w.size()) + " words, expected " + std::to_string(wire_words(world)));
  auto in_range = [&](std::size_t i, std::uint64_t last, const char* name) -> Status {
    if (w[i] <= last) return Status::ok();
    return bad(std::string(name) + " " + std::to_string(w[i]) + " out of range");
  };
  RUCCL_TRY(in_range(0, static_cast<std::uint64_t>(CollectiveKind::kAllToAllV), "collective kind"));
  RUCCL_TRY(in_range(1, static_cast<std::uint64_t>(DataType::kBytes), "dtype"));
  RUCCL_TRY(in_range(2, static_cast<std::uint64_t>(ReduceOp::kProd), "op"));
  RUCCL_TRY(in_range(4, 1, "has_input flag"));
  RUCCL_TRY(in_range(5, 1, "output flag"));
  RUCCL_TRY(in_range(8, static_cast<std::uint64_t>(kLastErrorCode), "error code"));
  RUCCL_TRY(in_range(12, kMaxDims, "dims"));
  RUCCL_TRY(in_range(kHeader + kMaxDims + world, kMessageWords * 8, "message length"));

  Decoded d;
  core::Request& q = d.request;
  q.kind = static_cast<CollectiveKind>(w[0]);
  q.dtype = static_cast<DataType>(w[1]);
  q.op = static_cast<ReduceOp>(w[2]);
  q.root = w[3];
  q.has_input = w[4] != 0;
  if (w[5] != 0) q.out = TensorView{nullptr, q.dtype, Shape{w[6]}, {}, nullptr};
  q.max_chunk_bytes = w[7];
  const std::size_t dims = w[12];
  q.shape.assign(w.begin() + kHeader, w.begin() + kHeader + dims);
  q.in.shape = q.shape;
  q.in.dtype = q.dtype;
  if (q.kind == CollectiveKind::kAllToAllV)
    q.send_counts.assign(w.begin() + kHeader + kMaxDims, w.begin() + kHeader + kMaxDims + world);
  const auto code = static_cast<ErrorCode>(w[8]);
  if (code == ErrorCode::kOk) {
    d.geometry = core::Geometry{w[9], w[10], w[11]};
  } else {
    const std::size_t len = w[kHeader + kMaxDims + world];
    std::string msg(len, '\0');
    std::memcpy(msg.data(), w.data() + kHeader + kMaxDims + world + 1, len);
    d.geometry = Status(code, msg);
  }
  return d;
}

}  // namespace ruccl::multinode
