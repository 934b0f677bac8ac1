// CUDA runtime handles owned RAII-style (core::UniqueHandle: move-only, freed
// by their destructor) and the one conversion of cudaError_t into Status. Only src/device/cuda
// includes this file (and with it the CUDA headers).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "core/unique_handle.hpp"
#include "ruccl/status.hpp"

namespace ruccl::cuda {

// ok for cudaSuccess; otherwise kDeviceError "CUDA <what> failed on GPU <gpu>:
// <cudaErrorName>: <description>". Clears the thread's last (non-sticky) error.
Status check(cudaError_t err, std::string_view what, int gpu);

// Makes `gpu` current for the scope and restores the caller's device after:
// verbs run on the caller's threads, whose current device is theirs.
class DeviceGuard {
 public:
  explicit DeviceGuard(int gpu);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  // The cudaSetDevice outcome (the constructor cannot return it).
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  bool restore_ = false;
  Status status_;
};

// Releasing a stream, an event or device memory: an error cannot be reported,
// only cleared. DeviceFree makes its gpu current for cudaFree and restores the
// calling thread's device after.
struct StreamDestroy {
  void operator()(cudaStream_t stream) const noexcept;
};
struct EventDestroy {
  void operator()(cudaEvent_t event) const noexcept;
};
struct DeviceFree {
  int gpu = -1;
  void operator()(void* data) const noexcept;
};

// A non-blocking stream (it does not synchronise with the legacy default stream).
class Stream : public core::UniqueHandle<cudaStream_t, StreamDestroy> {
 public:
  using UniqueHandle::UniqueHandle;
  static Result<Stream> create(int gpu);
};

// An event without timing (the cheap kind), used only for ordering.
class Event : public core::UniqueHandle<cudaEvent_t, EventDestroy> {
 public:
  using UniqueHandle::UniqueHandle;
  static Result<Event> create(int gpu);
};

// Device memory that grows on demand (staging for overlapping ranges and for
// received messages). Not thread-safe: its lane's mutex guards it.
class DeviceBuffer {
 public:
  // At least `bytes` on `gpu`; the old contents are not kept. Growing waits
  // for `user` (the stream that may still read the old buffer) first.
  Result<void*> reserve(int gpu, cudaStream_t user, std::size_t bytes);

 private:
  core::UniqueHandle<void*, DeviceFree> data_;  // its deleter knows the gpu
  std::size_t bytes_ = 0;
};

// cudaMalloc'ed memory of `gpu`, freed by the returned pointer's deleter
// (which restores the calling thread's device after cudaFree).
Result<std::shared_ptr<void>> allocate_on(int gpu, std::size_t bytes);

// Page-locked host memory (cudaHostAlloc, portable: every GPU copies to and
// from it asynchronously), for staging messages of transports without CUDA
// support; freed by the returned pointer's deleter (cudaFreeHost).
Result<std::shared_ptr<void>> allocate_pinned(int gpu, std::size_t bytes);

}  // namespace ruccl::cuda
