// Move-only owners of the UCX handles the transport uses. Each releases its
// handle in its destructor, and none of them blocks for long there. An owner
// that needs another handle to clean up (an endpoint needs its worker to make
// progress) keeps a plain pointer to it: the owner of that handle must be
// declared before it, so that it is destroyed after it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <ucp/api/ucp.h>

#include "ruccl/status.hpp"

namespace ruccl::transport {

// A ucp_context_h with the tag-matching feature. Reads UCX's own UCX_*
// environment (UCX_TLS, UCX_NET_DEVICES...) like any UCX program.
class Context {
 public:
  static Result<Context> create();

  Context() = default;
  Context(Context&& other) noexcept;
  Context& operator=(Context&& other) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  ucp_context_h get() const { return handle_; }
  // Bit mask over ucs_memory_type_t (UCP_ATTR_FIELD_MEMORY_TYPES).
  std::uint64_t memory_types() const { return memory_types_; }

 private:
  ucp_context_h handle_ = nullptr;
  std::uint64_t memory_types_ = 0;
};

// A ucp_worker_h used by one thread at a time (UCS_THREAD_MODE_SERIALIZED: no
// locks; unlike SINGLE it lets the transport move between threads).
class Worker {
 public:
  static Result<Worker> create(const Context& context);

  Worker() = default;
  Worker(Worker&& other) noexcept;
  Worker& operator=(Worker&& other) noexcept;
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker();

  ucp_worker_h get() const { return handle_; }
  // A copy of the worker's address blob (the UCX copy is released at once).
  Result<std::vector<std::byte>> address() const;
  // One ucp_worker_progress(); yields the CPU (sched_yield) after a streak of
  // kIdleSpins calls in which nothing happened, so that ranks oversubscribing
  // the cores do not starve each other, while a message that arrives within a
  // few microseconds costs no system call. Returns the number of events UCX
  // processed.
  unsigned progress() const;

 private:
  static constexpr unsigned kIdleSpins = 64;
  ucp_worker_h handle_ = nullptr;
  mutable unsigned idle_ = 0;  // progress() calls in a row that did nothing
};

// A ucp request handle that the caller must free (ucp_request_free). Freeing a
// request that has not completed lets UCX release it when it completes; the
// buffers it refers to must stay valid until then, so the transport frees only
// completed requests unless it has run out of time.
class Request {
 public:
  Request() = default;
  explicit Request(void* handle) : handle_(handle) {}
  Request(Request&& other) noexcept;
  Request& operator=(Request&& other) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request();

  void* get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }
  void reset();

 private:
  void* handle_ = nullptr;
};

// What a non-blocking UCX call returned: done at once (with a status), or a
// request to poll. Turns ucs_status_ptr_t into something that owns the request.
struct Posted {
  ucs_status_t status = UCS_OK;  // UCS_INPROGRESS while `request` is pending
  Request request;
};
Posted posted(ucs_status_ptr_t ptr);

// A ucp_ep_h with peer-failure detection (UCP_ERR_HANDLING_MODE_PEER): when the
// peer dies, UCX calls `on_error(error_arg, ep, status)` from inside
// ucp_worker_progress and fails the endpoint's requests. The destructor (and
// force_close) closes with UCP_EP_CLOSE_FLAG_FORCE, which completes at once.
class Endpoint {
 public:
  // `detect_failure`: UCP_ERR_HANDLING_MODE_PEER (on_error reports a failed
  // peer). Without it (UCP_ERR_HANDLING_MODE_NONE) UCX 1.13 may pick shared
  // memory transports, but the endpoint may not be force-closed: closes flush.
  static Result<Endpoint> create(const Worker& worker, std::span<const std::byte> address,
                                 ucp_err_handler_cb_t on_error, void* error_arg,
                                 bool detect_failure = true);

  Endpoint() = default;
  Endpoint(Endpoint&& other) noexcept;
  Endpoint& operator=(Endpoint&& other) noexcept;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;
  ~Endpoint();

  ucp_ep_h get() const { return handle_; }
  bool is_open() const { return handle_ != nullptr; }
  // Starts ucp_ep_close_nbx (flushing unless `force`) and gives up the handle:
  // the endpoint is empty afterwards, and the close completes with the request.
  Posted start_close(bool force);
  // Closes at once, cancelling the endpoint's outstanding requests
  // (UCS_ERR_CANCELED); bounded, progresses the worker briefly if UCX asks to.
  // An endpoint without failure detection is flush-closed instead, within the
  // same bound; requests it cannot finish are abandoned to UCX.
  void force_close();
  bool detects_failure() const { return detect_failure_; }

 private:
  ucp_ep_h handle_ = nullptr;
  ucp_worker_h worker_ = nullptr;  // not owned: the transport's Worker outlives it
  bool detect_failure_ = true;
};

}  // namespace ruccl::transport
