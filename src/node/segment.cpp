#include "node/segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace ruccl::node {
namespace {

Status os_error(const std::string& what) {
  return Status(ErrorCode::kInternal, what + ": " + std::strerror(errno));
}

Result<std::byte*> map(int fd, std::size_t bytes, const std::string& what) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return os_error("mmap of the node segment (" + what + ")");
  return static_cast<std::byte*>(p);
}

}  // namespace

void CloseFd::operator()(int fd) const noexcept { (void)::close(fd); }

Result<Segment> Segment::create(std::size_t bytes, const char* name) {
  if (bytes == 0) return Status(ErrorCode::kInvalidArgument, "a node segment of 0 bytes");
  UniqueFd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return os_error("memfd_create of the node segment");
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
    return os_error("ftruncate of the node segment to " + std::to_string(bytes) + " bytes");
  // Its size is final: no process that opens it can shrink it under the
  // others' mappings (SIGBUS) or grow it.
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    return os_error("sealing the node segment's size");
  auto p = map(fd.get(), bytes, "creator");
  RUCCL_TRY(p);
  return Segment(p.value(), bytes, std::move(fd));
}

Result<Segment> Segment::open(pid_t pid, int fd, std::size_t bytes) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  UniqueFd mine(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!mine) return os_error("open " + path + " (the node segment)");
  struct stat st {};
  if (::fstat(mine.get(), &st) != 0) return os_error("fstat " + path);
  if (st.st_size < 0 || static_cast<std::size_t>(st.st_size) != bytes)
    return Status(ErrorCode::kProtocolError, path + " holds " + std::to_string(st.st_size) +
                                                 " bytes, not the node segment's " +
                                                 std::to_string(bytes));
  auto p = map(mine.get(), bytes, path);
  RUCCL_TRY(p);
  return Segment(p.value(), bytes, std::move(mine));
}

Segment::Segment(Segment&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      fd_(std::move(other.fd_)) {}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    fd_ = std::move(other.fd_);
  }
  return *this;
}

Segment::~Segment() { unmap(); }

void Segment::unmap() noexcept {
  if (data_ != nullptr) (void)::munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace ruccl::node
