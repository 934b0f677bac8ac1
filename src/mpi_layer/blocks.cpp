// The exchange of blocks behind the layer's per-rank collectives (blocks.hpp).
#include "mpi_layer/blocks.hpp"

#include <cstring>
#include <string>

#include "mpi_layer/mapping.hpp"

namespace ruccl::mpi_layer {
namespace {

// Where the non-empty blocks start, when they lie packed in rank order (each
// right after the previous non-empty one); nullopt otherwise. Empty blocks
// do not count: a rooted collective's blocks are packed whatever their
// offsets.
std::optional<std::size_t> packed_start(const Blocks& b) {
  std::optional<std::size_t> start;
  std::size_t next = 0;
  for (std::size_t k = 0; k < b.bytes.size(); ++k) {
    if (b.bytes[k] == 0) continue;
    if (!start) start = next = b.offset[k];
    if (b.offset[k] != next) return std::nullopt;
    next += b.bytes[k];
  }
  return start ? start : std::optional<std::size_t>(0);
}

std::size_t total(const Blocks& b) {
  std::size_t sum = 0;
  for (const std::size_t x : b.bytes) sum += x;
  return sum;
}

}  // namespace

Blocks Blocks::of(const void* base, const int* count, const int* displ, std::size_t element,
                  std::size_t ranks) {
  Blocks b(ranks);
  b.base = base;
  for (std::size_t k = 0; k < ranks; ++k) {
    b.bytes[k] = static_cast<std::size_t>(count[k]) * element;
    // A negative displacement is legal MPI (a block before `base`); the
    // offset wraps and the byte arithmetic below wraps back.
    b.offset[k] = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(displ[k]) *
                                           static_cast<std::ptrdiff_t>(element));
  }
  return b;
}

Blocks Blocks::packed(const void* base, std::size_t block, std::size_t ranks) {
  Blocks b(ranks);
  b.base = base;
  for (std::size_t k = 0; k < ranks; ++k) {
    b.offset[k] = k * block;
    b.bytes[k] = block;
  }
  return b;
}

bool any_negative(const int* counts, int n) {
  for (int i = 0; i < n; ++i)
    if (counts[i] < 0) return true;
  return false;
}

Blocks in_ruccl_order(const Route& r, Blocks mpi) {
  if (r.identity) return mpi;
  Blocks out(r.size);
  out.base = mpi.base;
  for (std::size_t k = 0; k < r.size && k < r.mpi_of_ruccl.size(); ++k) {
    out.offset[k] = mpi.offset[r.mpi_of_ruccl[k]];
    out.bytes[k] = mpi.bytes[r.mpi_of_ruccl[k]];
  }
  return out;
}

Status gather_equal_blocks(Route& r, const TensorView& in, const Blocks& recv, bool in_place) {
  const std::size_t n = r.size, block = n > 0 ? recv.bytes[0] : 0;
  auto* out = static_cast<std::byte*>(const_cast<void*>(recv.base));
  bool packed = true;
  for (std::size_t k = 0; k < n; ++k)
    packed = packed && recv.offset[k] == recv.offset[0] + k * block;
  if (packed)
    return r.comm->all_gather_into(r.rank, in,
                                   host_view(out + recv.offset[0], DataType::kBytes, block * n));
  std::vector<std::byte> all(block * n);
  RUCCL_TRY(
      r.comm->all_gather_into(r.rank, in, host_view(all.data(), DataType::kBytes, all.size())));
  for (std::size_t k = 0; k < n; ++k)
    if (block > 0 && (!in_place || k != r.rank))
      std::memcpy(out + recv.offset[k], all.data() + k * block, block);
  return Status::ok();
}

Status exchange(Route& r, const Blocks& send, const Blocks& recv, bool copy_send) {
  const auto* sbase = static_cast<const std::byte*>(send.base);
  auto* rbase = static_cast<std::byte*>(const_cast<void*>(recv.base));
  const std::size_t send_total = total(send), recv_total = total(recv);

  const std::optional<std::size_t> send_start = copy_send ? std::nullopt : packed_start(send);
  const std::byte* src = send_total == 0 ? nullptr : sbase + send_start.value_or(0);
  std::vector<std::byte> send_copy;
  if (send_total != 0 && !send_start) {
    send_copy.resize(send_total);
    std::size_t at = 0;
    for (std::size_t d = 0; d < r.size; ++d) {
      if (send.bytes[d] == 0) continue;
      std::memcpy(send_copy.data() + at, sbase + send.offset[d], send.bytes[d]);
      at += send.bytes[d];
    }
    src = send_copy.data();
  }
  const std::optional<std::size_t> recv_start = packed_start(recv);
  std::vector<std::byte> recv_copy;
  std::byte* dst = recv_total == 0 ? nullptr : rbase + recv_start.value_or(0);
  if (recv_total != 0 && !recv_start) {
    recv_copy.resize(recv_total);
    dst = recv_copy.data();
  }
  std::vector<std::size_t> got;
  RUCCL_TRY(r.comm->all_to_all_v_into(r.rank, host_view(src, DataType::kBytes, send_total),
                                      send.bytes, host_view(dst, DataType::kBytes, recv_total),
                                      got));
  for (std::size_t s = 0; s < r.size; ++s) {
    const std::size_t sent = got.size() == r.size ? got[s] : 0;
    if (got.size() != r.size || sent != recv.bytes[s])
      return Status(ErrorCode::kShapeMismatch,
                    "MPI rank " +
                        std::to_string(s < r.mpi_of_ruccl.size() ? r.mpi_of_ruccl[s] : s) +
                        " sent " + std::to_string(sent) + " bytes, this rank " +
                        std::to_string(r.rank < r.mpi_of_ruccl.size() ? r.mpi_of_ruccl[r.rank]
                                                                      : r.rank) +
                        " expected " + std::to_string(recv.bytes[s]));
  }
  if (!recv_copy.empty()) {
    std::size_t at = 0;
    for (std::size_t s = 0; s < r.size; ++s) {
      if (recv.bytes[s] == 0) continue;
      std::memcpy(rbase + recv.offset[s], recv_copy.data() + at, recv.bytes[s]);
      at += recv.bytes[s];
    }
  }
  return Status::ok();
}

}  // namespace ruccl::mpi_layer
