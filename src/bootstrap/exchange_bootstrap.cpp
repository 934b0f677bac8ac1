#include "bootstrap/exchange_bootstrap.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <thread>
#include <utility>

#include "core/catch_to_status.hpp"

namespace ruccl::bootstrap::detail {
namespace {

constexpr auto kFirstPoll = std::chrono::milliseconds(1);
constexpr auto kLongestPoll = std::chrono::milliseconds(20);

}  // namespace

std::string local_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

ExchangeBootstrap::ExchangeBootstrap(std::string label, std::size_t index, std::size_t processes,
                                     std::chrono::milliseconds timeout)
    : label_(std::move(label)), index_(index), processes_(processes), timeout_(timeout) {}

Result<Blobs> ExchangeBootstrap::create(const std::string& hostname) {
  const auto* p = reinterpret_cast<const std::byte*>(hostname.data());
  auto names = exchange(std::span(p, hostname.size()), Wait::within(timeout_), "creation");
  RUCCL_TRY(names);
  auto layout = layout_from_hostnames(names.value(), index_, hostname);
  RUCCL_TRY(layout);
  layout_ = std::move(layout).value();
  return names;
}

Result<Blobs> ExchangeBootstrap::all_gather(std::span<const std::byte> blob, const Wait& wait) {
  return core::catch_to_status(ErrorCode::kInternal, label_, [&]() -> Result<Blobs> {
    auto by_index = exchange(blob, wait, "all_gather");
    RUCCL_TRY(by_index);
    return by_process(layout_, std::move(by_index).value());
  });
}

Status ExchangeBootstrap::barrier(const Wait& wait) {
  return core::catch_to_status(ErrorCode::kInternal, label_,
                               [&]() -> Status { return exchange({}, wait, "barrier").status(); });
}

Result<Blobs> ExchangeBootstrap::exchange(std::span<const std::byte> blob, const Wait& wait,
                                          const char* what) {
  const std::size_t generation = next_generation_++;
  const auto started = Clock::now();
  const std::string call =
      label_ + ": " + what + " (generation " + std::to_string(generation) + ")";
  RUCCL_TRY(put(generation, blob));

  Blobs blobs(processes_);
  blobs[index_].assign(blob.begin(), blob.end());
  std::vector<std::size_t> missing;
  for (std::size_t i = 0; i < processes_; ++i)
    if (i != index_) missing.push_back(i);
  auto pause = kFirstPoll;
  while (true) {
    for (auto it = missing.begin(); it != missing.end();) {
      auto got = take(generation, *it);
      RUCCL_TRY(got);
      if (!got.value()) {
        ++it;
        continue;
      }
      blobs[*it] = std::move(*got.value());
      it = missing.erase(it);
    }
    if (missing.empty()) break;
    if (wait.abort != nullptr && wait.abort->load())
      return Status(ErrorCode::kAborted, call + " aborted");
    const auto now = Clock::now();
    if (now >= wait.deadline)
      return Status(
          ErrorCode::kTimeout,
          call + " of process " + std::to_string(index_) + " timed out after " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::milliseconds>(now - started).count()) +
              " ms waiting for every process to arrive: " + missing_list(missing) +
              " did not arrive (no " + where(generation, missing.front()) + ")");
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, wait.deadline - now));
    pause = std::min(pause * 2, kLongestPoll);
  }
  // Everyone put this generation, so everyone is done reading the last one.
  if (generation > 0) drop(generation - 1);
  return blobs;
}

}  // namespace ruccl::bootstrap::detail
