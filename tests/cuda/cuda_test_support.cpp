#include "cuda_test_support.hpp"

#include <stdexcept>

namespace ruccl::test::gpu {
namespace {
void ok_or_throw(const Status& s, const std::string& what) {
  if (!s.is_ok()) throw std::runtime_error(what + ": " + s.to_string());
}
}  // namespace

const std::optional<std::string>& unavailable() {
  static const std::optional<std::string> why = []() -> std::optional<std::string> {
    auto count = cuda::gpu_count();
    if (!count) return count.status().to_string();
    return std::nullopt;
  }();
  return why;
}

std::size_t gpu_count() {
  auto count = cuda::gpu_count();
  return count ? count.value() : 0;
}

std::shared_ptr<DeviceAdapter> adapter() {
  static const std::shared_ptr<DeviceAdapter> shared = [] {
    auto made = cuda::make_cuda_adapter();
    if (!made) throw std::runtime_error("make_cuda_adapter: " + made.status().to_string());
    return std::move(made).value();
  }();
  return shared;
}

std::vector<DeviceId> cuda_devices(std::size_t n) {
  std::vector<DeviceId> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(cuda_device(i));
  return out;
}

std::shared_ptr<Communicator> make_cuda_comm(std::size_t n) { return make_cuda_comm(n, test_config(n)); }

std::shared_ptr<Communicator> make_cuda_comm(std::size_t n, const Config& config,
                                             std::shared_ptr<DeviceAdapter> with) {
  auto comm = Communicator::create(cuda_devices(n), with ? with : adapter(), config);
  if (!comm) throw std::runtime_error("Communicator::create: " + comm.status().to_string());
  return std::move(comm).value();
}

DeviceBytes DeviceBytes::upload(DeviceId device, const Bytes& host) {
  DeviceBytes out;
  auto memory = adapter()->allocate(device, host.size());
  ok_or_throw(memory.status(), "allocate " + std::to_string(host.size()) + " bytes on " + device_name(device));
  out.memory_ = std::move(memory).value();
  out.bytes_ = host.size();
  out.device_ = device;
  ok_or_throw(cuda::copy_bytes(out.memory_.get(), host.data(), host.size()), "upload");
  return out;
}

DeviceBytes DeviceBytes::filled(DeviceId device, std::size_t bytes, std::uint8_t value) {
  DeviceBytes out;
  auto memory = adapter()->allocate(device, bytes);
  ok_or_throw(memory.status(), "allocate " + std::to_string(bytes) + " bytes on " + device_name(device));
  out.memory_ = std::move(memory).value();
  out.bytes_ = bytes;
  out.device_ = device;
  ok_or_throw(cuda::fill_bytes(out.memory_.get(), value, bytes), "fill");
  return out;
}

Bytes DeviceBytes::download() const { return gpu::download(memory_.get(), bytes_); }

Bytes download(const void* data, std::size_t bytes) {
  Bytes out(bytes);
  if (bytes > 0) ok_or_throw(cuda::copy_bytes(out.data(), data, bytes), "download");
  return out;
}

Bytes download(const Tensor& t) { return download(t.data(), t.bytes()); }

void check_device_tensor(Failures& f, std::size_t rank, const std::string& what, const Tensor& t,
                         DataType dtype, const Shape& shape, const Bytes& expected,
                         std::optional<DeviceId> device) {
  if (t.dtype() != dtype || t.shape() != shape) {
    f.add(rank, what + ": " + std::string(dtype_name(t.dtype())) + " " + shape_of(t.shape()) +
                    ", expected " + std::string(dtype_name(dtype)) + " " + shape_of(shape));
    return;
  }
  const DeviceId want = device.value_or(cuda_device(rank));
  if (t.device() != want) f.add(rank, what + ": result on " + device_name(t.device()));
  check_bytes(f, rank, what, dtype, download(t).data(), expected);
}

}  // namespace ruccl::test::gpu
