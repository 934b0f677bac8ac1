#include "transport/ucx_handles.hpp"

#include <sched.h>

#include <chrono>
#include <cstring>
#include <utility>

#include "transport/ucx_status.hpp"

namespace ruccl::transport {

namespace {

// How long a force close may progress the worker before giving up on its
// request (UCX documents force close as completing at once; this is a guard).
constexpr auto kForceCloseBound = std::chrono::milliseconds(200);

struct ConfigRelease {
  void operator()(ucp_config_t* config) const noexcept { ucp_config_release(config); }
};

// ucp_ep_close_nbx (forced, or flushing); the close completes with the request.
Posted close_nbx(ucp_ep_h endpoint, bool force) {
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof param);
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  return posted(ucp_ep_close_nbx(endpoint, &param));
}

}  // namespace

// ---- Context -----------------------------------------------------------------

Result<Context> Context::create() {
  core::UniqueHandle<ucp_config_t*, ConfigRelease> config;
  RUCCL_TRY(ucx_status(ucp_config_read(nullptr, nullptr, config.out()), "ucp_config_read"));

  ucp_params_t params;
  std::memset(&params, 0, sizeof params);
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG;
  params.mt_workers_shared = 0;  // one worker per context, used by one thread at a time

  Context context;
  RUCCL_TRY(ucx_status(ucp_init(&params, config.get(), context.handle_.out()), "ucp_init"));

  ucp_context_attr_t attr;
  std::memset(&attr, 0, sizeof attr);
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  RUCCL_TRY(ucx_status(ucp_context_query(context.get(), &attr), "ucp_context_query"));
  context.memory_types_ = attr.memory_types;
  return context;
}

// ---- Worker ------------------------------------------------------------------

Result<Worker> Worker::create(const Context& context, bool oversubscribed) {
  ucp_worker_params_t params;
  std::memset(&params, 0, sizeof params);
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  Worker worker;
  worker.idle_spins_ = oversubscribed ? 1 : kIdleSpins;
  RUCCL_TRY(ucx_status(ucp_worker_create(context.get(), &params, worker.handle_.out()),
                       "ucp_worker_create"));
  return worker;
}

Result<std::vector<std::byte>> Worker::address() const {
  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  RUCCL_TRY(ucx_status(ucp_worker_get_address(get(), &address, &length), "ucp_worker_get_address"));
  const auto* first = reinterpret_cast<const std::byte*>(address);
  std::vector<std::byte> blob(first, first + length);
  ucp_worker_release_address(get(), address);
  return blob;
}

unsigned Worker::progress() const {
  const unsigned events = ucp_worker_progress(get());
  if (events != 0) {
    idle_ = 0;
  } else if (++idle_ >= idle_spins_) {
    idle_ = 0;
    sched_yield();
  }
  return events;
}

// ---- Request -----------------------------------------------------------------

Posted posted(ucs_status_ptr_t ptr) {
  Posted result;
  if (ptr == nullptr) {
    result.status = UCS_OK;
  } else if (UCS_PTR_IS_ERR(ptr)) {
    result.status = UCS_PTR_STATUS(ptr);
  } else {
    result.status = UCS_INPROGRESS;
    result.request = Request(ptr);
  }
  return result;
}

// ---- Endpoint ----------------------------------------------------------------

Result<Endpoint> Endpoint::create(const Worker& worker, std::span<const std::byte> address,
                                  ucp_err_handler_cb_t on_error, void* error_arg,
                                  bool detect_failure) {
  if (address.empty()) return Status(ErrorCode::kInvalidArgument, "empty worker address");
  ucp_ep_params_t params;
  std::memset(&params, 0, sizeof params);
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  params.err_mode = detect_failure ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  params.err_handler.cb = on_error;
  params.err_handler.arg = error_arg;
  Endpoint endpoint;
  endpoint.handle_.get_deleter() = Close{worker.get(), detect_failure};
  RUCCL_TRY(
      ucx_status(ucp_ep_create(worker.get(), &params, endpoint.handle_.out()), "ucp_ep_create"));
  return endpoint;
}

Posted Endpoint::start_close(bool force) {
  if (!handle_) return Posted{};
  return close_nbx(handle_.release(), force);
}

void Endpoint::Close::operator()(ucp_ep_h endpoint) const noexcept {
  // UCX allows a forced close only where both sides use PEER error handling.
  Posted close = close_nbx(endpoint, /*force=*/detect_failure);
  if (!close.request) return;
  const auto give_up = std::chrono::steady_clock::now() + kForceCloseBound;
  while (ucp_request_check_status(close.request.get()) == UCS_INPROGRESS &&
         std::chrono::steady_clock::now() < give_up) {
    if (ucp_worker_progress(worker) == 0) sched_yield();
  }
  // Freed even if still in progress: UCX then releases it when it completes
  // (at the latest in ucp_worker_destroy).
}

}  // namespace ruccl::transport
