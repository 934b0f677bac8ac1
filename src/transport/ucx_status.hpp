// ucs_status_t -> ruccl::Status, in one function (no macros).
#pragma once

#include <string_view>

#include <ucs/type/status.h>

#include "ruccl/status.hpp"

namespace ruccl::transport {

// The ErrorCode a UCX status stands for: lost or unreachable peers become
// kPeerFailure, UCS_ERR_MESSAGE_TRUNCATED kShapeMismatch, UCS_ERR_CANCELED
// kAborted, UCS_ERR_TIMED_OUT kTimeout, unsupported features kUnsupported, the
// rest kInternal. UCS_OK (and UCS_INPROGRESS, which is not an error) -> kOk.
ErrorCode ucx_error_code(ucs_status_t status) noexcept;

// "`what`: <UCX's text>" with the code above; ok for UCS_OK.
Status ucx_status(ucs_status_t status, std::string_view what);

}  // namespace ruccl::transport
