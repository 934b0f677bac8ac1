// The backend's small helpers (cuda_backend.hpp): GPU discovery, and blocking
// copies and streams for tests, examples and tools.
#include <string>

#include "device/cuda/cuda_backend.hpp"
#include "device/cuda/cuda_handles.hpp"

namespace ruccl::cuda {

Result<std::size_t> gpu_count() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return Status(ErrorCode::kUnsupported,
                  std::string("no usable CUDA GPU: cudaGetDeviceCount failed: ") +
                      cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
  }
  if (count <= 0)
    return Status(ErrorCode::kUnsupported, "no usable CUDA GPU: cudaGetDeviceCount found none");
  return static_cast<std::size_t>(count);
}

Status copy_bytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return Status::ok();
  return check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy", -1);
}

Status copy_bytes_async(void* dst, const void* src, std::size_t bytes, void* stream) {
  if (bytes == 0) return Status::ok();
  cudaStream_t s = stream != nullptr ? static_cast<cudaStream_t>(stream) : cudaStreamLegacy;
  return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync", -1);
}

Status fill_bytes(void* dst, unsigned char value, std::size_t bytes) {
  if (bytes == 0) return Status::ok();
  return check(cudaMemset(dst, value, bytes), "cudaMemset", -1);
}

Status synchronize(void* stream) {
  cudaStream_t s = stream != nullptr ? static_cast<cudaStream_t>(stream) : cudaStreamLegacy;
  return check(cudaStreamSynchronize(s), "cudaStreamSynchronize", -1);
}

Result<std::shared_ptr<void>> create_stream(int gpu) {
  auto stream = Stream::create(gpu);
  RUCCL_TRY(stream);
  auto owned = std::make_shared<Stream>(std::move(stream.value()));
  // Aliasing pointer: .get() is the cudaStream_t, the Stream dies with the last owner.
  return std::shared_ptr<void>(owned, static_cast<void*>(owned->get()));
}

Result<std::string> gpu_name(int gpu) {
  cudaDeviceProp props{};
  RUCCL_TRY(check(cudaGetDeviceProperties(&props, gpu), "cudaGetDeviceProperties", gpu));
  return std::string(props.name);
}

Result<double> time_copies(int gpu, void* dst, const void* src, std::size_t bytes, std::size_t reps) {
  if (reps == 0) return 0.0;
  DeviceGuard guard(gpu);
  RUCCL_TRY(guard.status());
  auto stream = Stream::create(gpu);
  RUCCL_TRY(stream);
  cudaEvent_t start = nullptr, stop = nullptr;
  RUCCL_TRY(check(cudaEventCreate(&start), "cudaEventCreate", gpu));
  if (Status s = check(cudaEventCreate(&stop), "cudaEventCreate", gpu); !s) {
    cudaEventDestroy(start);
    return s;
  }
  const cudaStream_t st = stream.value().get();
  Status s = check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, st), "cudaMemcpyAsync (warm-up)", gpu);
  if (s) s = check(cudaEventRecord(start, st), "cudaEventRecord", gpu);
  for (std::size_t i = 0; s && i < reps; ++i)
    s = check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, st), "cudaMemcpyAsync", gpu);
  if (s) s = check(cudaEventRecord(stop, st), "cudaEventRecord", gpu);
  if (s) s = check(cudaEventSynchronize(stop), "cudaEventSynchronize", gpu);
  float ms = 0;
  if (s) s = check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime", gpu);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  RUCCL_TRY(s);
  return static_cast<double>(ms) / 1e3 / static_cast<double>(reps);
}

}  // namespace ruccl::cuda
