// What the opaque C handles of include/ruccl/ruccl.h are, and the one guard
// every C entry point runs its body in. Internal to src/capi.
//
// Error messages live in the handles, never in process-wide state:
//   ruccl_config  one message: the config's most recent failed call
//                 (a setter, load_env, or a creation it was passed to);
//   ruccl_comm    one message per local rank (written by the calls that pass
//                 that rank, so by that rank's thread), plus one shared slot
//                 for calls that passed a rank this process does not serve.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/catch_to_status.hpp"
#include "ruccl/communicator.hpp"
#include "ruccl/config.hpp"
#include "ruccl/ruccl.h"
#include "ruccl/status.hpp"

struct ruccl_config {
  ruccl::Config config;
  std::string last_error;
};

struct ruccl_comm {
  struct Slot {
    std::mutex mutex;
    std::string message;
  };
  explicit ruccl_comm(std::shared_ptr<ruccl::Communicator> c);

  // The slot of `rank`: its local slot, or the shared one for other ranks.
  Slot& slot(std::size_t rank) const;

  std::shared_ptr<ruccl::Communicator> comm;
  std::unique_ptr<Slot[]> slots;  // devices().size() + 1
  // ruccl_mem_alloc's memory not yet freed, by address.
  std::mutex memory_mutex;
  std::map<void*, std::shared_ptr<std::byte>> memory;
};

namespace ruccl::capi {

ruccl_result_t to_c(ErrorCode code) noexcept;

// Every entry point runs its body through core::catch_to_status(kInternal,
// ""): nothing thrown inside ruccl crosses the C boundary.

// Stores "function(rank r): Code: message" (or "" for ok) in rank's slot and
// returns the C code. Never throws (an unstorable message is left empty).
ruccl_result_t record(const ruccl_comm& comm, std::size_t rank, const char* function,
                      const Status& status) noexcept;
// The same for a config ("function: Code: message"); a null config keeps nothing.
ruccl_result_t record(ruccl_config* config, const char* function, const Status& status) noexcept;

// Wraps a new communicator in a handle (may throw: run it inside catch_to_status).
void wrap(std::shared_ptr<Communicator> created, ruccl_comm_t** out);

// The devices named by the creation arguments (kind checked, indices or 0..n-1).
Result<std::vector<DeviceId>> devices_of(std::size_t count, ruccl_device_kind_t kind,
                                         const std::size_t* indices);

}  // namespace ruccl::capi
