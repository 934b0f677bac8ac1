// The call observer: everything a communicator reports about its calls, in
// one place. Trace spans (RUCCL_TRACE), log lines (RUCCL_DEBUG), the flight
// recorder (RUCCL_FLIGHT_RECORDER) and each rank's last staging
// (Communicator::last_staging) are fed at the same points of the protocol:
//   begun     the call has its sequence number and its local check
//   agreed    the plan is agreed across processes (the flight state)
//   running   the rank arrived and runs the algorithm
//   finished  the outcome: staging on success, the flight recorder's entry (a
//             failure may dump it: the error then names the dump), the span's
//             bytes and error, a WARN line for a failure, a TRACE line else.
// With tracing and logging off, a call costs what the flight recorder costs
// plus one branch: names and arguments are built only when something reads them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine.hpp"
#include "core/flight_recorder.hpp"
#include "core/log.hpp"

namespace ruccl::core {

class CallObserver {
 public:
  CallObserver(std::size_t first, std::size_t local_ranks, std::size_t world, const Config& config);

  Logger& logger() { return logger_; }
  Tracer* tracer() const { return tracer_.get(); }
  FlightRecorder& recorder() { return recorder_; }
  // The staging of `local`'s last collective that succeeded; nullopt: none yet.
  std::optional<StagingStats> last_staging(std::size_t local) const;

 private:
  friend class CallWatch;
  // Per rank: written by that rank's thread once per collective, after it ran.
  struct StagingSlot {
    std::atomic<std::uint64_t> calls{0};  // collectives recorded; 0: none yet
    std::atomic<std::uint64_t> seq{0};
    std::atomic<std::size_t> peak{0};
    std::atomic<std::size_t> budget{0};
  };
  const std::size_t world_;
  const Clock::duration tick_ = coarse_tick();  // what a coarse start may lag
  Logger logger_;
  std::unique_ptr<Tracer> tracer_;  // null unless RUCCL_TRACE / Config::trace_file
  FlightRecorder recorder_;
  std::vector<StagingSlot> staging_;
};

// One rank's call as the observer sees it (on the caller's stack).
class CallWatch {
 public:
  CallWatch(CallObserver& observer, std::size_t local, std::size_t rank, std::uint64_t seq,
            CollectiveKind kind);
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;

  // The call is under way (its local check done; on the lean path its slot
  // posted): the flight recorder's entry begins.
  void begun(const Request& request, std::size_t bytes);
  bool has_begun() const { return recorded_; }
  void agreed() { observer_.recorder_.mark(local_, FlightState::kAgreed); }
  void running() { observer_.recorder_.mark(local_, FlightState::kRunning); }
  // The algorithm that ran it (algorithm_name: a static string), for the log.
  void ran(std::string_view algorithm) { algorithm_ = algorithm; }
  // A phase span of the call (a no-op without tracing).
  ScopedSpan phase(const char* name) const {
    return ScopedSpan(observer_.tracer(), local_, observer_.tracer() ? name : "", "phase");
  }
  // The outcome (see the header). `peak_staging`: of the executors; `budget`:
  // the call's max_chunk_bytes; `user_aborted`: kAborted was the caller's own.
  void finished(Result<RankOutcome>& outcome, std::size_t peak_staging, std::size_t budget,
                bool user_aborted);
  // The call is unwinding from an exception (the Seat): only the flight
  // recorder's entry ends, if it began. Never throws.
  void unwound(const Status& why, bool user_aborted) noexcept;
  // When the call began (read once, from the coarse clock unless tracing or
  // TRACE logging times it: its flight entry and deadlines use it).
  Clock::time_point started() const { return started_; }
  // The call's deadline, `timeout` after it began (never early).
  Clock::time_point deadline(Clock::duration timeout) const {
    return started_ + timeout + observer_.tick_;
  }

 private:
  CallObserver& observer_;
  const std::size_t local_;
  const std::size_t rank_;
  const std::uint64_t seq_;
  const CollectiveKind kind_;
  std::optional<ScopedSpan> span_;  // tracing only
  Clock::time_point started_;
  std::size_t bytes_ = 0;
  std::string_view algorithm_;
  bool recorded_ = false;
};

}  // namespace ruccl::core
