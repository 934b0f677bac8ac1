// The CUDA adapter's checks and orderings: memory that is not the rank's
// device memory is an InvalidArgument on every rank (never a kernel fault);
// the producer stream is honoured; explicit device maps; several logical
// ranks on one GPU and, where there are two GPUs, ranks across GPUs (peer
// copies). Skips (with the reason) where no GPU is usable.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cuda_test_support.hpp"

namespace ruccl::test::gpu {
namespace {

class CudaErrors : public GpuTest {};

// Every rank gets the same typed error, naming what was wrong.
void expect_same_error_everywhere(const std::vector<Status>& got, ErrorCode code,
                                  const std::string& needle) {
  for (std::size_t r = 0; r < got.size(); ++r) {
    EXPECT_EQ(got[r].code(), code) << "rank " << r << ": " << describe(got[r]);
    EXPECT_TRUE(contains(got[r].message(), needle)) << "rank " << r << ": " << describe(got[r]);
  }
}

void expect_group_still_works(Communicator& comm) {
  Failures f;
  run_ranks(comm.world_size(), f, [&](std::size_t rank) {
    const Bytes host_in = reduce_input_buffer(DataType::kI32, ReduceOp::kSum, rank, 33);
    DeviceBytes in = DeviceBytes::upload(cuda_device(rank), host_in);
    auto r = comm.all_reduce(rank, in.view1(DataType::kI32), ReduceOp::kSum);
    if (!r.is_ok()) return f.add(rank, "after the error: " + describe(r.status()));
    check_device_tensor(f, rank, "after the error", r.value(), DataType::kI32, {33},
                        expected_reduction(DataType::kI32, ReduceOp::kSum, comm.world_size(), 33));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST_F(CudaErrors, HostPointerAsCudaTensorIsInvalidOnEveryRank) {
  constexpr std::size_t kWorld = 3;
  auto comm = make_cuda_comm(kWorld);
  std::vector<Status> got(kWorld);
  Failures f;
  run_ranks(kWorld, f, [&](std::size_t rank) {
    Bytes host = reduce_input_buffer(DataType::kF32, ReduceOp::kSum, rank, 64);
    DeviceBytes dev = DeviceBytes::upload(cuda_device(rank), host);
    // Rank 1 passes host memory labelled as its CUDA device.
    TensorView iv = rank == 1 ? TensorView::of(host.data(), DataType::kF32, 64, cuda_device(rank))
                              : dev.view1(DataType::kF32);
    got[rank] = comm->all_reduce(rank, iv, ReduceOp::kSum).status();
  });
  EXPECT_TRUE(f.empty()) << f.report();
  expect_same_error_everywhere(got, ErrorCode::kInvalidArgument, "host memory");
  expect_group_still_works(*comm);
}

TEST_F(CudaErrors, HostOutputOfAnIntoFormIsInvalidNotAFault) {
  constexpr std::size_t kWorld = 2;
  auto comm = make_cuda_comm(kWorld);
  std::vector<Status> got(kWorld);
  Failures f;
  run_ranks(kWorld, f, [&](std::size_t rank) {
    Bytes host_out(64 * 4);
    DeviceBytes in = DeviceBytes::upload(cuda_device(rank),
                                         reduce_input_buffer(DataType::kF32, ReduceOp::kSum, rank, 64));
    got[rank] = comm->all_reduce_into(
        rank, in.view1(DataType::kF32),
        TensorView::of(host_out.data(), DataType::kF32, 64, cuda_device(rank)), ReduceOp::kSum);
  });
  EXPECT_TRUE(f.empty()) << f.report();
  for (std::size_t r = 0; r < kWorld; ++r)
    EXPECT_EQ(got[r].code(), ErrorCode::kInvalidArgument) << describe(got[r]);
  expect_group_still_works(*comm);
}

TEST_F(CudaErrors, MisalignedPointerIsInvalid) {
  constexpr std::size_t kWorld = 2;
  auto comm = make_cuda_comm(kWorld);
  std::vector<Status> got(kWorld);
  Failures f;
  run_ranks(kWorld, f, [&](std::size_t rank) {
    DeviceBytes dev = DeviceBytes::filled(cuda_device(rank), 4 * 17, 0);
    got[rank] = comm->all_reduce(rank, dev.view(DataType::kF32, {16}, rank == 0 ? 2 : 0),
                                 ReduceOp::kSum).status();
  });
  EXPECT_TRUE(f.empty()) << f.report();
  expect_same_error_everywhere(got, ErrorCode::kInvalidArgument, "not aligned");
}

TEST_F(CudaErrors, HostDeviceViewOnACudaRankIsInvalid) {
  constexpr std::size_t kWorld = 2;
  auto comm = make_cuda_comm(kWorld);
  std::vector<Status> got(kWorld);
  Failures f;
  run_ranks(kWorld, f, [&](std::size_t rank) {
    Bytes host(16);
    DeviceBytes dev = DeviceBytes::filled(cuda_device(rank), 16, 0);
    const TensorView iv = rank == 1 ? view1(host, DataType::kF32, rank) : dev.view1(DataType::kF32);
    got[rank] = comm->all_reduce(rank, iv, ReduceOp::kMax).status();
  });
  EXPECT_TRUE(f.empty()) << f.report();
  expect_same_error_everywhere(got, ErrorCode::kInvalidArgument, "host:1");
}

TEST_F(CudaErrors, BytesNeverReduce) {
  auto comm = make_cuda_comm(2);
  std::vector<Status> got(2);
  Failures f;
  run_ranks(2, f, [&](std::size_t rank) {
    DeviceBytes dev = DeviceBytes::filled(cuda_device(rank), 16, 1);
    got[rank] = comm->all_reduce(rank, dev.view1(DataType::kBytes), ReduceOp::kSum).status();
  });
  EXPECT_TRUE(f.empty()) << f.report();
  expect_same_error_everywhere(got, ErrorCode::kInvalidArgument, "bytes");
}

TEST_F(CudaErrors, DeviceMapIsChecked) {
  auto bad = cuda::make_cuda_adapter({static_cast<int>(gpu_count())});
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument) << describe(bad.status());
  // A logical index past an explicit map cannot be used.
  auto one = cuda::make_cuda_adapter({0});
  ASSERT_TRUE(one.is_ok()) << describe(one.status());
  auto past = one.value()->allocate(cuda_device(1), 16);
  EXPECT_EQ(past.status().code(), ErrorCode::kInvalidArgument) << describe(past.status());
  EXPECT_TRUE(contains(past.status().message(), "cuda:1")) << describe(past.status());
}

// What the caller queued on its stream before the call (here a large copy
// into the input) is finished before any rank reads that input.
class CudaStreams : public GpuTest {};

TEST_F(CudaStreams, ProducerStreamIsWaitedFor) {
  constexpr std::size_t kWorld = 3;
  constexpr std::size_t kCount = std::size_t{16} << 20;  // 64 MiB of f32 per rank
  auto comm = make_cuda_comm(kWorld);
  Failures f;
  run_ranks(kWorld, f, [&](std::size_t rank) {
    const DeviceId dev = cuda_device(rank);
    auto stream = cuda::create_stream(static_cast<int>(rank % gpu_count()));
    if (!stream) return f.add(rank, "create_stream: " + describe(stream.status()));
    // The input starts as zeros; the caller's stream then copies the real
    // values in, asynchronously, and calls the collective right away.
    std::vector<float> values(kCount, static_cast<float>(rank + 1));
    DeviceBytes staged = DeviceBytes::upload(dev, Bytes(reinterpret_cast<const std::byte*>(values.data()),
                                                        reinterpret_cast<const std::byte*>(values.data() + kCount)));
    DeviceBytes in = DeviceBytes::filled(dev, kCount * 4, 0);
    Status s = cuda::copy_bytes_async(in.data(), staged.data(), kCount * 4, stream->get());
    if (!s.is_ok()) return f.add(rank, "copy_bytes_async: " + describe(s));
    const TensorView iv = in.view(DataType::kF32, {kCount}, 0, stream->get());
    auto r = comm->all_reduce(rank, iv, ReduceOp::kSum);
    if (!r.is_ok()) return f.add(rank, "all_reduce: " + describe(r.status()));
    // finish made the caller's stream wait for the result.
    s = cuda::synchronize(stream->get());
    RANK_CHECK(f, rank, s.is_ok(), describe(s));
    const Bytes got = download(r.value());
    const float want = static_cast<float>(kWorld * (kWorld + 1) / 2);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < kCount; ++i) {
      float v = 0;
      std::memcpy(&v, got.data() + i * 4, 4);
      wrong += v != want;
    }
    RANK_CHECK(f, rank, wrong == 0, wrong << " elements differ from " << want);
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

// Logical ranks pinned by an explicit map: four on GPU 0 (always), and, with
// two GPUs or more, alternating GPUs (peer copies and peer reads).
class CudaLogicalRanks : public GpuTest {};

void all_reduce_on_map(std::vector<int> map) {
  auto made = cuda::make_cuda_adapter(map);
  ASSERT_TRUE(made.is_ok()) << describe(made.status());
  const std::size_t world = map.size();
  auto comm = make_cuda_comm(world, test_config(world), made.value());
  Failures f;
  run_ranks(world, f, [&](std::size_t rank) {
    for (DataType dt : {DataType::kF32, DataType::kBF16, DataType::kI64}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMean}) {
        const std::size_t count = 100003;
        const Bytes host_in = reduce_input_buffer(dt, op, rank, count, 7);
        auto mem = made.value()->allocate(cuda_device(rank), host_in.size());
        if (!mem) return f.add(rank, describe(mem.status()));
        if (Status s = cuda::copy_bytes(mem->get(), host_in.data(), host_in.size()); !s)
          return f.add(rank, describe(s));
        auto r = comm->all_reduce(rank, TensorView::of(mem->get(), dt, count, cuda_device(rank)), op);
        if (!r.is_ok()) {
          f.add(rank, describe(r.status()));
          continue;
        }
        check_device_tensor(f, rank, std::string(dtype_name(dt)) + " " + std::string(op_name(op)),
                            r.value(), dt, {count}, expected_reduction(dt, op, world, count, 7));
      }
    }
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST_F(CudaLogicalRanks, FourRanksOnGpuZero) { all_reduce_on_map({0, 0, 0, 0}); }

TEST_F(CudaLogicalRanks, RanksAcrossTwoGpus) {
  if (gpu_count() < 2) GTEST_SKIP() << "needs two GPUs (" << gpu_count() << " here)";
  all_reduce_on_map({0, 1, 0, 1});
}

TEST_F(CudaLogicalRanks, MemoryOfAnotherGpuIsInvalid) {
  if (gpu_count() < 2) GTEST_SKIP() << "needs two GPUs (" << gpu_count() << " here)";
  auto made = cuda::make_cuda_adapter({0, 1});
  ASSERT_TRUE(made.is_ok()) << describe(made.status());
  auto comm = make_cuda_comm(2, test_config(2), made.value());
  std::vector<Status> got(2);
  Failures f;
  run_ranks(2, f, [&](std::size_t rank) {
    // Both ranks allocate on GPU 0 (logical cuda:0); rank 1 claims it as cuda:1.
    auto mem = made.value()->allocate(cuda_device(0), 64);
    if (!mem) return f.add(rank, describe(mem.status()));
    got[rank] = comm->all_reduce(rank, TensorView::of(mem->get(), DataType::kF32, 16, cuda_device(rank)),
                                 ReduceOp::kSum).status();
  });
  EXPECT_TRUE(f.empty()) << f.report();
  expect_same_error_everywhere(got, ErrorCode::kInvalidArgument, "memory of GPU 0");
}

}  // namespace
}  // namespace ruccl::test::gpu
