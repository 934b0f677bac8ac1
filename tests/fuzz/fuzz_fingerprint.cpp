// libFuzzer: the fingerprint decoder on arbitrary words. A record it accepts
// must be fully usable: every enum printable, shape and counts readable.
#include "fuzz_common.hpp"
#include "world/fingerprint_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ruccl;
  if (size < 1) return 0;
  const std::size_t world = fuzz::world_for(data[0]);
  const std::vector<std::uint64_t> words = fuzz::words_of(data + 1, size - 1);
  auto decoded = world::decode(words, 0, world);
  if (!decoded) return 0;
  const core::Request& q = decoded.value().request;
  std::size_t sink = dtype_size(q.dtype) + dtype_name(q.dtype).size() +
                     static_cast<std::size_t>(q.kind) + q.in.count();
  for (std::size_t c : q.send_counts) sink += c;
  if (!decoded.value().geometry) sink += decoded.value().geometry.status().to_string().size();
  return sink == 42 ? 0 : 0;
}
