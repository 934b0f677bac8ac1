#include "bootstrap/mpi_call.hpp"

#include <string>

namespace ruccl::bootstrap::detail {
namespace {

// Classes that can only come from arguments ruccl built: our bug, not a peer's.
bool is_argument_error(int error_class) {
  switch (error_class) {
    case MPI_ERR_BUFFER:
    case MPI_ERR_COUNT:
    case MPI_ERR_TYPE:
    case MPI_ERR_TAG:
    case MPI_ERR_COMM:
    case MPI_ERR_RANK:
    case MPI_ERR_ROOT:
    case MPI_ERR_GROUP:
    case MPI_ERR_OP:
    case MPI_ERR_ARG:
    case MPI_ERR_TRUNCATE:
    case MPI_ERR_KEYVAL:
    case MPI_ERR_INFO:
    case MPI_ERR_INTERN:
      return true;
    default:
      return false;
  }
}

}  // namespace

Status mpi_status(int code, const char* call) {
  if (code == MPI_SUCCESS) return Status::ok();
  int error_class = MPI_ERR_UNKNOWN;
  if (MPI_Error_class(code, &error_class) != MPI_SUCCESS) error_class = MPI_ERR_UNKNOWN;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  std::string message = std::string(call) + " failed: ";
  if (MPI_Error_string(code, text, &length) == MPI_SUCCESS && length > 0) {
    message.append(text, static_cast<std::size_t>(length));
  } else {
    message += "MPI error code " + std::to_string(code);
  }
  const ErrorCode kind = is_argument_error(error_class) ? ErrorCode::kInternal : ErrorCode::kPeerFailure;
  return Status(kind, std::move(message));
}

}  // namespace ruccl::bootstrap::detail
