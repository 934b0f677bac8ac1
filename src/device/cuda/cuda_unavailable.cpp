// cuda_backend.hpp in a build without the CUDA backend (RUCCL_WITH_CUDA=OFF, or
// AUTO without nvcc): every entry point answers kUnsupported, so make_adapter,
// examples and tools need no #if.
#include "device/cuda/cuda_backend.hpp"

namespace ruccl::cuda {
namespace {
Status missing() {
  return Status(ErrorCode::kUnsupported,
                "this ruccl build has no CUDA device backend (configure with "
                "RUCCL_WITH_CUDA=ON on a machine with the CUDA toolkit)");
}
}  // namespace

Result<std::size_t> gpu_count() { return missing(); }
Result<std::shared_ptr<DeviceAdapter>> make_cuda_adapter(std::vector<int>) { return missing(); }
Status copy_bytes(void*, const void*, std::size_t) { return missing(); }
Status copy_bytes_async(void*, const void*, std::size_t, void*) { return missing(); }
Status fill_bytes(void*, unsigned char, std::size_t) { return missing(); }
Status synchronize(void*) { return missing(); }
Result<std::shared_ptr<void>> create_stream(int) { return missing(); }
Result<std::string> gpu_name(int) { return missing(); }
Result<double> time_copies(int, void*, const void*, std::size_t, std::size_t) { return missing(); }

}  // namespace ruccl::cuda
