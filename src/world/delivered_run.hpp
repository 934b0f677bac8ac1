// DeliveredRun: the step executor of the world's small all-reduce, whose inputs
// have all arrived already.
//
// The world communicator sends a small all-reduce's input with its fingerprint
// (one message to each rank, src/world/world.cpp), so when the plan is
// agreed every rank holds every rank's input in host memory, as it was at the
// start. The one-shot algorithm (ring/one_shot_all_reduce.cpp) then runs over
// this executor: a receive from rank k combines k's delivered input into this
// rank's buffer through core::combine; a send is checked against what
// was delivered and costs nothing. No step waits for another rank.
#pragma once

#include <cstddef>
#include <vector>

#include "core/work.hpp"
#include "ring/rank_run.hpp"

namespace ruccl::world {

class DeliveredRun final : public ring::RankRun {
 public:
  // inputs[r]: rank r's `count` elements of work.dtype (this rank's too), host
  // memory that outlives the run.
  DeliveredRun(DeviceAdapter& adapter, Work& work, std::size_t local, std::size_t rank,
               std::size_t world, std::vector<const std::byte*> inputs, std::size_t count)
      : adapter_(adapter),
        work_(work),
        local_(local),
        rank_(rank),
        world_(world),
        inputs_(std::move(inputs)),
        count_(count) {}

  std::size_t rank() const override { return rank_; }
  std::size_t world() const override { return world_; }
  std::size_t message_elements() const override { return count_ > 0 ? count_ : 1; }
  // The other ranks' inputs, held in host memory for the whole collective.
  std::size_t peak_staging_bytes() const override {
    return (world_ - 1) * count_ * dtype_size(work_.dtype);
  }
  // kInternal for a transfer outside what was delivered (a send of anything
  // but this rank's input, a receive past a delivered input).
  Status step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
              Combine combine) override;

 private:
  DeviceAdapter& adapter_;
  Work& work_;
  const std::size_t local_, rank_, world_;
  const std::vector<const std::byte*> inputs_;
  const std::size_t count_;
};

}  // namespace ruccl::world
