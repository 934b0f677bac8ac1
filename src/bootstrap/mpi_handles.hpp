// RAII owners for the MPI state the bootstrap creates (core::UniqueHandle).
// Internal to src/bootstrap.
//
// MpiScope: MPI initialisation. Finalises MPI at destruction only if this scope
//   initialised it (ruccl never finalises an MPI its caller started).
// OwnedComm: a communicator ruccl created (MPI_Comm_dup, MPI_Comm_split_type).
//   Always freed at destruction, unless MPI was finalised meanwhile (the handle
//   is gone with it then, and freeing would be an error).
// Both are move-only. An owner of both declares the scope first, so the
// communicators are freed before MPI is finalised.
#pragma once

#include <mpi.h>

#include "core/unique_handle.hpp"
#include "ruccl/status.hpp"

namespace ruccl::bootstrap::detail {

// True once MPI_Finalize has been called (by anyone) in this process.
bool mpi_finalized();

class MpiScope {
 public:
  // Initialises MPI at MPI_THREAD_SERIALIZED if nobody has (the scope then owns
  // it); otherwise borrows the caller's MPI. kUnsupported if MPI was finalised.
  static Result<MpiScope> acquire();
  // A scope over the caller's MPI: kInvalidArgument unless MPI is initialised
  // and not finalised. Never finalises.
  static Result<MpiScope> borrow();

  bool owns_mpi() const noexcept { return static_cast<bool>(owns_); }
  // Never finalise: after a timed-out exchange MPI_Finalize would wait for
  // the processes that did not arrive.
  void abandon() noexcept { (void)owns_.release(); }

 private:
  // The "handle" is whether this scope initialised MPI.
  struct Finalize {
    void operator()(bool owns) const noexcept;
  };
  explicit MpiScope(bool owns) : owns_(owns) {}

  core::UniqueHandle<bool, Finalize> owns_;  // MPI_Finalize at destruction
};

struct CommFree {
  static MPI_Comm null() noexcept { return MPI_COMM_NULL; }
  void operator()(MPI_Comm comm) const noexcept;
};

class OwnedComm : public core::UniqueHandle<MPI_Comm, CommFree> {
 public:
  using UniqueHandle::UniqueHandle;
  // MPI_Comm_dup(parent), with MPI_ERRORS_RETURN set on the duplicate.
  static Result<OwnedComm> duplicate(MPI_Comm parent);
  // The processes of `parent` that share memory with this one (one node),
  // ordered by `key`. Inherits parent's error handler.
  static Result<OwnedComm> split_shared(MPI_Comm parent, int key);
  // Takes ownership of `comm` (from MPI_Comm_idup, say).
  static OwnedComm adopt(MPI_Comm comm) noexcept { return OwnedComm(comm); }
  // (release() forgets the handle without freeing it: requests may still be
  // pending on it.)
};

}  // namespace ruccl::bootstrap::detail
