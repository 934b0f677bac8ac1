// Which adapter serves which device kind. The CUDA backend (src/device/cuda)
// answers kCuda; a build without it links a stub that returns kUnsupported.
// Also GuardedAdapter (engine.hpp), the exception guard of every verb.
#include "core/catch_to_status.hpp"
#include "core/engine.hpp"
#include "device/cuda/cuda_backend.hpp"
#include "ruccl/device.hpp"

namespace ruccl {

namespace core {

namespace {

// A device adapter's verb: what it throws is kDeviceError (bad_alloc: kOutOfMemory).
template <typename F>
auto guarded(F&& f) {
  return catch_to_status(ErrorCode::kDeviceError, "device adapter", std::forward<F>(f));
}

}  // namespace

Result<std::shared_ptr<AdapterState>> GuardedAdapter::prepare(const TensorView& view,
                                                              DeviceId device) {
  return guarded([&] { return inner_.prepare(view, device); });
}
Status GuardedAdapter::begin(Work& work, std::size_t rank) {
  return guarded([&] { return inner_.begin(work, rank); });
}
Result<std::shared_ptr<void>> GuardedAdapter::allocate(DeviceId device, std::size_t bytes) {
  return guarded([&] { return inner_.allocate(device, bytes); });
}
Status GuardedAdapter::copy(Work& work, std::size_t rank, void* dst, const void* src,
                            std::size_t count) {
  return guarded([&] { return inner_.copy(work, rank, dst, src, count); });
}
Status GuardedAdapter::exchange(Work& work, std::size_t rank, std::span<const Transfer> incoming,
                                Combine combine) {
  return guarded([&] { return inner_.exchange(work, rank, incoming, combine); });
}
Status GuardedAdapter::combine(Work& work, std::size_t rank, std::size_t dst_offset,
                               const void* staged, std::size_t count, Combine how) {
  return guarded([&] { return inner_.combine(work, rank, dst_offset, staged, count, how); });
}
Result<std::shared_ptr<void>> GuardedAdapter::allocate_host_staging(DeviceId device,
                                                                    std::size_t bytes) {
  return guarded([&] { return inner_.allocate_host_staging(device, bytes); });
}
Result<DeviceAdapter::StageTicket> GuardedAdapter::stage_out(Work& work, std::size_t rank,
                                                             Source source, Range range,
                                                             void* host_dst) {
  return guarded([&] { return inner_.stage_out(work, rank, source, range, host_dst); });
}
Result<DeviceAdapter::StageTicket> GuardedAdapter::stage_in(Work& work, std::size_t rank,
                                                            std::size_t dst_offset,
                                                            const void* host_src,
                                                            std::size_t count, Combine how) {
  return guarded([&] { return inner_.stage_in(work, rank, dst_offset, host_src, count, how); });
}
Status GuardedAdapter::wait_staged(Work& work, std::size_t rank, StageTicket ticket) {
  return guarded([&] { return inner_.wait_staged(work, rank, ticket); });
}
Status GuardedAdapter::scale(Work& work, std::size_t rank, void* data, std::size_t count,
                             std::size_t divisor) {
  return guarded([&] { return inner_.scale(work, rank, data, count, divisor); });
}
Status GuardedAdapter::finish(Work& work, std::size_t rank) {
  return guarded([&] { return inner_.finish(work, rank); });
}

}  // namespace core

Status DeviceAdapter::combine(Work&, std::size_t, std::size_t, const void*, std::size_t, Combine) {
  return Status(ErrorCode::kUnsupported,
                std::string(device_kind_name(kind())) +
                    " adapter cannot apply received messages (in-process only)");
}

Result<const std::byte*> staged_source(const Work& work, std::size_t rank, Source source,
                                       Range range, const void* host_dst) {
  const RankBuffers& me = work.ranks[rank];
  const bool from_input = source == Source::kInput;
  const void* base = from_input ? me.input : me.send;
  const std::size_t count = from_input ? me.input_count : me.send_count;
  if (host_dst == nullptr || base == nullptr || range.end() > count)
    return Status(ErrorCode::kInternal,
                  "staged source range out of bounds on rank " + std::to_string(rank) + " (offset " +
                      std::to_string(range.offset) + ", count " + std::to_string(range.count) +
                      ", " + (from_input ? "input" : "send buffer") + " of " +
                      std::to_string(count) + ")");
  return static_cast<const std::byte*>(base) + range.offset * dtype_size(work.dtype);
}

Result<std::shared_ptr<DeviceAdapter>> make_adapter(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kHost: return make_host_adapter();
    case DeviceKind::kCuda: return cuda::make_cuda_adapter();
  }
  return Status(ErrorCode::kInvalidArgument, "unknown device kind");
}

}  // namespace ruccl
