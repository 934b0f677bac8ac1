// Which adapter serves which device kind. The CUDA backend (src/device/cuda)
// replaces the kCuda branch when it is built.
#include <string>

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
    case DeviceKind::kCuda:
      return Status(ErrorCode::kUnsupported,
                    "this ruccl build has no CUDA device backend (RUCCL_WITH_CUDA)");
  }
  return Status(ErrorCode::kInvalidArgument, "unknown device kind");
}

}  // namespace ruccl
