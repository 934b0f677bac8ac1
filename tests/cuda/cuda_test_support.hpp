// Helpers of the CUDA tests: the adapter (or the reason to skip) and device
// buffers moved through src/device/cuda/cuda_backend.hpp, which includes no
// CUDA header (only src/device/cuda does).
//
// Device memory is allocated through the adapter (DeviceAdapter::allocate) and
// filled or read with blocking copies, so a test reads like its host twin in
// tests/inproc: build Bytes on the host, upload, run, download, compare.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "device/cuda/cuda_backend.hpp"
#include "test_support.hpp"

namespace ruccl::test::gpu {

// Why the CUDA tests cannot run here ("Unsupported: no usable CUDA GPU: ..."),
// or nullopt when a GPU is usable. Asked once per process.
const std::optional<std::string>& unavailable();
// Physical GPUs (0 without one).
std::size_t gpu_count();
// One shared CUDA adapter with the default map (logical i -> GPU i % count).
std::shared_ptr<DeviceAdapter> adapter();

// Fixture of every GPU test: skips, with the reason, where no GPU is usable.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto& why = unavailable()) GTEST_SKIP() << "SKIPPED: " << *why;
  }
};
template <typename P>
class GpuTestWithParam : public GpuTest, public ::testing::WithParamInterface<P> {};

std::vector<DeviceId> cuda_devices(std::size_t n);
// Communicator over cuda:0..n-1; throws on failure.
std::shared_ptr<Communicator> make_cuda_comm(std::size_t n);
std::shared_ptr<Communicator> make_cuda_comm(std::size_t n, const Config& config,
                                             std::shared_ptr<DeviceAdapter> with = nullptr);

// Device memory of one logical device. Failures throw std::runtime_error
// (run_ranks records them as the rank's failure).
class DeviceBytes {
 public:
  DeviceBytes() = default;
  static DeviceBytes upload(DeviceId device, const Bytes& host);
  static DeviceBytes filled(DeviceId device, std::size_t bytes, std::uint8_t value);
  std::byte* data() const { return static_cast<std::byte*>(memory_.get()); }
  std::size_t size() const { return bytes_; }
  DeviceId device() const { return device_; }
  Bytes download() const;
  // A view of the memory from `byte_offset` on.
  TensorView view(DataType dtype, Shape shape, std::size_t byte_offset = 0,
                  void* stream = nullptr) const {
    return TensorView{bytes_ == 0 ? nullptr : data() + byte_offset, dtype, std::move(shape),
                      device_, stream};
  }
  TensorView view1(DataType dtype) const {
    return view(dtype, Shape{bytes_ / dtype_size(dtype)});
  }

 private:
  std::shared_ptr<void> memory_;
  std::size_t bytes_ = 0;
  DeviceId device_{};
};

// `bytes` at device (or host) address `data`, copied to the host.
Bytes download(const void* data, std::size_t bytes);
Bytes download(const Tensor& t);

// check_tensor for a tensor in device memory (downloads it first); the device
// is cuda_device(rank) unless given.
void check_device_tensor(Failures& f, std::size_t rank, const std::string& what, const Tensor& t,
                         DataType dtype, const Shape& shape, const Bytes& expected,
                         std::optional<DeviceId> device = std::nullopt);

}  // namespace ruccl::test::gpu
