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
