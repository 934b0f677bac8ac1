// What the bootstraps without MPI share (internal to src/bootstrap): every
// collective call (creation, each all_gather, each barrier) is one generation
// g = 0, 1, 2, ... in which each process puts its blob where the others find
// it, then polls (1 ms doubling to 20 ms) until every blob of g is there or
// the deadline passes (kTimeout naming the processes that never arrived) or
// the abort flag is set (kAborted). Generation 0 carries the hostnames, from
// which the (node, index) layout follows (layout_from_hostnames). Once g is
// complete every process has read g - 1, so each drops its own blob of g - 1.
// Subclasses say where a blob goes: the directory bootstrap in files
// (file_bootstrap.cpp), the store bootstrap under keys (store_bootstrap.cpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/layout.hpp"

namespace ruccl::bootstrap::detail {

// gethostname(), or "unknown-host".
std::string local_hostname();

class ExchangeBootstrap : public Bootstrap {
 public:
  const Topology& topology() const override { return layout_.topology; }
  std::chrono::milliseconds timeout() const override { return timeout_; }
  Result<Blobs> all_gather(std::span<const std::byte> blob, const Wait& wait) override;
  Status barrier(const Wait& wait) override;

 protected:
  // `label` starts every message: "file bootstrap /tmp/dir".
  ExchangeBootstrap(std::string label, std::size_t index, std::size_t processes,
                    std::chrono::milliseconds timeout);
  // Generation 0: the hostnames (returned, by index) and the layout.
  Result<Blobs> create(const std::string& hostname);
  const Layout& layout() const { return layout_; }

  // This process's blob of `generation`, where the others find it.
  virtual Status put(std::size_t generation, std::span<const std::byte> blob) = 0;
  // Process `index`'s blob of `generation` when it is there (complete), else nullopt.
  virtual Result<std::optional<std::vector<std::byte>>> take(std::size_t generation,
                                                             std::size_t index) = 0;
  // Removes this process's blob of `generation` (best effort).
  virtual void drop(std::size_t generation) = 0;
  // Where process `index`'s blob of `generation` would be, for messages.
  virtual std::string where(std::size_t generation, std::size_t index) const = 0;

  const std::string label_;
  const std::size_t index_;
  const std::size_t processes_;
  const std::chrono::milliseconds timeout_;

 private:
  // One generation: every process's blob, by index.
  Result<Blobs> exchange(std::span<const std::byte> blob, const Wait& wait, const char* what);

  std::size_t next_generation_ = 0;
  Layout layout_;
};

}  // namespace ruccl::bootstrap::detail
