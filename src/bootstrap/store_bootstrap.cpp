// The key-value store bootstrap (store_bootstrap.hpp): generations of keys,
// polled until complete, until the deadline or until the abort flag.
//
// Exceptions (allocation) become kInternal at the entry points through
// core::catch_to_status, so none crosses the Bootstrap interface.
#include "bootstrap/store_bootstrap.hpp"

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <utility>

#include "bootstrap/exchange_bootstrap.hpp"
#include "core/catch_to_status.hpp"

namespace ruccl::bootstrap {
namespace {

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

class StoreBootstrap final : public detail::ExchangeBootstrap {
 public:
  StoreBootstrap(std::shared_ptr<KeyValueStore> store, std::string prefix, std::size_t index,
                 std::size_t processes, std::chrono::milliseconds timeout)
      : ExchangeBootstrap("store bootstrap (prefix " + prefix + ")", index, processes, timeout),
        store_(std::move(store)),
        prefix_(std::move(prefix)) {}

  Status create(const std::string& hostname, bool require_index_order) {
    auto names = ExchangeBootstrap::create(hostname);
    RUCCL_TRY(names);
    if (!require_index_order) return Status::ok();
    // Every process computes this from the same names: all fail alike.
    for (std::size_t i = 0; i < processes_; ++i) {
      const std::size_t process = layout().process_of_rank[i];
      if (process == i) continue;
      const auto& name = names.value()[i];
      return Status(ErrorCode::kUnsupported,
                    "store bootstrap: index " + std::to_string(i) + " (host " +
                        std::string(reinterpret_cast<const char*>(name.data()), name.size()) +
                        ") would be process " + std::to_string(process) +
                        ": the indices of every host must be contiguous and the hosts in "
                        "index order (as torchrun and mpirun --map-by slot number them)");
    }
    return Status::ok();
  }

 private:
  std::string key(std::size_t generation, std::size_t index) const {
    return prefix_ + "/" + std::to_string(generation) + "/" + std::to_string(index);
  }
  Status put(std::size_t generation, std::span<const std::byte> blob) override {
    return store_->set(key(generation, index_), blob);
  }
  Result<std::optional<std::vector<std::byte>>> take(std::size_t generation,
                                                     std::size_t index) override {
    return store_->try_get(key(generation, index));
  }
  void drop(std::size_t generation) override { (void)store_->erase(key(generation, index_)); }
  std::string where(std::size_t generation, std::size_t index) const override {
    return "key " + key(generation, index);
  }

  const std::shared_ptr<KeyValueStore> store_;
  const std::string prefix_;
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
    RUCCL_TRY(boot->create(options.hostname.empty() ? detail::local_hostname() : options.hostname,
                           options.require_index_order));
    return std::unique_ptr<Bootstrap>(std::move(boot));
  };
  return core::catch_to_status(ErrorCode::kInternal, "store bootstrap", body);
}

}  // namespace ruccl::bootstrap
