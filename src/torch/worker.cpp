#include "worker.hpp"

#include <chrono>
#include <utility>

namespace ruccl::torch_backend {

Worker::Worker() : thread_([this] { loop(); }) {}

Worker::~Worker() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Worker::post(Task task) {
  {
    const std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void Worker::loop() {
  // An idle worker sleeps in slices, so that no wait is without a deadline.
  constexpr auto kIdleSlice = std::chrono::seconds(1);
  std::unique_lock lock(mutex_);
  while (true) {
    if (queue_.empty()) {
      if (stopping_) return;
      wake_.wait_for(lock, kIdleSlice);
      continue;
    }
    Task task = std::move(queue_.front());
    queue_.pop_front();
    const bool run = !stopping_;
    lock.unlock();
    task(run);
    task = nullptr;  // its captures (tensors) go before the next task starts
    lock.lock();
  }
}

}  // namespace ruccl::torch_backend
