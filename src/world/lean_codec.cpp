// The lean path's fingerprint, its slot forms and its decision (lean_codec.hpp).
#include "world/lean_codec.hpp"

#include <cstring>
#include <optional>

#include "ruccl/types.hpp"

namespace ruccl::world {

std::size_t encode_lean_head(const LeanHeader& h, std::byte* out) {
  const std::uint64_t dims = (h[0] >> 16) & 0xff;
  const bool a2a = ((h[0] >> 24) & 0xff) == static_cast<std::uint64_t>(CollectiveKind::kAllToAllV);
  const bool compact = !a2a && dims <= 1 && (dims == 0 || h[4] == h[1]) && h[5] == 0 && h[6] == 0 &&
                       h[7] == 0 && (dims == 1 || h[4] == 0) && h[1] >> 32 == 0 &&
                       h[2] >> 32 == 0 && h[3] >> 28 == 0 && h[0] >> kCompactRootShift == 0 &&
                       (h[0] & kCompactBit) == 0;
  if (!compact) {
    std::memcpy(out, h.data(), kLeanHeader);
    return kLeanHeader;
  }
  const std::uint64_t w[2] = {h[0] | kCompactBit | h[3] << kCompactRootShift, h[1] | h[2] << 32};
  std::memcpy(out, w, kCompactHeader);
  return kCompactHeader;
}

bool decode_lean_head(std::span<const std::byte> got, LeanHeader& h, std::size_t& head_bytes) {
  std::uint64_t w0 = 0;
  if (got.size() < sizeof w0) return false;
  std::memcpy(&w0, got.data(), sizeof w0);
  if ((w0 & kCompactBit) == 0) {
    if (got.size() < kLeanHeader) return false;
    std::memcpy(h.data(), got.data(), kLeanHeader);
    head_bytes = kLeanHeader;
    return true;
  }
  if (got.size() < kCompactHeader) return false;
  std::uint64_t w1 = 0;
  std::memcpy(&w1, got.data() + sizeof w0, sizeof w1);
  h = LeanHeader{};
  h[0] = w0 & (kCompactBit - 1);
  h[1] = w1 & 0xffffffffu;
  h[2] = w1 >> 32;
  h[3] = w0 >> kCompactRootShift;
  const std::uint64_t dims = (h[0] >> 16) & 0xff;
  if (dims > 1) return false;
  if (dims == 1) h[4] = h[1];
  head_bytes = kCompactHeader;
  return true;
}

bool lean_kind(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduce ||
         kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kAllGather ||
         kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kAllToAllV;
}
LeanHeader lean_header(const core::Request& req, const core::Geometry& g, const TensorView* view) {
  LeanHeader h{};
  const bool a2a = req.kind == CollectiveKind::kAllToAllV;
  const std::size_t dims = view && !a2a ? view->shape.size() : 0;
  h[0] = static_cast<std::uint64_t>(req.dtype) | std::uint64_t(req.op) << 8 |
         std::uint64_t(dims) << 16 | std::uint64_t(req.kind) << 24 |
         std::uint64_t(req.has_input ? 1 : 0) << 32 | std::uint64_t(req.out ? 1 : 0) << 33;
  h[1] = g.count;
  h[2] = req.max_chunk_bytes;
  h[3] = req.kind == CollectiveKind::kReduce ? req.root : 0;
  for (std::size_t d = 0; d < dims; ++d) h[4 + d] = view->shape[d];
  if (a2a) {
    h[0] &= ~std::uint64_t{0xff00};  // the op does not take part
    h[1] = g.unit;
    h[3] = req.out ? req.out->count() : kNoCapacity;
  }
  return h;
}

namespace {

// Whether every rank's header equals rank 0's but for has_output (value and
// into forms may mix) and, for an all_to_all_v, the output capacity.
bool same_headers(const std::vector<LeanHeader>& heads, std::size_t world, bool but_capacity) {
  constexpr std::uint64_t kFormBits = std::uint64_t{1} << 33 | kDirectBit;
  const LeanHeader& b = heads[0];
  for (std::size_t r = 1; r < world; ++r) {
    const LeanHeader& a = heads[r];
    // Word by word, in place (per small collective: no copies, no memcmp).
    if (((a[0] ^ b[0]) & ~kFormBits) != 0) return false;
    for (std::size_t w = 1; w < a.size(); ++w)
      if (a[w] != b[w] && !(but_capacity && w == 3)) return false;
  }
  return true;
}

// An all_to_all_v's slots: every rank's send counts (read from its slot, not
// trusted: they must add up to its payload, with no overflow) fit every
// receiver's capacity, and a row fits the budget; else the agreement decides
// and names what is wrong.
bool lean_fits_a2a(const std::vector<LeanHeader>& heads, const std::vector<std::size_t>& sizes,
                   const std::vector<const std::byte*>& inputs, std::size_t world, LeanPlan& plan) {
  const LeanHeader& h0 = heads[0];
  if (!same_headers(heads, world, true)) return false;
  if ((h0[0] & 0xff) > static_cast<std::uint64_t>(DataType::kBytes)) return false;
  plan.kind = CollectiveKind::kAllToAllV;
  plan.dtype = static_cast<DataType>(h0[0] & 0xff);
  plan.op = ReduceOp::kSum;
  plan.count = h0[1];
  plan.root = 0;
  plan.shape.clear();
  plan.rows.assign(world * world, 0);
  const auto row_bytes = checked_mul(plan.count, dtype_size(plan.dtype));
  if (!row_bytes || *row_bytes == 0 || *row_bytes > h0[2]) return false;
  const auto counts_bytes = checked_mul(world, sizeof(std::uint64_t));
  if (!counts_bytes) return false;
  std::vector<std::size_t>& received = plan.received;  // (its room kept: no allocation per call)
  received.assign(world, 0);
  for (std::size_t s = 0; s < world; ++s) {
    if (sizes[s] < *counts_bytes) return false;
    std::optional<std::size_t> total = 0;
    for (std::size_t d = 0; d < world && total; ++d) {
      std::uint64_t c = 0;
      std::memcpy(&c, inputs[s] + d * sizeof c, sizeof c);
      plan.rows[s * world + d] = c;
      total = checked_add(*total, c);
      const auto in_d = checked_add(received[d], c);
      if (!in_d) return false;
      received[d] = *in_d;
    }
    const auto payload = total ? checked_mul(*total, *row_bytes) : std::nullopt;
    if (!payload || *payload != sizes[s] - *counts_bytes) return false;
  }
  for (std::size_t d = 0; d < world; ++d) {
    const auto elements = checked_mul(received[d], plan.count);
    if (!elements || (heads[d][3] != kNoCapacity && *elements > heads[d][3])) return false;
  }
  return true;
}

}  // namespace

bool lean_fits(const std::vector<LeanHeader>& heads, const std::vector<std::size_t>& sizes,
               const std::vector<const std::byte*>& inputs, std::size_t world, LeanPlan& plan) {
  const auto field = [](const LeanHeader& h, unsigned shift, std::uint64_t mask) {
    return (h[0] >> shift) & mask;
  };
  const LeanHeader& h0 = heads[0];
  const auto kind = static_cast<CollectiveKind>(field(h0, 24, 0xff));
  if (!lean_kind(kind)) return false;
  if (kind == CollectiveKind::kAllToAllV) return lean_fits_a2a(heads, sizes, inputs, world, plan);
  std::size_t lead = 0;  // the rank whose header describes the data
  if (kind == CollectiveKind::kBroadcast) {
    std::size_t senders = 0;
    for (std::size_t r = 0; r < world; ++r)
      if (field(heads[r], 32, 1) != 0) lead = r, ++senders;
    if (senders != 1) return false;
    const LeanHeader& s = heads[lead];
    for (std::size_t r = 0; r < world; ++r) {
      const LeanHeader& h = heads[r];
      if (field(h, 24, 0xff) != field(s, 24, 0xff) || h[2] != s[2]) return false;
      if (r == lead || field(h, 33, 1) == 0) continue;  // a value form takes the sender's
      if (field(h, 0, 0xff) != field(s, 0, 0xff) || h[1] != s[1]) return false;
    }
  } else {
    if (!same_headers(heads, world, false)) return false;
    if (kind == CollectiveKind::kReduce && h0[3] >= world) return false;
  }
  const LeanHeader& h = heads[lead];
  const std::uint64_t dims = field(h, 16, 0xff);
  if (dims > kLeanDims || field(h, 0, 0xff) > static_cast<std::uint64_t>(DataType::kBytes))
    return false;
  if (kind != CollectiveKind::kReduce && h[3] != 0) return false;  // a root only for a reduce
  plan.kind = kind;
  plan.dtype = static_cast<DataType>(field(h, 0, 0xff));
  plan.op = static_cast<ReduceOp>(field(h, 8, 0xff));
  plan.count = h[1];
  plan.root = kind == CollectiveKind::kBroadcast ? lead : h[3];
  plan.shape.assign(h.begin() + 4, h.begin() + 4 + static_cast<std::ptrdiff_t>(dims));
  plan.rows.clear();
  // Every input is where its header says (bytes of the count).
  const auto bytes = checked_mul(plan.count, dtype_size(plan.dtype));
  if (!bytes) return false;
  for (std::size_t r = 0; r < world; ++r) {
    const bool sends = kind != CollectiveKind::kBroadcast || r == lead;
    // A reduce's root may leave its input out of its slot (only it reads it).
    const bool kept = kind == CollectiveKind::kReduce && r == plan.root && sizes[r] == 0;
    if (sizes[r] != (sends ? *bytes : 0) && !kept) return false;
  }
  return true;
}

std::size_t rows_before(const LeanPlan& plan, std::size_t world, std::size_t s, std::size_t d) {
  std::size_t before = 0;
  for (std::size_t k = 0; k < d; ++k) before += plan.rows[s * world + k];
  return before;
}

}  // namespace ruccl::world
