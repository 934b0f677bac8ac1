#include "bootstrap/mpi_handles.hpp"

#include "bootstrap/mpi_call.hpp"

namespace ruccl::bootstrap::detail {

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);  // callable at any time, even before MPI_Init
  return finalized != 0;
}

namespace {

bool mpi_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);  // also true after MPI_Finalize
  return initialized != 0;
}

}  // namespace

Result<MpiScope> MpiScope::acquire() {
  if (mpi_finalized())
    return Status(ErrorCode::kUnsupported,
                  "MPI was already finalised in this process and cannot be initialised again");
  if (mpi_initialized()) return MpiScope(false);
  // SERIALIZED, not MULTIPLE: the bootstrap never makes two MPI calls at once,
  // but they may come from different threads (ruccl's worker threads).
  // PMPI_, like the finalise below: the PMPI layer intercepts MPI_Init_thread.
  int provided = MPI_THREAD_SINGLE;
  RUCCL_TRY(mpi_status(PMPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
                       "MPI_Init_thread"));
  // A library that grants less still works when every call comes from the
  // thread that created the bootstrap, which is the common case; keep going.
  return MpiScope(true);
}

Result<MpiScope> MpiScope::borrow() {
  if (!mpi_initialized())
    return Status(ErrorCode::kInvalidArgument,
                  "MPI is not initialised: call MPI_Init first or use mpi_world_bootstrap()");
  if (mpi_finalized()) return Status(ErrorCode::kInvalidArgument, "MPI was already finalised");
  return MpiScope(false);
}

void MpiScope::Finalize::operator()(bool owns) const noexcept {
  // PMPI_: under the PMPI layer (libruccl_mpi.so) ruccl's own calls must not
  // reach its interceptors (tests/mpi_layer/no_recursion.sh checks them all).
  if (owns && !mpi_finalized()) PMPI_Finalize();
}

Result<OwnedComm> OwnedComm::duplicate(MPI_Comm parent) {
  MPI_Comm dup = MPI_COMM_NULL;
  RUCCL_TRY(mpi_status(MPI_Comm_dup(parent, &dup), "MPI_Comm_dup"));
  OwnedComm owned(dup);  // owns it from here on, whatever fails next
  RUCCL_TRY(mpi_status(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler"));
  return owned;
}

Result<OwnedComm> OwnedComm::split_shared(MPI_Comm parent, int key) {
  MPI_Comm shared = MPI_COMM_NULL;
  RUCCL_TRY(mpi_status(MPI_Comm_split_type(parent, MPI_COMM_TYPE_SHARED, key, MPI_INFO_NULL, &shared),
                       "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)"));
  if (shared == MPI_COMM_NULL)
    return Status(ErrorCode::kInternal, "MPI_Comm_split_type returned MPI_COMM_NULL");
  return OwnedComm(shared);
}

void CommFree::operator()(MPI_Comm comm) const noexcept {
  // A destructor cannot report an error; MPI_Comm_free only fails on a bad
  // handle, which ownership rules out. After MPI_Finalize the handle is gone.
  if (!mpi_finalized()) MPI_Comm_free(&comm);
}

}  // namespace ruccl::bootstrap::detail
