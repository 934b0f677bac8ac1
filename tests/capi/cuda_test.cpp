// The C API on CUDA devices (label cuda): device pointers and a stream through
// ruccl.h. Two logical CUDA ranks (on GPU 0 of a one-GPU machine), one thread
// each, each with its own stream: all_reduce out-of-place, all_gather in-place
// and broadcast in-place, checked against closed forms after synchronizing the
// stream. Without a usable GPU every test skips, saying why.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "device/cuda/cuda_backend.hpp"
#include "ruccl/device.hpp"
#include "ruccl/ruccl.h"

namespace {

constexpr std::size_t kWorld = 2;
constexpr std::size_t kCount = 1001;

class CApiCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    auto adapter = ruccl::cuda::make_cuda_adapter();
    if (!adapter) GTEST_SKIP() << "SKIPPED: no usable CUDA GPU: " << adapter.status().to_string();
    adapter_ = adapter.value();
    ASSERT_EQ(ruccl_comm_create_local(kWorld, RUCCL_DEVICE_CUDA, nullptr, nullptr, &comm_),
              RUCCL_SUCCESS);
  }
  void TearDown() override { ruccl_comm_destroy(comm_); }

  // `bytes` of device memory on logical device `rank`.
  std::shared_ptr<void> device_memory(std::size_t rank, std::size_t bytes) {
    auto memory = adapter_->allocate(ruccl::cuda_device(rank), bytes);
    if (!memory) throw std::runtime_error(memory.status().to_string());
    return memory.value();
  }

  std::shared_ptr<ruccl::DeviceAdapter> adapter_;
  ruccl_comm_t* comm_ = nullptr;
};

// Runs `body(rank, stream)` on one thread per rank; each rank gets its own stream.
template <typename F>
void per_rank(F body) {
  std::vector<std::thread> threads;
  for (std::size_t rank = 0; rank < kWorld; ++rank)
    threads.emplace_back([&body, rank] {
      auto stream = ruccl::cuda::create_stream(0);
      ASSERT_TRUE(stream) << stream.status().to_string();
      body(rank, stream.value().get());
    });
  for (auto& t : threads) t.join();
}

TEST_F(CApiCuda, AllReduceAllGatherBroadcast) {
  per_rank([&](std::size_t rank, void* stream) {
    // all_reduce, out-of-place: rank r holds (r + 1) * (i % 9); the sum is 3 (i % 9).
    std::vector<float> host(kCount);
    for (std::size_t i = 0; i < kCount; ++i) host[i] = float(rank + 1) * float(i % 9);
    auto in = device_memory(rank, kCount * sizeof(float));
    auto out = device_memory(rank, kCount * sizeof(float));
    ASSERT_TRUE(ruccl::cuda::copy_bytes(in.get(), host.data(), kCount * sizeof(float)));
    ASSERT_EQ(ruccl_all_reduce(comm_, rank, in.get(), out.get(), kCount, RUCCL_F32, RUCCL_SUM,
                               stream),
              RUCCL_SUCCESS)
        << ruccl_comm_last_error(comm_, rank);
    ASSERT_TRUE(ruccl::cuda::synchronize(stream));
    ASSERT_TRUE(ruccl::cuda::copy_bytes(host.data(), out.get(), kCount * sizeof(float)));
    for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(host[i], 3.0f * float(i % 9)) << i;

    // all_gather, in-place: rank r's block (r * 100 + i) inside the output.
    std::vector<std::int32_t> blocks(kWorld * kCount, -1);
    for (std::size_t i = 0; i < kCount; ++i) blocks[rank * kCount + i] = std::int32_t(rank * 100 + i);
    auto gathered = device_memory(rank, blocks.size() * sizeof(std::int32_t));
    ASSERT_TRUE(ruccl::cuda::copy_bytes(gathered.get(), blocks.data(), blocks.size() * 4));
    auto* base = static_cast<std::int32_t*>(gathered.get());
    ASSERT_EQ(ruccl_all_gather(comm_, rank, base + rank * kCount, base, kCount, RUCCL_I32, stream),
              RUCCL_SUCCESS)
        << ruccl_comm_last_error(comm_, rank);
    ASSERT_TRUE(ruccl::cuda::synchronize(stream));
    ASSERT_TRUE(ruccl::cuda::copy_bytes(blocks.data(), gathered.get(), blocks.size() * 4));
    for (std::size_t i = 0; i < blocks.size(); ++i)
      ASSERT_EQ(blocks[i], std::int32_t((i / kCount) * 100 + i % kCount)) << i;

    // broadcast from rank 1, in-place.
    std::vector<double> values(kCount, rank == 1 ? 0.25 : -1.0);
    auto bcast = device_memory(rank, kCount * sizeof(double));
    ASSERT_TRUE(ruccl::cuda::copy_bytes(bcast.get(), values.data(), kCount * sizeof(double)));
    ASSERT_EQ(ruccl_broadcast(comm_, rank, bcast.get(), bcast.get(), kCount, RUCCL_F64, 1, stream),
              RUCCL_SUCCESS)
        << ruccl_comm_last_error(comm_, rank);
    ASSERT_TRUE(ruccl::cuda::synchronize(stream));
    ASSERT_TRUE(ruccl::cuda::copy_bytes(values.data(), bcast.get(), kCount * sizeof(double)));
    for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(values[i], 0.25) << i;
  });
}

// A host pointer on a CUDA communicator is the caller's error, reported on every rank.
TEST_F(CApiCuda, HostPointerOnCudaRank) {
  std::vector<ruccl_result_t> codes(kWorld);
  per_rank([&](std::size_t rank, void* stream) {
    std::vector<float> host(16, 1.0f);
    auto device = device_memory(rank, 16 * sizeof(float));
    void* in = rank == 1 ? static_cast<void*>(host.data()) : device.get();
    codes[rank] = ruccl_all_reduce(comm_, rank, in, in, 16, RUCCL_F32, RUCCL_SUM, stream);
  });
  EXPECT_NE(codes[0], RUCCL_SUCCESS) << ruccl_comm_last_error(comm_, 0);
  EXPECT_EQ(codes[0], codes[1]);
  EXPECT_NE(std::string(ruccl_comm_last_error(comm_, 0)).find("rank 1"), std::string::npos)
      << ruccl_comm_last_error(comm_, 0);
}

}  // namespace
