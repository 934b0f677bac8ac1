// Which adapter serves which device kind. The CUDA backend (src/device/cuda)
// answers kCuda; a build without it links a stub that returns kUnsupported.
#include <string>

#include "device/cuda/cuda_backend.hpp"
#include "ruccl/device.hpp"

namespace ruccl {

Status DeviceAdapter::combine(Work&, std::size_t, std::size_t, const void*, std::size_t, Combine) {
  return Status(ErrorCode::kUnsupported,
                std::string(device_kind_name(kind())) +
                    " adapter cannot apply received messages (in-process only)");
}

Result<std::shared_ptr<DeviceAdapter>> make_adapter(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kHost: return make_host_adapter();
    case DeviceKind::kCuda: return cuda::make_cuda_adapter();
  }
  return Status(ErrorCode::kInvalidArgument, "unknown device kind");
}

}  // namespace ruccl
