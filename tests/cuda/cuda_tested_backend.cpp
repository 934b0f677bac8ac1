// The backend of ruccl_cuda_tests (see tests/support/backend.hpp): logical
// ranks cuda:0..n-1 over the shared CUDA adapter (all on GPU 0 of a one-GPU
// machine), memory through cuda_test_support. The shared test bodies of
// tests/inproc run on it and skip, saying why, where no GPU is usable.
#include <memory>

#include "comm_factory.hpp"
#include "cuda_test_support.hpp"

namespace ruccl::test {
namespace {
class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  std::optional<std::string> unavailable() const override { return gpu::unavailable(); }
  DeviceId device(std::size_t rank) const override { return cuda_device(rank); }
  std::shared_ptr<Communicator> make_comm(std::size_t n, const Config& config) const override {
    return gpu::make_cuda_comm(n, config);
  }
  Buffer upload(std::size_t rank, const Bytes& host) const override {
    auto held = std::make_shared<gpu::DeviceBytes>(gpu::DeviceBytes::upload(device(rank), host));
    std::byte* data = held->data();
    return Buffer(this, std::shared_ptr<void>(std::move(held), data), host.size(), device(rank));
  }
  Bytes download(const void* data, std::size_t bytes) const override {
    return gpu::download(data, bytes);
  }
};
}  // namespace

const Backend& tested_backend() {
  static const CudaBackend backend;
  return backend;
}
const CommFactory& tested_factory() { return in_process_factory(); }

}  // namespace ruccl::test
