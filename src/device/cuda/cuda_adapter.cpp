// The CUDA device adapter: device-resident tensors, one stream per logical device.
//
// Lanes. Each logical device (DeviceId{kCuda, i}) owns a lane: its physical GPU
// (i % gpu_count(), or an explicit map), a non-blocking stream, an event and
// staging memory. Several lanes may share one GPU (logical ranks on one GPU);
// their streams then run concurrently on it.
//
// Ordering, per collective on rank r:
//   prepare  records `produced` on the caller's stream (null: the legacy default
//            stream): everything the caller queued before the call.
//   begin    r's stream waits on r's `produced`.
//   exchange r's stream also waits on the `produced` of every peer it reads (a
//            peer's input may still be in flight on that peer's caller stream),
//            then queues one peer copy or reduction kernel per transfer, reading
//            the peer's memory directly: cudaMemcpyAsync on one GPU,
//            cudaMemcpyPeerAsync across GPUs, kernels across GPUs when peer
//            access is enabled (else the range is first peer-copied to staging).
//            Nothing goes through the host.
//   copy, combine, scale  queue their work on r's stream.
//   stage_out, stage_in  (transports without CUDA support: TransportRun's
//            staged pipeline) queue a copy between r's device memory and
//            pinned host memory (stage_in: then the combine) on r's stream,
//            record an event, and return at once with a ticket; wait_staged
//            synchronises the events up to a ticket, so a segment's copy
//            overlaps the transport's send of the segment before.
//   finish   records `done` on r's stream and makes the caller's stream wait on it.
// Every verb except begin and the staging verbs (whose tickets TransportRun
// waits for before its step returns) returns only when its work is complete
// (it ends with a stream synchronisation). That is what makes the step
// barrier of the contract hold for queued work: when step k starts anywhere,
// step k-1's reads and writes are finished everywhere (no read-after-write or
// write-after-read across streams), a failing rank leaves nothing in flight
// that could touch a buffer after its call returns, and an asynchronous CUDA
// fault becomes the failing verb's kDeviceError. The cost is one host
// synchronisation per step, small next to the step barrier itself.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/request.hpp"
#include "device/cuda/cuda_backend.hpp"
#include "device/cuda/cuda_handles.hpp"
#include "device/cuda/kernels.hpp"

namespace ruccl::cuda {
namespace {

std::optional<kernels::Type> kernel_type(DataType dtype) {
  switch (dtype) {
    case DataType::kF16: return kernels::Type::kF16;
    case DataType::kBF16: return kernels::Type::kBF16;
    case DataType::kF32: return kernels::Type::kF32;
    case DataType::kF64: return kernels::Type::kF64;
    case DataType::kI8: return kernels::Type::kI8;
    case DataType::kU8: return kernels::Type::kU8;
    case DataType::kI32: return kernels::Type::kI32;
    case DataType::kI64: return kernels::Type::kI64;
    case DataType::kU64: return kernels::Type::kU64;
    case DataType::kBytes: break;
  }
  return std::nullopt;
}

kernels::Op kernel_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kProd: return kernels::Op::kProd;
    case ReduceOp::kMin: return kernels::Op::kMin;
    case ReduceOp::kMax: return kernels::Op::kMax;
    case ReduceOp::kSum: case ReduceOp::kMean: break;  // Mean divides in scale()
  }
  return kernels::Op::kSum;
}

// The caller's stream as CUDA sees it: null means the legacy default stream.
cudaStream_t caller_stream(void* stream) {
  return stream != nullptr ? static_cast<cudaStream_t>(stream) : cudaStreamLegacy;
}

bool overlaps(const void* a, const void* b, std::size_t bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  const auto y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// One logical device. During a collective only that rank's thread uses it;
// the mutex covers two communicators sharing a logical device.
struct Lane {
  std::size_t logical = 0;
  int gpu = 0;
  int sm_count = 0;
  Stream stream;
  Event done;
  DeviceBuffer staging;
  // Staging work queued and not yet waited for, oldest first, with its
  // ticket; events of waited work are kept for reuse.
  std::deque<std::pair<DeviceAdapter::StageTicket, Event>> staged;
  std::vector<Event> spare_events;
  DeviceAdapter::StageTicket last_ticket = 0;
  std::mutex mutex;

  std::string name() const {
    return "cuda:" + std::to_string(logical) + " (GPU " + std::to_string(gpu) + ")";
  }
  // Waits for the lane's queued work: the end of every verb but begin.
  Status sync(const char* verb) {
    return check(cudaStreamSynchronize(stream.get()),
                 std::string(verb) + " on " + name() + " (stream synchronisation)", gpu);
  }
};

// What prepare captured: everything the caller queued before the call.
struct Captured final : AdapterState {
  Event produced;
};

// Device memory of `gpu` (or managed memory), aligned to `element`: anything
// else is the caller's mistake (kInvalidArgument), caught before a kernel
// faults on it.
Status check_pointer(const void* p, std::size_t element, int gpu, const std::string& what,
                     const std::string& where) {
  if (p == nullptr) return Status::ok();  // empty ranges; bounds checks catch the rest
  if (reinterpret_cast<std::uintptr_t>(p) % element != 0)
    return Status(ErrorCode::kInvalidArgument, what + " at " + hex(p) + " on " + where +
                                                   " is not aligned to its " +
                                                   std::to_string(element) + "-byte elements");
  cudaPointerAttributes attr{};
  const cudaError_t err = cudaPointerGetAttributes(&attr, p);
  if (err != cudaSuccess) {
    Status s = check(err, "cudaPointerGetAttributes", gpu);
    return Status(ErrorCode::kInvalidArgument,
                  what + " at " + hex(p) + " is not CUDA memory of " + where + " (" + s.message() + ")");
  }
  switch (attr.type) {
    case cudaMemoryTypeDevice:
      if (attr.device == gpu) return Status::ok();
      return Status(ErrorCode::kInvalidArgument,
                    what + " at " + hex(p) + " is memory of GPU " + std::to_string(attr.device) +
                        ", not of " + where);
    case cudaMemoryTypeManaged:
      return Status::ok();
    case cudaMemoryTypeHost:
    case cudaMemoryTypeUnregistered:
      break;
  }
  return Status(ErrorCode::kInvalidArgument,
                what + " at " + hex(p) + " is host memory, not device memory of " + where);
}

class CudaAdapter final : public DeviceAdapter {
 public:
  CudaAdapter(std::size_t gpus, std::vector<int> map) : gpus_(gpus), map_(std::move(map)) {}

  DeviceKind kind() const noexcept override { return DeviceKind::kCuda; }

  Result<std::shared_ptr<AdapterState>> prepare(const TensorView& view, DeviceId device) override {
    if (device.kind != DeviceKind::kCuda || view.device.kind != DeviceKind::kCuda)
      return Status(ErrorCode::kInvalidArgument,
                    "cuda adapter got a tensor on " + device_name(view.device) + " for device " +
                        device_name(device));
    auto lane = lane_for(device);
    RUCCL_TRY(lane);
    Lane& l = *lane.value();
    if (view.count() > 0)
      RUCCL_TRY(check_pointer(view.data, dtype_size(view.dtype), l.gpu, "tensor", l.name()));
    DeviceGuard guard(l.gpu);
    RUCCL_TRY(guard.status());
    auto event = Event::create(l.gpu);
    RUCCL_TRY(event);
    auto captured = std::make_shared<Captured>();
    captured->produced = std::move(event.value());
    RUCCL_TRY(check(cudaEventRecord(captured->produced.get(), caller_stream(view.stream)),
                    "cudaEventRecord on the caller's stream of " + l.name() +
                        " (is the stream on that GPU?)",
                    l.gpu));
    return std::shared_ptr<AdapterState>(std::move(captured));
  }

  Status begin(Work& work, std::size_t rank) override {
    return on_lane(work, rank, [&](Lane& l) -> Status {
      return wait_produced(l, work.ranks[rank]);
    });
  }

  Result<std::shared_ptr<void>> allocate(DeviceId device, std::size_t bytes) override {
    auto gpu = gpu_of(device);
    RUCCL_TRY(gpu);
    return allocate_on(gpu.value(), bytes);
  }

  Status copy(Work& work, std::size_t rank, void* dst, const void* src, std::size_t count) override {
    const std::size_t bytes = count * dtype_size(work.dtype);
    if (bytes == 0 || dst == src) return Status::ok();
    return on_lane(work, rank, [&](Lane& l) -> Status {
      RUCCL_TRY(check_pointer(dst, dtype_size(work.dtype), l.gpu, "copy destination", l.name()));
      return settle(l, queue_copy(l, dst, src, l.gpu, bytes), "copy");
    });
  }

  Status exchange(Work& work, std::size_t rank, std::span<const Transfer> incoming,
                  Combine combine) override {
    return on_lane(work, rank, [&](Lane& l) -> Status {
      const std::size_t es = dtype_size(work.dtype);
      bool queued = false;
      Status status = [&]() -> Status {
        for (const Transfer& t : incoming) {
          if (t.src.count == 0) continue;
          if (t.peer >= work.world || t.peer >= work.ranks.size())
            return out_of_bounds("peer", rank, t);
          const RankBuffers& from = work.ranks[t.peer];
          const bool from_input = t.source == Source::kInput;
          const void* base = from_input ? from.input : from.send;
          if (base == nullptr || t.src.end() > (from_input ? from.input_count : from.send_count))
            return out_of_bounds("source range", rank, t);
          auto src_gpu = gpu_of(from.device);
          RUCCL_TRY(src_gpu);
          RUCCL_TRY(check_pointer(base, es, src_gpu.value(),
                                  "rank " + std::to_string(t.peer) + "'s " +
                                      (from_input ? "input" : "send buffer"),
                                  device_name(from.device)));
          RUCCL_TRY(wait_produced(l, from));
          const auto* src = static_cast<const std::byte*>(base) + t.src.offset * es;
          queued = true;
          RUCCL_TRY(apply(l, work, rank, t.dst_offset, src, src_gpu.value(), t.src.count, combine));
        }
        return Status::ok();
      }();
      // Even after a failure, nothing this call queued may outlive it.
      return queued ? settle(l, std::move(status), "exchange") : status;
    });
  }

  Status combine(Work& work, std::size_t rank, std::size_t dst_offset, const void* staged,
                 std::size_t count, Combine combine) override {
    if (count == 0) return Status::ok();
    if (staged == nullptr) return Status(ErrorCode::kInternal, "cuda adapter: null staged message");
    return on_lane(work, rank, [&](Lane& l) -> Status {
      return settle(l, queue_received(l, work, rank, dst_offset, staged, count, combine), "combine");
    });
  }

  Result<std::shared_ptr<void>> allocate_host_staging(DeviceId device, std::size_t bytes) override {
    auto gpu = gpu_of(device);
    RUCCL_TRY(gpu);
    return allocate_pinned(gpu.value(), bytes);
  }

  Result<StageTicket> stage_out(Work& work, std::size_t rank, Source source, Range range,
                                void* host_dst) override {
    if (range.count == 0) return StageTicket{0};
    StageTicket ticket = 0;
    RUCCL_TRY(on_lane(work, rank, [&](Lane& l) -> Status {
      auto staged = staged_source(work, rank, source, range, host_dst);
      RUCCL_TRY(staged);
      const std::byte* src = staged.value();
      const std::size_t es = dtype_size(work.dtype);
      RUCCL_TRY(check_pointer(src, es, l.gpu,
                              source == Source::kInput ? "input" : "send buffer", l.name()));
      return staged_queued(l, check(cudaMemcpyAsync(host_dst, src, range.count * es, cudaMemcpyDefault,
                                                    l.stream.get()),
                                    "cudaMemcpyAsync of a staged range from " + l.name(), l.gpu),
                           "stage_out", ticket);
    }));
    return ticket;
  }

  Result<StageTicket> stage_in(Work& work, std::size_t rank, std::size_t dst_offset,
                               const void* host_src, std::size_t count, Combine how) override {
    if (count == 0) return StageTicket{0};
    if (host_src == nullptr) return Status(ErrorCode::kInternal, "cuda adapter: null staged message");
    StageTicket ticket = 0;
    RUCCL_TRY(on_lane(work, rank, [&](Lane& l) -> Status {
      return staged_queued(l, queue_received(l, work, rank, dst_offset, host_src, count, how),
                           "stage_in", ticket);
    }));
    return ticket;
  }

  Status wait_staged(Work& work, std::size_t rank, StageTicket ticket) override {
    return on_lane(work, rank, [&](Lane& l) -> Status {
      Status status;
      while (!l.staged.empty() && l.staged.front().first <= ticket) {
        if (status)
          status = check(cudaEventSynchronize(l.staged.front().second.get()),
                         "cudaEventSynchronize (staging) on " + l.name(), l.gpu);
        l.spare_events.push_back(std::move(l.staged.front().second));
        l.staged.pop_front();
      }
      return status;
    });
  }

  Status scale(Work& work, std::size_t rank, void* data, std::size_t count,
               std::size_t divisor) override {
    RUCCL_TRY(core::check_reducible(work.dtype, ReduceOp::kMean));
    if (divisor == 0) return Status(ErrorCode::kInternal, "Mean divisor is zero");
    if (count == 0) return Status::ok();
    return on_lane(work, rank, [&](Lane& l) -> Status {
      RUCCL_TRY(check_pointer(data, dtype_size(work.dtype), l.gpu, "Mean's result", l.name()));
      return settle(l,
                    check(static_cast<cudaError_t>(kernels::launch_divide(
                              *kernel_type(work.dtype), data, count, divisor, l.sm_count, l.stream.get())),
                          "Mean's division kernel launch on " + l.name(), l.gpu),
                    "scale");
    });
  }

  Status finish(Work& work, std::size_t rank) override {
    return on_lane(work, rank, [&](Lane& l) -> Status {
      RUCCL_TRY(check(cudaEventRecord(l.done.get(), l.stream.get()),
                      "cudaEventRecord (completion) on " + l.name(), l.gpu));
      RUCCL_TRY(check(cudaStreamWaitEvent(caller_stream(work.ranks[rank].stream), l.done.get(), 0),
                      "cudaStreamWaitEvent of the caller's stream on " + l.name(), l.gpu));
      return l.sync("finish");
    });
  }

 private:
  // Runs `body(lane)` on `rank`'s lane: the lane locked and its GPU current.
  template <typename Body>
  Status on_lane(Work& work, std::size_t rank, Body&& body) {
    auto lane = lane_of(work, rank);
    RUCCL_TRY(lane);
    Lane& l = *lane.value();
    std::lock_guard lock(l.mutex);
    DeviceGuard guard(l.gpu);
    RUCCL_TRY(guard.status());
    return body(l);
  }

  Result<int> gpu_of(DeviceId device) const {
    if (device.kind != DeviceKind::kCuda)
      return Status(ErrorCode::kInvalidArgument,
                    "cuda adapter asked about " + device_name(device) + ", not a CUDA device");
    if (map_.empty()) return static_cast<int>(device.index % gpus_);
    if (device.index >= map_.size())
      return Status(ErrorCode::kInvalidArgument,
                    device_name(device) + " has no entry in the CUDA device map (" +
                        std::to_string(map_.size()) + " logical devices)");
    return map_[device.index];
  }

  // The lane of `device`, created on first use.
  Result<Lane*> lane_for(DeviceId device) {
    auto gpu = gpu_of(device);
    RUCCL_TRY(gpu);
    std::lock_guard lock(mutex_);
    auto& slot = lanes_[device.index];
    if (slot) return slot.get();
    auto lane = std::make_unique<Lane>();
    lane->logical = device.index;
    lane->gpu = gpu.value();
    auto stream = Stream::create(lane->gpu);
    RUCCL_TRY(stream);
    lane->stream = std::move(stream.value());
    auto done = Event::create(lane->gpu);
    RUCCL_TRY(done);
    lane->done = std::move(done.value());
    RUCCL_TRY(check(cudaDeviceGetAttribute(&lane->sm_count, cudaDevAttrMultiProcessorCount, lane->gpu),
                    "cudaDeviceGetAttribute(multiprocessors)", lane->gpu));
    slot = std::move(lane);
    return slot.get();
  }

  Result<Lane*> lane_of(Work& work, std::size_t rank) {
    if (rank >= work.ranks.size())
      return Status(ErrorCode::kInternal, "cuda adapter: rank " + std::to_string(rank) +
                                              " outside the work of " +
                                              std::to_string(work.ranks.size()) + " ranks");
    return lane_for(work.ranks[rank].device);
  }

  // The end of every verb that queued work: wait for it, failed or not, and
  // return the first error.
  static Status settle(Lane& l, Status queued, const char* verb) {
    Status synced = l.sync(verb);
    return queued.is_ok() ? synced : queued;
  }

  // Queues a received message (host memory the transport owns) into rank's
  // recv buffer: it comes up once into device staging, then combines like a
  // transfer from this GPU. The lane's stream orders reuses of the staging.
  Status queue_received(Lane& l, Work& work, std::size_t rank, std::size_t dst_offset,
                        const void* host, std::size_t count, Combine combine) {
    if (combine == Combine::kCopy)  // straight from the host buffer
      return apply(l, work, rank, dst_offset, host, l.gpu, count, combine, /*src_is_staging=*/true);
    const std::size_t bytes = count * dtype_size(work.dtype);
    auto staging = l.staging.reserve(l.gpu, l.stream.get(), bytes);
    RUCCL_TRY(staging);
    RUCCL_TRY(check(cudaMemcpyAsync(staging.value(), host, bytes, cudaMemcpyDefault, l.stream.get()),
                    "cudaMemcpyAsync of a received message to " + l.name(), l.gpu));
    return apply(l, work, rank, dst_offset, staging.value(), l.gpu, count, combine,
                 /*src_is_staging=*/true);
  }

  // The end of a staging verb: on success an event after the queued work and
  // its ticket; on failure, nothing this call queued may outlive it.
  static Status staged_queued(Lane& l, Status queued, const char* verb, StageTicket& ticket) {
    if (!queued) return settle(l, std::move(queued), verb);
    Event event;
    if (!l.spare_events.empty()) {
      event = std::move(l.spare_events.back());
      l.spare_events.pop_back();
    } else {
      auto created = Event::create(l.gpu);
      if (!created.is_ok()) return settle(l, created.status(), verb);
      event = std::move(created.value());
    }
    Status recorded = check(cudaEventRecord(event.get(), l.stream.get()),
                            std::string("cudaEventRecord (") + verb + ") on " + l.name(), l.gpu);
    if (!recorded) return settle(l, std::move(recorded), verb);
    ticket = ++l.last_ticket;
    l.staged.emplace_back(ticket, std::move(event));
    return Status::ok();
  }

  // `lane`'s stream waits for what `owner`'s caller queued before the call.
  static Status wait_produced(Lane& lane, const RankBuffers& owner) {
    const auto* captured = dynamic_cast<const Captured*>(owner.state.get());
    if (captured == nullptr || captured->produced.get() == nullptr) return Status::ok();
    return check(cudaStreamWaitEvent(lane.stream.get(), captured->produced.get(), 0),
                 "cudaStreamWaitEvent (producer of " + device_name(owner.device) + ") on " +
                     lane.name(),
                 lane.gpu);
  }

  // Whether kernels on `gpu` may read memory of `peer` (enabled on first ask).
  bool peer_access(int gpu, int peer) {
    if (gpu == peer) return true;
    std::lock_guard lock(mutex_);
    auto [it, fresh] = peer_access_.try_emplace({gpu, peer}, false);
    if (!fresh) return it->second;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, gpu, peer) != cudaSuccess || can == 0) {
      (void)cudaGetLastError();
      return false;
    }
    DeviceGuard guard(gpu);
    const cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
    if (err != cudaSuccess) (void)cudaGetLastError();
    it->second = err == cudaSuccess || err == cudaErrorPeerAccessAlreadyEnabled;
    return it->second;
  }

  // Queues dst = src (`bytes`; src on `src_gpu`, dst on the lane's GPU).
  Status queue_copy(Lane& l, void* dst, const void* src, int src_gpu, std::size_t bytes) {
    if (bytes == 0 || dst == src) return Status::ok();
    if (src_gpu != l.gpu)
      return check(cudaMemcpyPeerAsync(dst, l.gpu, src, src_gpu, bytes, l.stream.get()),
                   "cudaMemcpyPeerAsync from GPU " + std::to_string(src_gpu) + " to " + l.name(),
                   l.gpu);
    if (overlaps(dst, src, bytes)) {  // memmove semantics through staging
      auto staging = l.staging.reserve(l.gpu, l.stream.get(), bytes);
      RUCCL_TRY(staging);
      RUCCL_TRY(check(cudaMemcpyAsync(staging.value(), src, bytes, cudaMemcpyDefault, l.stream.get()),
                      "cudaMemcpyAsync to staging on " + l.name(), l.gpu));
      src = staging.value();
    }
    return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, l.stream.get()),
                 "cudaMemcpyAsync on " + l.name(), l.gpu);
  }

  // recv[dst_offset..+count) of `rank` = src (kCopy), recv op src (kReduce) or
  // own input op src (kReduceInput); src lives on `src_gpu`. Bounds-checked.
  Status apply(Lane& l, Work& work, std::size_t rank, std::size_t dst_offset, const void* src,
               int src_gpu, std::size_t count, Combine combine, bool src_is_staging = false) {
    const std::size_t es = dtype_size(work.dtype);
    const std::size_t bytes = count * es;
    const RankBuffers& me = work.ranks[rank];
    if (me.recv == nullptr || dst_offset + count > me.recv_count)
      return range_error("destination range", rank, dst_offset, count);
    RUCCL_TRY(check_pointer(me.recv, es, l.gpu, "receive buffer", l.name()));
    auto* dst = static_cast<std::byte*>(me.recv) + dst_offset * es;
    if (combine == Combine::kCopy) return queue_copy(l, dst, src, src_gpu, bytes);

    RUCCL_TRY(core::check_reducible(work.dtype, work.op));
    const void* a = dst;
    if (combine == Combine::kReduceInput) {
      if (me.input == nullptr || dst_offset + count > me.input_count)
        return range_error("own input range", rank, dst_offset, count);
      a = static_cast<const std::byte*>(me.input) + dst_offset * es;
    }
    // The kernel is elementwise: a source may be dst itself, but must not
    // partially overlap it; such a source (and a peer range the kernel cannot
    // read) is first copied to staging. Never the case in the ring schedules.
    const bool stage_b = !src_is_staging &&
                         (!peer_access(l.gpu, src_gpu) || (src != dst && overlaps(src, dst, bytes)));
    const bool stage_a = a != dst && overlaps(a, dst, bytes);
    if (stage_a || stage_b) {
      if (src_is_staging && stage_a)
        return Status(ErrorCode::kInternal, "cuda adapter: a received message's own input overlaps its destination");
      auto staging = l.staging.reserve(l.gpu, l.stream.get(), bytes * (stage_a && stage_b ? 2 : 1));
      RUCCL_TRY(staging);
      auto* room = static_cast<std::byte*>(staging.value());
      if (stage_b) {
        RUCCL_TRY(queue_copy(l, room, src, src_gpu, bytes));
        src = room;
        room += bytes;
      }
      if (stage_a) {
        RUCCL_TRY(queue_copy(l, room, a, l.gpu, bytes));
        a = room;
      }
    }
    return check(static_cast<cudaError_t>(kernels::launch_reduce(
                     *kernel_type(work.dtype), kernel_op(work.op), dst, a, src, count, l.sm_count,
                     l.stream.get())),
                 "reduction kernel launch on " + l.name(), l.gpu);
  }

  static Status range_error(const char* what, std::size_t rank, std::size_t offset, std::size_t count) {
    return Status(ErrorCode::kInternal, std::string("cuda adapter: ") + what +
                                            " out of bounds on rank " + std::to_string(rank) +
                                            " (offset " + std::to_string(offset) + ", count " +
                                            std::to_string(count) + ")");
  }
  static Status out_of_bounds(const char* what, std::size_t rank, const Transfer& t) {
    return Status(ErrorCode::kInternal,
                  std::string("cuda adapter: ") + what + " out of bounds on rank " +
                      std::to_string(rank) + " (peer " + std::to_string(t.peer) + ", offset " +
                      std::to_string(t.src.offset) + ", count " + std::to_string(t.src.count) + ")");
  }

  const std::size_t gpus_;
  const std::vector<int> map_;  // empty: logical i -> GPU i % gpus_
  std::mutex mutex_;            // guards lanes_ (not the lanes) and peer_access_
  std::map<std::size_t, std::unique_ptr<Lane>> lanes_;
  std::map<std::pair<int, int>, bool> peer_access_;
};

}  // namespace

Result<std::shared_ptr<DeviceAdapter>> make_cuda_adapter(std::vector<int> physical) {
  auto gpus = gpu_count();
  RUCCL_TRY(gpus);
  for (std::size_t i = 0; i < physical.size(); ++i) {
    if (physical[i] < 0 || static_cast<std::size_t>(physical[i]) >= gpus.value())
      return Status(ErrorCode::kInvalidArgument,
                    "CUDA device map: logical cuda:" + std::to_string(i) + " -> GPU " +
                        std::to_string(physical[i]) + ", but " + std::to_string(gpus.value()) +
                        " GPU(s) are visible");
  }
  return std::shared_ptr<DeviceAdapter>(std::make_shared<CudaAdapter>(gpus.value(), std::move(physical)));
}

}  // namespace ruccl::cuda
