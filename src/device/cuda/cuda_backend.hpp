// The CUDA backend's entry points, for make_adapter, tests, examples and tools.
//
// Includes no CUDA header: streams travel as void* (a cudaStream_t). Every
// function exists in every build; a build without the CUDA backend
// (RUCCL_WITH_CUDA off or no nvcc) links cuda_unavailable.cpp, where each one
// returns kUnsupported, so callers need no #if.
//
// Logical devices: DeviceId{kCuda, i} is a logical device. By default it maps
// to physical GPU i % gpu_count(), so on a one-GPU machine cuda:0..cuda:3 are
// four logical ranks on GPU 0, each with its own stream; an explicit map
// (make_cuda_adapter({0, 0, 1, 1})) pins logical i to physical map[i].
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "ruccl/device.hpp"
#include "ruccl/status.hpp"

namespace ruccl::cuda {

// The physical GPUs this process can use; kUnsupported naming the reason when
// there are none (no driver, no device, or a build without the backend).
Result<std::size_t> gpu_count();

// The CUDA adapter. `physical` empty: logical i -> GPU i % gpu_count();
// otherwise logical i -> physical[i] (a logical index past the map is an
// InvalidArgument when used). kUnsupported without a usable GPU.
Result<std::shared_ptr<DeviceAdapter>> make_cuda_adapter(std::vector<int> physical = {});

// Helpers for tests, examples and tools (not a hot path). They take any mix of
// host and device pointers (unified addressing).
// Copies `bytes` and returns when the copy is complete.
Status copy_bytes(void* dst, const void* src, std::size_t bytes);
// Queues the copy on `stream` (null: the legacy default stream) and returns.
Status copy_bytes_async(void* dst, const void* src, std::size_t bytes, void* stream);
// Fills `bytes` of device memory with `value`, blocking.
Status fill_bytes(void* dst, unsigned char value, std::size_t bytes);
// Waits for everything queued on `stream` (null: the legacy default stream).
Status synchronize(void* stream);
// A new non-blocking stream on physical `gpu`; .get() is its cudaStream_t,
// destroyed with the last owner.
Result<std::shared_ptr<void>> create_stream(int gpu);
// The name of physical `gpu` ("NVIDIA H200").
Result<std::string> gpu_name(int gpu);
// The plain device-to-device copy baseline: `reps` back-to-back copies of
// `bytes` on one stream of `gpu`, timed with CUDA events; seconds per copy.
Result<double> time_copies(int gpu, void* dst, const void* src, std::size_t bytes, std::size_t reps);

}  // namespace ruccl::cuda
