// Tensor views (borrowed) and tensors (owned).
//
// A TensorView names memory the caller owns: pointer, dtype, shape, device and,
// for CUDA, the stream that produced it. ruccl reads or writes it only during the
// call it was passed to. A Tensor owns its memory (allocated by the device
// adapter of its device) and is what the value forms of the API return.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ruccl/status.hpp"
#include "ruccl/types.hpp"

namespace ruccl {

using Shape = std::vector<std::size_t>;

// Product of the dims, or nullopt on size_t overflow. The empty shape is a scalar (1).
std::optional<std::size_t> shape_count(std::span<const std::size_t> shape);
std::string shape_string(std::span<const std::size_t> shape);  // "[4, 5]"

struct TensorView {
  void* data = nullptr;  // may be null only when the element count is 0
  DataType dtype = DataType::kF32;
  Shape shape;           // row-major; shape[0] is the row axis where rows matter
  DeviceId device{};
  void* stream = nullptr;  // cudaStream_t for CUDA views (null: the default stream)

  // A 1-D view of `count` elements.
  static TensorView of(void* data, DataType dtype, std::size_t count, DeviceId device = {},
                       void* stream = nullptr) {
    return TensorView{data, dtype, Shape{count}, device, stream};
  }
  template <typename T>
  static TensorView of(std::span<T> values, DataType dtype, DeviceId device = {}) {
    return of(const_cast<std::remove_const_t<T>*>(values.data()), dtype, values.size(), device);
  }
  std::size_t count() const { return shape_count(shape).value_or(0); }
  // Row = the product of all dims but the first (1 for 1-D tensors).
  std::size_t row_count() const { return shape.size() <= 1 ? 1 : shape_count(std::span(shape).subspan(1)).value_or(0); }
};

// Owned, move-only memory of one device. Freed by the deleter the adapter gave it.
class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<void> storage, DataType dtype, Shape shape, DeviceId device)
      : storage_(std::move(storage)), dtype_(dtype), shape_(std::move(shape)), device_(device) {}
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // Allocates a host tensor (64-byte aligned, zero-filled).
  static Result<Tensor> host(DataType dtype, Shape shape, std::size_t device_index = 0);

  void* data() const { return storage_.get(); }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  DeviceId device() const { return device_; }
  std::size_t count() const { return shape_count(shape_).value_or(0); }
  std::size_t bytes() const { return count() * dtype_size(dtype_); }
  TensorView view(void* stream = nullptr) const { return {data(), dtype_, shape_, device_, stream}; }
  template <typename T>
  std::span<T> as() const { return {static_cast<T*>(data()), count()}; }

 private:
  std::shared_ptr<void> storage_;
  DataType dtype_ = DataType::kF32;
  Shape shape_;
  DeviceId device_{};
};

}  // namespace ruccl
