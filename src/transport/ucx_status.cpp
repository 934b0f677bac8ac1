#include "transport/ucx_status.hpp"

#include <string>

namespace ruccl::transport {

ErrorCode ucx_error_code(ucs_status_t status) noexcept {
  switch (status) {
    case UCS_OK:
    case UCS_INPROGRESS:
      return ErrorCode::kOk;
    // The peer is gone or cannot be reached.
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_SOME_CONNECTS_FAILED:
      return ErrorCode::kPeerFailure;
    case UCS_ERR_MESSAGE_TRUNCATED:
      return ErrorCode::kShapeMismatch;
    case UCS_ERR_CANCELED:
      return ErrorCode::kAborted;
    case UCS_ERR_TIMED_OUT:
      return ErrorCode::kTimeout;
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR:
      return ErrorCode::kInvalidArgument;
    case UCS_ERR_UNSUPPORTED:
    case UCS_ERR_NO_DEVICE:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_NO_ELEM:
      return ErrorCode::kUnsupported;
    default:
      return ErrorCode::kInternal;
  }
}

Status ucx_status(ucs_status_t status, std::string_view what) {
  const ErrorCode code = ucx_error_code(status);
  if (code == ErrorCode::kOk) return Status::ok();
  std::string message(what);
  message += ": ";
  message += ucs_status_string(status);
  return Status(code, std::move(message));
}

}  // namespace ruccl::transport
