// Turning MPI's int error codes into ruccl Status values (exceptions become
// Status through core::catch_to_status).
// Internal to src/bootstrap. Every MPI call of the bootstrap goes through
// mpi_status; the communicators it calls on have MPI_ERRORS_RETURN, so MPI
// reports failures as codes instead of aborting.
#pragma once

#include <mpi.h>

#include "ruccl/status.hpp"

namespace ruccl::bootstrap::detail {

// Ok for MPI_SUCCESS. Otherwise an error naming `call` and MPI's own text
// (MPI_Error_string). Error classes that mean ruccl passed bad arguments (a
// broken invariant here) become kInternal; everything else (a failed or
// unreachable peer, a lost connection, "other") becomes kPeerFailure.
Status mpi_status(int code, const char* call);

}  // namespace ruccl::bootstrap::detail
