// The directory bootstrap (file_bootstrap.hpp): generations of atomically
// written blob files, polled until complete or until the deadline.
//
// File I/O uses std::filesystem with error codes and stdio, never exceptions
// for control flow; an exception that still escapes (allocation) becomes
// kInternal at the entry points, so none crosses the Bootstrap interface.
#include "bootstrap/file_bootstrap.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/exchange_bootstrap.hpp"
#include "core/catch_to_status.hpp"

namespace ruccl::bootstrap {
namespace {

namespace fs = std::filesystem;

Status io_error(const char* what, const fs::path& path, int error) {
  return Status(ErrorCode::kInvalidArgument, std::string("file bootstrap: cannot ") + what + " " +
                                                 path.string() + ": " + std::strerror(error));
}

// Permissions. The blobs carry what a job shares at start-up, the job token
// (a key) among it: every file is created 0600 (O_CREAT|O_EXCL, then fchmod,
// whatever the umask) and every directory ruccl makes 0700. A job directory
// that exists already must be a real directory (not a symlink) owned by this
// user and writable by nobody else, or another user could read or plant blobs.

// mkdir(path, 0700), then chmod 0700 should the umask have taken bits away;
// an existing directory is left as it is (the caller checks it).
Status make_private_directory(const fs::path& path) {
  if (::mkdir(path.c_str(), 0700) == 0) {
    if (::chmod(path.c_str(), 0700) != 0) return io_error("chmod 0700", path, errno);
    return Status::ok();
  }
  if (errno == EEXIST) return Status::ok();
  return io_error("create the directory", path, errno);
}

// kInvalidArgument unless `path` is a directory (not a link) of this user that
// no group or other user may write.
Status check_private_directory(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return io_error("inspect", path, errno);
  auto refuse = [&](const std::string& why) {
    return Status(ErrorCode::kInvalidArgument,
                  "file bootstrap: refusing the directory " + path.string() + ": " + why +
                      "; the job's start-up data (its token among it) must stay private: give "
                      "a directory only this user can write (ruccl creates a missing one 0700)");
  };
  if (S_ISLNK(st.st_mode)) return refuse("it is a symbolic link");
  if (!S_ISDIR(st.st_mode)) return refuse("it is not a directory");
  if (st.st_uid != ::geteuid())
    return refuse("it is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
                  std::to_string(::geteuid()) + ")");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return refuse(std::string("it is group- or world-writable (mode ") + mode + ")");
  }
  return Status::ok();
}

// Writes `blob` to `path` so that readers see it whole or not at all; the
// file is 0600 from its creation on.
Status write_atomically(const fs::path& path, std::span<const std::byte> blob) {
  fs::path tmp = path;
  tmp += ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return io_error("create", tmp, errno);
  if (::fchmod(fd, 0600) != 0) {
    const int error = errno;
    ::close(fd);
    return io_error("chmod 0600", tmp, error);
  }
  std::FILE* f = ::fdopen(fd, "wb");
  if (f == nullptr) {
    const int error = errno;
    ::close(fd);
    return io_error("open", tmp, error);
  }
  bool ok = blob.empty() || std::fwrite(blob.data(), 1, blob.size(), f) == blob.size();
  const int write_error = errno;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) return io_error("write", tmp, write_error != 0 ? write_error : errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return io_error("rename into", path, errno);
  return Status::ok();
}

Result<std::vector<std::byte>> read_whole(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return io_error("read the size of", path, ec.value());
  std::vector<std::byte> blob(static_cast<std::size_t>(size));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return io_error("open", path, errno);
  const bool ok = blob.empty() || std::fread(blob.data(), 1, blob.size(), f) == blob.size();
  const int read_error = errno;
  std::fclose(f);
  if (!ok) return io_error("read", path, read_error);
  return blob;
}

class FileBootstrap final : public detail::ExchangeBootstrap {
 public:
  FileBootstrap(fs::path directory, std::size_t index, std::size_t processes,
                std::chrono::milliseconds timeout)
      : ExchangeBootstrap("file bootstrap " + directory.string(), index, processes, timeout),
        directory_(std::move(directory)) {}

  Status create(const std::string& hostname) {
    return ExchangeBootstrap::create(hostname).status();
  }

 private:
  fs::path generation_dir(std::size_t generation) const {
    return directory_ / std::to_string(generation);
  }
  fs::path blob_path(std::size_t generation, std::size_t index) const {
    return generation_dir(generation) / (std::to_string(index) + ".blob");
  }

  Status put(std::size_t generation, std::span<const std::byte> blob) override {
    RUCCL_TRY(make_private_directory(generation_dir(generation)));
    return write_atomically(blob_path(generation, index_), blob);
  }
  Result<std::optional<std::vector<std::byte>>> take(std::size_t generation,
                                                     std::size_t index) override {
    std::error_code ec;
    const fs::path path = blob_path(generation, index);
    if (!fs::exists(path, ec)) return std::optional<std::vector<std::byte>>();
    auto blob = read_whole(path);  // complete: blobs appear by rename
    RUCCL_TRY(blob);
    return std::optional<std::vector<std::byte>>(std::move(blob).value());
  }
  void drop(std::size_t generation) override {
    std::error_code ec;
    fs::remove(blob_path(generation, index_), ec);
    fs::remove(generation_dir(generation), ec);  // only once empty: the last one out
  }
  std::string where(std::size_t generation, std::size_t index) const override {
    return blob_path(generation, index).string();
  }

  const fs::path directory_;
};

}  // namespace

Result<std::unique_ptr<Bootstrap>> file_bootstrap(std::string directory, std::size_t process,
                                                  std::size_t processes,
                                                  FileBootstrapOptions options) {
  auto body = [&]() -> Result<std::unique_ptr<Bootstrap>> {
    if (directory.empty())
      return Status(ErrorCode::kInvalidArgument, "file bootstrap: the directory is empty");
    if (processes == 0 || processes > static_cast<std::size_t>(INT_MAX))
      return Status(ErrorCode::kInvalidArgument,
                    "file bootstrap: " + std::to_string(processes) + " processes");
    if (process >= processes)
      return Status(ErrorCode::kInvalidArgument,
                    "file bootstrap: process " + std::to_string(process) +
                        " is outside a job of " + std::to_string(processes) + " processes");
    if (options.timeout.count() <= 0)
      return Status(ErrorCode::kInvalidArgument, "file bootstrap: the timeout must be positive");
    std::error_code ec;
    fs::path dir(directory);
    while (dir.has_filename() == false && dir.has_parent_path() && dir != dir.root_path())
      dir = dir.parent_path();  // "a/b/" names the directory "a/b"
    // The parents are the caller's (default permissions); the job's own
    // directory is private.
    if (dir.has_parent_path() && !dir.parent_path().empty()) {
      fs::create_directories(dir.parent_path(), ec);
      if (ec) return io_error("create the directory", dir.parent_path(), ec.value());
    }
    RUCCL_TRY(make_private_directory(dir));
    RUCCL_TRY(check_private_directory(dir));
    // Our index's blob of any generation means an earlier bootstrap (its last
    // generation's blobs stay): reading its blobs as ours would be wrong.
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const fs::path stale = entry.path() / (std::to_string(process) + ".blob");
      std::error_code exists_ec;
      if (fs::exists(stale, exists_ec))
        return Status(ErrorCode::kInvalidArgument,
                      "file bootstrap: " + stale.string() +
                          " exists: an earlier bootstrap used this directory; give every new "
                          "communicator a fresh directory");
    }
    auto boot = std::make_unique<FileBootstrap>(dir, process, processes, options.timeout);
    RUCCL_TRY(boot->create(options.hostname.empty() ? detail::local_hostname() : options.hostname));
    return std::unique_ptr<Bootstrap>(std::move(boot));
  };
  return core::catch_to_status(ErrorCode::kInternal, "file bootstrap", body);
}

}  // namespace ruccl::bootstrap
