#include "device/cuda/cuda_handles.hpp"

namespace ruccl::cuda {

Status check(cudaError_t err, std::string_view what, int gpu) {
  if (err == cudaSuccess) return Status::ok();
  (void)cudaGetLastError();  // a sticky error stays; a launch error is cleared
  std::string message = "CUDA " + std::string(what) + " failed";
  if (gpu >= 0) message += " on GPU " + std::to_string(gpu);
  message += std::string(": ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
  return Status(ErrorCode::kDeviceError, std::move(message));
}

DeviceGuard::DeviceGuard(int gpu) {
  if (cudaGetDevice(&previous_) != cudaSuccess) {
    (void)cudaGetLastError();
    previous_ = -1;
  }
  if (previous_ == gpu) return;
  status_ = check(cudaSetDevice(gpu), "cudaSetDevice", gpu);
  restore_ = status_.is_ok() && previous_ >= 0;
}

DeviceGuard::~DeviceGuard() {
  if (restore_ && cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
}

void StreamDestroy::operator()(cudaStream_t stream) const noexcept {
  if (cudaStreamDestroy(stream) != cudaSuccess) (void)cudaGetLastError();
}

void EventDestroy::operator()(cudaEvent_t event) const noexcept {
  if (cudaEventDestroy(event) != cudaSuccess) (void)cudaGetLastError();
}

Result<Stream> Stream::create(int gpu) {
  DeviceGuard guard(gpu);
  RUCCL_TRY(guard.status());
  cudaStream_t handle = nullptr;
  RUCCL_TRY(check(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking), "cudaStreamCreate", gpu));
  return Stream(handle);
}

Result<Event> Event::create(int gpu) {
  DeviceGuard guard(gpu);
  RUCCL_TRY(guard.status());
  cudaEvent_t handle = nullptr;
  RUCCL_TRY(check(cudaEventCreateWithFlags(&handle, cudaEventDisableTiming), "cudaEventCreate", gpu));
  return Event(handle);
}

void DeviceFree::operator()(void* data) const noexcept {
  DeviceGuard restore(gpu);
  if (cudaFree(data) != cudaSuccess) (void)cudaGetLastError();
}

Result<void*> DeviceBuffer::reserve(int gpu, cudaStream_t user, std::size_t bytes) {
  const int held_on = data_.get_deleter().gpu;
  if (data_ && held_on == gpu && bytes_ >= bytes) return data_.get();
  if (data_)
    RUCCL_TRY(check(cudaStreamSynchronize(user), "cudaStreamSynchronize before growing staging",
                    held_on));
  data_.reset();  // free first: the peak stays one buffer
  bytes_ = 0;
  DeviceGuard guard(gpu);
  RUCCL_TRY(guard.status());
  const std::size_t rounded = bytes < 256 ? 256 : bytes;
  void* data = nullptr;
  RUCCL_TRY(check(cudaMalloc(&data, rounded),
                  "cudaMalloc of " + std::to_string(rounded) + " staging bytes", gpu));
  data_ = core::UniqueHandle<void*, DeviceFree>(data, DeviceFree{gpu});
  bytes_ = rounded;
  return data_.get();
}

Result<std::shared_ptr<void>> allocate_on(int gpu, std::size_t bytes) {
  DeviceGuard guard(gpu);
  RUCCL_TRY(guard.status());
  void* data = nullptr;
  // At least one byte: a zero-element tensor still gets a distinct, freeable pointer.
  RUCCL_TRY(check(cudaMalloc(&data, bytes == 0 ? 1 : bytes),
                  "cudaMalloc of " + std::to_string(bytes) + " bytes", gpu));
  return std::shared_ptr<void>(data, DeviceFree{gpu});
}

Result<std::shared_ptr<void>> allocate_pinned(int gpu, std::size_t bytes) {
  DeviceGuard guard(gpu);
  RUCCL_TRY(guard.status());
  void* data = nullptr;
  RUCCL_TRY(check(cudaHostAlloc(&data, bytes == 0 ? 1 : bytes, cudaHostAllocPortable),
                  "cudaHostAlloc of " + std::to_string(bytes) + " pinned staging bytes", gpu));
  return std::shared_ptr<void>(data, [](void* p) {
    if (cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
  });
}

}  // namespace ruccl::cuda
