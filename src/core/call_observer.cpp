#include "core/call_observer.hpp"

namespace ruccl::core {

CallObserver::CallObserver(std::size_t first, std::size_t local_ranks, std::size_t world,
                           const Config& config)
    : world_(world),
      logger_(config),
      tracer_(config.trace_file().empty()
                  ? nullptr
                  : std::make_unique<Tracer>(config.trace_file(), first, local_ranks)),
      recorder_(first, local_ranks, config),
      staging_(local_ranks) {}

std::optional<StagingStats> CallObserver::last_staging(std::size_t local) const {
  const StagingSlot& slot = staging_[local];
  if (slot.calls.load(std::memory_order_acquire) == 0) return std::nullopt;
  return StagingStats{slot.seq.load(std::memory_order_relaxed),
                      slot.peak.load(std::memory_order_relaxed),
                      slot.budget.load(std::memory_order_relaxed)};
}

CallWatch::CallWatch(CallObserver& observer, std::size_t local, std::size_t rank, std::uint64_t seq,
                     CollectiveKind kind)
    : observer_(observer),
      local_(local),
      rank_(rank),
      seq_(seq),
      kind_(kind),
      // (Timed to the microsecond only where a span or a TRACE line tells it.)
      started_(observer.tracer() || observer.logger_.enabled(LogLevel::kTrace) ? Clock::now()
                                                                               : coarse_now()) {
  // (A span only when tracing: this runs per collective.)
  if (observer.tracer())
    span_.emplace(observer.tracer(), local,
                  std::string(collective_name(kind)) + " #" + std::to_string(seq), "collective",
                  "\"seq\":" + std::to_string(seq) +
                      ",\"world\":" + std::to_string(observer.world_));
}

void CallWatch::begun(const Request& request, std::size_t bytes) {
  bytes_ = bytes;
  observer_.recorder_.begin(local_, seq_, request, bytes, started_);
  recorded_ = true;
}

void CallWatch::finished(Result<RankOutcome>& outcome, std::size_t peak_staging, std::size_t budget,
                         bool user_aborted) {
  if (outcome.is_ok()) {
    CallObserver::StagingSlot& slot = observer_.staging_[local_];
    slot.seq.store(seq_, std::memory_order_relaxed);
    slot.peak.store(peak_staging, std::memory_order_relaxed);
    slot.budget.store(budget, std::memory_order_relaxed);
    // (Only this rank writes its slot: a store, no read-modify-write.)
    slot.calls.store(slot.calls.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  recorded_ = false;
  if (auto dumped = observer_.recorder_.end(local_, outcome.status(), user_aborted)) {
    outcome = Status(outcome.status().code(),
                     outcome.status().message() + "; flight recorder dumped to " + *dumped);
  }
  Logger& logger = observer_.logger_;
  if (!observer_.tracer() && !logger.enabled(LogLevel::kWarn)) return;
  const std::string_view kind = collective_name(kind_);
  if (span_) span_->add_arg("\"bytes\":" + std::to_string(bytes_));
  if (!outcome.is_ok()) {
    if (span_)
      span_->add_arg("\"error\":\"" + std::string(error_code_name(outcome.status().code())) + "\"");
    logger.log(LogLevel::kWarn, rank_,
               std::string(kind) + " #" + std::to_string(seq_) +
                   " failed: " + outcome.status().to_string());
  } else if (logger.enabled(LogLevel::kTrace)) {
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - started_).count();
    logger.log(LogLevel::kTrace, rank_,
               std::string(kind) + " #" + std::to_string(seq_) + " " + std::to_string(bytes_) +
                   " bytes" + (algorithm_.empty() ? "" : " (" + std::string(algorithm_) + ")") +
                   " done in " + std::to_string(static_cast<long long>(us)) + " us");
  }
}

void CallWatch::unwound(const Status& why, bool user_aborted) noexcept {
  if (!recorded_) return;
  recorded_ = false;
  try {  // the recorder's entry ends too (and may dump)
    (void)observer_.recorder_.end(local_, why, user_aborted);
  } catch (...) {
  }
}

}  // namespace ruccl::core
