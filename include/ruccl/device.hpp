// The device-adapter contract: memory operations and arithmetic over pointers.
//
// A backend knows nothing about collectives, ranks' buffer layouts or
// schedules: the executors (src/core, src/transport) resolve every transfer of
// an algorithm step into pointers and byte counts (with the only bounds check,
// src/core/work.hpp) and ask the adapter to copy, reduce or divide memory.
// UCC's memory components and execution engines are the model.
//
// Queues. Every verb but prepare and allocate works on one Queue: the device
// a rank runs on (CUDA: that logical device's stream) and the caller's stream.
// One rank's thread uses its queue; different queues are used concurrently,
// so implementations are thread-safe across queues.
//
// Ordering, per collective on one rank:
//   prepare  - before the rendezvous: checks the tensor and captures its
//              producer (CUDA records an event on the caller's stream). Never
//              waits for other ranks.
//   begin    - orders the queue's later work after what `producer` captured:
//              the rank's own state once its buffers are known, and the state
//              of each peer whose memory an in-process step reads, before it
//              reads it (a peer's input may still be in flight on its stream).
//   copy / reduce / divide - queue work and return a Ticket at once; the
//              operands must stay untouched (and dst unread) until it completes.
//   wait     - blocks until the ticket's work, and all work queued on that
//              queue before it, has completed. Ticket 0 is always complete.
//   finish   - completes the queue's work and makes the caller's stream wait on it.
// Who blocks: only wait and finish (and any verb, briefly, on failure). The
// executors wait for every ticket before a step returns, also after a failure,
// so when step k starts on any rank, step k-1's reads and writes are complete
// everywhere, and nothing queued outlives the collective.
//
// Ownership. All pointers are borrowed for the duration of the ticket. allocate
// and allocate_host_staging return memory freed with the last owner. A verb
// that fails leaves nothing of its own queued (it waits for what it queued
// before returning the error). Adapters may throw; the core turns an exception
// into kDeviceError (bad_alloc: kOutOfMemory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ruccl/status.hpp"
#include "ruccl/tensor.hpp"
#include "ruccl/types.hpp"

namespace ruccl {

// Whatever an adapter captured in prepare (a CUDA event).
class AdapterState {
 public:
  virtual ~AdapterState() = default;
};

// Where a rank's device work runs.
struct Queue {
  DeviceId device{};
  void* stream = nullptr;  // the caller's stream (CUDA: a cudaStream_t; null: the default)
};

// A backend. One instance serves every rank of a group.
class DeviceAdapter {
 public:
  // Names queued work: wait(q, t) returns once it (and all of q's earlier work)
  // has completed. An event, or a position in the queue.
  using Ticket = std::uint64_t;

  virtual ~DeviceAdapter() = default;
  virtual DeviceKind kind() const noexcept = 0;

  // ---- ordering
  // Checks that `view` lives on `device`; the returned state is what begin()
  // later orders after (may be null: nothing to wait for).
  virtual Result<std::shared_ptr<AdapterState>> prepare(const TensorView& view, DeviceId device) = 0;
  virtual Status begin(const Queue& queue, const AdapterState* producer) = 0;
  virtual Status finish(const Queue& queue) = 0;

  // ---- memory
  // `bytes` of memory on `device`, freed when the last owner lets go.
  virtual Result<std::shared_ptr<void>> allocate(DeviceId device, std::size_t bytes) = 0;
  // `bytes` of host memory the device copies to and from fast (CUDA: pinned),
  // for transports that cannot touch device memory. Default: kUnsupported.
  virtual Result<std::shared_ptr<void>> allocate_host_staging(DeviceId device, std::size_t bytes) {
    (void)device;
    (void)bytes;
    return Status(ErrorCode::kUnsupported, std::string(device_kind_name(kind())) +
                                               " adapter has no host staging memory");
  }

  // ---- operations (each queues its work and returns its ticket)
  // dst = src, `bytes` bytes, memmove semantics. Either side may be device
  // memory of any device the adapter serves, or host memory.
  virtual Result<Ticket> copy(const Queue& queue, void* dst, const void* src,
                              std::size_t bytes) = 0;
  // dst[i] = a[i] op b[i] for `count` elements of `dtype` (Mean combines as
  // Sum). dst is device memory of the queue's device and may be `a`; a and b
  // may live elsewhere (a peer device, host memory). kInvalidArgument for a
  // dtype/op that does not reduce (kBytes).
  virtual Result<Ticket> reduce(const Queue& queue, void* dst, const void* a, const void* b,
                                std::size_t count, DataType dtype, ReduceOp op) = 0;
  // data[i] /= divisor for `count` elements of `dtype` (Mean's final scaling).
  virtual Result<Ticket> divide(const Queue& queue, void* data, std::size_t count, DataType dtype,
                                std::size_t divisor) = 0;
  virtual Status wait(const Queue& queue, Ticket ticket) = 0;
};

// The host CPU adapter (always built).
std::shared_ptr<DeviceAdapter> make_host_adapter();
// The adapter for `kind`: kUnsupported when this build lacks it (CUDA without the
// toolkit) or, for CUDA, when no GPU is usable.
Result<std::shared_ptr<DeviceAdapter>> make_adapter(DeviceKind kind);

}  // namespace ruccl
