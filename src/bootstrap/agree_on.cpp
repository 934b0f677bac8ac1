// agree_on: one all_gather of (value, hostname) per process, then every
// process compares the same gathered list, so all return the same Status.
// agree_outcome: the same for (status, hostname, payload).
//
// agree_on's blob: the value as 8 little-endian bytes, then the hostname's bytes.
// agree_outcome's blob: code (8 bytes), message length (8), message, hostname
// length (8), hostname, then the payload. Every length is checked against the
// blob before use: the bytes come from another process.
#include <cstdint>
#include <optional>
#include <string>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/mpi_call.hpp"
#include "core/catch_to_status.hpp"

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

void put_u64(std::vector<std::byte>& out, std::uint64_t v) {
  for (std::size_t i = 0; i < kValueBytes; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
}
void put_text(std::vector<std::byte>& out, const std::string& text) {
  put_u64(out, text.size());
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  out.insert(out.end(), p, p + text.size());
}

// Reads a peer's outcome blob; false if it is malformed.
struct Reader {
  const std::vector<std::byte>& blob;
  std::size_t at = 0;
  bool u64(std::uint64_t& v) {
    if (blob.size() - at < kValueBytes) return false;
    v = 0;
    for (std::size_t i = 0; i < kValueBytes; ++i) v |= static_cast<std::uint64_t>(blob[at + i]) << (8 * i);
    at += kValueBytes;
    return true;
  }
  bool text(std::string& t) {
    std::uint64_t n = 0;
    if (!u64(n) || n > blob.size() - at) return false;
    t.assign(reinterpret_cast<const char*>(blob.data()) + at, static_cast<std::size_t>(n));
    at += static_cast<std::size_t>(n);
    return true;
  }
};

}  // namespace

Status agree_on(Bootstrap& bootstrap, std::size_t value, const char* what, ErrorCode code) {
  return agree_on(bootstrap, value, what, code, Wait::within(bootstrap.timeout()));
}

Result<Blobs> agree_outcome(Bootstrap& bootstrap, const Status& local,
                            std::span<const std::byte> payload, const char* step,
                            const Wait& wait) {
  return core::catch_to_status(ErrorCode::kInternal, "bootstrap", [&]() -> Result<Blobs> {
    const std::string name = step != nullptr ? step : "agreement";
    std::vector<std::byte> mine;
    put_u64(mine, static_cast<std::uint64_t>(local.code()));
    put_text(mine, local.is_ok() ? std::string() : local.message());
    put_text(mine, bootstrap.topology().hostname);
    mine.insert(mine.end(), payload.begin(), payload.end());
    auto gathered = bootstrap.all_gather(mine, wait);
    if (!gathered) return gathered.status().with_context(name);
    Blobs payloads(gathered.value().size());
    std::optional<Status> first;
    std::size_t failed = 0;
    for (std::size_t p = 0; p < gathered.value().size(); ++p) {
      Reader r{gathered.value()[p]};
      std::uint64_t code = 0;
      std::string message, host;
      if (!r.u64(code) || !r.text(message) || !r.text(host) ||
          code > static_cast<std::uint64_t>(ErrorCode::kProtocolError)) {
        ++failed;
        if (!first)
          first = Status(ErrorCode::kProtocolError,
                         name + ": process " + std::to_string(p) + " sent a malformed outcome of " +
                             std::to_string(gathered.value()[p].size()) + " bytes");
        continue;
      }
      if (code != 0) {
        ++failed;
        if (!first)
          first = Status(static_cast<ErrorCode>(code), name + ": process " + std::to_string(p) +
                                                           " (host " + host + ") failed: " + message);
        continue;
      }
      payloads[p].assign(gathered.value()[p].begin() + static_cast<std::ptrdiff_t>(r.at),
                         gathered.value()[p].end());
    }
    if (first) {
      if (failed > 1)
        return Status(first->code(),
                      first->message() + ", and " + std::to_string(failed - 1) + " more");
      return *first;
    }
    return payloads;
  });
}

Status agree_on(Bootstrap& bootstrap, std::size_t value, const char* what, ErrorCode code,
                const Wait& wait) {
  return core::catch_to_status(ErrorCode::kInternal, "bootstrap", [&]() -> Status {
    const std::string name = what != nullptr ? what : "value";
    auto gathered = bootstrap.all_gather(encode(value, bootstrap.topology().hostname), wait);
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
