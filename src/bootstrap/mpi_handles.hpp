// RAII owners for the MPI state the bootstrap creates. Internal to src/bootstrap.
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

  MpiScope(MpiScope&& other) noexcept : owns_(other.owns_) { other.owns_ = false; }
  MpiScope& operator=(MpiScope&& other) noexcept;
  MpiScope(const MpiScope&) = delete;
  MpiScope& operator=(const MpiScope&) = delete;
  ~MpiScope() { reset(); }

  bool owns_mpi() const noexcept { return owns_; }
  // Never finalise: after a timed-out exchange MPI_Finalize would wait for
  // the processes that did not arrive.
  void abandon() noexcept { owns_ = false; }

 private:
  explicit MpiScope(bool owns) : owns_(owns) {}
  void reset() noexcept;

  bool owns_ = false;  // MPI_Finalize at destruction
};

class OwnedComm {
 public:
  OwnedComm() = default;
  // MPI_Comm_dup(parent), with MPI_ERRORS_RETURN set on the duplicate.
  static Result<OwnedComm> duplicate(MPI_Comm parent);
  // The processes of `parent` that share memory with this one (one node),
  // ordered by `key`. Inherits parent's error handler.
  static Result<OwnedComm> split_shared(MPI_Comm parent, int key);
  // Takes ownership of `comm` (from MPI_Comm_idup, say).
  static OwnedComm adopt(MPI_Comm comm) noexcept { return OwnedComm(comm); }

  OwnedComm(OwnedComm&& other) noexcept : comm_(other.comm_) { other.comm_ = MPI_COMM_NULL; }
  OwnedComm& operator=(OwnedComm&& other) noexcept;
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;
  ~OwnedComm() { reset(); }

  MPI_Comm get() const noexcept { return comm_; }
  // Forgets the handle without freeing it (requests may still be pending on it).
  void leak() noexcept { comm_ = MPI_COMM_NULL; }

 private:
  explicit OwnedComm(MPI_Comm comm) : comm_(comm) {}
  void reset() noexcept;

  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace ruccl::bootstrap::detail
