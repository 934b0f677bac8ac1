// RoutedRun: the step executor of a flat algorithm (the all-to-all-v, the
// flat ring) over a group that spans nodes, where this node's processes share
// memory: each message goes by where its peer is. To a rank of this node
// through the node's channels (a NodeRun over this node's part of the group),
// to any other over UCX (a TransportRun over the group), so that no byte
// between two ranks of one node goes through UCX.
//
// The group's ranks on this node are one contiguous range [node_begin,
// node_begin + node_ranks) (world ranks are numbered node by node; a group of
// one local index numbers the processes so): a transfer with such a peer goes
// to the NodeRun, renumbered from 0 (ring::split_by_peer), every other one
// to the TransportRun. Each step runs both parts, also an empty one,
// so that every rank of the node counts the NodeRun's steps alike (a piece's
// header names its step), and every rank of the group the TransportRun's
// (its tags do). The node part runs while the step's UCX messages are in
// flight (a copy step) or before them (a reduction step; TransportRun::step's
// `alongside`): it never waits on UCX, and a rank waits on UCX only once its
// node part is done, so neither part can wait on the other's. A failure of
// either ends the step: the node's ranks hear of it through the segment
// (NodeRun, and the world's failed()), the other processes over UCX.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "ring/rank_run.hpp"
#include "transport/transport_run.hpp"
#include "world/node_run.hpp"

namespace ruccl::world {

class RoutedRun final : public ring::RankRun {
 public:
  // `node`: over this node's ranks of the group (its rank: this rank's
  // index among them); `wire`: over the whole group. Both cut messages alike
  // (message_elements), which the constructor's caller sees to.
  RoutedRun(std::unique_ptr<NodeRun> node, std::unique_ptr<transport::TransportRun> wire,
            std::size_t node_begin, std::size_t node_ranks)
      : node_(std::move(node)),
        wire_(std::move(wire)),
        node_begin_(node_begin),
        node_ranks_(node_ranks) {}

  std::size_t rank() const override { return wire_->rank(); }
  std::size_t world() const override { return wire_->world(); }
  std::size_t message_elements() const override { return wire_->message_elements(); }
  Status step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
              Combine combine) override;
  std::size_t peak_staging_bytes() const override {
    return node_->peak_staging_bytes() + wire_->peak_staging_bytes();
  }

 private:
  std::unique_ptr<NodeRun> node_;
  std::unique_ptr<transport::TransportRun> wire_;
  const std::size_t node_begin_, node_ranks_;
  // This step's transfers by route (kept across steps).
  std::vector<Transfer> node_sends_, node_recvs_, wire_sends_, wire_recvs_;
};

}  // namespace ruccl::world
