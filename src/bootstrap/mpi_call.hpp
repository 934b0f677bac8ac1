// Turning MPI's int error codes (and C++ exceptions) into ruccl Status values.
// Internal to src/bootstrap. Every MPI call of the bootstrap goes through
// mpi_status; the communicators it calls on have MPI_ERRORS_RETURN, so MPI
// reports failures as codes instead of aborting.
#pragma once

#include <mpi.h>

#include <exception>
#include <new>
#include <string>

#include "ruccl/status.hpp"

namespace ruccl::bootstrap::detail {

// Ok for MPI_SUCCESS. Otherwise an error naming `call` and MPI's own text
// (MPI_Error_string). Error classes that mean ruccl passed bad arguments (a
// broken invariant here) become kInternal; everything else (a failed or
// unreachable peer, a lost connection, "other") becomes kPeerFailure.
Status mpi_status(int code, const char* call);

// Runs `f` (returning Status or Result<T>), turning an escaping exception
// (std::bad_alloc from a huge all_gather, say) into kInternal.
template <typename F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kInternal, "bootstrap: out of memory");
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("bootstrap: unexpected exception: ") + e.what());
  } catch (...) {
    return Status(ErrorCode::kInternal, "bootstrap: unexpected non-standard exception");
  }
}

}  // namespace ruccl::bootstrap::detail
