// The CUDA device adapter: device-resident tensors, one stream per logical device.
//
// Lanes. Each logical device (DeviceId{kCuda, i}) owns a lane: its physical GPU
// (i % gpu_count(), or an explicit map), a non-blocking stream, an event and
// staging memory. Several lanes may share one GPU (logical ranks on one GPU);
// their streams then run concurrently on it.
//
// Ordering, per collective on rank r (see include/ruccl/device.hpp):
//   prepare  records `produced` on the caller's stream (null: the legacy default
//            stream): everything the caller queued before the call.
//   begin    r's stream waits on a `produced` event: r's own once its buffers
//            are known, and each peer's before r reads that peer's memory (a
//            peer's input may still be in flight on that peer's caller stream).
//   copy, reduce, divide  queue their work on r's stream, record an event
//            (from a pool) after it, and return at once with its ticket: a
//            peer's memory is read directly (cudaMemcpyPeerAsync across GPUs,
//            kernels across GPUs when peer access is enabled, else the range
//            is first peer-copied to staging); host memory is copied (a
//            reduction's host operand first comes up into device staging).
//   wait     synchronises the events up to a ticket (the latest: the stream),
//            so a segment's copy overlaps the transport's send of the one before.
//   finish   records `done` on r's stream and makes the caller's stream wait on it.
// The executors wait for every ticket before a step returns (core/work.hpp).
// That is what makes the step barrier of the contract hold for queued work:
// when step k starts anywhere, step k-1's reads and writes are finished
// everywhere (no read-after-write or write-after-read across streams), a
// failing rank leaves nothing in flight that could touch a buffer after its
// call returns, and an asynchronous CUDA fault becomes a kDeviceError. A verb
// that fails synchronises its stream before it returns.
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
    case ReduceOp::kBand: return kernels::Op::kBand;
    case ReduceOp::kBor: return kernels::Op::kBor;
    case ReduceOp::kBxor: return kernels::Op::kBxor;
    case ReduceOp::kLand: return kernels::Op::kLand;
    case ReduceOp::kLor: return kernels::Op::kLor;
    case ReduceOp::kLxor: return kernels::Op::kLxor;
    case ReduceOp::kSum:
    case ReduceOp::kMean: break;  // Mean divides in divide()
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
  // Work queued and not yet waited for, oldest first, with its ticket;
  // events of waited work are kept for reuse.
  std::deque<std::pair<DeviceAdapter::Ticket, Event>> pending;
  std::vector<Event> spare_events;
  DeviceAdapter::Ticket last_ticket = 0;
  std::mutex mutex;

  std::string name() const {
    return "cuda:" + std::to_string(logical) + " (GPU " + std::to_string(gpu) + ")";
  }
  // Waits for all of the lane's queued work; its events go back to the pool.
  Status sync(const char* verb) {
    Status status = check(cudaStreamSynchronize(stream.get()),
                          std::string(verb) + " on " + name() + " (stream synchronisation)", gpu);
    for (auto& [ticket, event] : pending) spare_events.push_back(std::move(event));
    pending.clear();
    return status;
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

  Status begin(const Queue& queue, const AdapterState* producer) override {
    const auto* captured = dynamic_cast<const Captured*>(producer);
    if (captured == nullptr || captured->produced.get() == nullptr) return Status::ok();
    return on_lane(queue, [&](Lane& l) -> Status {
      return check(cudaStreamWaitEvent(l.stream.get(), captured->produced.get(), 0),
                   "cudaStreamWaitEvent (a producer) on " + l.name(), l.gpu);
    });
  }

  Status finish(const Queue& queue) override {
    return on_lane(queue, [&](Lane& l) -> Status {
      RUCCL_TRY(check(cudaEventRecord(l.done.get(), l.stream.get()),
                      "cudaEventRecord (completion) on " + l.name(), l.gpu));
      RUCCL_TRY(check(cudaStreamWaitEvent(caller_stream(queue.stream), l.done.get(), 0),
                      "cudaStreamWaitEvent of the caller's stream on " + l.name(), l.gpu));
      return l.sync("finish");
    });
  }

  Result<std::shared_ptr<void>> allocate(DeviceId device, std::size_t bytes) override {
    auto gpu = gpu_of(device);
    RUCCL_TRY(gpu);
    return allocate_on(gpu.value(), bytes);
  }

  Result<std::shared_ptr<void>> allocate_host_staging(DeviceId device, std::size_t bytes) override {
    auto gpu = gpu_of(device);
    RUCCL_TRY(gpu);
    return allocate_pinned(gpu.value(), bytes);
  }

  Result<Ticket> copy(const Queue& queue, void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0 || dst == src) return Ticket{0};
    return queued(queue, "copy", [&](Lane& l) -> Status {
      auto to = locate(dst, 1, l, "copy destination");
      RUCCL_TRY(to);
      // Device memory of this GPU, or the pinned host memory of staging.
      if (to.value().type != cudaMemoryTypeHost)
        RUCCL_TRY(check_pointer(dst, 1, l.gpu, "copy destination", l.name()));
      auto from = locate(src, 1, l, "copy source");
      RUCCL_TRY(from);
      // A peer copy only between two GPUs' memory; anything else through UVA.
      const int src_gpu =
          to.value().type == cudaMemoryTypeHost ? l.gpu : from.value().device_gpu(l.gpu);
      return queue_copy(l, dst, src, src_gpu, bytes);
    });
  }

  Result<Ticket> reduce(const Queue& queue, void* dst, const void* a, const void* b,
                        std::size_t count, DataType dtype, ReduceOp op) override {
    RUCCL_TRY(core::check_reducible(dtype, op));
    if (count == 0) return Ticket{0};
    const std::size_t es = dtype_size(dtype);
    const std::size_t bytes = count * es;
    return queued(queue, "reduce", [&](Lane& l) -> Status {
      RUCCL_TRY(check_pointer(dst, es, l.gpu, "reduction destination", l.name()));
      // The kernel is elementwise: an operand may be dst itself, but must not
      // partially overlap it; such an operand, one the kernel cannot read (a
      // peer GPU without peer access, host memory) is first copied to staging.
      auto where_a = locate(a, es, l, "reduction operand");
      RUCCL_TRY(where_a);
      auto where_b = locate(b, es, l, "reduction operand");
      RUCCL_TRY(where_b);
      const bool stage_a = !readable(l, where_a.value()) || (a != dst && overlaps(a, dst, bytes));
      const bool stage_b = !readable(l, where_b.value()) || (b != dst && overlaps(b, dst, bytes));
      if (stage_a || stage_b) {
        auto staging =
            l.staging.reserve(l.gpu, l.stream.get(), bytes * (stage_a && stage_b ? 2 : 1));
        RUCCL_TRY(staging);
        auto* room = static_cast<std::byte*>(staging.value());
        if (stage_b) {
          RUCCL_TRY(queue_copy(l, room, b, where_b.value().device_gpu(l.gpu), bytes));
          b = room;
          room += bytes;
        }
        if (stage_a) {
          RUCCL_TRY(queue_copy(l, room, a, where_a.value().device_gpu(l.gpu), bytes));
          a = room;
        }
      }
      return check(static_cast<cudaError_t>(kernels::launch_reduce(*kernel_type(dtype),
                                                                   kernel_op(op), dst, a, b, count,
                                                                   l.sm_count, l.stream.get())),
                   "reduction kernel launch on " + l.name(), l.gpu);
    });
  }

  Result<Ticket> divide(const Queue& queue, void* data, std::size_t count, DataType dtype,
                        std::size_t divisor) override {
    RUCCL_TRY(core::check_reducible(dtype, ReduceOp::kMean));
    if (divisor == 0) return Status(ErrorCode::kInternal, "Mean divisor is zero");
    if (count == 0) return Ticket{0};
    return queued(queue, "divide", [&](Lane& l) -> Status {
      RUCCL_TRY(check_pointer(data, dtype_size(dtype), l.gpu, "Mean's result", l.name()));
      return check(static_cast<cudaError_t>(kernels::launch_divide(*kernel_type(dtype), data, count,
                                                                   divisor, l.sm_count,
                                                                   l.stream.get())),
                   "Mean's division kernel launch on " + l.name(), l.gpu);
    });
  }

  Status wait(const Queue& queue, Ticket ticket) override {
    if (ticket == 0) return Status::ok();
    return on_lane(queue, [&](Lane& l) -> Status {
      if (l.pending.empty() || l.pending.front().first > ticket) return Status::ok();  // done
      if (ticket >= l.last_ticket) return l.sync("wait");  // the latest: the whole stream
      Status status;
      while (!l.pending.empty() && l.pending.front().first <= ticket) {
        if (status)
          status = check(cudaEventSynchronize(l.pending.front().second.get()),
                         "cudaEventSynchronize on " + l.name(), l.gpu);
        l.spare_events.push_back(std::move(l.pending.front().second));
        l.pending.pop_front();
      }
      return status;
    });
  }

 private:
  // Runs `body(lane)` on the queue's lane: the lane locked and its GPU current.
  template <typename Body>
  Status on_lane(const Queue& queue, Body&& body) {
    auto lane = lane_for(queue.device);
    RUCCL_TRY(lane);
    Lane& l = *lane.value();
    std::lock_guard lock(l.mutex);
    DeviceGuard guard(l.gpu);
    RUCCL_TRY(guard.status());
    return body(l);
  }

  // Runs `body(lane)`, which queues work: on success an event after it and
  // its ticket; on failure, nothing it queued may outlive the verb.
  template <typename Body>
  Result<Ticket> queued(const Queue& queue, const char* verb, Body&& body) {
    Ticket ticket = 0;
    RUCCL_TRY(on_lane(queue, [&](Lane& l) -> Status {
      Status status = body(l);
      if (!status) return settle(l, std::move(status), verb);
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
      l.pending.emplace_back(ticket, std::move(event));
      return Status::ok();
    }));
    return ticket;
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

  // The end of every verb that queued work: wait for it, failed or not, and
  // return the first error.
  static Status settle(Lane& l, Status queued, const char* verb) {
    Status synced = l.sync(verb);
    return queued.is_ok() ? synced : queued;
  }

  // Where a pointer lives (unified addressing).
  struct Where {
    cudaMemoryType type = cudaMemoryTypeUnregistered;
    int device = -1;
    // The GPU a copy reads it from: its own for device memory, else `lane`'s.
    int device_gpu(int lane) const { return type == cudaMemoryTypeDevice ? device : lane; }
  };
  static Result<Where> locate(const void* p, std::size_t element, const Lane& l, const char* what) {
    if (reinterpret_cast<std::uintptr_t>(p) % element != 0)
      return Status(ErrorCode::kInvalidArgument, std::string(what) + " at " + hex(p) + " on " +
                                                     l.name() + " is not aligned to its " +
                                                     std::to_string(element) + "-byte elements");
    cudaPointerAttributes attr{};
    const cudaError_t err = cudaPointerGetAttributes(&attr, p);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      return Where{};  // not known to CUDA: plain host memory
    }
    return Where{attr.type, attr.device};
  }

  // Whether a kernel on the lane's GPU reads memory at `w` directly.
  bool readable(const Lane& l, const Where& w) {
    switch (w.type) {
      case cudaMemoryTypeDevice: return peer_access(l.gpu, w.device);
      case cudaMemoryTypeManaged: return true;
      case cudaMemoryTypeHost:
      case cudaMemoryTypeUnregistered: break;
    }
    return false;
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
