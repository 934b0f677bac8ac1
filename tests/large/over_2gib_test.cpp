// Tensors larger than 2^31 bytes: every size is size_t, so counts past the
// 32-bit range must move and reduce like any other. Two ranks, about 6 GiB of
// memory in all; run in the main ctest pass only (label `large`), not under the
// sanitizers.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "test_support.hpp"

namespace ruccl::test {
namespace {

constexpr std::size_t kWorld = 2;
constexpr std::size_t kCount = (std::size_t{1} << 31) + 5;  // u8 elements = bytes

std::uint8_t value(std::size_t rank, std::size_t i) {
  return static_cast<std::uint8_t>((i % 251) + 3 * rank);
}

// All-reduce Sum, in place, u8: element i ends as value(0,i) + value(1,i) mod 256.
TEST(Over2GiB, AllReduceInPlace) {
  auto comm = make_comm(kWorld, test_config(kWorld, std::chrono::seconds(240)));
  Failures f;
  run_ranks(kWorld, f, [&](std::size_t rank) {
    std::unique_ptr<std::uint8_t[]> buf(new std::uint8_t[kCount]);
    for (std::size_t i = 0; i < kCount; ++i) buf[i] = value(rank, i);
    const TensorView v = TensorView::of(buf.get(), DataType::kU8, kCount, host_device(rank));
    Status s = comm->all_reduce_into(rank, v, v, ReduceOp::kSum);
    if (!s.is_ok()) return f.add(rank, s.to_string());
    std::size_t wrong = 0, first = 0;
    for (std::size_t i = 0; i < kCount; ++i) {
      const auto want = static_cast<std::uint8_t>(value(0, i) + value(1, i));
      if (buf[i] != want && wrong++ == 0) first = i;
    }
    RANK_CHECK(f, rank, wrong == 0, wrong << " wrong elements, first at " << first);
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// Broadcast of opaque bytes, value form: the receiver gets a new 2 GiB tensor.
TEST(Over2GiB, BroadcastBytes) {
  auto comm = make_comm(kWorld, test_config(kWorld, std::chrono::seconds(240)));
  Failures f;
  std::unique_ptr<std::uint8_t[]> source(new std::uint8_t[kCount]);
  for (std::size_t i = 0; i < kCount; ++i) source[i] = value(1, i);
  run_ranks(kWorld, f, [&](std::size_t rank) {
    const TensorView v = TensorView::of(source.get(), DataType::kBytes, kCount, host_device(rank));
    auto got = comm->broadcast(rank, rank == 1 ? &v : nullptr);
    if (!got.is_ok()) return f.add(rank, got.status().to_string());
    RANK_CHECK(f, rank, got->count() == kCount, "count " << got->count());
    RANK_CHECK(f, rank, std::memcmp(got->data(), source.get(), kCount) == 0, "bytes differ");
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

}  // namespace
}  // namespace ruccl::test
