// A bootstrap without MPI: the processes find each other through a directory.
//
// Why: Open MPI 4.1 has no ULFM, so an MPI communicator that contains a dead
// process can never be shrunk. The survivors of a failed job (or any processes
// started without mpirun) build a new communicator by meeting in a directory
// they all can read and write: local for one node, a shared file system across
// nodes. No <mpi.h> here; this part builds in every configuration.
//
// Protocol. Every collective call (creation, each all_gather, each barrier) is
// one "generation" g = 0, 1, 2, ...: process i of n writes its blob to
// <dir>/<g>/<i>.blob atomically (a temporary file, then rename, so a blob is
// either absent or complete), then polls until all n blobs of generation g
// exist and reads them. Generation 0 carries the hostnames: processes are
// grouped into nodes by hostname and ordered by (node, index), nodes numbered
// by their lowest index, exactly as the MPI bootstrap orders by (node, rank).
// When generation g completes, every process has finished reading g - 1, so
// each deletes its own blob of g - 1; the last generation's blobs stay (the
// directory belongs to the caller).
//
// Permissions. Blob files are created 0600, and the directory (when ruccl
// creates it) and its generation directories 0700, whatever the umask: the
// blobs carry the job token. A directory that is a symbolic link, is owned by
// another user, or is group- or world-writable is refused (kInvalidArgument).
//
// Deadlines. Every call waits at most `timeout`; then it returns kTimeout
// naming the indices whose blobs never appeared. Nothing blocks without a
// deadline, so no abort is needed. A directory holds one bootstrap: creation
// refuses a directory where this index already wrote generation 0.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "bootstrap/bootstrap.hpp"

namespace ruccl::bootstrap {

struct FileBootstrapOptions {
  std::chrono::milliseconds timeout{300'000};  // of creation and of every later call
  std::string hostname;                        // empty: gethostname(); tests simulate nodes
};

// Collective over the `processes` processes that pass the same `directory`
// (created 0700 if missing, its parents with default permissions); `process` is this one's index, 0 <= process < processes.
// Topology::process is the position in (node, index) order, which differs from
// `process` when the indices of one node are not contiguous.
Result<std::unique_ptr<Bootstrap>> file_bootstrap(std::string directory, std::size_t process,
                                                  std::size_t processes,
                                                  FileBootstrapOptions options = {});

}  // namespace ruccl::bootstrap
