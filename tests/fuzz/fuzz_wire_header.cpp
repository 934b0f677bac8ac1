// libFuzzer: read_header (key id, MAC, fields) and check_payload on arbitrary bytes. Must never read
// outside the input, crash or trip a sanitizer; any verdict is fine.
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ruccl::transport;
  if (size < 1) return 0;
  std::vector<std::byte> wire(size - 1);
  if (!wire.empty()) std::memcpy(wire.data(), data + 1, wire.size());
  const WireKeys& keys = ruccl::fuzz::fuzz_keys();
  if ((data[0] & ruccl::fuzz::kRepairHeaderCheck) && wire.size() >= kWireHeaderBytes) {
    const std::uint32_t id = keys.key_id();
    std::memcpy(wire.data() + 52, &id, sizeof id);
    const auto mac = keys.header_mac(wire.data(), 56);
    std::memcpy(wire.data() + 56, mac.data(), mac.size());
  }
  const WireExpect expect = ruccl::fuzz::expect_for(wire.size());
  auto header = read_header(std::span<const std::byte>(wire.data(), wire.size()), expect, keys);
  if (header && wire.size() >= kWireHeaderBytes) {
    (void)check_payload(header.value(), wire.data() + kWireHeaderBytes,
                        wire.size() - kWireHeaderBytes);
  }
  return 0;
}
