// The test binary's world bootstrap, created by bootstrap_main.cpp before gtest
// registers the tests (it initialises MPI, and finalises it after the last test).
#pragma once

#include <cstddef>
#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace ruccl::bootstrap::testing {

Bootstrap& world();

// Defined once per binary; called after MPI is up and before gtest reads its
// flags and registers the tests. Takes this binary's own arguments out of
// argv (gtest's stay); false (having said why on stderr): exit 2.
bool prepare_tests(int& argc, char** argv, Bootstrap& world);

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
