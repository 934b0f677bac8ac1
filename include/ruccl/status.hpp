// Status and Result<T>: the only way errors travel in ruccl.
//
// Every public call and every thread boundary returns a Status or a Result<T>.
// No exception crosses them. An error carries a code (what kind of failure,
// stable for programs to branch on) and a message (what differed, for humans:
// "rank 3 passed root 1, rank 0 passed root 2").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ruccl {

// The typed error kinds (the seed's CollectiveError, widened).
enum class ErrorCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,         // null pointer, overflowing count, unknown dtype/op, bad rank...
  kDuplicateRegistration,   // a peer id (or device) registered twice
  kMissingRegistration,     // a call from a peer that is not registered
  kDeviceCountMismatch,     // peers disagree on the number of devices
  kShapeMismatch,           // shapes or counts differ between ranks
  kDtypeMismatch,           // dtypes differ between ranks
  kOpMismatch,              // reduction ops differ between ranks
  kRootMismatch,            // roots differ between ranks
  kBroadcastSenderCount,    // a broadcast without exactly one sender
  kCollectiveMismatch,      // ranks called different collectives (order mismatch)
  kBudgetTooSmall,          // max_chunk_bytes cannot hold one element/row
  kTimeout,                 // a deadline passed; names the ranks that did not arrive
  kAborted,                 // reset/abort woke this rank, or the group is unusable
  kDeviceError,             // a device adapter failed (or threw)
  kUnsupported,             // a valid request this build cannot serve
  kFinished,                // a call after finish_collective
  kPeerFailure,             // a remote peer died (multinode)
  kInternal,                // a broken invariant inside ruccl
  kProtocolError,           // a message failed validation: bad header, checksum or job token
  kOutOfMemory,             // an allocation failed (std::bad_alloc inside ruccl or an adapter)
};
// The highest code (codes travel between processes: receivers bound-check them).
inline constexpr ErrorCode kLastErrorCode = ErrorCode::kOutOfMemory;

std::string_view error_code_name(ErrorCode code) noexcept;

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const noexcept { return code_ == ErrorCode::kOk; }
  explicit operator bool() const noexcept { return is_ok(); }
  ErrorCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  // "Timeout: collective #4 (all_reduce) ..." — code name and message.
  std::string to_string() const;
  // The same error with `context` put in front of the message.
  Status with_context(std::string_view context) const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// Either a value or a non-ok Status. Constructing from an ok Status is a bug and
// is turned into kInternal, so a Result never claims success without a value.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(implicit)
    if (std::get<Status>(v_).is_ok())
      v_ = Status(ErrorCode::kInternal, "Result constructed from an ok Status");
  }
  bool is_ok() const noexcept { return std::holds_alternative<T>(v_); }
  explicit operator bool() const noexcept { return is_ok(); }
  const Status& status() const {
    static const Status kOkStatus;
    return is_ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

namespace detail {
inline Status to_status(const Status& s) { return s; }
template <typename T>
Status to_status(const Result<T>& r) { return r.status(); }
}  // namespace detail

}  // namespace ruccl

// The one propagation macro: return the error of a Status or Result expression.
#define RUCCL_TRY(expr)                                                       \
  do {                                                                        \
    auto&& ruccl_try_value_ = (expr);                                         \
    if (!ruccl_try_value_.is_ok()) return ::ruccl::detail::to_status(ruccl_try_value_); \
  } while (0)
