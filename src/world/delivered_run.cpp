#include "world/delivered_run.hpp"

#include <string>

namespace ruccl::world {

Status DeliveredRun::step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
                          Combine combine) {
  // What was delivered: every rank's input, `count_` elements from offset 0.
  auto undelivered = [&](const Transfer& t) {
    return t.peer >= world_ || t.source != Source::kInput || t.src.offset > count_ ||
           t.src.count > count_ - t.src.offset;
  };
  for (const Transfer& t : sends)
    if (undelivered(t))
      return Status(ErrorCode::kInternal,
                    "rank " + std::to_string(rank_) + ": a send the delivered inputs do not hold");
  const std::size_t es = dtype_size(work_.dtype);
  core::Queued queued(adapter_, work_.ranks[local_].queue());
  return queued.settle([&]() -> Status {
    for (const Transfer& t : recvs) {
      if (undelivered(t))
        return Status(ErrorCode::kInternal, "rank " + std::to_string(rank_) +
                                                ": a receive from rank " + std::to_string(t.peer) +
                                                " outside the delivered inputs");
      RUCCL_TRY(
          queued.add(core::combine(adapter_, work_, local_, t.dst_offset,
                                   inputs_[t.peer] + t.src.offset * es, t.src.count, combine)));
    }
    return Status::ok();
  }());
}

}  // namespace ruccl::world
