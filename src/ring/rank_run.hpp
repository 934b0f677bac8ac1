// RankRun: what an algorithm sees of one rank of a running collective.
//
// Algorithms are SPMD: every rank of the group runs the same algorithm function
// on its own thread, with its own RankRun, and calls step() the same number of
// times. The executor behind RankRun decides how bytes move: the in-process
// communicator pulls `recvs` straight from peers' buffers through the device
// adapter; a transport-backed executor posts `sends` and `recvs` as messages.
#pragma once

#include <cstddef>
#include <span>

#include "ring/transfer.hpp"
#include "ruccl/status.hpp"
#include "ruccl/types.hpp"

namespace ruccl::ring {

class RankRun {
 public:
  virtual ~RankRun() = default;
  virtual std::size_t rank() const = 0;
  virtual std::size_t world() const = 0;
  // Elements one message may carry under the call's byte budget (>= one unit).
  virtual std::size_t message_elements() const = 0;
  // One step: this rank's messages out and in. Blocks until every rank of the
  // group has completed the step (or the deadline/abort), and returns the
  // group's common outcome: if any rank failed, every rank gets that error.
  virtual Status step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
                      Combine combine) = 0;
  // Every rank of the group passes its outcome of work done outside this group
  // (e.g. another level of a hierarchy); all get the same result: the first
  // failure, or ok. Blocking like step(). Executors whose group is one rank per
  // step's peers only (a transport ring) return `mine`.
  virtual Status share(Status mine) { return mine; }
  // Marks the start of a named phase of the algorithm (for traces); the phase
  // lasts until the next mark or the end of the algorithm. Default: nothing.
  virtual void phase(const char* /*name*/) {}
  // The most bytes of message staging (buffers that hold message payload on
  // its way between the wire and the rank's buffers: receive buffers for
  // reductions, host copies of device memory) this executor held at once since
  // it was created, i.e. during its collective. Counted from what it really
  // allocated. Executors that read peers' memory directly (the in-process
  // one) stage nothing: 0.
  virtual std::size_t peak_staging_bytes() const { return 0; }
};

}  // namespace ruccl::ring
