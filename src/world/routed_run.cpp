#include "world/routed_run.hpp"

#include "ring/schedule.hpp"

namespace ruccl::world {

Status RoutedRun::step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
                       Combine combine) {
  ring::split_by_peer(sends, node_begin_, node_ranks_, node_sends_, wire_sends_);
  ring::split_by_peer(recvs, node_begin_, node_ranks_, node_recvs_, wire_recvs_);
  return wire_->step(wire_sends_, wire_recvs_, combine,
                     [&] { return node_->step(node_sends_, node_recvs_, combine); });
}

}  // namespace ruccl::world
