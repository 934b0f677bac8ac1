#include "core/catch_to_status.hpp"

#include <exception>
#include <new>
#include <string>
#include <utility>

namespace ruccl::core {
namespace {

// "<context>: <what...>"; only the code if there is no memory for the message
// (an empty string allocates nothing).
Status failure(ErrorCode code, std::string_view context, std::string_view what,
               std::string_view detail = {}, std::string_view close = {}) noexcept {
  try {
    std::string message;
    if (!context.empty()) message.append(context).append(": ");
    message.append(what).append(detail).append(close);
    return Status(code, std::move(message));
  } catch (...) {
  }
  return Status(code, std::string());
}

}  // namespace

Status current_exception_status(ErrorCode code, std::string_view context) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc& e) {
    return failure(ErrorCode::kOutOfMemory, context, "out of memory (", e.what(), ")");
  } catch (const std::exception& e) {
    return failure(code, context, "unexpected exception: ", e.what());
  } catch (...) {
    return failure(code, context, "unexpected non-standard exception");
  }
}

}  // namespace ruccl::core
