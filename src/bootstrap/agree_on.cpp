// agree_on: one all_gather of (value, hostname) per process, then every
// process compares the same gathered list, so all return the same Status.
//
// Blob layout: the value as 8 little-endian bytes, then the hostname's bytes.
#include <cstdint>
#include <string>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/mpi_call.hpp"

namespace ruccl::bootstrap {
namespace {

constexpr std::size_t kValueBytes = 8;

std::vector<std::byte> encode(std::uint64_t value, const std::string& hostname) {
  std::vector<std::byte> blob(kValueBytes + hostname.size());
  for (std::size_t i = 0; i < kValueBytes; ++i)
    blob[i] = static_cast<std::byte>((value >> (8 * i)) & 0xff);
  for (std::size_t i = 0; i < hostname.size(); ++i)
    blob[kValueBytes + i] = static_cast<std::byte>(hostname[i]);
  return blob;
}

std::uint64_t decode_value(const std::vector<std::byte>& blob) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < kValueBytes; ++i)
    value |= static_cast<std::uint64_t>(blob[i]) << (8 * i);
  return value;
}

std::string decode_host(const std::vector<std::byte>& blob) {
  return std::string(reinterpret_cast<const char*>(blob.data()) + kValueBytes,
                     blob.size() - kValueBytes);
}

}  // namespace

Status agree_on(Bootstrap& bootstrap, std::size_t value, const char* what, ErrorCode code) {
  return detail::guarded([&]() -> Status {
    const std::string name = what != nullptr ? what : "value";
    auto gathered = bootstrap.all_gather(encode(value, bootstrap.topology().hostname));
    RUCCL_TRY(gathered);
    const auto& blobs = gathered.value();
    for (const auto& blob : blobs)
      if (blob.size() < kValueBytes)
        return Status(ErrorCode::kInternal, "agree_on(" + name + "): a blob of " +
                                                std::to_string(blob.size()) + " bytes");
    const std::uint64_t first = decode_value(blobs[0]);
    for (std::size_t process = 1; process < blobs.size(); ++process) {
      const std::uint64_t mine = decode_value(blobs[process]);
      if (mine == first) continue;
      return Status(code,
                    "process " + std::to_string(process) + " (host " + decode_host(blobs[process]) +
                        ") has " + std::to_string(mine) + " " + name + ", process 0 (host " +
                        decode_host(blobs[0]) + ") has " + std::to_string(first));
    }
    return Status::ok();
  });
}

}  // namespace ruccl::bootstrap
