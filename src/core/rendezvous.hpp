// Rendezvous: the reusable generation state shared by the ranks of one
// in-process communicator.
//
// A generation is one collective. Each rank arrive()s with its request; the last
// to arrive decides (agree() -> Plan or one error) and wakes the others. Then
// the ranks run the algorithm, meeting at barrier() after every step; a barrier
// returns the group's common outcome, so a failure on any rank reaches every
// rank at the same step. depart() ends a rank's part; the last to depart resets
// the generation for the next collective.
//
// A wait yields the core, polling, for up to 1 ms (50 us where the ranks
// outnumber the cores), then sleeps on a condition variable.
// Every wait has the call's deadline and wakes on abort. A timeout names the
// ranks that did not arrive and breaks the communicator: every later call gets
// the same error until the communicator is replaced (reset).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "core/agreement.hpp"
#include "core/work.hpp"

namespace ruccl::core {

using Clock = std::chrono::steady_clock;

// The steady clock as of the kernel's last tick (CLOCK_MONOTONIC_COARSE: the
// same epoch as Clock, behind it by less than coarse_tick()), at a fifth of
// the cost of Clock::now() (measured here: 4.9 against 25.7 ns). For times
// that need no more: when a call began (its flight entry, its deadline).
Clock::time_point coarse_now() noexcept;
// The coarse clock's resolution (a few ms): what a deadline from coarse_now()
// adds so that it never comes early.
Clock::duration coarse_tick() noexcept;

class Rendezvous {
 public:
  // `drain_grace`: how long a rank leaving a broken collective waits for peers
  // still inside a device call that may read its buffers (see enter_device).
  // Seats are 0..world-1; messages name them as global ranks, first + seat.
  // `sharing_cores`: how many ranks may share this machine's cores (a world
  // communicator's other processes too): more than the cores, and a wait
  // yields for 50 us only.
  Rendezvous(std::size_t world, std::chrono::milliseconds drain_grace, std::size_t first = 0,
             std::size_t sharing_cores = 0);

  // Everything one generation shares. Valid between arrive() and depart().
  struct Generation {
    std::uint64_t seq = 0;
    CollectiveKind kind = CollectiveKind::kAllReduce;
    Result<Plan> plan = Status(ErrorCode::kInternal, "no plan yet");
    Work work;
  };

  // Blocks until every rank arrived (or deadline/abort). Returns the generation,
  // whose plan holds the common outcome of the agreement.
  // `agreed`: a plan already agreed with ranks outside this process; null:
  // agree() over the local requests. Each local rank agreed on its own (from
  // its own copies of the fingerprints): the generation takes their common
  // outcome, the lowest local rank's error when every one failed, and
  // kProtocolError when they differ (a fingerprint that reached this process
  // damaged on some links), so that no two local ranks run different plans.
  Result<Generation*> arrive(std::size_t rank, std::uint64_t seq, const Request& request,
                             const Result<Geometry>& local, Clock::time_point deadline,
                             const Result<Plan>* agreed = nullptr);
  // Reports `mine` and blocks until every rank reached this barrier. Returns
  // ok if no rank failed; else, to a rank that failed, its own failure (it
  // names whom that rank waited on), to the others the first failure
  // reported (each with "collective #K (kind) failed on rank R"). Once a
  // barrier of the generation failed, every later one returns that failure at
  // once without waiting (its ranks left together; none waits for the others).
  Status barrier(std::size_t rank, Status mine, Clock::time_point deadline);
  void depart(std::size_t rank);

  // Brackets a device call that reads peers' buffers. enter_device fails (with
  // the broken status) once the rendezvous is broken, so no new read starts; a
  // rank that leaves because of a timeout or abort first waits (up to the drain
  // grace) until no such call is in flight, so that no peer reads its memory
  // after its call returned.
  Status enter_device();
  void leave_device();

  // Breaks the rendezvous with `why`: every waiter and every later call gets it.
  void abort(Status why);
  std::optional<Status> broken() const;

 private:
  template <typename Pred>
  Status wait(std::unique_lock<std::mutex>& lock, Clock::time_point deadline, Pred ready,
              const char* waiting_for, const std::vector<bool>& present);
  Status timeout_status(const char* waiting_for, const std::vector<bool>& present) const;
  Status broken_after_drain(std::unique_lock<std::mutex>& lock);
  Result<Plan> common_plan() const;  // of agreed_, once every rank arrived
  std::unique_lock<std::mutex> locked() const;  // mutex_, tried yielding before it blocks
  void notify_locked();                         // (under mutex_) bumps changes_, wakes the sleepers

  const std::size_t world_;
  const std::chrono::milliseconds drain_grace_;
  const std::size_t first_;  // global rank of seat 0 (for messages)
  const Clock::duration spin_window_;  // how long a wait yields before it sleeps
  std::size_t in_device_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::atomic<std::uint64_t> changes_{0};  // bumped under mutex_ at every notify, polled without
  std::optional<Status> broken_;
  std::atomic<bool> is_broken_{false};  // broken_ holds a value (set under mutex_, read without)
  Clock::time_point started_{};

  // Arrival.
  std::vector<bool> arrived_flags_;
  std::vector<const Request*> requests_;
  std::vector<const Result<Geometry>*> locals_;
  std::vector<const Result<Plan>*> agreed_;  // each local rank's, when spanning processes
  std::size_t arrived_ = 0;
  std::size_t departed_ = 0;
  bool ready_ = false;
  Generation generation_;

  // Step barrier.
  std::vector<bool> at_barrier_;
  std::size_t barrier_count_ = 0;
  std::uint64_t barrier_phase_ = 0;         // (under mutex_)
  std::optional<Status> barrier_pending_;   // first failure of the open phase
  Status barrier_result_;                   // outcome of the last completed phase
  std::optional<Status> barrier_failed_;    // the generation's first failed phase
};

}  // namespace ruccl::core
