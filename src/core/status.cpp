#include "ruccl/status.hpp"

namespace ruccl {

std::string_view error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kOk: return "Ok";
    case ErrorCode::kInvalidArgument: return "InvalidArgument";
    case ErrorCode::kDuplicateRegistration: return "DuplicateRegistration";
    case ErrorCode::kMissingRegistration: return "MissingRegistration";
    case ErrorCode::kDeviceCountMismatch: return "DeviceCountMismatch";
    case ErrorCode::kShapeMismatch: return "ShapeMismatch";
    case ErrorCode::kDtypeMismatch: return "DtypeMismatch";
    case ErrorCode::kOpMismatch: return "OpMismatch";
    case ErrorCode::kRootMismatch: return "RootMismatch";
    case ErrorCode::kBroadcastSenderCount: return "BroadcastSenderCount";
    case ErrorCode::kCollectiveMismatch: return "CollectiveMismatch";
    case ErrorCode::kBudgetTooSmall: return "BudgetTooSmall";
    case ErrorCode::kTimeout: return "Timeout";
    case ErrorCode::kAborted: return "Aborted";
    case ErrorCode::kDeviceError: return "DeviceError";
    case ErrorCode::kUnsupported: return "Unsupported";
    case ErrorCode::kFinished: return "Finished";
    case ErrorCode::kPeerFailure: return "PeerFailure";
    case ErrorCode::kInternal: return "Internal";
    case ErrorCode::kProtocolError: return "ProtocolError";
    case ErrorCode::kOutOfMemory: return "OutOfMemory";
  }
  return "Unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "Ok";
  std::string out(error_code_name(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::with_context(std::string_view context) const {
  if (is_ok()) return *this;
  std::string message(context);
  message += ": ";
  message += message_;
  return Status(code_, std::move(message));
}

}  // namespace ruccl
