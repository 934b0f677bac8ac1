// A bootstrap without MPI over a key-value store (set / get with a deadline).
//
// Why: frameworks bring their own rendezvous. PyTorch's c10d::Store (a
// TCPStore under torchrun or env://, a PrefixStore per process group) is such
// a store; src/torch adapts it to KeyValueStore. Nothing here knows torch, MPI
// or UCX; this part builds in every configuration (ruccl_bootstrap_base).
//
// Protocol: that of the directory bootstrap (file_bootstrap.hpp) with keys for
// files. Every collective call (creation, each all_gather, each barrier) is one
// generation g = 0, 1, 2, ...: process i of n sets <prefix>/<g>/<i> to its blob,
// then polls (1 ms doubling to 20 ms) until all n keys of generation g exist
// and reads them. Generation 0 carries the hostnames: processes are grouped
// into nodes by hostname and ordered by (node, index), nodes numbered by their
// lowest index, as the MPI bootstrap orders by (node, rank). When generation g
// completes, every process has read g - 1, so each erases its own key of g - 1
// (best effort: a store may keep it).
//
// Secrets. The job token travels in an all_gather of world creation, so it is
// in the store: the store must be private to the job (a TCPStore is only as
// private as its port).
//
// Deadlines. Every call waits at most `timeout` (or its Wait); then kTimeout
// names the indices whose keys never appeared; a set abort flag ends the wait
// with kAborted. A store prefix holds one bootstrap: creation refuses a prefix
// where this index already set generation 0 (kInvalidArgument).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace ruccl::bootstrap {

// What the store bootstrap needs of a store. Implementations return errors as
// Status (no exception may leave them) and must be callable from any thread,
// one call at a time per bootstrap.
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  // Sets `key` to `value` (replacing any earlier value).
  virtual Status set(const std::string& key, std::span<const std::byte> value) = 0;
  // Does not block: the value of `key`, or nullopt when it is not set (yet).
  virtual Result<std::optional<std::vector<std::byte>>> try_get(const std::string& key) = 0;
  // Best effort: removes `key` (a store that cannot delete returns ok).
  virtual Status erase(const std::string& key) = 0;
};

// A KeyValueStore in memory, for processes that are threads (tests).
std::shared_ptr<KeyValueStore> in_memory_store();

struct StoreBootstrapOptions {
  std::chrono::milliseconds timeout{300'000};  // of creation and of every later call
  std::string hostname;                        // empty: gethostname(); tests simulate nodes
  std::string prefix = "ruccl";                // the keys are <prefix>/<generation>/<index>
  // Creation fails (kUnsupported, the same on every process) unless the
  // (node, index) order is the index order: every node's indices contiguous,
  // nodes in index order. For callers whose ranks must be ruccl's ranks.
  bool require_index_order = false;
};

// Collective over the `processes` processes that pass the same store and
// prefix; `process` is this one's index, 0 <= process < processes.
// Topology::process is the position in (node, index) order.
Result<std::unique_ptr<Bootstrap>> store_bootstrap(std::shared_ptr<KeyValueStore> store,
                                                   std::size_t process, std::size_t processes,
                                                   StoreBootstrapOptions options = {});

}  // namespace ruccl::bootstrap
