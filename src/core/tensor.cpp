#include "ruccl/tensor.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace ruccl {

std::optional<std::size_t> shape_count(std::span<const std::size_t> shape) {
  std::size_t count = 1;
  for (std::size_t dim : shape) {
    auto next = checked_mul(count, dim);
    if (!next) return std::nullopt;
    count = *next;
  }
  return count;
}

std::string shape_string(std::span<const std::size_t> shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

Result<Tensor> Tensor::host(DataType dtype, Shape shape, std::size_t device_index) {
  if (!is_valid(dtype)) return Status(ErrorCode::kInvalidArgument, "unknown dtype");
  const auto count = shape_count(shape);
  const auto bytes = count ? checked_mul(*count, dtype_size(dtype)) : std::nullopt;
  if (!bytes || *bytes > (std::size_t{1} << 62))
    return Status(ErrorCode::kInvalidArgument,
                  "tensor of shape " + shape_string(shape) + " overflows size_t bytes");
  // 64-byte aligned, at least one byte so that data() is never null.
  const std::size_t alloc = ((*bytes + 63) / 64) * 64 + 64;
  void* raw = std::aligned_alloc(64, alloc);
  if (raw == nullptr)
    return Status(ErrorCode::kDeviceError, "host allocation of " + std::to_string(*bytes) +
                                               " bytes failed");
  std::memset(raw, 0, *bytes);
  return Tensor(std::shared_ptr<void>(raw, [](void* p) { std::free(p); }), dtype,
                std::move(shape), host_device(device_index));
}

}  // namespace ruccl
