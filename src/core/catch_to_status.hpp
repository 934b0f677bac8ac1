// The one exception guard of ruccl. Every layer (core, bootstrap, transport,
// device adapters, the C API) runs code that may throw through
// catch_to_status, so that no exception crosses an API, a thread or the C ABI.
// Include-free of MPI, UCX and CUDA: every folder of src/ may include it.
//
// The code says whose failure it was: kDeviceError for a device adapter's
// verb, kInternal for ruccl's own code. std::bad_alloc is kOutOfMemory
// wherever it is thrown.
#pragma once

#include <string_view>

#include "ruccl/status.hpp"

namespace ruccl::core {

// The exception being handled, as a Status (call it only inside a catch
// block): std::bad_alloc is kOutOfMemory, any other exception `code`. The
// message starts with `context` (and no "<context>: " if it is empty):
//   "<context>: out of memory (<what>)"
//   "<context>: unexpected exception: <what>"
//   "<context>: unexpected non-standard exception"
// Should building the message fail too, it is empty (the code stays).
Status current_exception_status(ErrorCode code, std::string_view context) noexcept;

// Runs `f` (returning Status or Result<T>); an exception it throws becomes
// current_exception_status(code, context). (clang-tidy's exception-escape sees
// Result(Status)'s fallback for an ok Status, which allocates; an error never
// takes it.)
template <typename F>
// NOLINTNEXTLINE(bugprone-exception-escape)
auto catch_to_status(ErrorCode code, std::string_view context, F&& f) noexcept -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    return current_exception_status(code, context);
  }
}

}  // namespace ruccl::core
