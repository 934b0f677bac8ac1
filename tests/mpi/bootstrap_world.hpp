// The test binary's world bootstrap, created by bootstrap_main.cpp before any
// test runs (it initialises MPI, and finalises it after the last test).
#pragma once

#include <cstddef>
#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace ruccl::bootstrap::testing {

Bootstrap& world();

// The byte at `index` of the test blob of `process`: a closed form, so every
// process knows what every other one sent.
inline std::byte blob_byte(std::size_t process, std::size_t index) {
  return static_cast<std::byte>((process * 31 + index * 7 + index / 251) & 0xff);
}

inline std::vector<std::byte> make_blob(std::size_t process, std::size_t bytes) {
  std::vector<std::byte> blob(bytes);
  for (std::size_t i = 0; i < bytes; ++i) blob[i] = blob_byte(process, i);
  return blob;
}

}  // namespace ruccl::bootstrap::testing
