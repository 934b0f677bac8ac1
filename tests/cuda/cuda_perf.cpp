// ruccl-cuda-perf: all-reduce bandwidth of the CUDA adapter next to the plain
// device-to-device copy bandwidth of the same GPU, in one run.
//
// `--ranks` logical ranks (threads) all pinned to one GPU (`--gpu`, default 0)
// by an explicit device map, out-of-place all_reduce Sum of f32 from -b to -e
// bytes (times -f). Every iteration starts at a barrier; an iteration's time
// is the slowest rank's. busbw = algbw * 2(n-1)/n (nccl-tests). Each size's
// last result is checked on every rank against the closed form
// S(i) = n(n+1)/2 * ((i % 17) + 1). d2d_copy is cudaMemcpyAsync of the same
// bytes on that GPU (CUDA event timing). Exit 0: all checked, 1: a failure or
// a wrong element, 3: no usable GPU (nothing ran).
//
//   ruccl-cuda-perf [--ranks 4] [--gpu 0] [-b 1M] [-e 1G] [-f 2] [-n 20] [-w 5]
#include <algorithm>
#include <barrier>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "device/cuda/cuda_backend.hpp"
#include "ruccl/ruccl.hpp"

namespace {

using namespace ruccl;

struct Options {
  std::size_t ranks = 4;
  int gpu = 0;
  std::size_t min_bytes = std::size_t{1} << 20;
  std::size_t max_bytes = std::size_t{1} << 30;
  std::size_t factor = 2;
  std::size_t iters = 20;
  std::size_t warmup = 5;
};

std::optional<std::size_t> parse_bytes(std::string_view text) {
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{}) return std::nullopt;
  std::string_view suffix(end, text.data() + text.size() - end);
  if (suffix.empty()) return value;
  if (suffix == "K" || suffix == "k") return value << 10;
  if (suffix == "M" || suffix == "m") return value << 20;
  if (suffix == "G" || suffix == "g") return value << 30;
  return std::nullopt;
}

std::optional<std::string> parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view name = argv[i];
    if (i + 1 >= argc) return std::string(name) + " needs a value";
    const auto value = parse_bytes(argv[++i]);
    if (!value) return std::string(name) + ": bad value '" + argv[i] + "'";
    if (name == "--ranks") o.ranks = *value;
    else if (name == "--gpu") o.gpu = static_cast<int>(*value);
    else if (name == "-b") o.min_bytes = *value;
    else if (name == "-e") o.max_bytes = *value;
    else if (name == "-f") o.factor = *value;
    else if (name == "-n") o.iters = *value;
    else if (name == "-w") o.warmup = *value;
    else return "unknown option " + std::string(name);
  }
  if (o.ranks < 1 || o.factor < 2 || o.iters < 1 || o.min_bytes < 4 || o.max_bytes < o.min_bytes)
    return std::string("need --ranks >= 1, -f >= 2, -n >= 1, 4 <= -b <= -e");
  return std::nullopt;
}

float input_value(std::size_t rank, std::size_t i) { return static_cast<float>((rank + 1) * ((i % 17) + 1)); }
float expected_sum(std::size_t ranks, std::size_t i) {
  return static_cast<float>(ranks * (ranks + 1) / 2 * ((i % 17) + 1));
}

struct Row {
  std::size_t bytes = 0;
  double mean_us = 0;
  std::size_t wrong = 0;
  std::string error;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (auto error = parse(argc, argv, o)) {
    std::fprintf(stderr, "ruccl-cuda-perf: %s\n", error->c_str());
    return 2;
  }
  auto adapter = cuda::make_cuda_adapter(std::vector<int>(o.ranks, o.gpu));
  if (!adapter) {
    std::fprintf(stderr, "ruccl-cuda-perf: no CUDA device to measure, nothing ran:\n  %s\n",
                 adapter.status().to_string().c_str());
    return 3;
  }
  std::vector<DeviceId> devices;
  for (std::size_t r = 0; r < o.ranks; ++r) devices.push_back(cuda_device(r));
  auto comm = Communicator::create(devices, adapter.value(),
                                   Config().with_num_devices(o.ranks).with_timeout(std::chrono::seconds(120)));
  if (!comm) {
    std::fprintf(stderr, "ruccl-cuda-perf: %s\n", comm.status().to_string().c_str());
    return 1;
  }
  std::vector<std::size_t> sizes;
  for (std::size_t b = o.min_bytes; b <= o.max_bytes; b *= o.factor) sizes.push_back(b / 4 * 4);
  const std::size_t max_count = o.max_bytes / 4;

  // Per rank: input (filled once; every size uses a prefix) and output.
  std::vector<std::shared_ptr<void>> in(o.ranks), out(o.ranks);
  std::vector<std::vector<double>> times(o.ranks);  // [rank][size * iters + it]
  std::vector<std::vector<std::size_t>> wrong(o.ranks, std::vector<std::size_t>(sizes.size()));
  std::vector<std::string> errors(o.ranks);
  std::barrier sync(static_cast<std::ptrdiff_t>(o.ranks));
  {
    std::vector<std::jthread> threads;
    for (std::size_t rank = 0; rank < o.ranks; ++rank) {
      threads.emplace_back([&, rank] {
        auto fail = [&](const std::string& what) {
          errors[rank] = what;
          comm.value()->abort("ruccl-cuda-perf: rank " + std::to_string(rank) + ": " + what);
        };
        std::vector<float> host(max_count);
        for (std::size_t i = 0; i < max_count; ++i) host[i] = input_value(rank, i);
        auto a = adapter.value()->allocate(cuda_device(rank), max_count * 4);
        auto b = adapter.value()->allocate(cuda_device(rank), max_count * 4);
        Status s = !a ? a.status() : !b ? b.status() : Status::ok();
        if (s) s = cuda::copy_bytes(a.value().get(), host.data(), max_count * 4);
        if (!s) return fail(s.to_string()), sync.arrive_and_drop();
        in[rank] = a.value();
        out[rank] = b.value();
        for (std::size_t si = 0; si < sizes.size(); ++si) {
          const std::size_t count = sizes[si] / 4;
          const auto iv = TensorView::of(in[rank].get(), DataType::kF32, count, cuda_device(rank));
          const auto ov = TensorView::of(out[rank].get(), DataType::kF32, count, cuda_device(rank));
          for (std::size_t it = 0; it < o.warmup + o.iters; ++it) {
            sync.arrive_and_wait();
            const auto t0 = std::chrono::steady_clock::now();
            s = comm.value()->all_reduce_into(rank, iv, ov, ReduceOp::kSum);
            const auto t1 = std::chrono::steady_clock::now();
            if (!s) return fail(s.to_string()), sync.arrive_and_drop();
            if (it >= o.warmup) times[rank].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
          }
          if (s = cuda::copy_bytes(host.data(), out[rank].get(), count * 4); !s)
            return fail(s.to_string()), sync.arrive_and_drop();
          for (std::size_t i = 0; i < count; ++i) wrong[rank][si] += host[i] != expected_sum(o.ranks, i);
          for (std::size_t i = 0; i < count; ++i) host[i] = input_value(rank, i);  // restore
        }
      });
    }
  }
  for (std::size_t r = 0; r < o.ranks; ++r)
    if (!errors[r].empty()) {
      std::fprintf(stderr, "ruccl-cuda-perf: rank %zu failed: %s\n", r, errors[r].c_str());
      return 1;
    }

  auto name = cuda::gpu_name(o.gpu);
  std::printf("# ruccl-cuda-perf: all_reduce sum f32, out of place, %zu logical ranks on GPU %d (%s), "
              "%zu iterations after %zu warm-up\n",
              o.ranks, o.gpu, name ? name.value().c_str() : "?", o.iters, o.warmup);
  std::printf("# busbw = algbw * 2(n-1)/n; d2d_copy = cudaMemcpyAsync of the same bytes on that GPU\n");
  std::printf("%12s %12s %11s %11s %11s %8s %14s\n", "size(B)", "count", "time(us)", "algbw(GB/s)",
              "busbw(GB/s)", "wrong", "d2d_copy(GB/s)");
  std::size_t total_wrong = 0;
  for (std::size_t si = 0; si < sizes.size(); ++si) {
    double total = 0;
    for (std::size_t it = 0; it < o.iters; ++it) {
      double slowest = 0;
      for (std::size_t r = 0; r < o.ranks; ++r) slowest = std::max(slowest, times[r][si * o.iters + it]);
      total += slowest;
    }
    const double mean_us = total / static_cast<double>(o.iters);
    std::size_t bad = 0;
    for (std::size_t r = 0; r < o.ranks; ++r) bad += wrong[r][si];
    total_wrong += bad;
    const double algbw = static_cast<double>(sizes[si]) / mean_us / 1e3;
    const double busbw = algbw * 2.0 * static_cast<double>(o.ranks - 1) / static_cast<double>(o.ranks);
    auto copy = cuda::time_copies(o.gpu, out[0].get(), in[0].get(), sizes[si], o.iters);
    const double copy_gbps = copy && copy.value() > 0 ? static_cast<double>(sizes[si]) / copy.value() / 1e9 : 0;
    std::printf("%12zu %12zu %11.1f %11.2f %11.2f %8zu %14.2f\n", sizes[si], sizes[si] / 4, mean_us,
                algbw, busbw, bad, copy_gbps);
    if (!copy) std::printf("#   copy baseline failed: %s\n", copy.status().to_string().c_str());
  }
  std::printf("%s\n", total_wrong == 0 ? "# all results checked: PASSED" : "# FAILED: wrong elements");
  return total_wrong == 0 ? 0 : 1;
}
