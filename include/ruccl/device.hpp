// The device-adapter contract: everything a backend must do, and nothing more.
//
// Algorithms (src/ring) are written once over this contract. A backend only moves
// ranges and does local arithmetic; it never knows which collective it serves.
//
// Life of one collective on rank r (all verbs run on rank r's own thread):
//   prepare  - before the rendezvous: check r's tensor and capture its producer
//              stream (CUDA records an event). Never waits for other ranks.
//   begin    - after the rendezvous, once the buffers of every rank are known:
//              order r's queue after the captured producer work.
//   allocate / copy - r's output or scratch memory, and local copies
//              (the input into the working buffer, a result range into the output).
//   exchange - one step of an algorithm: r pulls its incoming ranges from peers'
//              send buffers and copies or reduces them into its own recv buffer.
//   scale    - divides a range by the world size (Mean).
//   finish   - completes r's queued work and makes the caller's stream wait on it.
//
// Ordering: the caller runs a step barrier between consecutive exchanges, so when
// exchange(step k) starts on any rank, exchange(step k-1) has completed on all
// ranks. Within one step, the schedules guarantee that no range a peer reads is
// written in that step ("all sends precede destination writes"). A multi-rank
// adapter that queues work asynchronously (CUDA) must make the reads of step k
// wait for the writes of step k-1 on the source's queue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ruccl/status.hpp"
#include "ruccl/tensor.hpp"
#include "ruccl/types.hpp"

namespace ruccl {

// A range of elements: [offset, offset + count).
struct Range {
  std::size_t offset = 0;
  std::size_t count = 0;
  std::size_t end() const { return offset + count; }
  friend bool operator==(const Range&, const Range&) = default;
};

// What the destination does with an incoming range.
//   kCopy         recv[dst] = src
//   kReduce       recv[dst] = recv[dst] op src
//   kReduceInput  recv[dst] = input[dst] op src  (the destination's own input at the
//                 same offset: lets the first partial sum skip copying the input)
enum class Combine : std::uint8_t { kCopy, kReduce, kReduceInput };

// Which buffer of the source rank a transfer reads.
enum class Source : std::uint8_t { kSend, kInput };

// One message of one step, seen from one side. For a receive, `peer` is the source
// rank; for a send, the destination. Offsets and counts are in elements.
struct Transfer {
  std::size_t peer = 0;
  Range src;                   // in the source's send (or input) buffer
  std::size_t dst_offset = 0;  // in the destination's recv buffer
  Source source = Source::kSend;
  friend bool operator==(const Transfer&, const Transfer&) = default;
};

// Whatever an adapter captured in prepare (a CUDA event, a stream).
class AdapterState {
 public:
  virtual ~AdapterState() = default;
};

// One rank's buffers during one collective. Transfers read `send` of the source
// and write `recv` of the destination. Either may be null when the rank's side of
// the algorithm has no data (a receiver's send in broadcast, a root-less reduce).
struct RankBuffers {
  DeviceId device{};
  void* stream = nullptr;          // the caller's stream (CUDA); null on the host
  const void* input = nullptr;     // the caller's input (Source::kInput, kReduceInput)
  std::size_t input_count = 0;
  const void* send = nullptr;
  std::size_t send_count = 0;
  void* recv = nullptr;
  std::size_t recv_count = 0;
  std::shared_ptr<AdapterState> state;  // from prepare
};

// Shared by all ranks of one generation. During a step, rank r writes only
// ranks[r] and the memory its recv buffer points to.
struct Work {
  DataType dtype = DataType::kF32;
  ReduceOp op = ReduceOp::kSum;
  std::size_t world = 0;
  std::vector<RankBuffers> ranks;
};

// A backend. One instance serves every rank of a group, from the ranks' threads
// concurrently: implementations are thread-safe. Every verb blocks only on its own
// rank's work. Adapters may throw; the caller turns exceptions into kDeviceError.
class DeviceAdapter {
 public:
  virtual ~DeviceAdapter() = default;
  virtual DeviceKind kind() const noexcept = 0;

  // Checks that `view` lives on `device` (and, for CUDA, captures its producer
  // stream). Returns the state begin() will find in RankBuffers::state.
  virtual Result<std::shared_ptr<AdapterState>> prepare(const TensorView& view, DeviceId device) = 0;
  virtual Status begin(Work& work, std::size_t rank) = 0;
  // `bytes` of memory on `device`, freed when the last owner lets go.
  virtual Result<std::shared_ptr<void>> allocate(DeviceId device, std::size_t bytes) = 0;
  // Copies `count` elements of work.dtype between two buffers of `rank`'s device.
  virtual Status copy(Work& work, std::size_t rank, void* dst, const void* src, std::size_t count) = 0;
  // rank's incoming transfers of one step (see the ordering note above).
  virtual Status exchange(Work& work, std::size_t rank, std::span<const Transfer> incoming,
                          Combine combine) = 0;
  // Applies one message received by a transport: `count` elements of work.dtype
  // at `staged` (host memory the transport filled) go into rank's recv buffer
  // at `dst_offset`, combined like an incoming transfer. Adapters used only
  // in-process need not implement it (the default is kUnsupported).
  virtual Status combine(Work& work, std::size_t rank, std::size_t dst_offset, const void* staged,
                         std::size_t count, Combine combine);

  // Staging through host memory, for transports that cannot read or write the
  // device's memory (UCX without CUDA support). A rank's staging work may be
  // queued asynchronously; each verb returns a ticket, and wait_staged(t)
  // returns once that work and all staging work the rank queued before it has
  // completed. The caller waits before it reuses or frees a host buffer, and
  // before its step returns (also after a failure). The defaults: no staging
  // memory or stage_out (kUnsupported); stage_in is combine(), synchronous.
  using StageTicket = std::uint64_t;
  // `bytes` of host memory the device copies to and from fast (CUDA: pinned).
  virtual Result<std::shared_ptr<void>> allocate_host_staging(DeviceId device, std::size_t bytes) {
    (void)device;
    (void)bytes;
    return Status(ErrorCode::kUnsupported, std::string(device_kind_name(kind())) +
                                               " adapter has no host staging memory");
  }
  // host_dst = `range` (elements) of rank's send buffer (or input).
  virtual Result<StageTicket> stage_out(Work& work, std::size_t rank, Source source, Range range,
                                        void* host_dst) {
    (void)work, (void)rank, (void)source, (void)range, (void)host_dst;
    return Status(ErrorCode::kUnsupported,
                  std::string(device_kind_name(kind())) + " adapter cannot stage out");
  }
  // Like combine(): `count` elements at host_src into rank's recv buffer at
  // dst_offset. host_src must stay untouched until the ticket completes.
  virtual Result<StageTicket> stage_in(Work& work, std::size_t rank, std::size_t dst_offset,
                                       const void* host_src, std::size_t count, Combine how) {
    RUCCL_TRY(this->combine(work, rank, dst_offset, host_src, count, how));
    return StageTicket{0};
  }
  virtual Status wait_staged(Work& work, std::size_t rank, StageTicket ticket) {
    (void)work, (void)rank, (void)ticket;
    return Status::ok();
  }

  // data[i] /= divisor for `count` elements of work.dtype (Mean's final scaling).
  virtual Status scale(Work& work, std::size_t rank, void* data, std::size_t count,
                       std::size_t divisor) = 0;
  virtual Status finish(Work& work, std::size_t rank) = 0;
};

// For adapters' stage_out: the first element of `range` in rank's input
// (Source::kInput) or send buffer, checked against that buffer's count (and a
// non-null host destination). kInternal, naming the rank and range, otherwise.
Result<const std::byte*> staged_source(const Work& work, std::size_t rank, Source source,
                                       Range range, const void* host_dst);

// The host CPU adapter (always built).
std::shared_ptr<DeviceAdapter> make_host_adapter();
// The adapter for `kind`: kUnsupported when this build lacks it (CUDA without the
// toolkit) or, for CUDA, when no GPU is usable.
Result<std::shared_ptr<DeviceAdapter>> make_adapter(DeviceKind kind);

}  // namespace ruccl
