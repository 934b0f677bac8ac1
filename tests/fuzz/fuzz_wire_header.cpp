// libFuzzer: read_header and check_payload on arbitrary bytes. Must never read
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
  if ((data[0] & ruccl::fuzz::kRepairHeaderCheck) && wire.size() >= kWireHeaderBytes) {
    const std::uint64_t check = payload_checksum(wire.data(), 64);
    std::memcpy(wire.data() + 64, &check, sizeof check);
  }
  const WireExpect expect = ruccl::fuzz::expect_for(wire.size());
  auto header = read_header(std::span<const std::byte>(wire.data(), wire.size()), expect);
  if (header && wire.size() >= kWireHeaderBytes) {
    (void)check_payload(header.value(), wire.data() + kWireHeaderBytes,
                        wire.size() - kWireHeaderBytes);
  }
  return 0;
}
