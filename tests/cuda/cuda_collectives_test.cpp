// reduce, broadcast, all_gather, reduce_scatter and all_to_all_v over the CUDA
// adapter (logical ranks cuda:0..n-1), every root, value / into / in-place
// forms, against the closed forms of test_support; and the Session API on
// CUDA devices. Skips (with the reason) where no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cuda_test_support.hpp"

namespace ruccl::test::gpu {
namespace {

std::string tag(const char* coll, DataType dt, const Shape& shape, int form) {
  return std::string(coll) + " " + std::string(dtype_name(dt)) + " " + shape_of(shape) +
         " form " + std::to_string(form);
}

class CudaCollectives : public GpuTestWithParam<std::size_t> {};

TEST_P(CudaCollectives, ReduceToEveryRoot) {
  const std::size_t world = GetParam();
  auto comm = make_cuda_comm(world);
  Failures f;
  const DataType dtypes[] = {DataType::kF32, DataType::kI64, DataType::kBF16, DataType::kU8};
  run_ranks(world, f, [&](std::size_t rank) {
    const DeviceId dev = cuda_device(rank);
    std::uint64_t salt = 0;
    for (std::size_t root = 0; root < world; ++root)
      for (DataType dt : dtypes)
        for (ReduceOp op : kAllReduceOps)
          for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{257}})
            for (int form = 0; form < 3; ++form) {
              ++salt;
              const std::string what = tag("reduce", dt, {count}, form) + " " +
                                       std::string(op_name(op)) + " root " + std::to_string(root);
              const Bytes host_in = reduce_input_buffer(dt, op, rank, count, salt);
              const Bytes want = expected_reduction(dt, op, world, count, salt);
              DeviceBytes in = DeviceBytes::upload(dev, host_in);
              const TensorView iv = in.view1(dt);
              if (form == 0) {
                auto r = comm->reduce(rank, iv, op, root);
                if (!r.is_ok()) {
                  f.add(rank, what + ": " + describe(r.status()));
                  continue;
                }
                RANK_CHECK(f, rank, r->has_value() == (rank == root), what << ": tensor presence");
                if (rank == root && r->has_value())
                  check_device_tensor(f, rank, what, **r, dt, {count}, want);
                RANK_CHECK(f, rank, in.download() == host_in, what << ": input changed");
              } else if (form == 1) {
                DeviceBytes out = DeviceBytes::filled(dev, host_in.size(), 0x5A);
                Status s = comm->reduce_into(rank, iv, out.view1(dt), op, root);
                if (!s.is_ok()) {
                  f.add(rank, what + ": " + describe(s));
                  continue;
                }
                if (rank == root) check_bytes(f, rank, what, dt, out.download().data(), want);
                else
                  RANK_CHECK(f, rank, out.download() == filled(host_in.size(), 0x5A),
                             what << ": non-root output touched");
                RANK_CHECK(f, rank, in.download() == host_in, what << ": input changed");
              } else {
                Status s = comm->reduce_into(rank, iv, iv, op, root);
                if (!s.is_ok()) {
                  f.add(rank, what + ": " + describe(s));
                  continue;
                }
                if (rank == root) check_bytes(f, rank, what, dt, in.download().data(), want);
                else RANK_CHECK(f, rank, in.download() == host_in, what << ": non-root touched");
              }
            }
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST_P(CudaCollectives, BroadcastFromEveryRoot) {
  const std::size_t world = GetParam();
  auto comm = make_cuda_comm(world);
  Failures f;
  const DataType dtypes[] = {DataType::kF32, DataType::kBytes, DataType::kF16, DataType::kI64};
  const Shape shapes[] = {{0}, {1}, {257}, {3, 5}};
  run_ranks(world, f, [&](std::size_t rank) {
    const DeviceId dev = cuda_device(rank);
    std::uint64_t salt = 0;
    for (std::size_t root = 0; root < world; ++root)
      for (DataType dt : dtypes)
        for (const Shape& shape : shapes)
          for (int form = 0; form < 3; ++form) {
            ++salt;
            const std::size_t count = shape_count(shape).value();
            const std::string what = tag("broadcast", dt, shape, form) + " root " + std::to_string(root);
            const Bytes want = move_input_buffer(dt, root, count, salt);
            DeviceBytes in = DeviceBytes::upload(dev, rank == root ? want : Bytes{});
            const TensorView iv = in.view(dt, shape);
            const TensorView* in_ptr = rank == root ? &iv : nullptr;
            if (form == 0) {
              auto r = comm->broadcast(rank, in_ptr);
              if (!r.is_ok()) {
                f.add(rank, what + ": " + describe(r.status()));
                continue;
              }
              check_device_tensor(f, rank, what, r.value(), dt, shape, want);
            } else {
              DeviceBytes out = DeviceBytes::filled(dev, want.size(), 0x33);
              TensorView ov = out.view(dt, shape);
              if (form == 2 && rank == root) ov = iv;  // in place at the root
              Status s = comm->broadcast_into(rank, in_ptr, ov);
              if (!s.is_ok()) {
                f.add(rank, what + ": " + describe(s));
                continue;
              }
              check_bytes(f, rank, what, dt, download(ov.data, want.size()).data(), want);
            }
            if (rank == root) RANK_CHECK(f, rank, in.download() == want, what << ": root input changed");
          }
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST_P(CudaCollectives, AllGatherConcatenatesAlongAxisZero) {
  const std::size_t world = GetParam();
  auto comm = make_cuda_comm(world);
  Failures f;
  const DataType dtypes[] = {DataType::kF32, DataType::kI8, DataType::kBytes, DataType::kBF16};
  const Shape shapes[] = {{0}, {1}, {5}, {3, 4}, {0, 3}, {2, 2, 3}};
  run_ranks(world, f, [&](std::size_t rank) {
    const DeviceId dev = cuda_device(rank);
    std::uint64_t salt = 0;
    for (DataType dt : dtypes)
      for (const Shape& shape : shapes)
        for (int form = 0; form < 3; ++form) {
          ++salt;
          const std::size_t count = shape_count(shape).value();
          const std::size_t bytes = count * dtype_size(dt);
          const std::string what = tag("all_gather", dt, shape, form);
          const Bytes host_in = move_input_buffer(dt, rank, count, salt);
          Bytes want;
          for (std::size_t r = 0; r < world; ++r) {
            const Bytes part = move_input_buffer(dt, r, count, salt);
            want.insert(want.end(), part.begin(), part.end());
          }
          Shape out_shape = shape;
          out_shape[0] *= world;
          if (form == 2) {  // in place: the input is this rank's block of the output
            Bytes start = filled(want.size(), 0x77);
            std::copy(host_in.begin(), host_in.end(), start.begin() + rank * bytes);
            DeviceBytes out = DeviceBytes::upload(dev, start);
            Status s = comm->all_gather_into(rank, out.view(dt, shape, rank * bytes),
                                             out.view(dt, out_shape));
            if (!s.is_ok()) f.add(rank, what + ": " + describe(s));
            else check_bytes(f, rank, what, dt, out.download().data(), want);
            continue;
          }
          DeviceBytes in = DeviceBytes::upload(dev, host_in);
          if (form == 0) {
            auto r = comm->all_gather(rank, in.view(dt, shape));
            if (!r.is_ok()) {
              f.add(rank, what + ": " + describe(r.status()));
              continue;
            }
            check_device_tensor(f, rank, what, r.value(), dt, out_shape, want);
          } else {
            DeviceBytes out = DeviceBytes::filled(dev, want.size(), 0x77);
            Status s = comm->all_gather_into(rank, in.view(dt, shape), out.view(dt, out_shape));
            if (!s.is_ok()) {
              f.add(rank, what + ": " + describe(s));
              continue;
            }
            check_bytes(f, rank, what, dt, out.download().data(), want);
          }
          RANK_CHECK(f, rank, in.download() == host_in, what << ": input changed");
        }
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST_P(CudaCollectives, ReduceScatterSplitsRowsBalanced) {
  const std::size_t world = GetParam();
  auto comm = make_cuda_comm(world);
  Failures f;
  const DataType dtypes[] = {DataType::kF32, DataType::kI32, DataType::kU64, DataType::kF16};
  const std::size_t row_counts[] = {0, 1, world + 1, 2 * world + 1, 17};
  run_ranks(world, f, [&](std::size_t rank) {
    const DeviceId dev = cuda_device(rank);
    std::uint64_t salt = 0;
    for (DataType dt : dtypes)
      for (ReduceOp op : kAllReduceOps)
        for (std::size_t rows : row_counts)
          for (std::size_t width : {std::size_t{1}, std::size_t{3}})
            for (int form = 0; form < 3; ++form) {
              ++salt;
              const Shape shape = width == 1 ? Shape{rows} : Shape{rows, width};
              const std::size_t count = rows * width;
              const std::string what = tag("reduce_scatter", dt, shape, form) + " " +
                                       std::string(op_name(op));
              const std::size_t base = rows / world, extra = rows % world;
              const std::size_t my_rows = base + (rank < extra ? 1 : 0);
              const std::size_t first_row = rank * base + std::min(rank, extra);
              const std::size_t es = dtype_size(dt);
              const Bytes full = expected_reduction(dt, op, world, count, salt);
              const Bytes want(full.begin() + first_row * width * es,
                               full.begin() + (first_row + my_rows) * width * es);
              Shape out_shape = shape;
              out_shape[0] = my_rows;
              const Bytes host_in = reduce_input_buffer(dt, op, rank, count, salt);
              DeviceBytes in = DeviceBytes::upload(dev, host_in);
              const TensorView iv = in.view(dt, shape);
              if (form == 0) {
                auto r = comm->reduce_scatter(rank, iv, op);
                if (!r.is_ok()) {
                  f.add(rank, what + ": " + describe(r.status()));
                  continue;
                }
                check_device_tensor(f, rank, what, r.value(), dt, out_shape, want);
                RANK_CHECK(f, rank, in.download() == host_in, what << ": input changed");
              } else if (form == 1) {
                DeviceBytes out = DeviceBytes::filled(dev, want.size(), 0x11);
                Status s = comm->reduce_scatter_into(rank, iv, out.view(dt, out_shape), op);
                if (!s.is_ok()) {
                  f.add(rank, what + ": " + describe(s));
                  continue;
                }
                check_bytes(f, rank, what, dt, out.download().data(), want);
                RANK_CHECK(f, rank, in.download() == host_in, what << ": input changed");
              } else {  // in place: the output is shard r's rows inside the input
                const std::size_t at = first_row * width * es;
                Status s = comm->reduce_scatter_into(rank, iv, in.view(dt, out_shape, at), op);
                if (!s.is_ok()) {
                  f.add(rank, what + ": " + describe(s));
                  continue;
                }
                check_bytes(f, rank, what + " (in place)", dt, in.download().data() + at, want);
              }
            }
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

TEST_P(CudaCollectives, AllToAllVRandomCountsInSourceOrder) {
  const std::size_t world = GetParam();
  auto comm = make_cuda_comm(world);
  Failures f;
  run_ranks(world, f, [&](std::size_t rank) {
    const DeviceId dev = cuda_device(rank);
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      const DataType dt = seed % 2 ? DataType::kF32 : DataType::kBytes;
      const std::size_t width = seed % 3 == 0 ? 3 : 1;
      const std::size_t row_bytes = width * dtype_size(dt);
      auto rows = [&](std::size_t s, std::size_t d) -> std::size_t {
        const std::uint64_t h = splitmix64(seed * 1000003 + s * 31 + d);
        return h % 3 == 0 ? 0 : static_cast<std::size_t>((h >> 8) % 5);
      };
      auto input_of = [&](std::size_t s) {
        std::size_t total = 0;
        for (std::size_t d = 0; d < world; ++d) total += rows(s, d);
        return move_input_buffer(dt, s, total * width, seed);
      };
      Bytes want;
      std::vector<std::size_t> want_counts(world), send_counts(world);
      for (std::size_t s = 0; s < world; ++s) {
        const Bytes src = input_of(s);
        std::size_t before = 0;
        for (std::size_t d = 0; d < rank; ++d) before += rows(s, d);
        want.insert(want.end(), src.begin() + before * row_bytes,
                    src.begin() + (before + rows(s, rank)) * row_bytes);
        want_counts[s] = rows(s, rank);
        send_counts[s] = rows(rank, s);
      }
      const std::string what = "all_to_all_v seed " + std::to_string(seed);
      const Bytes host_in = input_of(rank);
      DeviceBytes in = DeviceBytes::upload(dev, host_in);
      const std::size_t in_rows = host_in.size() / row_bytes;
      const auto shape_of_rows = [&](std::size_t n) { return width == 1 ? Shape{n} : Shape{n, width}; };
      const TensorView iv = in.view(dt, shape_of_rows(in_rows));
      if (seed % 2 == 0) {
        auto r = comm->all_to_all_v(rank, iv, send_counts);
        if (!r.is_ok()) {
          f.add(rank, what + ": " + describe(r.status()));
          continue;
        }
        RANK_CHECK(f, rank, r->recv_counts == want_counts, what << ": recv_counts differ");
        check_device_tensor(f, rank, what, r->data, dt, shape_of_rows(want.size() / row_bytes), want);
      } else {
        DeviceBytes out = DeviceBytes::filled(dev, want.size() + row_bytes, 0xEE);  // a spare row
        std::vector<std::size_t> recv_counts;
        Status s = comm->all_to_all_v_into(rank, iv, send_counts,
                                           out.view(dt, shape_of_rows(want.size() / row_bytes + 1)),
                                           recv_counts);
        if (!s.is_ok()) {
          f.add(rank, what + ": " + describe(s));
          continue;
        }
        RANK_CHECK(f, rank, recv_counts == want_counts, what << ": recv_counts differ");
        const Bytes all = out.download();
        check_bytes(f, rank, what, dt, all.data(), want);
        RANK_CHECK(f, rank, Bytes(all.begin() + want.size(), all.end()) == filled(row_bytes, 0xEE),
                   what << ": wrote past the received rows");
      }
      RANK_CHECK(f, rank, in.download() == host_in, what << ": input changed");
    }
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

INSTANTIATE_TEST_SUITE_P(Worlds, CudaCollectives, ::testing::Values(1, 2, 3, 4, 8),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

// The seed's Session API on CUDA devices: peers register cuda:p, all-reduce
// Mean, and finish.
class CudaSession : public GpuTest {};

TEST_F(CudaSession, MeanAllReduceAndFinish) {
  constexpr std::size_t kPeers = 4, kCount = 257;
  Session session;
  Failures f;
  run_ranks(kPeers, f, [&](std::size_t peer) {
    Status s = session.register_peer(peer, cuda_device(peer), test_config(kPeers));
    if (!s.is_ok()) return f.add(peer, "register: " + describe(s));
    const Bytes host_in = reduce_input_buffer(DataType::kF32, ReduceOp::kMean, peer, kCount, 3);
    DeviceBytes in = DeviceBytes::upload(cuda_device(peer), host_in);
    auto r = session.all_reduce(peer, in.view1(DataType::kF32), ReduceOp::kMean);
    if (!r.is_ok()) return f.add(peer, "all_reduce: " + describe(r.status()));
    check_device_tensor(f, peer, "session mean", r.value(), DataType::kF32, {kCount},
                        expected_reduction(DataType::kF32, ReduceOp::kMean, kPeers, kCount, 3));
    s = session.finish_collective(peer);
    RANK_CHECK(f, peer, s.is_ok(), "finish: " << describe(s));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

}  // namespace
}  // namespace ruccl::test::gpu
