// The process group's worker: one thread that runs its tasks in the order they
// were posted (FIFO). Every rank posts its collectives in program order, so
// every rank's worker calls ruccl in the same order, which ruccl requires.
// Torch-free.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ruccl::torch_backend {

class Worker {
 public:
  // A task must not throw. `run` is false when the worker stops before the
  // task's turn: the task then only reports that it was cancelled.
  using Task = std::function<void(bool run)>;

  Worker();
  // Stops: the running task completes, the queued ones run with run = false,
  // then the thread is joined.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void post(Task task);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace ruccl::torch_backend
