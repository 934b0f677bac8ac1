#include "world/fingerprint_codec.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "collectives/collective.hpp"

namespace ruccl::world {
namespace {
constexpr std::size_t kHeader = 13;        // fixed fields before the dims
constexpr std::size_t kMessageWords = 32;  // 256 bytes of error message

// An ok record against itself and the world: the checks the sender's
// check_local made that need no buffer (core/request.hpp), and that its
// geometry is what its shape gives. "" when consistent, else what is wrong.
std::string inconsistency(const core::Request& q, const core::Geometry& g, std::size_t out_count,
                          std::size_t rank, std::size_t world) {
  if (!q.has_input && q.kind != CollectiveKind::kBroadcast)
    return "has no input for a " + std::string(collective_name(q.kind));
  if (Status s = core::check_record(q, rank, world); !s.is_ok()) return s.message();
  std::size_t count = out_count;
  if (q.has_input) {
    const auto c = shape_count(q.shape);
    if (!c) return "has shape " + shape_string(q.shape) + " whose count overflows size_t";
    count = *c;
  } else if (!q.out) {
    count = 0;
  }
  const core::Geometry want = core::geometry_of(q.kind, q.shape, count);
  if (g.count != want.count || g.unit != want.unit || g.rows != want.rows)
    return "claims count " + std::to_string(g.count) + ", row unit " + std::to_string(g.unit) +
           ", rows " + std::to_string(g.rows) + " but its shape " + shape_string(q.shape) +
           " gives " + std::to_string(want.count) + ", " + std::to_string(want.unit) + ", " +
           std::to_string(want.rows);
  if (Status s = core::check_record_geometry(q, want, rank, world); !s.is_ok()) return s.message();
  return {};
}
}  // namespace

Status check_encodable(const core::Request& q, std::size_t rank) {
  if (q.shape.size() <= kMaxDims) return Status::ok();
  return Status(ErrorCode::kShapeMismatch, "rank " + std::to_string(rank) + " passed a tensor of " +
                                               std::to_string(q.shape.size()) + " dims; at most " +
                                               std::to_string(kMaxDims) + " dims cross processes");
}

std::size_t wire_words(std::size_t world) { return kHeader + kMaxDims + world + 1 + kMessageWords; }

std::vector<std::uint64_t> encode(const core::Request& q, const Result<core::Geometry>& g,
                                  std::size_t world) {
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
  // A failed check sends only its error (its shape may not even fit).
  const std::size_t dims = g.is_ok() ? std::min(q.shape.size(), kMaxDims) : 0;
  w[12] = dims;
  std::copy(q.shape.begin(), q.shape.begin() + static_cast<std::ptrdiff_t>(dims),
            w.begin() + kHeader);
  if (q.send_counts.size() == world)
    std::copy(q.send_counts.begin(), q.send_counts.end(), w.begin() + kHeader + kMaxDims);
  const std::string& msg = g.status().message();
  const std::size_t len = std::min(msg.size(), kMessageWords * 8);
  w[kHeader + kMaxDims + world] = len;
  std::memcpy(w.data() + kHeader + kMaxDims + world + 1, msg.data(), len);
  return w;
}

Result<Decoded> decode(std::span<const std::uint64_t> w, std::size_t rank, std::size_t world) {
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
  RUCCL_TRY(in_range(2, static_cast<std::uint64_t>(ReduceOp::kLxor), "op"));
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
    const core::Geometry g{w[9], w[10], w[11]};
    if (std::string why = inconsistency(q, g, w[6], rank, world); !why.empty())
      return bad("a " + std::string(collective_name(q.kind)) + " that " + why);
    d.geometry = g;
  } else {
    const std::size_t len = w[kHeader + kMaxDims + world];
    std::string msg(len, '\0');
    std::memcpy(msg.data(), w.data() + kHeader + kMaxDims + world + 1, len);
    d.geometry = Status(code, msg);
  }
  return d;
}

}  // namespace ruccl::world
