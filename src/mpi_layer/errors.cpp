// ruccl's errors through MPI's error handlers: one MPI error class per ruccl
// ErrorCode and one error code in it (MPI_Add_error_class/_code, at first
// use). The class's string is "ruccl <ErrorCode name>"; the code's becomes
// ruccl's message each time (MPI_Add_error_string replaces it), so that under
// MPI_ERRORS_RETURN the caller gets the code back, MPI_Error_class gives
// ruccl's class and MPI_Error_string gives ruccl's text, and under MPI_ERRORS_ARE_FATAL the job
// aborts after the message is printed.
#include <cstdio>
#include <string>

#include "mpi_layer/registry.hpp"

namespace ruccl::mpi_layer {

int Registry::error_code(ErrorCode code) {
  const std::lock_guard<std::mutex> lock(mutex_);  // (threads may fail at once)
  ErrorSlot& slot = errors_[static_cast<std::size_t>(code)];
  if (slot.code == 0) {
    int cls = 0, c = 0;
    if (PMPI_Add_error_class(&cls) == MPI_SUCCESS && PMPI_Add_error_code(cls, &c) == MPI_SUCCESS) {
      slot.error_class = cls;
      slot.code = c;
      const std::string name = "ruccl " + std::string(error_code_name(code));
      PMPI_Add_error_string(cls, name.c_str());
    }
  }
  return slot.code != 0 ? slot.code : MPI_ERR_OTHER;
}

int Registry::fail(MPI_Comm comm, Coll c, const Status& s) {
  const int code = error_code(s.code());
  std::string text = "ruccl " + std::string(coll_name(c)) + ": " + s.to_string();
  if (text.size() >= MPI_MAX_ERROR_STRING) text.resize(MPI_MAX_ERROR_STRING - 1);
  if (code != MPI_ERR_OTHER) PMPI_Add_error_string(code, text.c_str());
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  PMPI_Comm_get_errhandler(comm, &handler);
  // The fatal handler's own line may not carry the whole message: print it.
  if (handler == MPI_ERRORS_ARE_FATAL)
    std::fprintf(stderr, "[ruccl mpi layer] MPI rank %d: %s\n", mpi_rank_, s.to_string().c_str());
  if (handler != MPI_ERRHANDLER_NULL) PMPI_Errhandler_free(&handler);
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

}  // namespace ruccl::mpi_layer
