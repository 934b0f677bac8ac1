#include "multinode/delivered_run.hpp"

#include <string>

namespace ruccl::multinode {

Status DeliveredRun::step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
                          Combine combine) {
  auto outside = [&](const Transfer& t) {
    return t.peer >= world_ || t.source != Source::kInput || t.src.offset > count_ ||
           t.src.count > count_ - t.src.offset;
  };
  for (const Transfer& t : sends)
    if (outside(t))
      return Status(ErrorCode::kInternal, "rank " + std::to_string(rank_) +
                                              ": a send the delivered inputs do not hold");
  const RankBuffers& me = work_.ranks[local_];
  const std::size_t es = dtype_size(work_.dtype);
  for (const Transfer& t : recvs) {
    if (outside(t) || me.recv == nullptr || t.dst_offset > me.recv_count ||
        t.src.count > me.recv_count - t.dst_offset)
      return Status(ErrorCode::kInternal, "rank " + std::to_string(rank_) + ": a receive from rank " +
                                              std::to_string(t.peer) +
                                              " outside the delivered inputs or the buffer");
    if (t.src.count == 0) continue;
    RUCCL_TRY(adapter_.combine(work_, local_, t.dst_offset, inputs_[t.peer] + t.src.offset * es,
                               t.src.count, combine));
  }
  return Status::ok();
}

}  // namespace ruccl::multinode
