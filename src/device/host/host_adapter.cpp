// The host CPU device: ranks are threads, buffers are host memory, and every
// operation runs at once on the calling rank's thread (so the ranks' threads
// share the arithmetic). Every ticket is complete when it is returned.
//
// This file is the whole backend: a new one implements the same verbs.
#include <cstdlib>
#include <cstring>
#include <string>

#include "device/host/host_kernels.hpp"
#include "ruccl/device.hpp"

namespace ruccl {
namespace {

class HostAdapter final : public DeviceAdapter {
 public:
  DeviceKind kind() const noexcept override { return DeviceKind::kHost; }

  Result<std::shared_ptr<AdapterState>> prepare(const TensorView& view, DeviceId device) override {
    if (device.kind != DeviceKind::kHost || view.device.kind != DeviceKind::kHost)
      return Status(ErrorCode::kInvalidArgument,
                    "host adapter got a tensor on " + device_name(view.device) +
                        " for device " + device_name(device));
    return std::shared_ptr<AdapterState>();
  }
  Status begin(const Queue&, const AdapterState*) override { return Status::ok(); }
  Status finish(const Queue&) override { return Status::ok(); }

  Result<std::shared_ptr<void>> allocate(DeviceId, std::size_t bytes) override {
    if (bytes > (std::size_t{1} << 62))
      return Status(ErrorCode::kDeviceError,
                    "host allocation of " + std::to_string(bytes) + " bytes is too large");
    const std::size_t rounded = ((bytes + 63) / 64) * 64 + 64;
    void* raw = std::aligned_alloc(64, rounded);
    if (raw == nullptr)
      return Status(ErrorCode::kDeviceError,
                    "host allocation of " + std::to_string(bytes) + " bytes failed");
    return std::shared_ptr<void>(raw, [](void* p) { std::free(p); });
  }
  // Staging (for transports that are told to stage host memory, i.e. tests of
  // the staged pipeline) is plain memory.
  Result<std::shared_ptr<void>> allocate_host_staging(DeviceId device, std::size_t bytes) override {
    return allocate(device, bytes);
  }

  Result<Ticket> copy(const Queue&, void* dst, const void* src, std::size_t bytes) override {
    if (bytes != 0 && dst != src) std::memmove(dst, src, bytes);
    return Ticket{0};
  }
  Result<Ticket> reduce(const Queue&, void* dst, const void* a, const void* b, std::size_t count,
                        DataType dtype, ReduceOp op) override {
    RUCCL_TRY(host::reduce(dtype, op, dst, a, b, count));
    return Ticket{0};
  }
  Result<Ticket> divide(const Queue&, void* data, std::size_t count, DataType dtype,
                        std::size_t divisor) override {
    RUCCL_TRY(host::divide(dtype, data, count, divisor));
    return Ticket{0};
  }
  Status wait(const Queue&, Ticket) override { return Status::ok(); }
};

}  // namespace

std::shared_ptr<DeviceAdapter> make_host_adapter() { return std::make_shared<HostAdapter>(); }

}  // namespace ruccl
