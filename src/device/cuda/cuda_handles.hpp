// CUDA runtime handles owned RAII-style (move-only, freed by their destructor)
// and the one conversion of cudaError_t into Status. Only src/device/cuda
// includes this file (and with it the CUDA headers).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

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

// A non-blocking stream (it does not synchronise with the legacy default stream).
class Stream {
 public:
  Stream() = default;
  static Result<Stream> create(int gpu);
  ~Stream();
  Stream(Stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept;
  cudaStream_t get() const { return handle_; }

 private:
  explicit Stream(cudaStream_t handle) : handle_(handle) {}
  cudaStream_t handle_ = nullptr;
};

// An event without timing (the cheap kind), used only for ordering.
class Event {
 public:
  Event() = default;
  static Result<Event> create(int gpu);
  ~Event();
  Event(Event&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Event& operator=(Event&& other) noexcept;
  cudaEvent_t get() const { return handle_; }

 private:
  explicit Event(cudaEvent_t handle) : handle_(handle) {}
  cudaEvent_t handle_ = nullptr;
};

// Device memory that grows on demand (staging for overlapping ranges and for
// received messages). Not thread-safe: its lane's mutex guards it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  // At least `bytes` on `gpu`; the old contents are not kept. Growing waits
  // for `user` (the stream that may still read the old buffer) first.
  Result<void*> reserve(int gpu, cudaStream_t user, std::size_t bytes);

 private:
  void release();
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  int gpu_ = -1;
};

// cudaMalloc'ed memory of `gpu`, freed by the returned pointer's deleter
// (which restores the calling thread's device after cudaFree).
Result<std::shared_ptr<void>> allocate_on(int gpu, std::size_t bytes);

// Page-locked host memory (cudaHostAlloc, portable: every GPU copies to and
// from it asynchronously), for staging messages of transports without CUDA
// support; freed by the returned pointer's deleter (cudaFreeHost).
Result<std::shared_ptr<void>> allocate_pinned(int gpu, std::size_t bytes);

}  // namespace ruccl::cuda
