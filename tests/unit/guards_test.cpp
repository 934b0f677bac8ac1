// The two helpers every layer shares: core::catch_to_status (the one
// exception guard) and core::UniqueHandle (the one owner of a C handle).
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/catch_to_status.hpp"
#include "core/unique_handle.hpp"
#include "ruccl/status.hpp"

namespace ruccl::core {
namespace {

TEST(CatchToStatus, PassesValuesAndErrorsThrough) {
  EXPECT_TRUE(catch_to_status(ErrorCode::kInternal, "x", [] { return Status::ok(); }).is_ok());
  const Status s = catch_to_status(ErrorCode::kInternal, "x",
                                   [] { return Status(ErrorCode::kTimeout, "late"); });
  EXPECT_EQ(s.code(), ErrorCode::kTimeout);
  EXPECT_EQ(s.message(), "late");
  Result<int> r = catch_to_status(ErrorCode::kInternal, "x", [] { return Result<int>(7); });
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value(), 7);
}

TEST(CatchToStatus, AnExceptionBecomesTheCodeNamingTheContext) {
  for (ErrorCode code : {ErrorCode::kInternal, ErrorCode::kDeviceError}) {
    const Status s = catch_to_status(code, "device adapter", []() -> Status {
      throw std::runtime_error("exchange broke");
    });
    EXPECT_EQ(s.code(), code);
    EXPECT_EQ(s.message(), "device adapter: unexpected exception: exchange broke");
  }
  Result<int> r = catch_to_status(ErrorCode::kInternal, "bootstrap", []() -> Result<int> {
    throw 42;  // not a std::exception
  });
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
  EXPECT_EQ(r.status().message(), "bootstrap: unexpected non-standard exception");
}

TEST(CatchToStatus, BadAllocIsOutOfMemoryWhateverTheCode) {
  for (ErrorCode code : {ErrorCode::kInternal, ErrorCode::kDeviceError}) {
    const Status s = catch_to_status(code, "transport", []() -> Status { throw std::bad_alloc(); });
    EXPECT_EQ(s.code(), ErrorCode::kOutOfMemory);
    EXPECT_EQ(s.message().rfind("transport: out of memory (", 0), 0u) << s.message();
  }
}

TEST(CatchToStatus, AnEmptyContextAddsNoPrefix) {
  const Status s = catch_to_status(ErrorCode::kInternal, "",
                                   []() -> Status { throw std::length_error("vector"); });
  EXPECT_EQ(s.message(), "unexpected exception: vector");
}

// A handle that is not a pointer, whose null is not T{}: like MPI_Comm.
struct Closer {
  static int null() noexcept { return -1; }
  std::vector<int>* closed = nullptr;
  void operator()(int handle) const noexcept { closed->push_back(handle); }
};
using Owned = UniqueHandle<int, Closer>;

TEST(UniqueHandle, ReleasesEachHandleOnceAtDestructionResetOrMoveAssignment) {
  std::vector<int> closed;
  {
    Owned a(3, Closer{&closed});
    EXPECT_TRUE(a);
    EXPECT_EQ(a.get(), 3);
    Owned b(std::move(a));  // moves the handle and the deleter
    EXPECT_FALSE(a);
    EXPECT_EQ(a.get(), -1);
    EXPECT_EQ(b.get(), 3);
    Owned c(5, Closer{&closed});
    c = std::move(b);  // releases 5, takes 3
    EXPECT_EQ(closed, std::vector<int>({5}));
    c.reset(8);  // releases 3
    EXPECT_EQ(closed, std::vector<int>({5, 3}));
  }  // releases 8; a and b are empty
  EXPECT_EQ(closed, std::vector<int>({5, 3, 8}));
}

TEST(UniqueHandle, ReleaseGivesUpWithoutClosingAndOutResetsFirst) {
  std::vector<int> closed;
  Owned a(4, Closer{&closed});
  EXPECT_EQ(a.release(), 4);
  EXPECT_FALSE(a);
  a.reset(6);
  *a.out() = 9;  // what a C "create(&handle)" does: 6 is released first
  EXPECT_EQ(a.get(), 9);
  EXPECT_EQ(closed, std::vector<int>({6}));
  Owned empty;  // a default deleter, never called: nothing to release
  EXPECT_EQ(empty.get(), -1);
}

struct FreeCount {
  static inline int freed = 0;
  void operator()(int* p) const noexcept {
    ++freed;
    delete p;
  }
};

TEST(UniqueHandle, APointerHandleIsNullByDefault) {
  FreeCount::freed = 0;
  {
    UniqueHandle<int*, FreeCount> p;
    EXPECT_EQ(p.get(), nullptr);
    p.reset(new int(1));
    UniqueHandle<int*, FreeCount> q = std::move(p);
    EXPECT_EQ(p.get(), nullptr);
    EXPECT_EQ(*q.get(), 1);
  }
  EXPECT_EQ(FreeCount::freed, 1);
}

}  // namespace
}  // namespace ruccl::core
