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
Status GuardedAdapter::begin(const Queue& queue, const AdapterState* producer) {
  return guarded([&] { return inner_.begin(queue, producer); });
}
Status GuardedAdapter::finish(const Queue& queue) {
  return guarded([&] { return inner_.finish(queue); });
}
Result<std::shared_ptr<void>> GuardedAdapter::allocate(DeviceId device, std::size_t bytes) {
  return guarded([&] { return inner_.allocate(device, bytes); });
}
Result<std::shared_ptr<void>> GuardedAdapter::allocate_host_staging(DeviceId device,
                                                                    std::size_t bytes) {
  return guarded([&] { return inner_.allocate_host_staging(device, bytes); });
}
Result<Ticket> GuardedAdapter::copy(const Queue& queue, void* dst, const void* src,
                                    std::size_t bytes) {
  return guarded([&] { return inner_.copy(queue, dst, src, bytes); });
}
Result<Ticket> GuardedAdapter::reduce(const Queue& queue, void* dst, const void* a, const void* b,
                                      std::size_t count, DataType dtype, ReduceOp op) {
  return guarded([&] { return inner_.reduce(queue, dst, a, b, count, dtype, op); });
}
Result<Ticket> GuardedAdapter::divide(const Queue& queue, void* data, std::size_t count,
                                      DataType dtype, std::size_t divisor) {
  return guarded([&] { return inner_.divide(queue, data, count, dtype, divisor); });
}
Status GuardedAdapter::wait(const Queue& queue, Ticket ticket) {
  return guarded([&] { return inner_.wait(queue, ticket); });
}
Status GuardedAdapter::entering(const char* operation) {
  return decorated_ == nullptr ? Status::ok()
                               : guarded([&] { return decorated_->entering(operation); });
}

}  // namespace core

Result<std::shared_ptr<DeviceAdapter>> make_adapter(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kHost: return make_host_adapter();
    case DeviceKind::kCuda: return cuda::make_cuda_adapter();
  }
  return Status(ErrorCode::kInvalidArgument, "unknown device kind");
}

}  // namespace ruccl
