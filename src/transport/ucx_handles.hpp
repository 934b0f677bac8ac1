// Owners of the UCX handles the transport uses: core::UniqueHandle with a
// deleter per kind of handle. Each releases its handle in its destructor, and
// none of them blocks for long there. An owner that needs another handle to
// clean up (an endpoint needs its worker to make progress) keeps a plain
// pointer to it in its deleter: the owner of that handle must be declared
// before it, so that it is destroyed after it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <ucp/api/ucp.h>

#include "core/unique_handle.hpp"
#include "ruccl/status.hpp"

namespace ruccl::transport {

// A ucp_context_h with the tag-matching feature. Reads UCX's own UCX_*
// environment (UCX_TLS, UCX_NET_DEVICES...) like any UCX program.
class Context {
 public:
  static Result<Context> create();

  ucp_context_h get() const { return handle_.get(); }
  // Bit mask over ucs_memory_type_t (UCP_ATTR_FIELD_MEMORY_TYPES).
  std::uint64_t memory_types() const { return memory_types_; }

 private:
  struct Cleanup {
    void operator()(ucp_context_h context) const noexcept { ucp_cleanup(context); }
  };
  core::UniqueHandle<ucp_context_h, Cleanup> handle_;
  std::uint64_t memory_types_ = 0;
};

// A ucp_worker_h used by one thread at a time (UCS_THREAD_MODE_SERIALIZED: no
// locks; unlike SINGLE it lets the transport move between threads).
class Worker {
 public:
  // `oversubscribed`: this machine's ranks outnumber its cores
  // (TransportOptions::oversubscribed).
  static Result<Worker> create(const Context& context, bool oversubscribed = false);

  ucp_worker_h get() const { return handle_.get(); }
  // A copy of the worker's address blob (the UCX copy is released at once).
  Result<std::vector<std::byte>> address() const;
  // One ucp_worker_progress(); yields the CPU (sched_yield) after a streak of
  // kIdleSpins calls in which nothing happened, so that a message that
  // arrives within a few microseconds costs no system call, or after every
  // such call where the ranks outnumber the cores: they take turns on them,
  // and the rank whose message this one waits for may be the one waiting for
  // this core (4 processes on 2 cores, UCX over TCP, back to back 8 B
  // all-reduce: 220-250 us with kIdleSpins, 117-125 yielding at once; with 2
  // processes, yielding at once took 23.5 us against 16.5). Returns the
  // number of events UCX processed.
  unsigned progress() const;

 private:
  struct Destroy {
    void operator()(ucp_worker_h worker) const noexcept { ucp_worker_destroy(worker); }
  };
  static constexpr unsigned kIdleSpins = 64;
  core::UniqueHandle<ucp_worker_h, Destroy> handle_;
  unsigned idle_spins_ = kIdleSpins;  // 1 where oversubscribed
  mutable unsigned idle_ = 0;         // progress() calls in a row that did nothing
};

// A ucp request handle that the caller must free (ucp_request_free). Freeing a
// request that has not completed lets UCX release it when it completes; the
// buffers it refers to must stay valid until then, so the transport frees only
// completed requests unless it has run out of time.
struct RequestFree {
  void operator()(void* request) const noexcept { ucp_request_free(request); }
};
using Request = core::UniqueHandle<void*, RequestFree>;

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

  ucp_ep_h get() const { return handle_.get(); }
  bool is_open() const { return static_cast<bool>(handle_); }
  // Starts ucp_ep_close_nbx (flushing unless `force`) and gives up the handle:
  // the endpoint is empty afterwards, and the close completes with the request.
  Posted start_close(bool force);
  // Closes at once, cancelling the endpoint's outstanding requests
  // (UCS_ERR_CANCELED); bounded, progresses the worker briefly if UCX asks to.
  // An endpoint without failure detection is flush-closed instead, within the
  // same bound; requests it cannot finish are abandoned to UCX.
  void force_close() { handle_.reset(); }
  bool detects_failure() const { return handle_.get_deleter().detect_failure; }

 private:
  // Releases an endpoint: the bounded close of force_close.
  struct Close {
    ucp_worker_h worker = nullptr;  // not owned: the transport's Worker outlives it
    bool detect_failure = true;
    void operator()(ucp_ep_h endpoint) const noexcept;
  };
  core::UniqueHandle<ucp_ep_h, Close> handle_;
};

}  // namespace ruccl::transport
