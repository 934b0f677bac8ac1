// libFuzzer: the lean path's reading of the node's slots (src/world/lean_codec.cpp)
// on arbitrary bytes. Input: byte 0 picks the world (1..8 ranks), the next
// `world` bytes each slot's length (in 4-byte units, cut to what is left),
// then the slots. Every slot is decoded as a peer's; when all decode and
// lean_fits takes them, the plan must be usable as lean_run and read_direct
// use it: every input within its slot, every all-to-all-v block within its
// source's payload. A header that decodes encodes back to a slot that
// decodes to the same header.
#include <cstdint>
#include <cstring>
#include <vector>

#include "world/lean_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ruccl;
  using namespace ruccl::world;
  if (size < 1) return 0;
  const std::size_t world = 1 + data[0] % 8;
  if (size < 1 + world) return 0;
  const std::uint8_t* at = data + 1 + world;
  std::size_t left = size - 1 - world;
  std::vector<LeanHeader> heads(world);
  std::vector<std::size_t> sizes(world);
  std::vector<const std::byte*> inputs(world);
  std::vector<std::vector<std::byte>> slots(world);
  bool all = true;
  for (std::size_t r = 0; r < world; ++r) {
    const std::size_t n = std::min<std::size_t>(std::size_t{data[1 + r]} * 4, left);
    slots[r].assign(reinterpret_cast<const std::byte*>(at),
                    reinterpret_cast<const std::byte*>(at) + n);
    at += n;
    left -= n;
    std::size_t head = 0;
    if (!decode_lean_head(slots[r], heads[r], head)) {
      all = false;
      continue;
    }
    if (head > slots[r].size()) __builtin_trap();
    inputs[r] = slots[r].data() + head;
    sizes[r] = slots[r].size() - head;
    // Encoding what decoded gives a slot that decodes to it again.
    std::byte again[kLeanHeader];
    const std::size_t written = encode_lean_head(heads[r], again);
    LeanHeader back{};
    std::size_t read = 0;
    if (!decode_lean_head(std::span(again, written), back, read) || read != written ||
        back != heads[r])
      __builtin_trap();
  }
  if (!all) return 0;
  LeanPlan plan;
  if (!lean_fits(heads, sizes, inputs, world, plan)) return 0;
  volatile std::uint8_t sink = 0;
  const std::size_t es = dtype_size(plan.dtype);
  if (es == 0) __builtin_trap();
  if (plan.kind == CollectiveKind::kAllToAllV) {
    const std::size_t counts = world * sizeof(std::uint64_t);
    const std::size_t row = plan.count * es;
    for (std::size_t s = 0; s < world; ++s)
      for (std::size_t d = 0; d < world; ++d) {
        const std::size_t off = counts + rows_before(plan, world, s, d) * row;
        const std::size_t len = plan.rows[s * world + d] * row;
        if (off > sizes[s] || len > sizes[s] - off) __builtin_trap();
        if (len > 0) sink = sink + static_cast<std::uint8_t>(inputs[s][off + len - 1]);
      }
    return 0;
  }
  const std::size_t bytes = plan.count * es;
  for (std::size_t r = 0; r < world; ++r) {
    const bool sends = plan.kind != CollectiveKind::kBroadcast || r == plan.root;
    if (!sends) continue;
    // (A reduce's root may send nothing: no other rank reads its slot.)
    if (plan.kind == CollectiveKind::kReduce && r == plan.root && sizes[r] == 0) continue;
    if (sizes[r] != bytes) __builtin_trap();
    if (bytes > 0) sink = sink + static_cast<std::uint8_t>(inputs[r][bytes - 1]);
  }
  if (plan.root >= world) __builtin_trap();
  return 0;
}
