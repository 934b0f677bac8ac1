#include "transport/tag.hpp"

#include <cinttypes>
#include <cstdio>

namespace ruccl::transport {

std::string tag_string(std::uint64_t tag) {
  const TagFields f = split_tag(tag);
  char buf[128];
  std::snprintf(buf, sizeof buf,
                "0x%016" PRIx64 " (comm %" PRIu32 " seq %" PRIu64 " step %" PRIu32
                " src %" PRIu32 " piece %" PRIu32 ")",
                tag, f.comm, f.seq, f.step, f.src, f.piece);
  return buf;
}

}  // namespace ruccl::transport
