// The C API's handles: error codes and strings, configs, in-process
// communicators, queries, abort and destroy (include/ruccl/ruccl.h). The
// collectives are in collectives.cpp; creation over MPI in create_mpi.cpp.
#include <chrono>
#include <string>
#include <utility>

#include "capi/handles.hpp"
#include "ruccl/device.hpp"

using ruccl::Config;
using ruccl::ErrorCode;
using ruccl::Status;
using ruccl::capi::record;
using ruccl::core::catch_to_status;

ruccl_comm::ruccl_comm(std::shared_ptr<ruccl::Communicator> c)
    : comm(std::move(c)), slots(std::make_unique<Slot[]>(comm->devices().size() + 1)) {}

ruccl_comm::Slot& ruccl_comm::slot(std::size_t rank) const {
  const std::size_t local = comm->devices().size();
  const std::size_t first = comm->first_rank();
  return slots[rank >= first && rank - first < local ? rank - first : local];
}

namespace ruccl::capi {

ruccl_result_t to_c(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kOk: return RUCCL_SUCCESS;
    case ErrorCode::kInvalidArgument: return RUCCL_ERROR_INVALID_ARGUMENT;
    case ErrorCode::kDuplicateRegistration: return RUCCL_ERROR_DUPLICATE_REGISTRATION;
    case ErrorCode::kMissingRegistration: return RUCCL_ERROR_MISSING_REGISTRATION;
    case ErrorCode::kDeviceCountMismatch: return RUCCL_ERROR_DEVICE_COUNT_MISMATCH;
    case ErrorCode::kShapeMismatch: return RUCCL_ERROR_SHAPE_MISMATCH;
    case ErrorCode::kDtypeMismatch: return RUCCL_ERROR_DTYPE_MISMATCH;
    case ErrorCode::kOpMismatch: return RUCCL_ERROR_OP_MISMATCH;
    case ErrorCode::kRootMismatch: return RUCCL_ERROR_ROOT_MISMATCH;
    case ErrorCode::kBroadcastSenderCount: return RUCCL_ERROR_BROADCAST_SENDER_COUNT;
    case ErrorCode::kCollectiveMismatch: return RUCCL_ERROR_COLLECTIVE_MISMATCH;
    case ErrorCode::kBudgetTooSmall: return RUCCL_ERROR_BUDGET_TOO_SMALL;
    case ErrorCode::kTimeout: return RUCCL_ERROR_TIMEOUT;
    case ErrorCode::kAborted: return RUCCL_ERROR_ABORTED;
    case ErrorCode::kDeviceError: return RUCCL_ERROR_DEVICE;
    case ErrorCode::kUnsupported: return RUCCL_ERROR_UNSUPPORTED;
    case ErrorCode::kFinished: return RUCCL_ERROR_FINISHED;
    case ErrorCode::kPeerFailure: return RUCCL_ERROR_PEER_FAILURE;
    case ErrorCode::kInternal: return RUCCL_ERROR_INTERNAL;
    case ErrorCode::kProtocolError: return RUCCL_ERROR_PROTOCOL;
    case ErrorCode::kOutOfMemory: return RUCCL_ERROR_OUT_OF_MEMORY;
  }
  return RUCCL_ERROR_INTERNAL;
}

ruccl_result_t record(const ruccl_comm& comm, std::size_t rank, const char* function,
                      const Status& status) noexcept {
  ruccl_comm::Slot& slot = comm.slot(rank);
  std::lock_guard lock(slot.mutex);
  if (status.is_ok()) {
    slot.message.clear();
  } else {
    try {
      slot.message = std::string(function) +
                     (rank == SIZE_MAX ? "" : "(rank " + std::to_string(rank) + ")") + ": " +
                     status.to_string();
    } catch (...) {
      slot.message.clear();  // out of memory for the message: the code still tells
    }
  }
  return to_c(status.code());
}

ruccl_result_t record(ruccl_config* config, const char* function, const Status& status) noexcept {
  if (config) {
    try {
      if (!status.is_ok()) config->last_error = std::string(function) + ": " + status.to_string();
    } catch (...) {
      config->last_error.clear();
    }
  }
  return to_c(status.code());
}

void wrap(std::shared_ptr<Communicator> created, ruccl_comm_t** out) {
  *out = new ruccl_comm(std::move(created));
}

Result<std::vector<DeviceId>> devices_of(std::size_t count, ruccl_device_kind_t kind,
                                         const std::size_t* indices) {
  if (count == 0)
    return Status(ErrorCode::kInvalidArgument, "a communicator needs at least one local device");
  DeviceKind k{};
  switch (kind) {
    case RUCCL_DEVICE_HOST: k = DeviceKind::kHost; break;
    case RUCCL_DEVICE_CUDA: k = DeviceKind::kCuda; break;
    default:
      return Status(ErrorCode::kInvalidArgument,
                    "unknown device kind value " + std::to_string(static_cast<long long>(kind)));
  }
  // An absurd count throws: catch_to_status turns it into an error.
  std::vector<DeviceId> devices(count);
  for (std::size_t i = 0; i < count; ++i) devices[i] = DeviceId{k, indices ? indices[i] : i};
  return devices;
}

}  // namespace ruccl::capi

namespace {

Status null_argument(const char* what) {
  return Status(ErrorCode::kInvalidArgument, std::string(what) + " is NULL");
}

// Applies `change` to a copy of the config and keeps it only if it validates.
template <typename F>
ruccl_result_t set(ruccl_config_t* config, const char* function, F&& change) noexcept {
  if (!config) return RUCCL_ERROR_INVALID_ARGUMENT;
  const Status s = catch_to_status(ErrorCode::kInternal, "", [&]() -> Status {
    Config next = config->config;
    RUCCL_TRY(change(next));
    RUCCL_TRY(next.validate());
    config->config = next;
    return Status::ok();
  });
  return record(config, function, s);
}

}  // namespace

extern "C" {

const char* ruccl_error_string(ruccl_result_t code) {
  switch (code) {
    case RUCCL_SUCCESS: return "Success";
    case RUCCL_ERROR_INVALID_ARGUMENT: return "InvalidArgument";
    case RUCCL_ERROR_DUPLICATE_REGISTRATION: return "DuplicateRegistration";
    case RUCCL_ERROR_MISSING_REGISTRATION: return "MissingRegistration";
    case RUCCL_ERROR_DEVICE_COUNT_MISMATCH: return "DeviceCountMismatch";
    case RUCCL_ERROR_SHAPE_MISMATCH: return "ShapeMismatch";
    case RUCCL_ERROR_DTYPE_MISMATCH: return "DtypeMismatch";
    case RUCCL_ERROR_OP_MISMATCH: return "OpMismatch";
    case RUCCL_ERROR_ROOT_MISMATCH: return "RootMismatch";
    case RUCCL_ERROR_BROADCAST_SENDER_COUNT: return "BroadcastSenderCount";
    case RUCCL_ERROR_COLLECTIVE_MISMATCH: return "CollectiveMismatch";
    case RUCCL_ERROR_BUDGET_TOO_SMALL: return "BudgetTooSmall";
    case RUCCL_ERROR_TIMEOUT: return "Timeout";
    case RUCCL_ERROR_ABORTED: return "Aborted";
    case RUCCL_ERROR_DEVICE: return "DeviceError";
    case RUCCL_ERROR_UNSUPPORTED: return "Unsupported";
    case RUCCL_ERROR_FINISHED: return "Finished";
    case RUCCL_ERROR_PEER_FAILURE: return "PeerFailure";
    case RUCCL_ERROR_INTERNAL: return "Internal";
    case RUCCL_ERROR_PROTOCOL: return "ProtocolError";
    case RUCCL_ERROR_OUT_OF_MEMORY: return "OutOfMemory";
  }
  return "Unknown";
}

size_t ruccl_dtype_size(ruccl_dtype_t dtype) {
  switch (dtype) {
    case RUCCL_F16: case RUCCL_BF16: return 2;
    case RUCCL_F32: case RUCCL_I32: return 4;
    case RUCCL_F64: case RUCCL_I64: case RUCCL_U64: return 8;
    case RUCCL_I8: case RUCCL_U8: case RUCCL_BYTES: return 1;
  }
  return 0;
}

ruccl_result_t ruccl_config_create(ruccl_config_t** config) {
  if (!config) return RUCCL_ERROR_INVALID_ARGUMENT;
  *config = nullptr;
  const Status s = catch_to_status(ErrorCode::kInternal, "", [&] {
    *config = new ruccl_config{};
    return Status::ok();
  });
  return record(nullptr, "ruccl_config_create", s);
}

ruccl_result_t ruccl_config_load_env(ruccl_config_t* config) {
  return set(config, "ruccl_config_load_env", [](Config& c) -> Status {
    auto loaded = Config::from_env(c);
    RUCCL_TRY(loaded);
    c = loaded.value();
    return Status::ok();
  });
}

ruccl_result_t ruccl_config_set_max_chunk_bytes(ruccl_config_t* config, size_t bytes) {
  return set(config, "ruccl_config_set_max_chunk_bytes", [bytes](Config& c) {
    c.with_max_chunk_bytes(bytes);
    return Status::ok();
  });
}

ruccl_result_t ruccl_config_set_segment_bytes(ruccl_config_t* config, size_t bytes) {
  return set(config, "ruccl_config_set_segment_bytes", [bytes](Config& c) {
    c.with_segment_bytes(bytes);
    return Status::ok();
  });
}

ruccl_result_t ruccl_config_set_timeout_ms(ruccl_config_t* config, uint64_t milliseconds) {
  return set(config, "ruccl_config_set_timeout_ms", [milliseconds](Config& c) -> Status {
    if (milliseconds > static_cast<uint64_t>(Config::kMaxTimeout.count()))
      return Status(ErrorCode::kInvalidArgument,
                    "timeout of " + std::to_string(milliseconds) +
                        " ms exceeds the maximum of 10^7 s; ruccl never waits without a deadline");
    c.with_timeout(std::chrono::milliseconds(static_cast<std::int64_t>(milliseconds)));
    return Status::ok();
  });
}

ruccl_result_t ruccl_config_set_strategy(ruccl_config_t* config, ruccl_strategy_t strategy) {
  return set(config, "ruccl_config_set_strategy", [strategy](Config& c) -> Status {
    switch (strategy) {
      case RUCCL_STRATEGY_HIERARCHICAL: c.with_global_strategy(ruccl::GlobalStrategy::kHierarchical); break;
      case RUCCL_STRATEGY_FLAT_RING: c.with_global_strategy(ruccl::GlobalStrategy::kFlatRing); break;
      default:
        return Status(ErrorCode::kInvalidArgument,
                      "unknown strategy value " + std::to_string(static_cast<long long>(strategy)));
    }
    return Status::ok();
  });
}

const char* ruccl_config_last_error(const ruccl_config_t* config) {
  return config ? config->last_error.c_str() : "config is NULL";
}

ruccl_result_t ruccl_config_destroy(ruccl_config_t* config) {
  delete config;
  return RUCCL_SUCCESS;
}

ruccl_result_t ruccl_comm_create_local(size_t num_devices, ruccl_device_kind_t kind,
                                       const size_t* device_indices, ruccl_config_t* config,
                                       ruccl_comm_t** comm) {
  static constexpr const char* kFunction = "ruccl_comm_create_local";
  if (comm) *comm = nullptr;
  const Status s = catch_to_status(ErrorCode::kInternal, "", [&]() -> Status {
    if (!comm) return null_argument("comm (the output pointer)");
    auto devices = ruccl::capi::devices_of(num_devices, kind, device_indices);
    RUCCL_TRY(devices);
    auto adapter = ruccl::make_adapter(devices->front().kind);
    RUCCL_TRY(adapter);
    Config c = config ? config->config : Config{};
    c.with_num_devices(num_devices);
    auto created = ruccl::Communicator::create(std::move(devices).value(), adapter.value(), c);
    RUCCL_TRY(created);
    ruccl::capi::wrap(std::move(created).value(), comm);
    return Status::ok();
  });
  return record(config, kFunction, s);
}

ruccl_result_t ruccl_comm_destroy(ruccl_comm_t* comm) {
  delete comm;  // the destructors throw nothing (the communicator's are noexcept)
  return RUCCL_SUCCESS;
}

ruccl_result_t ruccl_comm_abort(ruccl_comm_t* comm, const char* reason) {
  if (!comm) return RUCCL_ERROR_INVALID_ARGUMENT;
  const Status s = catch_to_status(ErrorCode::kInternal, "", [&] {
    comm->comm->abort(reason ? reason : "ruccl_comm_abort");
    return Status::ok();
  });
  return ruccl::capi::to_c(s.code());
}

ruccl_result_t ruccl_comm_split(ruccl_comm_t* comm, size_t rank, int64_t color, int64_t key,
                                ruccl_comm_t** new_comm, size_t* new_rank) {
  if (new_comm) *new_comm = nullptr;
  if (!comm) return RUCCL_ERROR_INVALID_ARGUMENT;
  const Status s = catch_to_status(ErrorCode::kInternal, "", [&]() -> Status {
    if (!new_comm || !new_rank)
      return Status(ErrorCode::kInvalidArgument, "new_comm or new_rank is NULL");
    auto split = comm->comm->split(rank, color, key);
    RUCCL_TRY(split);
    *new_rank = split.value().rank;
    if (split.value().comm) ruccl::capi::wrap(std::move(split.value().comm), new_comm);
    return Status::ok();
  });
  return ruccl::capi::record(*comm, rank, "ruccl_comm_split", s);
}

ruccl_result_t ruccl_barrier(ruccl_comm_t* comm, size_t rank) {
  if (!comm) return RUCCL_ERROR_INVALID_ARGUMENT;
  const Status s = catch_to_status(ErrorCode::kInternal, "",
                                   [&]() -> Status { return comm->comm->barrier(rank); });
  return ruccl::capi::record(*comm, rank, "ruccl_barrier", s);
}

namespace {

// ruccl_mem_alloc and _free serve no rank: a failure's message goes into the
// slot of ranks not served, and a success leaves it (other threads' calls
// would clear it under the caller's feet).
ruccl_result_t record_memory(const ruccl_comm& comm, const char* function,
                             const Status& status) noexcept {
  if (status.is_ok()) return RUCCL_SUCCESS;
  return ruccl::capi::record(comm, SIZE_MAX, function, status);
}

}  // namespace

ruccl_result_t ruccl_mem_alloc(ruccl_comm_t* comm, size_t bytes, void** ptr) {
  if (!comm || !ptr) return RUCCL_ERROR_INVALID_ARGUMENT;
  *ptr = nullptr;
  const Status s = catch_to_status(ErrorCode::kInternal, "", [&]() -> Status {
    auto memory = comm->comm->allocate_host(bytes);
    RUCCL_TRY(memory);
    std::lock_guard lock(comm->memory_mutex);
    void* p = memory.value().get();
    comm->memory.emplace(p, std::move(memory).value());
    *ptr = p;
    return Status::ok();
  });
  return record_memory(*comm, "ruccl_mem_alloc", s);
}

ruccl_result_t ruccl_mem_free(ruccl_comm_t* comm, void* ptr) {
  if (!comm) return RUCCL_ERROR_INVALID_ARGUMENT;
  if (!ptr) return RUCCL_SUCCESS;
  const Status s = catch_to_status(ErrorCode::kInternal, "", [&]() -> Status {
    std::shared_ptr<std::byte> freed;  // released after the lock
    std::lock_guard lock(comm->memory_mutex);
    auto it = comm->memory.find(ptr);
    if (it == comm->memory.end())
      return Status(ErrorCode::kInvalidArgument,
                    "a pointer ruccl_mem_alloc did not allocate on this communicator");
    freed = std::move(it->second);
    comm->memory.erase(it);
    return Status::ok();
  });
  return record_memory(*comm, "ruccl_mem_free", s);
}

ruccl_result_t ruccl_comm_world_size(const ruccl_comm_t* comm, size_t* world_size) {
  if (!comm || !world_size) return RUCCL_ERROR_INVALID_ARGUMENT;
  *world_size = comm->comm->world_size();
  return RUCCL_SUCCESS;
}

ruccl_result_t ruccl_comm_first_rank(const ruccl_comm_t* comm, size_t* first_rank) {
  if (!comm || !first_rank) return RUCCL_ERROR_INVALID_ARGUMENT;
  *first_rank = comm->comm->first_rank();
  return RUCCL_SUCCESS;
}

ruccl_result_t ruccl_comm_local_count(const ruccl_comm_t* comm, size_t* local_count) {
  if (!comm || !local_count) return RUCCL_ERROR_INVALID_ARGUMENT;
  *local_count = comm->comm->devices().size();
  return RUCCL_SUCCESS;
}

const char* ruccl_comm_last_error(const ruccl_comm_t* comm, size_t rank) {
  if (!comm) return "comm is NULL";
  ruccl_comm::Slot& slot = comm->slot(rank);
  std::lock_guard lock(slot.mutex);
  return slot.message.c_str();
}

}  // extern "C"
