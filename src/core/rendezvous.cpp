#include "core/rendezvous.hpp"

#include <algorithm>
#include <ctime>

#include <sched.h>

#include <string>

#include "core/yield_window.hpp"

namespace ruccl::core {
namespace {
// How many times a rank tries the mutex, yielding between tries, before it
// blocks on it: the sections it guards are short, and a contended std::mutex
// sleeps on a futex at once (`perf` on `ruccl-perf --ranks 2` showed ranks
// asleep in it between two steps).
constexpr int kLockTries = 64;

void relock(std::unique_lock<std::mutex>& lock) {
  for (int i = 0; i < kLockTries; ++i) {
    if (lock.try_lock()) return;
    sched_yield();
  }
  lock.lock();
}
}  // namespace

Rendezvous::Rendezvous(std::size_t world, std::chrono::milliseconds drain_grace, std::size_t first,
                       std::size_t sharing_cores)
    : world_(world),
      drain_grace_(drain_grace),
      first_(first),
      spin_window_(yield_window(outnumber_cores(std::max(world, sharing_cores)))),
      arrived_flags_(world, false),
      requests_(world, nullptr),
      locals_(world, nullptr),
      agreed_(world, nullptr),
      at_barrier_(world, false) {}

Status Rendezvous::timeout_status(const char* waiting_for, const std::vector<bool>& present) const {
  std::string missing;
  std::size_t n = 0;
  for (std::size_t r = 0; r < world_; ++r) {
    if (!present[r]) {
      missing += (n++ ? ", " : "") + std::to_string(first_ + r);
    }
  }
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
  return Status(ErrorCode::kTimeout,
                describe(generation_.seq, generation_.kind) + " timed out after " +
                    std::to_string(waited.count()) + " ms waiting for " + waiting_for +
                    (n == 0 ? std::string()
                            : std::string(": rank") + (n == 1 ? " " : "s ") + missing +
                                  " did not arrive"));
}

Status Rendezvous::broken_after_drain(std::unique_lock<std::mutex>& lock) {
  const auto grace = Clock::now() + drain_grace_;
  while (in_device_ > 0) {
    if (changed_.wait_until(lock, grace) == std::cv_status::timeout && in_device_ > 0) {
      return broken_->with_context(std::to_string(in_device_) +
                                   " rank(s) were still inside a device call after the grace "
                                   "period and may still read peers' buffers");
    }
  }
  return *broken_;
}

Result<Plan> Rendezvous::common_plan() const {
  const Result<Plan>* first_ok = nullptr;
  std::size_t ok_rank = 0;
  const Result<Plan>* first_error = nullptr;
  std::size_t error_rank = 0;
  for (std::size_t r = 0; r < world_; ++r) {
    const Result<Plan>* p = agreed_[r];
    if (p == nullptr)
      return Status(ErrorCode::kInternal, describe(generation_.seq, generation_.kind) +
                                              ": local rank " + std::to_string(r) +
                                              " arrived without an agreed plan");
    if (p->is_ok()) {
      if (first_ok == nullptr) {
        first_ok = p;
        ok_rank = r;
      } else if (!same_plan(first_ok->value(), p->value())) {
        return Status(ErrorCode::kProtocolError,
                      describe(generation_.seq, generation_.kind) + ": local ranks " +
                          std::to_string(ok_rank) + " and " + std::to_string(r) +
                          " of this process agreed different plans (a fingerprint arrived "
                          "differently on their links)");
      }
    } else if (first_error == nullptr) {
      first_error = p;
      error_rank = r;
    }
  }
  if (first_error == nullptr) return *first_ok;
  if (first_ok == nullptr) return *first_error;
  // Some failed (a peer lost after it sent to some local ranks only, a record
  // damaged on some links): every local rank fails with that error.
  return first_error->status().with_context("local rank " + std::to_string(error_rank) +
                                            " of this process (local rank " +
                                            std::to_string(ok_rank) + " had agreed a plan)");
}

Status Rendezvous::enter_device() {
  std::unique_lock lock = locked();
  if (broken_) return *broken_;
  ++in_device_;
  return Status::ok();
}

void Rendezvous::leave_device() {
  std::unique_lock lock = locked();
  --in_device_;
  if (in_device_ == 0) notify_locked();
}

std::unique_lock<std::mutex> Rendezvous::locked() const {
  std::unique_lock lock(mutex_, std::defer_lock);
  relock(lock);
  return lock;
}

void Rendezvous::notify_locked() {
  changes_.fetch_add(1, std::memory_order_release);
  changed_.notify_all();
}

template <typename Pred>
Status Rendezvous::wait(std::unique_lock<std::mutex>& lock, Clock::time_point deadline, Pred ready,
                        const char* waiting_for, const std::vector<bool>& present) {
  const auto spin_until = Clock::now() + spin_window_;
  while (true) {
    // A phase that completed keeps its outcome even if an abort follows it.
    if (ready()) return Status::ok();
    if (broken_) return broken_after_drain(lock);
    // First yield the core, polling for a change (every change under the
    // mutex bumps changes_), then sleep until one is notified.
    const auto now = Clock::now();
    if (now < spin_until && now < deadline) {
      const std::uint64_t seen = changes_.load(std::memory_order_acquire);
      lock.unlock();
      while (changes_.load(std::memory_order_acquire) == seen && Clock::now() < spin_until)
        sched_yield();
      relock(lock);
      continue;
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      if (ready()) return Status::ok();
      if (!broken_) {
        broken_ = timeout_status(waiting_for, present);
        is_broken_.store(true, std::memory_order_release);
        notify_locked();
      }
      return broken_after_drain(lock);
    }
  }
}

Result<Rendezvous::Generation*> Rendezvous::arrive(std::size_t rank, std::uint64_t seq,
                                                   const Request& request,
                                                   const Result<Geometry>& local,
                                                   Clock::time_point deadline,
                                                   const Result<Plan>* agreed) {
  std::unique_lock lock = locked();
  // Wait for the previous generation to drain (its other ranks to depart).
  RUCCL_TRY(wait(lock, deadline, [&] { return !ready_ && !arrived_flags_[rank]; },
                 "the previous collective to finish", std::vector<bool>(world_, true)));
  // A broken rendezvous is never joined: ranks that left it may have left their
  // registrations behind (pointing at requests that no longer exist).
  if (broken_) return *broken_;
  if (arrived_ == 0) {
    generation_.seq = seq;
    generation_.kind = request.kind;
    started_ = Clock::now();
  }
  arrived_flags_[rank] = true;
  requests_[rank] = &request;
  locals_[rank] = &local;
  agreed_[rank] = agreed;
  if (++arrived_ == world_) {
    generation_.plan = agreed != nullptr ? common_plan() : agree(requests_, locals_, seq);
    if (generation_.plan.is_ok()) {
      generation_.work = Work{};
      generation_.work.dtype = generation_.plan.value().dtype;
      generation_.work.op = request.op;
      generation_.work.world = world_;  // local ranks: the Work holds this process's
      generation_.work.ranks.assign(world_, RankBuffers{});
    }
    ready_ = true;
    notify_locked();
  } else {
    RUCCL_TRY(wait(lock, deadline, [&] { return ready_; }, "every rank to call it", arrived_flags_));
  }
  return &generation_;
}

Status Rendezvous::barrier(std::size_t rank, Status mine, Clock::time_point deadline) {
  std::unique_lock lock = locked();
  if (broken_) return broken_after_drain(lock);
  // (A rank that failed keeps its error: it had it from an earlier barrier.)
  if (barrier_failed_) return mine.is_ok() ? *barrier_failed_ : mine;
  Status own;  // ok, or this rank's failure, said where
  if (!mine.is_ok()) {
    own = mine.with_context(describe(generation_.seq, generation_.kind) + " failed on rank " +
                            std::to_string(first_ + rank));
    if (!barrier_pending_) barrier_pending_ = own;
  }
  at_barrier_[rank] = true;
  const std::uint64_t phase = barrier_phase_;
  if (++barrier_count_ == world_) {
    barrier_result_ = barrier_pending_ ? *barrier_pending_ : Status::ok();
    if (barrier_pending_) barrier_failed_ = barrier_result_;
    barrier_pending_.reset();
    barrier_count_ = 0;
    at_barrier_.assign(world_, false);
    barrier_phase_ = phase + 1;
    notify_locked();
    return own.is_ok() ? barrier_result_ : own;
  }
  RUCCL_TRY(wait(lock, deadline, [&] { return barrier_phase_ != phase; },
                 "every rank to finish a step", at_barrier_));
  return own.is_ok() ? barrier_result_ : own;
}

void Rendezvous::depart(std::size_t rank) {
  std::unique_lock lock = locked();
  arrived_flags_[rank] = false;
  requests_[rank] = nullptr;
  locals_[rank] = nullptr;
  agreed_[rank] = nullptr;
  if (++departed_ == world_) {  // everyone is out: reset for the next generation
    arrived_ = 0;
    departed_ = 0;
    ready_ = false;
    barrier_failed_.reset();
    generation_.work = Work{};
    notify_locked();
  }
}

void Rendezvous::abort(Status why) {
  std::unique_lock lock = locked();
  if (!broken_) {
    broken_ = std::move(why);
    is_broken_.store(true, std::memory_order_release);
  }
  notify_locked();
}

Clock::time_point coarse_now() noexcept {
  timespec t{};
  if (clock_gettime(CLOCK_MONOTONIC_COARSE, &t) != 0) return Clock::now();
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
      std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec)));
}

Clock::duration coarse_tick() noexcept {
  timespec r{};
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &r) != 0) return std::chrono::milliseconds(10);
  return std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(r.tv_sec) +
                                                     std::chrono::nanoseconds(r.tv_nsec));
}

std::optional<Status> Rendezvous::broken() const {
  // Every call asks: unbroken (the common case) costs one load, no lock.
  if (!is_broken_.load(std::memory_order_acquire)) return std::nullopt;
  std::unique_lock lock = locked();
  return broken_;
}

}  // namespace ruccl::core
