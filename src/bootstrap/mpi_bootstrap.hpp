// A bootstrap over a caller's MPI communicator, for programs that already use
// MPI (and hold an MPI_Comm). This header includes <mpi.h>; the rest of ruccl
// includes bootstrap.hpp only.
#pragma once

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstddef>

#include "bootstrap/bootstrap.hpp"

namespace ruccl::bootstrap {

struct MpiBootstrapOptions {
  // The most bytes one MPI_Allgatherv of all_gather receives in all, so that
  // MPI's int counts and displacements never overflow: larger exchanges go in
  // rounds. Lowered only to test the rounds. Must be equal on every process.
  std::size_t max_round_bytes = INT_MAX;
  // The most creation waits for every process, and the wait of later calls
  // that pass no Wait (Bootstrap::timeout()).
  std::chrono::milliseconds timeout{300'000};
};

// Collective over `comm`: every process of `comm` calls it. Duplicates `comm`
// (MPI_Comm_idup, polled until options.timeout)
// (the duplicate gets MPI_ERRORS_RETURN and is freed by the Bootstrap's
// destructor; `comm` itself is untouched and may be freed by the caller at any
// time). MPI must be initialised, and not finalised, by the caller, who keeps
// owning it: the Bootstrap never finalises MPI and must be destroyed before
// MPI_Finalize. `comm` must be an intracommunicator.
Result<std::unique_ptr<Bootstrap>> mpi_bootstrap(MPI_Comm comm, const MpiBootstrapOptions& options = {});

}  // namespace ruccl::bootstrap
