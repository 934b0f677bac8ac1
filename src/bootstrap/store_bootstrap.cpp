// The key-value store bootstrap (store_bootstrap.hpp): generations of keys,
// polled until complete, until the deadline or until the abort flag.
//
// Exceptions (allocation) become kInternal at the entry points through
// core::catch_to_status, so none crosses the Bootstrap interface.
#include "bootstrap/store_bootstrap.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "bootstrap/layout.hpp"
#include "core/catch_to_status.hpp"

namespace ruccl::bootstrap {
namespace {

constexpr auto kFirstPoll = std::chrono::milliseconds(1);
constexpr auto kLongestPoll = std::chrono::milliseconds(20);

std::string local_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

class MemoryStore final : public KeyValueStore {
 public:
  Status set(const std::string& key, std::span<const std::byte> value) override {
    const std::lock_guard lock(mutex_);
    values_[key].assign(value.begin(), value.end());
    return Status::ok();
  }
  Result<std::optional<std::vector<std::byte>>> try_get(const std::string& key) override {
    const std::lock_guard lock(mutex_);
    const auto it = values_.find(key);
    if (it == values_.end()) return std::optional<std::vector<std::byte>>();
    return std::optional<std::vector<std::byte>>(it->second);
  }
  Status erase(const std::string& key) override {
    const std::lock_guard lock(mutex_);
    values_.erase(key);
    return Status::ok();
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::vector<std::byte>> values_;
};

class StoreBootstrap final : public Bootstrap {
 public:
  StoreBootstrap(std::shared_ptr<KeyValueStore> store, std::string prefix, std::size_t index,
                 std::size_t processes, std::chrono::milliseconds timeout)
      : store_(std::move(store)),
        prefix_(std::move(prefix)),
        index_(index),
        processes_(processes),
        timeout_(timeout) {}

  // Generation 0: every process's hostname, then the (node, index) layout.
  Status create(const std::string& hostname, bool require_index_order) {
    const auto* p = reinterpret_cast<const std::byte*>(hostname.data());
    auto names = exchange(std::span(p, hostname.size()), Wait::within(timeout_), "creation");
    RUCCL_TRY(names);
    auto layout = detail::layout_from_hostnames(names.value(), index_, hostname);
    RUCCL_TRY(layout);
    layout_ = std::move(layout).value();
    if (require_index_order) {
      // Every process computes this from the same names: all fail alike.
      for (std::size_t i = 0; i < processes_; ++i) {
        if (layout_.process_of_rank[i] == i) continue;
        const auto& name = names.value()[i];
        return Status(ErrorCode::kUnsupported,
                      "store bootstrap: index " + std::to_string(i) + " (host " +
                          std::string(reinterpret_cast<const char*>(name.data()), name.size()) +
                          ") would be process " + std::to_string(layout_.process_of_rank[i]) +
                          ": the indices of every host must be contiguous and the hosts in "
                          "index order (as torchrun and mpirun --map-by slot number them)");
      }
    }
    return Status::ok();
  }

  const Topology& topology() const override { return layout_.topology; }
  std::chrono::milliseconds timeout() const override { return timeout_; }

  Result<Blobs> all_gather(std::span<const std::byte> blob, const Wait& wait) override {
    return core::catch_to_status(ErrorCode::kInternal, "store bootstrap", [&]() -> Result<Blobs> {
      auto by_index = exchange(blob, wait, "all_gather");
      RUCCL_TRY(by_index);
      Blobs by_process(processes_);
      for (std::size_t i = 0; i < processes_; ++i)
        by_process[layout_.process_of_rank[i]] = std::move(by_index.value()[i]);
      return by_process;
    });
  }

  Status barrier(const Wait& wait) override {
    return core::catch_to_status(ErrorCode::kInternal, "store bootstrap", [&]() -> Status {
      return exchange({}, wait, "barrier").status();
    });
  }

 private:
  std::string key(std::size_t generation, std::size_t index) const {
    return prefix_ + "/" + std::to_string(generation) + "/" + std::to_string(index);
  }

  Status failure(ErrorCode code, const char* what, std::size_t generation,
                 const std::string& why) const {
    return Status(code, "store bootstrap (prefix " + prefix_ + "): " + what + " (generation " +
                            std::to_string(generation) + ") of process " + std::to_string(index_) +
                            " " + why);
  }

  // One generation: set ours, wait for every key, read them (by index).
  Result<Blobs> exchange(std::span<const std::byte> blob, const Wait& wait, const char* what) {
    const std::size_t generation = next_generation_++;
    const auto started = Clock::now();
    RUCCL_TRY(store_->set(key(generation, index_), blob));

    Blobs blobs(processes_);
    blobs[index_].assign(blob.begin(), blob.end());
    std::vector<std::size_t> missing;
    for (std::size_t i = 0; i < processes_; ++i)
      if (i != index_) missing.push_back(i);
    auto pause = kFirstPoll;
    while (true) {
      for (auto it = missing.begin(); it != missing.end();) {
        auto got = store_->try_get(key(generation, *it));
        RUCCL_TRY(got);
        if (got.value()) {
          blobs[*it] = std::move(*got.value());
          it = missing.erase(it);
        } else {
          ++it;
        }
      }
      if (missing.empty()) break;
      if (wait.abort != nullptr && wait.abort->load())
        return failure(ErrorCode::kAborted, what, generation, "aborted");
      const auto now = Clock::now();
      if (now >= wait.deadline) {
        const auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(now - started).count();
        return failure(ErrorCode::kTimeout, what, generation,
                       "timed out after " + std::to_string(ms) +
                           " ms waiting for every process to arrive: " +
                           detail::missing_list(missing) + " did not arrive (no key " +
                           key(generation, missing.front()) + ")");
      }
      std::this_thread::sleep_for(std::min<Clock::duration>(pause, wait.deadline - now));
      pause = std::min(pause * 2, kLongestPoll);
    }
    // Everyone set this generation, so everyone is done reading the last one.
    if (generation > 0) (void)store_->erase(key(generation - 1, index_));
    return blobs;
  }

  const std::shared_ptr<KeyValueStore> store_;
  const std::string prefix_;
  const std::size_t index_;
  const std::size_t processes_;
  const std::chrono::milliseconds timeout_;
  std::size_t next_generation_ = 0;
  detail::Layout layout_;
};

}  // namespace

std::shared_ptr<KeyValueStore> in_memory_store() { return std::make_shared<MemoryStore>(); }

Result<std::unique_ptr<Bootstrap>> store_bootstrap(std::shared_ptr<KeyValueStore> store,
                                                   std::size_t process, std::size_t processes,
                                                   StoreBootstrapOptions options) {
  auto body = [&]() -> Result<std::unique_ptr<Bootstrap>> {
    if (store == nullptr) return Status(ErrorCode::kInvalidArgument, "store bootstrap: no store");
    if (processes == 0 || processes > static_cast<std::size_t>(INT_MAX))
      return Status(ErrorCode::kInvalidArgument,
                    "store bootstrap: " + std::to_string(processes) + " processes");
    if (process >= processes)
      return Status(ErrorCode::kInvalidArgument,
                    "store bootstrap: process " + std::to_string(process) +
                        " is outside a job of " + std::to_string(processes) + " processes");
    if (options.timeout.count() <= 0)
      return Status(ErrorCode::kInvalidArgument, "store bootstrap: the timeout must be positive");
    // Our key of generation 0 means an earlier bootstrap under this prefix.
    const std::string first = options.prefix + "/0/" + std::to_string(process);
    auto stale = store->try_get(first);
    RUCCL_TRY(stale);
    if (stale.value())
      return Status(ErrorCode::kInvalidArgument,
                    "store bootstrap: the key " + first +
                        " exists: an earlier bootstrap used this store prefix; give every new "
                        "communicator a fresh prefix");
    auto boot = std::make_unique<StoreBootstrap>(std::move(store), options.prefix, process,
                                                 processes, options.timeout);
    RUCCL_TRY(boot->create(options.hostname.empty() ? local_hostname() : options.hostname,
                           options.require_index_order));
    return std::unique_ptr<Bootstrap>(std::move(boot));
  };
  return core::catch_to_status(ErrorCode::kInternal, "store bootstrap", body);
}

}  // namespace ruccl::bootstrap
