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

Status range_error(const char* what, std::size_t rank, std::size_t offset, std::size_t count) {
  return Status(ErrorCode::kInternal, std::string("host adapter: ") + what +
                                          " out of bounds on rank " + std::to_string(rank) +
                                          " (offset " + std::to_string(offset) + ", count " +
                                          std::to_string(count) + ")");
}

Status out_of_bounds(const char* what, std::size_t rank, const Transfer& t) {
  return Status(ErrorCode::kInternal,
                std::string("host adapter: ") + what + " out of bounds on rank " +
                    std::to_string(rank) + " (peer " + std::to_string(t.peer) + ", offset " +
                    std::to_string(t.src.offset) + ", count " + std::to_string(t.src.count) + ")");
}

class HostAdapter final : public DeviceAdapter {
  // recv[dst_offset..+count) of `rank` = src (kCopy), recv op src (kReduce), or
  // own input op src (kReduceInput). Bounds-checked: a bad range is kInternal.
  static Status apply(Work& work, std::size_t rank, std::size_t dst_offset, const void* src,
                      std::size_t count, Combine combine) {
    const std::size_t es = dtype_size(work.dtype);
    RankBuffers& me = work.ranks[rank];
    if (me.recv == nullptr || dst_offset + count > me.recv_count)
      return range_error("destination range", rank, dst_offset, count);
    auto* dst = static_cast<std::byte*>(me.recv) + dst_offset * es;
    switch (combine) {
      case Combine::kCopy:
        std::memmove(dst, src, count * es);
        return Status::ok();
      case Combine::kReduce:
        return host::reduce(work.dtype, work.op, dst, dst, src, count);
      case Combine::kReduceInput: {
        if (me.input == nullptr || dst_offset + count > me.input_count)
          return range_error("own input range", rank, dst_offset, count);
        const auto* mine = static_cast<const std::byte*>(me.input) + dst_offset * es;
        return host::reduce(work.dtype, work.op, dst, mine, src, count);
      }
    }
    return Status(ErrorCode::kInternal, "host adapter: unknown combine mode");
  }

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
    for (const Transfer& t : incoming) {
      if (t.src.count == 0) continue;
      if (t.peer >= work.world) return out_of_bounds("peer", rank, t);
      const RankBuffers& from = work.ranks[t.peer];
      const bool from_input = t.source == Source::kInput;
      const void* base = from_input ? from.input : from.send;
      if (base == nullptr || t.src.end() > (from_input ? from.input_count : from.send_count))
        return out_of_bounds("source range", rank, t);
      const auto* src = static_cast<const std::byte*>(base) + t.src.offset * es;
      RUCCL_TRY(apply(work, rank, t.dst_offset, src, t.src.count, combine));
    }
    return Status::ok();
  }

  Status combine(Work& work, std::size_t rank, std::size_t dst_offset, const void* staged,
                 std::size_t count, Combine combine) override {
    if (count == 0) return Status::ok();
    if (staged == nullptr) return Status(ErrorCode::kInternal, "host adapter: null staged message");
    return apply(work, rank, dst_offset, staged, count, combine);
  }

  // Staging (for transports that are told to stage host memory, i.e. tests of
  // the staged pipeline): plain memory and synchronous copies, so every ticket
  // is complete when it is returned.
  Result<std::shared_ptr<void>> allocate_host_staging(DeviceId device, std::size_t bytes) override {
    return allocate(device, bytes);
  }

  Result<StageTicket> stage_out(Work& work, std::size_t rank, Source source, Range range,
                                void* host_dst) override {
    if (range.count == 0) return StageTicket{0};
    auto src = staged_source(work, rank, source, range, host_dst);
    RUCCL_TRY(src);
    std::memcpy(host_dst, src.value(), range.count * dtype_size(work.dtype));
    return StageTicket{0};
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
