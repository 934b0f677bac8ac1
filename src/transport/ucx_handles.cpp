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

// Releases a ucp_config_t at the end of a scope.
struct ConfigGuard {
  ucp_config_t* config = nullptr;
  ~ConfigGuard() {
    if (config != nullptr) ucp_config_release(config);
  }
};

}  // namespace

// ---- Context -----------------------------------------------------------------

Result<Context> Context::create() {
  ConfigGuard config;
  RUCCL_TRY(ucx_status(ucp_config_read(nullptr, nullptr, &config.config), "ucp_config_read"));

  ucp_params_t params;
  std::memset(&params, 0, sizeof params);
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG;
  params.mt_workers_shared = 0;  // one worker per context, used by one thread at a time

  Context context;
  RUCCL_TRY(ucx_status(ucp_init(&params, config.config, &context.handle_), "ucp_init"));

  ucp_context_attr_t attr;
  std::memset(&attr, 0, sizeof attr);
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  RUCCL_TRY(ucx_status(ucp_context_query(context.handle_, &attr), "ucp_context_query"));
  context.memory_types_ = attr.memory_types;
  return context;
}

Context::Context(Context&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      memory_types_(std::exchange(other.memory_types_, 0)) {}

Context& Context::operator=(Context&& other) noexcept {
  if (this != &other) {
    Context old(std::move(*this));
    handle_ = std::exchange(other.handle_, nullptr);
    memory_types_ = std::exchange(other.memory_types_, 0);
  }
  return *this;
}

Context::~Context() {
  if (handle_ != nullptr) ucp_cleanup(handle_);
}

// ---- Worker ------------------------------------------------------------------

Result<Worker> Worker::create(const Context& context) {
  ucp_worker_params_t params;
  std::memset(&params, 0, sizeof params);
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  Worker worker;
  RUCCL_TRY(ucx_status(ucp_worker_create(context.get(), &params, &worker.handle_),
                       "ucp_worker_create"));
  return worker;
}

Worker::Worker(Worker&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

Worker& Worker::operator=(Worker&& other) noexcept {
  if (this != &other) {
    Worker old(std::move(*this));
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Worker::~Worker() {
  if (handle_ != nullptr) ucp_worker_destroy(handle_);
}

Result<std::vector<std::byte>> Worker::address() const {
  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  RUCCL_TRY(ucx_status(ucp_worker_get_address(handle_, &address, &length),
                       "ucp_worker_get_address"));
  const auto* first = reinterpret_cast<const std::byte*>(address);
  std::vector<std::byte> blob(first, first + length);
  ucp_worker_release_address(handle_, address);
  return blob;
}

unsigned Worker::progress() const {
  const unsigned events = ucp_worker_progress(handle_);
  if (events != 0) {
    idle_ = 0;
  } else if (++idle_ >= kIdleSpins) {
    idle_ = 0;
    sched_yield();
  }
  return events;
}

// ---- Request -----------------------------------------------------------------

Request::Request(Request&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    reset();
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Request::~Request() { reset(); }

void Request::reset() {
  if (handle_ != nullptr) ucp_request_free(std::exchange(handle_, nullptr));
}

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
  endpoint.worker_ = worker.get();
  endpoint.detect_failure_ = detect_failure;
  RUCCL_TRY(ucx_status(ucp_ep_create(worker.get(), &params, &endpoint.handle_), "ucp_ep_create"));
  return endpoint;
}

Endpoint::Endpoint(Endpoint&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      worker_(std::exchange(other.worker_, nullptr)),
      detect_failure_(other.detect_failure_) {}

Endpoint& Endpoint::operator=(Endpoint&& other) noexcept {
  if (this != &other) {
    force_close();
    handle_ = std::exchange(other.handle_, nullptr);
    worker_ = std::exchange(other.worker_, nullptr);
    detect_failure_ = other.detect_failure_;
  }
  return *this;
}

Endpoint::~Endpoint() { force_close(); }

Posted Endpoint::start_close(bool force) {
  if (handle_ == nullptr) return Posted{};
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof param);
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  return posted(ucp_ep_close_nbx(std::exchange(handle_, nullptr), &param));
}

void Endpoint::force_close() {
  // UCX allows a forced close only where both sides use PEER error handling.
  Posted close = start_close(/*force=*/detect_failure_);
  if (!close.request) return;
  const auto give_up = std::chrono::steady_clock::now() + kForceCloseBound;
  while (ucp_request_check_status(close.request.get()) == UCS_INPROGRESS &&
         std::chrono::steady_clock::now() < give_up) {
    if (ucp_worker_progress(worker_) == 0) sched_yield();
  }
  // Freed even if still in progress: UCX then releases it when it completes
  // (at the latest in ucp_worker_destroy).
}

}  // namespace ruccl::transport
