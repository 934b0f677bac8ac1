// The failures of a test program's ranks (threads of one process): each is
// printed as "rank R: what" and counted; the program exits 0 only if none.
#pragma once

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace ruccl::test {

inline std::mutex print_mutex;
inline std::atomic<int> failures{0};

inline void fail(std::size_t rank, const std::string& what) {
  std::lock_guard lock(print_mutex);
  std::fprintf(stderr, "rank %zu: %s\n", rank, what.c_str());
  ++failures;
}

}  // namespace ruccl::test
