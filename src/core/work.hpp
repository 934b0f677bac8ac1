// The executors' side of the device contract: one collective's buffers (Work),
// the one place a transfer becomes pointers (resolve, the only bounds check),
// and the step operations built from the adapter's memory verbs.
//
// Every executor (the in-process one in core/engine.cpp, TransportRun, the
// staged pipeline, DeliveredRun) resolves each transfer here and queues it with
// queue_combine(), so no adapter ever interprets a buffer layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ring/transfer.hpp"
#include "ruccl/device.hpp"

namespace ruccl {

// One rank's buffers during one collective. Transfers read `send` (or `input`)
// of the source and write `recv` of the destination. Either may be null when
// the rank's side of the algorithm has no data (a receiver's send in broadcast,
// a root-less reduce).
struct RankBuffers {
  DeviceId device{};
  void* stream = nullptr;       // the caller's stream (CUDA); null on the host
  const void* input = nullptr;  // the caller's input (Source::kInput, kReduceInput)
  std::size_t input_count = 0;
  const void* send = nullptr;
  std::size_t send_count = 0;
  void* recv = nullptr;
  std::size_t recv_count = 0;
  std::shared_ptr<AdapterState> state;  // from prepare
  Queue queue() const { return Queue{device, stream}; }
};

// Shared by all ranks of one generation. During a step, rank r writes only
// ranks[r] and the memory its recv buffer points to.
struct Work {
  DataType dtype = DataType::kF32;
  ReduceOp op = ReduceOp::kSum;
  std::size_t world = 0;
  std::vector<RankBuffers> ranks;
};

namespace core {

using Ticket = DeviceAdapter::Ticket;

// One transfer in pointers. Null ends were not asked for (kElsewhere).
struct Resolved {
  const std::byte* src = nullptr;  // the range read: source's send buffer or input
  std::byte* dst = nullptr;        // the range written, in the destination's recv buffer
  const std::byte* own = nullptr;  // kReduceInput: the destination's input at dst's offset
  std::size_t count = 0;           // elements
  std::size_t bytes = 0;
};

// An end of a transfer that is not in this Work (another process's rank, a
// message that arrived).
inline constexpr std::size_t kElsewhere = static_cast<std::size_t>(-1);

// `t` between the local ranks `from` (whose send buffer or input it reads) and
// `to` (whose recv buffer it writes, and for kReduceInput whose input it
// reads); either may be kElsewhere. kInternal, naming the ranks, the range and
// the buffer, when a range leaves its buffer or a needed buffer is null: a
// schedule over the agreed plan that does not fit must neither read nor write
// (nor send to a peer) the memory behind a buffer.
Result<Resolved> resolve(const Work& work, const Transfer& t, Combine how, std::size_t from,
                         std::size_t to);

// Queues r.dst = r.src (kCopy), r.dst op r.src (kReduce) or r.own op r.src
// (kReduceInput) on `queue`. r.src may be replaced first by a message that
// arrived. Zero elements queue nothing (ticket 0).
Result<Ticket> queue_combine(DeviceAdapter& adapter, const Work& work, const Queue& queue,
                             const Resolved& r, Combine how);

// Waits for `ticket` when queuing succeeded; a failed verb left nothing queued.
inline Status completed(DeviceAdapter& adapter, const Queue& queue, const Result<Ticket>& ticket) {
  if (!ticket.is_ok()) return ticket.status();
  return ticket.value() == 0 ? Status::ok() : adapter.wait(queue, ticket.value());
}

// The work a run of operations queued on one queue: settle() waits for the
// latest ticket (so for all of it), also after a failure, so that nothing
// queued outlives the step.
class Queued {
 public:
  Queued(DeviceAdapter& adapter, const Queue& queue) : adapter_(adapter), queue_(queue) {}
  Status add(const Result<Ticket>& ticket) {
    if (!ticket.is_ok()) return ticket.status();
    if (ticket.value() != 0) last_ = ticket.value();
    return Status::ok();
  }
  // `status` if it failed, else the outcome of the wait.
  Status settle(const Status& status) {
    const Status waited = last_ == 0 ? Status::ok() : adapter_.wait(queue_, last_);
    last_ = 0;
    return status.is_ok() ? waited : status;
  }

 private:
  DeviceAdapter& adapter_;
  const Queue queue_;
  Ticket last_ = 0;
};

// The in-process step ("exchange"): local rank `rank` pulls its incoming
// transfers from the other local ranks' buffers (t.peer: a local index),
// after ordering its queue after each source's producer. Returns when all of
// it completed, also after a failure.
Status exchange(DeviceAdapter& adapter, Work& work, std::size_t rank,
                std::span<const Transfer> incoming, Combine how);

// One received message ("combine"): `count` elements at `message` into local
// rank `rank`'s recv buffer at `dst_offset`, combined by `how`. Returns the
// ticket; `message` stays untouched until it completed.
Result<Ticket> combine(DeviceAdapter& adapter, const Work& work, std::size_t rank,
                       std::size_t dst_offset, const void* message, std::size_t count, Combine how);

// The core's adapter decorators (GuardedAdapter, FaultyAdapter) also see the
// operations above by name (fault injection's verbs "exchange" and "combine"):
// an error from entering() fails the operation before it queues anything.
class AdapterDecorator : public DeviceAdapter {
 public:
  virtual Status entering(const char* operation) = 0;
};
// entering() of `adapter` if it is a decorator; ok otherwise.
Status entering(DeviceAdapter& adapter, const char* operation);

}  // namespace core
}  // namespace ruccl
