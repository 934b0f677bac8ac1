// ruccl-perf's measurement: persistent rank threads and the timed loops.
//
// One thread per rank is created once (RankPool) and reused for every case, so
// thread creation is never timed. A case runs as one task on every rank:
//   warm-up   w calls, each after a barrier of all ranks;
//   timed     n calls, each after a barrier; the call alone is timed on each
//             rank with steady_clock, and an iteration's time is the max over
//             the ranks (the collective is done when the last rank is done);
//   check     inputs re-generated, outputs poisoned, one more call, and every
//             element compared with the closed form (perf_data.hpp).
// Out-of-place and in-place are measured separately, each with its own check.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "perf_types.hpp"
#include "ruccl/communicator.hpp"
#include "ruccl/config.hpp"
#include "ruccl/tensor.hpp"

namespace ruccl::perf {

// N threads that run one task at a time: run() hands task(rank) to every thread
// and returns when all have returned. An exception in a task is caught on its
// thread and returned as a kInternal Status naming the rank.
class RankPool {
 public:
  explicit RankPool(std::size_t ranks);
  ~RankPool();
  RankPool(const RankPool&) = delete;
  RankPool& operator=(const RankPool&) = delete;

  std::size_t size() const { return threads_.size(); }
  Status run(const std::function<void(std::size_t rank)>& task);

 private:
  void serve(std::size_t rank);

  std::mutex mutex_;
  std::condition_variable wake_;   // a new task (or stop) for the threads
  std::condition_variable done_;   // the last thread finished the task
  const std::function<void(std::size_t)>* task_ = nullptr;
  std::uint64_t generation_ = 0;
  std::size_t running_ = 0;
  bool stop_ = false;
  Status first_error_;
  std::vector<std::thread> threads_;  // last: started once the state above exists
};

// The case for `kind` at nccl-tests size `size_bytes`, rounded down to whole
// blocks; nullopt when that leaves no element.
std::optional<Case> make_case(CollectiveKind kind, DataType dtype, std::optional<ReduceOp> op,
                              std::size_t root, std::size_t ranks, std::size_t size_bytes);

// Single-threaded memcpy of `bytes`: the bandwidth ceiling of one core.
MemcpyBaseline measure_memcpy(std::size_t bytes, std::size_t reps);

class Runner {
 public:
  // A communicator of options.ranks host devices over the host adapter.
  static Result<std::unique_ptr<Runner>> create(const Options& options, const Config& config);
  ~Runner();

  // Measures out-of-place, then in-place (where the collective has it).
  Row run(const Case& c);

 private:
  struct RankState;
  Runner(const Options& options, const Config& config, std::shared_ptr<DeviceAdapter> adapter,
         std::shared_ptr<Communicator> comm);
  Timing measure(const Case& c, bool in_place);
  Status renew_communicator();
  // The error to report for a task: a rank's own failure rather than the
  // kAborted its abort caused on the others; ok when every rank succeeded.
  Status task_error(const Status& pool_status) const;

  Options options_;
  Config config_;
  std::shared_ptr<DeviceAdapter> adapter_;
  std::shared_ptr<Communicator> comm_;
  std::vector<RankState> ranks_;
  RankPool pool_;  // last: its threads use everything above; joined first
};

}  // namespace ruccl::perf
