// How long a waiting rank yields its core, polling, before it sleeps (on a
// futex or a condition variable): the one policy of the node mailbox's waits
// (node/mailbox.cpp) and the in-process rendezvous's (core/rendezvous.cpp).
//
// Where every rank has a core, up to 1 ms: a peer's change is then seen at
// once instead of through a wake (a futex wake and a reschedule, several us
// on the 2-vCPU development VM). Measured there: np=2 broadcast of 1-2 MiB in
// place, whose root waits about 110 us for its reader, 1.18-1.35x Open MPI's
// p50 with 50 us against 0.99-1.00 with 1 ms (`ruccl-perf --world --peers
// mpi --coll broadcast -b 256K -e 2M`, two rounds alternated); an 8 B
// all-reduce of `ruccl-perf --ranks 2`, 21-30 us p50 when the rendezvous
// slept at once against 7.6-8.2 us. Where the ranks outnumber the cores they
// take turns on them: 50 us, then sleep (a longer window made 2 processes x
// 2 threads on 2 cores slower).
#pragma once

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <thread>

namespace ruccl::core {

// Whether `ranks` ranks sharing this machine outnumber its cores.
inline bool outnumber_cores(std::size_t ranks) noexcept {
  return ranks > std::max(1u, std::thread::hardware_concurrency());
}

// Whether `ranks` ranks of this process outnumber the cores the calling
// thread may run on (its CPU affinity: Open MPI binds a process to one core
// when it starts 2 or fewer): they take turns on those cores.
inline bool crowd_cores(std::size_t ranks) noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return outnumber_cores(ranks);
  return ranks > static_cast<std::size_t>(std::max(1, CPU_COUNT(&set)));
}

inline std::chrono::steady_clock::duration yield_window(bool oversubscribed) noexcept {
  if (oversubscribed) return std::chrono::microseconds(50);
  return std::chrono::milliseconds(1);
}

}  // namespace ruccl::core
