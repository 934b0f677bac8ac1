// The host CPU device: ranks are threads, buffers are host memory, and a step's
// incoming transfers are plain copies or reduction loops run by the receiving
// rank's own thread (so the ranks' threads share the arithmetic).
#include <cstdlib>
#include <cstring>
#include <string>

#include "device/host/host_kernels.hpp"
#include "ruccl/device.hpp"

namespace ruccl {
namespace {

Status out_of_bounds(const char* what, std::size_t rank, const Transfer& t) {
  return Status(ErrorCode::kInternal,
                std::string("host adapter: ") + what + " out of bounds on rank " +
                    std::to_string(rank) + " (peer " + std::to_string(t.peer) + ", offset " +
                    std::to_string(t.src.offset) + ", count " + std::to_string(t.src.count) + ")");
}

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

  Status begin(Work&, std::size_t) override { return Status::ok(); }

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

  Status copy(Work& work, std::size_t, void* dst, const void* src, std::size_t count) override {
    if (count != 0 && dst != src) std::memmove(dst, src, count * dtype_size(work.dtype));
    return Status::ok();
  }

  Status exchange(Work& work, std::size_t rank, std::span<const Transfer> incoming,
                  Combine combine) override {
    const std::size_t es = dtype_size(work.dtype);
    RankBuffers& me = work.ranks[rank];
    for (const Transfer& t : incoming) {
      if (t.src.count == 0) continue;
      if (t.peer >= work.world) return out_of_bounds("peer", rank, t);
      const RankBuffers& from = work.ranks[t.peer];
      const bool from_input = t.source == Source::kInput;
      const void* base = from_input ? from.input : from.send;
      if (base == nullptr || t.src.end() > (from_input ? from.input_count : from.send_count))
        return out_of_bounds("source range", rank, t);
      if (me.recv == nullptr || t.dst_offset + t.src.count > me.recv_count)
        return out_of_bounds("destination range", rank, t);
      const auto* src = static_cast<const std::byte*>(base) + t.src.offset * es;
      auto* dst = static_cast<std::byte*>(me.recv) + t.dst_offset * es;
      switch (combine) {
        case Combine::kCopy:
          std::memmove(dst, src, t.src.count * es);
          break;
        case Combine::kReduce:
          RUCCL_TRY(host::reduce(work.dtype, work.op, dst, dst, src, t.src.count));
          break;
        case Combine::kReduceInput: {
          if (me.input == nullptr || t.dst_offset + t.src.count > me.input_count)
            return out_of_bounds("own input range", rank, t);
          const auto* mine = static_cast<const std::byte*>(me.input) + t.dst_offset * es;
          RUCCL_TRY(host::reduce(work.dtype, work.op, dst, mine, src, t.src.count));
          break;
        }
      }
    }
    return Status::ok();
  }

  Status scale(Work& work, std::size_t, void* data, std::size_t count,
               std::size_t divisor) override {
    return host::divide(work.dtype, data, count, divisor);
  }

  Status finish(Work&, std::size_t) override { return Status::ok(); }
};

}  // namespace

std::shared_ptr<DeviceAdapter> make_host_adapter() { return std::make_shared<HostAdapter>(); }

}  // namespace ruccl
