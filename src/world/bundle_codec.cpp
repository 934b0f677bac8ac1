#include "world/bundle_codec.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace ruccl::world {

void bundle_append(std::vector<std::uint64_t>& bundle, std::span<const std::byte> message) {
  bundle.push_back(message.size());
  const std::size_t at = bundle.size();
  bundle.resize(at + (message.size() + 7) / 8, 0);
  if (!message.empty()) std::memcpy(bundle.data() + at, message.data(), message.size());
}

BundleParts bundle_split(std::size_t bytes, std::size_t part) {
  BundleParts p;
  p.first = std::min(bytes, part);
  p.second = std::min(bytes - p.first, part);
  p.rest = bytes - p.first - p.second;
  return p;
}

Result<std::size_t> bundle_received(std::uint64_t total, std::size_t first, std::size_t second,
                                    std::size_t most, std::size_t part) {
  const auto bad = [&] {
    return Status(ErrorCode::kProtocolError, "a bundle that says " + std::to_string(total) +
                                                 " bytes in messages of " + std::to_string(first) +
                                                 " and " + std::to_string(second) + " (at most " +
                                                 std::to_string(most) + ")");
  };
  if (first < 8 || total > most || total % 8 != 0 || most > SIZE_MAX - 8) return bad();
  const std::size_t whole = static_cast<std::size_t>(total) + 8;
  const BundleParts want = bundle_split(whole, part);
  if (first != want.first || second != want.second) return bad();
  return whole;
}

Status bundle_parse(std::span<const std::byte> bytes, std::size_t first, std::size_t ranks,
                    std::span<std::span<const std::byte>> out) {
  if (first > out.size() || ranks > out.size() - first)
    return Status(ErrorCode::kInternal, "a bundle of ranks " + std::to_string(first) + " + " +
                                            std::to_string(ranks) + " for a world of " +
                                            std::to_string(out.size()));
  const auto bad = [&](std::size_t j, const std::string& why) {
    return Status(ErrorCode::kProtocolError, "a bundle of " + std::to_string(bytes.size()) +
                                                 " bytes: rank " + std::to_string(first + j) +
                                                 "'s message " + why);
  };
  std::size_t at = 0;
  for (std::size_t j = 0; j < ranks; ++j) {
    if (bytes.size() - at < sizeof(std::uint64_t)) return bad(j, "is missing");
    std::uint64_t length = 0;
    std::memcpy(&length, bytes.data() + at, sizeof length);
    at += sizeof length;
    const std::size_t left = bytes.size() - at;
    if (length > left || (length + 7) / 8 * 8 > left)
      return bad(j, "claims " + std::to_string(length) + " bytes, " + std::to_string(left) +
                        " are left");
    at += (static_cast<std::size_t>(length) + 7) / 8 * 8;
  }
  if (at != bytes.size())
    return Status(ErrorCode::kProtocolError, "a bundle of " + std::to_string(bytes.size()) +
                                                 " bytes: " + std::to_string(bytes.size() - at) +
                                                 " bytes after the last message");
  at = 0;
  for (std::size_t j = 0; j < ranks; ++j) {
    std::uint64_t length = 0;
    std::memcpy(&length, bytes.data() + at, sizeof length);
    at += sizeof length;
    out[first + j] = bytes.subspan(at, static_cast<std::size_t>(length));
    at += (static_cast<std::size_t>(length) + 7) / 8 * 8;
  }
  return Status::ok();
}

}  // namespace ruccl::world
