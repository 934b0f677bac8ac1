// The one move-only owner of a C handle (a UCX context, a CUDA stream, an MPI
// communicator...). Like std::unique_ptr with a deleter (MSCCL++'s
// UniqueGpuPtr is the model), but the handle need not be a pointer: MPI_Comm
// is an int in MPICH, and its null value (MPI_COMM_NULL) is not nullptr.
// Include-free of MPI, UCX and CUDA: every folder of src/ may include it.
//
// Deleter: `void operator()(T handle) noexcept`, called once for every
// non-null handle the owner gives up (at destruction, reset, or move
// assignment). The null value is T{} unless the deleter declares
// `static T null() noexcept`. A deleter may carry state (what it needs to
// release the handle); it moves with the handle.
#pragma once

#include <utility>

namespace ruccl::core {

template <typename T, typename Deleter>
class UniqueHandle {
 public:
  static T null() noexcept {
    if constexpr (requires { Deleter::null(); }) {
      return Deleter::null();
    } else {
      return T{};
    }
  }

  UniqueHandle() noexcept = default;
  explicit UniqueHandle(T handle, Deleter deleter = Deleter()) noexcept
      : handle_(handle), deleter_(std::move(deleter)) {}
  UniqueHandle(UniqueHandle&& other) noexcept
      : handle_(other.release()), deleter_(std::move(other.deleter_)) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = other.release();
      deleter_ = std::move(other.deleter_);
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  T get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != null(); }
  const Deleter& get_deleter() const noexcept { return deleter_; }
  Deleter& get_deleter() noexcept { return deleter_; }

  // Gives the handle up without releasing it; the owner is empty afterwards.
  [[nodiscard]] T release() noexcept { return std::exchange(handle_, null()); }
  // Releases the handle held (if any) and holds `handle` instead.
  void reset(T handle = null()) noexcept {
    const T old = std::exchange(handle_, handle);
    if (old != null()) deleter_(old);
  }
  // For C functions that create a handle into an out-parameter: releases the
  // handle held and returns where the new one goes.
  T* out() noexcept {
    reset();
    return &handle_;
  }

 private:
  T handle_ = null();
  [[no_unique_address]] Deleter deleter_{};
};

}  // namespace ruccl::core
