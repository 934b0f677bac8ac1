// An installed ruccl from C++: an in-process all-reduce of 2 host ranks.
#include <ruccl/ruccl.hpp>

#include <cstdio>
#include <thread>
#include <vector>

int main() {
  const std::size_t world = 2, count = 1001;
  auto comm = ruccl::Communicator::create({ruccl::host_device(0), ruccl::host_device(1)},
                                          ruccl::make_host_adapter(), ruccl::Config());
  if (!comm) {
    std::fprintf(stderr, "%s\n", comm.status().to_string().c_str());
    return 1;
  }
  int failures[2] = {0, 0};
  std::vector<std::thread> ranks;
  for (std::size_t rank = 0; rank < world; ++rank) {
    ranks.emplace_back([&, rank] {
      std::vector<float> data(count);
      for (std::size_t i = 0; i < count; ++i) data[i] = float(rank + 1) * float(i % 13);
      auto view = ruccl::TensorView::of(data.data(), ruccl::DataType::kF32, count,
                                        ruccl::host_device(rank));
      ruccl::Status s = comm.value()->all_reduce_into(rank, view, view, ruccl::ReduceOp::kSum);
      if (!s) {
        std::fprintf(stderr, "rank %zu: %s\n", rank, s.to_string().c_str());
        failures[rank] = 1;
        return;
      }
      for (std::size_t i = 0; i < count; ++i)
        if (data[i] != 3.0f * float(i % 13)) ++failures[rank];
    });
  }
  for (auto& t : ranks) t.join();
  if (failures[0] + failures[1]) {
    std::printf("consumer_cxx: FAILED\n");
    return 1;
  }
  std::printf("consumer_cxx: PASSED\n");
  return 0;
}
