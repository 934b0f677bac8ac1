// One-shot all-reduce, for small tensors.
//
// How it works: every rank's whole input goes to every other rank, and each
// rank reduces the n inputs itself in rank order (one_shot_step: rank k's input
// at step k, copied at step 0, reduced after), so every rank computes the same
// bits. Against the ring: one round of latency instead of 2(n-1), for n-1 times
// the data per rank instead of 2(n-1)/n, which pays below a few KiB.
//
// The inputs must arrive as they were when the collective began: a rank whose
// result buffer is its input (in place) overwrites it at step 0 while later
// steps read rank k's input. The world communicator's executor delivers them
// so (the inputs travel with the fingerprints, src/world/delivered_run.hpp),
// and its n steps cost no message; the in-process executor does not, and never
// runs this algorithm.
#include "ring/algorithms.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {

Status one_shot_all_reduce(RankRun& run, std::size_t count) {
  if (run.world() < 2 || count == 0) return Status::ok();
  const std::size_t max = run.message_elements();
  std::vector<Transfer> sends, recvs;
  for (std::size_t k = 0; k < run.world(); ++k) {
    const OneShotStep step = one_shot_step(run.rank(), run.world(), k);
    sends.clear();
    recvs.clear();
    for (std::size_t peer : step.send_to)
      append_messages(sends, peer, Range{0, count}, 0, max, Source::kInput);
    append_messages(recvs, step.recv_from, Range{0, count}, 0, max, Source::kInput);
    RUCCL_TRY(run.step(sends, recvs, step.combine));
  }
  return Status::ok();
}

}  // namespace ruccl::ring
