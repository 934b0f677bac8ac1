// world_abort_test: Communicator::abort wakes a rank blocked on peers in other
// processes, long before the collective's deadline.
//
//   mpirun -np 2 world_abort_test
//
// Process 0 starts an all-reduce that process 1 never joins (the deadline is
// 60 s; ctest's timeout is shorter), and aborts its communicator from another
// thread after 300 ms: the all-reduce must return Aborted, and so must a later
// call. Process 1 waits 2 s without calling anything, then both destroy their
// communicators (bounded graceful closes). Exit 0 only if all that held.
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "ruccl/ruccl.hpp"
#include "ruccl/world.hpp"

using namespace ruccl;

int main() {
  auto created = create_world_communicator({host_device(0)},
                                           Config().with_timeout(std::chrono::seconds(60)));
  if (!created) {
    std::fprintf(stderr, "create: %s\n", created.status().to_string().c_str());
    return 1;
  }
  auto comm = created.value();
  const std::size_t rank = comm->first_rank();
  int failed = 0;
  if (rank == 0) {
    std::vector<float> in(1000, 1.0f);
    const TensorView view = TensorView::of(in.data(), DataType::kF32, in.size(), host_device(0));
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      comm->abort("test abort");
    });
    auto out = comm->all_reduce(rank, view, ReduceOp::kSum);
    aborter.join();
    if (out || out.status().code() != ErrorCode::kAborted) {
      std::fprintf(stderr, "rank 0: expected Aborted, got %s\n",
                   out ? "a result" : out.status().to_string().c_str());
      ++failed;
    }
    auto again = comm->all_reduce(rank, view, ReduceOp::kSum);
    if (again || again.status().code() != ErrorCode::kAborted) {
      std::fprintf(stderr, "rank 0: a call after abort: expected Aborted, got %s\n",
                   again ? "a result" : again.status().to_string().c_str());
      ++failed;
    }
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  comm.reset();
  std::printf("world_abort_test rank %zu: %s\n", rank, failed == 0 ? "PASSED" : "FAILED");
  return failed == 0 ? 0 : 1;
}
