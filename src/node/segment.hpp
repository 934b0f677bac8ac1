// The shared segment of the processes of one node: one memfd, created and
// sized by the node's first process, mapped by the others through
// /proc/<pid>/fd/<fd> while the creator holds it open (creation's step
// "share memory on the node"; the kernel checks that the opener may read the
// creator's files: the same user). A memfd has no name in /dev/shm: nothing is
// left behind when the processes exit, normally, by abort or by kill -9.
// RAII: the mapping and the descriptor are released by the destructor.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "core/unique_handle.hpp"
#include "ruccl/status.hpp"

namespace ruccl::node {

struct CloseFd {
  static int null() noexcept { return -1; }
  void operator()(int fd) const noexcept;
};
using UniqueFd = core::UniqueHandle<int, CloseFd>;

class Segment {
 public:
  // A new zero-filled segment of `bytes` (memfd_create, ftruncate, mmap shared).
  static Result<Segment> create(std::size_t bytes, const char* name);
  // Another process's segment: `fd` open in process `pid`, of `bytes`.
  static Result<Segment> open(pid_t pid, int fd, std::size_t bytes);

  Segment() = default;
  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  std::byte* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  int fd() const { return fd_.get(); }
  // Once every process mapped it: the mapping stays, the descriptor goes.
  void close_fd() { fd_.reset(); }

 private:
  Segment(std::byte* data, std::size_t bytes, UniqueFd fd)
      : data_(data), bytes_(bytes), fd_(std::move(fd)) {}
  void unmap() noexcept;

  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  UniqueFd fd_;
};

}  // namespace ruccl::node
