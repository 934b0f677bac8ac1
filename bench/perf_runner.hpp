// ruccl-perf's measurement: persistent rank threads and the timed loops.
//
// One thread per local rank is created once (RankPool) and reused for every
// case, so thread creation is never timed. A case runs as one task on every rank:
//   warm-up   w calls, each after a barrier of all ranks;
//   timed     n calls, each after a barrier; the call alone is timed on each
//             rank with steady_clock, and an iteration's time is the max over
//             the ranks (the collective is done when the last rank is done);
//   check     inputs re-generated, outputs poisoned, one more call, and every
//             element compared with the closed form (perf_data.hpp).
// Out-of-place and in-place are measured separately, each with its own check.
//
// Two kinds of runner:
//   in-process  one Communicator of --ranks host devices; the barrier is a
//               std::barrier of the rank threads, and the per-iteration max is
//               taken over the threads' times.
//   world       (built with ruccl::multinode) one world communicator per
//               --algo strategy, over the processes of mpirun, D local ranks each
//               (global rank = first_rank() + local index). No MPI on the timed
//               path: the barrier before each call is a ruccl all_reduce (Max) of
//               one i32 on the communicator about to be timed (untimed), and
//               after the timed loop every rank all-reduces (Max, f64) its vector
//               of n per-iteration times with ruccl, so every rank holds the
//               per-iteration max over all ranks of all processes. Wrong-element
//               counts are summed the same way (Sum, u64). With several
//               strategies ("both") the calls interleave per iteration:
//               A B A B ..., each after its own barrier, so that both see the
//               same machine noise; each is checked separately afterwards.
//               Peers (--peers, perf_peers.hpp; one device per process) join
//               the same interleaving after the ruccl communicators, on the
//               same buffers: the peer's own barrier (untimed: MPI_Barrier,
//               gloo::BarrierAllToAll), then the peer's call (timed);
//               their per-iteration max and wrong counts are agreed with MPI
//               after the loop. ruccl's own timed path never calls MPI.
// --budget-compare SIZE doubles every communicator's lane: first its call
// without a budget (CallOptions max_chunk_bytes = SIZE_MAX), then the same
// call through a BoundedCommunicator of SIZE bytes, interleaved per iteration
// on the same buffers (A B A B ...). After each warm-up and timed call (off the
// timed span) every rank reads Communicator::last_staging; a row's peak staging
// is the max over its calls and ranks (world: agreed with a ruccl all_reduce
// max after the loop, like the times).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "perf_peers.hpp"
#include "perf_types.hpp"
#include "ruccl/bounded.hpp"
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
#if RUCCL_PERF_WITH_WORLD
  // Collective over MPI_COMM_WORLD: one world communicator per strategy of
  // options.algos (the Config's when empty), options.devices_per_process host
  // devices each. The first one created initialises MPI and is destroyed last.
  // Then the peers of options.peers (which need devices_per_process 1).
  static Result<std::unique_ptr<Runner>> create_world(const Options& options, const Config& config);
#endif
  ~Runner();

  bool world() const { return world_; }
  std::size_t world_size() const;   // global ranks (in-process: options.ranks)
  std::size_t first_rank() const;   // this process's first global rank (in-process: 0)
  std::size_t local_ranks() const;  // ranks (threads) of this process
  // The label of each communicator, in measuring order ("" in-process).
  std::vector<std::string> algos() const;
  std::vector<std::string> peers() const;  // the peers' names, measured after algos()
  std::vector<std::string> peer_descriptions() const;  // "<name>: <what it runs>"
  // "<peer>: <why>" for each peer that can run neither placement of `c`.
  std::vector<std::string> peers_without(const Case& c) const;

  // Measures out-of-place, then in-place (where the collective has it): one row
  // per communicator, in algos() order, then one per peer that can run the case
  // (a placement it cannot run reads N/A). With --model (in-process all_reduce)
  // every iteration also times a single-thread memcpy of the size (after the
  // collective, on rank 0's thread) and the row gets its ModelEstimate.
  std::vector<Row> run(const Case& c);

 private:
  struct RankState;
  struct Lane {
    std::string name;                     // the strategy ("" in-process), + the budget
    std::shared_ptr<Communicator> comm;
    std::string impl;                     // the row's impl (plots)
    std::optional<std::size_t> budget;    // CallOptions::max_chunk_bytes; nullopt: the Config's
    std::optional<BoundedCommunicator> bounded;  // --budget-compare's bounded lane
  };
  // One lane per communicator, or two with --budget-compare (unbounded, bounded).
  static std::vector<Lane> lanes_of(const Options& options, std::string name,
                                    std::shared_ptr<Communicator> comm, const std::string& impl);
  Runner(const Options& options, const Config& config, std::shared_ptr<DeviceAdapter> adapter,
         std::vector<Lane> lanes, bool world);
  std::vector<Timing> measure(const Case& c, bool in_place);  // one per lane, then per peer
  Status renew_communicators();
  // The error to report for a task: a rank's own failure rather than the
  // kAborted its abort caused on the others; ok when every rank succeeded.
  Status task_error(const Status& pool_status) const;

  Options options_;
  Config config_;
  std::shared_ptr<DeviceAdapter> adapter_;  // in-process only (renewal)
  std::vector<Lane> lanes_;                 // world: lanes_[0] may own MPI; destroyed last
  std::vector<std::unique_ptr<Peer>> peers_;  // destroyed before lanes_ (MPI)
  std::vector<double> copy_us_;  // --model: memcpy times of the current case's iterations
  bool world_ = false;
  std::vector<RankState> ranks_;            // per local rank
  RankPool pool_;  // last: its threads use everything above; joined first
};

}  // namespace ruccl::perf
