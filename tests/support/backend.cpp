#include "backend.hpp"

#include <cstring>
#include <stdexcept>

namespace ruccl::test {

Bytes Buffer::download() const {
  if (backend_ == nullptr) return Bytes{};
  return backend_->download(data(), bytes_);
}

void Backend::check_tensor(Failures& f, std::size_t rank, const std::string& what, const Tensor& t,
                           DataType dtype, const Shape& shape, const Bytes& expected,
                           std::optional<DeviceId> device) const {
  if (!check_tensor_form(f, rank, what, t, dtype, shape, device.value_or(this->device(rank))))
    return;
  check_bytes(f, rank, what, dtype, t.data(), expected);
}

void Backend::check_bytes(Failures& f, std::size_t rank, const std::string& what, DataType dtype,
                          const void* data, const Bytes& expected) const {
  if (data == nullptr && !expected.empty()) return f.add(rank, what + ": result data is null");
  const Bytes actual = download(data, expected.size());
  test::check_bytes(f, rank, what, dtype, actual.data(), expected);
}

namespace {
class HostBackend final : public Backend {
 public:
  explicit HostBackend(std::size_t per_process = 0) : per_process_(per_process) {}
  std::string name() const override { return "host"; }
  std::optional<std::string> unavailable() const override { return std::nullopt; }
  DeviceId device(std::size_t rank) const override {
    return host_device(per_process_ == 0 ? rank : rank % per_process_);
  }
  std::shared_ptr<Communicator> make_comm(std::size_t n, const Config& config) const override {
    return test::make_comm(n, config);
  }
  Buffer upload(std::size_t rank, const Bytes& host) const override {
    std::shared_ptr<std::byte[]> memory;
    if (!host.empty()) {
      memory.reset(new std::byte[host.size()]);
      std::memcpy(memory.get(), host.data(), host.size());
    }
    return Buffer(this, std::shared_ptr<void>(memory, memory.get()), host.size(), device(rank));
  }
  Bytes download(const void* data, std::size_t bytes) const override {
    Bytes out(bytes);
    if (bytes > 0) std::memcpy(out.data(), data, bytes);
    return out;
  }

 private:
  std::size_t per_process_;  // 0: every rank in this process
};
}  // namespace

std::unique_ptr<Backend> world_host_backend(std::size_t per_process) {
  return std::make_unique<HostBackend>(per_process);
}

const Backend& host_backend() {
  static const HostBackend backend;
  return backend;
}

}  // namespace ruccl::test
