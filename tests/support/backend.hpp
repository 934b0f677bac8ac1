// The device backend a shared test body runs on: one test body per case, run
// once over host devices (the in-process binaries, label inproc), once over
// CUDA devices (ruccl_cuda_tests, label cuda) and over host devices of world
// communicators across processes (ruccl_mpi_world_matrix, label mpi). Where
// the communicators come from is comm_factory.hpp's part.
//
// The bodies in tests/inproc/{all_reduce,collectives,all_to_all_v}_test.cpp
// reach memory only through tested_backend(): they build Bytes on the host,
// upload them into a Buffer on the rank's device, run the collective, and read
// the results back with download(). tested_backend() is defined once per test
// binary (a link-time choice, so no binary can silently test the wrong one):
//   tests/support/tested_host.cpp  -> host_backend()   (in-process binaries)
//   tests/cuda/cuda_tested_backend.cpp -> the CUDA backend (ruccl_cuda_tests)
//   tests/mpi/world_matrix_main.cpp    -> world_host_backend(D) (ruccl_mpi_world_matrix)
// Nothing here includes a CUDA header.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "test_support.hpp"

namespace ruccl::test {

class Backend;

// Memory of one device (host or GPU), owned; filled and read through its
// backend. Views of an empty buffer have a null data pointer.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Backend* backend, std::shared_ptr<void> memory, std::size_t bytes, DeviceId device)
      : backend_(backend), memory_(std::move(memory)), bytes_(bytes), device_(device) {}
  std::byte* data() const { return bytes_ == 0 ? nullptr : static_cast<std::byte*>(memory_.get()); }
  std::size_t size() const { return bytes_; }
  DeviceId device() const { return device_; }
  Bytes download() const;
  // A view of the memory from `byte_offset` on.
  TensorView view(DataType dtype, Shape shape, std::size_t byte_offset = 0) const {
    return TensorView{bytes_ == 0 ? nullptr : data() + byte_offset, dtype, std::move(shape),
                      device_, nullptr};
  }
  TensorView view1(DataType dtype) const { return view(dtype, Shape{bytes_ / dtype_size(dtype)}); }

 private:
  const Backend* backend_ = nullptr;
  std::shared_ptr<void> memory_;
  std::size_t bytes_ = 0;
  DeviceId device_{};
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "host", "cuda"
  // Why this backend's tests cannot run here (e.g. "... no usable CUDA GPU: ..."),
  // or nullopt.
  virtual std::optional<std::string> unavailable() const = 0;
  // The device of rank r in make_comm's communicators.
  virtual DeviceId device(std::size_t rank) const = 0;
  // Communicator over device(0..n-1); throws std::runtime_error on failure.
  virtual std::shared_ptr<Communicator> make_comm(std::size_t n, const Config& config) const = 0;
  std::shared_ptr<Communicator> make_comm(std::size_t n) const { return make_comm(n, test_config(n)); }
  // A buffer on device(rank) holding `host`; throws std::runtime_error on failure
  // (run_ranks records it as the rank's failure).
  virtual Buffer upload(std::size_t rank, const Bytes& host) const = 0;
  Buffer filled(std::size_t rank, std::size_t bytes, std::uint8_t value) const {
    return upload(rank, test::filled(bytes, value));
  }
  // `bytes` at `data` (memory of this backend's devices), copied to the host.
  virtual Bytes download(const void* data, std::size_t bytes) const = 0;
  Bytes download(const Tensor& t) const { return download(t.data(), t.bytes()); }

  // check_tensor for a result in this backend's memory: dtype, shape, device
  // (device(rank) unless given) and contents.
  void check_tensor(Failures& f, std::size_t rank, const std::string& what, const Tensor& t,
                    DataType dtype, const Shape& shape, const Bytes& expected,
                    std::optional<DeviceId> device = std::nullopt) const;
  // check_bytes of `bytes` at `data` in this backend's memory.
  void check_bytes(Failures& f, std::size_t rank, const std::string& what, DataType dtype,
                   const void* data, const Bytes& expected) const;
};

// Host devices and the host adapter: what the in-process tests always ran on.
const Backend& host_backend();
// Host memory for the ranks of a world communicator whose processes each pass
// host devices 0..per_process-1: rank r's device is host_device(r % per_process)
// (global rank = process x per_process + local index). Its make_comm is the
// in-process one (for reference results); world comms come from a CommFactory.
std::unique_ptr<Backend> world_host_backend(std::size_t per_process);

// The backend of this test binary (see the top of this file).
const Backend& tested_backend();

// Fixture of the shared test bodies: skips, with the reason, where the tested
// backend cannot run here. The "SKIPPED: " prefix is what ctest's
// SKIP_REGULAR_EXPRESSION of the cuda entries looks for.
class BackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = tested_backend().unavailable()) GTEST_SKIP() << "SKIPPED: " << *why;
  }
};
class BackendWorldTest : public BackendTest, public ::testing::WithParamInterface<std::size_t> {};
inline std::string world_name(const ::testing::TestParamInfo<std::size_t>& info) {
  return "world" + std::to_string(info.param);
}

}  // namespace ruccl::test
