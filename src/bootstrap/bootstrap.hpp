// The bootstrap: how the processes of one ruccl job find each other at set-up.
//
// This is what the rest of ruccl sees of MPI (the only implementation today is
// over an MPI communicator; see mpi_bootstrap.hpp). It never includes <mpi.h>.
// MPI is used only here and only at set-up: to learn where each process sits and
// to exchange small blobs (transport addresses, device counts). No collective
// data ever travels through it.
//
// Ordering. Processes are numbered by (node, MPI rank): `process` is a process's
// position in that order, so the processes of one node are contiguous. Nodes are
// numbered in the order of their lowest MPI rank. Everything the bootstrap
// returns per process (all_gather's blobs, node_of_process) is in process order.
//
// Calls. all_gather and barrier are collective and blocking: every process of
// the group calls them, in the same order, and each returns when all have
// arrived, or with an error. Every wait has a deadline (a Wait): past it the
// call returns kTimeout naming the processes that did not arrive, when it
// knows them; once its abort flag is set it returns kAborted. After a timed-out
// or aborted call the bootstrap may be unusable (the MPI one is: its later
// calls fail at once, and it neither frees its communicator nor finalises MPI,
// which would wait for the absent processes). A Bootstrap is not thread-safe: calls on one
// Bootstrap must not overlap, but may come from any thread (MPI is initialised
// at MPI_THREAD_SERIALIZED; see mpi_world_bootstrap).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ruccl/status.hpp"

namespace ruccl::bootstrap {

// Where this process sits in the job.
struct Topology {
  std::size_t process = 0, processes = 1;              // index in (node, rank) order, total
  std::size_t node = 0, nodes = 1;
  std::size_t local_process = 0, local_processes = 1;  // within this node
  std::vector<std::size_t> node_of_process;            // per process (in process order)
  std::string hostname;                                // of this process, for messages
};

using Clock = std::chrono::steady_clock;
using Blobs = std::vector<std::vector<std::byte>>;

// How long a collective call may wait, and a flag that cuts it short.
struct Wait {
  Clock::time_point deadline;
  const std::atomic<bool>* abort = nullptr;  // non-null and set: kAborted
  static Wait within(std::chrono::milliseconds timeout, const std::atomic<bool>* abort = nullptr) {
    return Wait{Clock::now() + timeout, abort};
  }
};

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  // Fixed at creation; valid as long as the Bootstrap.
  virtual const Topology& topology() const = 0;
  // The wait of the calls below without a Wait (the bootstrap's creation timeout).
  virtual std::chrono::milliseconds timeout() const = 0;
  // Collective. Every process contributes one blob (sizes may differ, empty is
  // fine); returns every process's blob, in process order (this process's own
  // at index topology().process). Waits until all processes have contributed.
  virtual Result<Blobs> all_gather(std::span<const std::byte> blob, const Wait& wait) = 0;
  // Collective. Returns once every process has entered it.
  virtual Status barrier(const Wait& wait) = 0;

  Result<Blobs> all_gather(std::span<const std::byte> blob) {
    return all_gather(blob, Wait::within(timeout()));
  }
  Status barrier() { return barrier(Wait::within(timeout())); }
};

// A bootstrap over MPI_COMM_WORLD (duplicated; the duplicate is freed by the
// Bootstrap's destructor). Collective over MPI_COMM_WORLD; creation waits at
// most `timeout` (after MPI_Init), as does every later call without a Wait.
//
// MPI initialisation: if nobody has initialised MPI yet, this calls
// MPI_Init_thread requesting MPI_THREAD_SERIALIZED (ruccl's worker threads may
// make the set-up calls, never two at once), and the returned Bootstrap calls
// MPI_Finalize in its destructor. If MPI was already initialised, the caller
// owns it: ruccl never finalises it, and the calls must then respect the thread
// level the caller chose. A Bootstrap that initialised MPI must be destroyed
// last: bootstraps still alive afterwards answer kAborted. MPI cannot be
// initialised twice: after MPI_Finalize this returns kUnsupported.
Result<std::unique_ptr<Bootstrap>> mpi_world_bootstrap(
    std::chrono::milliseconds timeout = std::chrono::milliseconds(300'000));

// Collective. Checks that every process passed the same `value`. On a
// difference, every process returns the same kDeviceCountMismatch naming the
// first process (in process order) whose value differs from process 0's:
//   "process 2 (host h1) has 3 devices per process, process 0 (host h0) has 2"
// `what` names the value in that message ("devices per process"); `code` is
// the error's code.
Status agree_on(Bootstrap& bootstrap, std::size_t value, const char* what,
                ErrorCode code = ErrorCode::kDeviceCountMismatch);
Status agree_on(Bootstrap& bootstrap, std::size_t value, const char* what, ErrorCode code,
                const Wait& wait);

// Collective: an agreement of outcome. Every process contributes `local` (ok,
// or why its step failed) and a payload; when every process was ok, returns
// every payload in process order. Otherwise every process returns the same
// error: the code of the first failed process (in process order) and
//   "<step>: process 2 (host h1) failed: <its message>"
// (with ", and N more" when several failed). A bootstrap error (a process
// that never arrived) is returned as it is, with `step` in front.
Result<Blobs> agree_outcome(Bootstrap& bootstrap, const Status& local,
                            std::span<const std::byte> payload, const char* step,
                            const Wait& wait);

}  // namespace ruccl::bootstrap
