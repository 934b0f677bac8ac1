// The RemoteRanks of a world communicator (world_agreement.cpp), as creation
// (world_creation.cpp) builds it once every transport is connected.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "core/fault.hpp"
#include "core/remote_ranks.hpp"
#include "node/mailbox.hpp"
#include "ruccl/config.hpp"
#include "transport/transport.hpp"

namespace ruccl::world {

// Owns the bootstrap and this process's transports (one per local rank, rank
// first + i); `abort_flag` is the one the transports and the mailbox read.
// `mailbox`: the node's shared memory (null: none); when the world is one
// node (`nodes` == 1), fingerprints and small inputs travel through it instead
// of UCX. `node_level`: the world spans nodes whose segments all carry
// channels, each node with as many processes (NodeMemory::node_level): the
// hierarchical collectives run a node level. `faults` is the communicator's
// fault plan (drop/corrupt faults act in the executors).
std::unique_ptr<core::RemoteRanks> make_world_remote_ranks(
    std::unique_ptr<std::atomic<bool>> abort_flag, std::unique_ptr<bootstrap::Bootstrap> boot,
    std::vector<std::unique_ptr<transport::Transport>> transports,
    std::unique_ptr<node::Mailbox> mailbox, std::size_t first, std::size_t world, std::size_t nodes,
    bool node_level, const Config& config, std::shared_ptr<const core::FaultPlan> faults);

// The node segment of a world's processes on this node (creation's step 4,
// and a split by member list whose members share a node): the node's first
// process of `boot` creates it and the others map it, when every one shares
// its IPC and PID namespaces; each wait agreed through `boot` (Config's
// timeout). Null: nothing to share (one process on the node, namespaces
// differ). `tag` marks the segment as this world's; `abort` outlives it.
// Every process of `boot` takes part, whatever its node decided.
// `oversubscribed`: the world's ranks on this machine outnumber its cores
// (Mailbox::set_oversubscribed; the same on every process of the node).
struct NodeMemory {
  std::unique_ptr<node::Mailbox> mailbox;
  // Every process of `boot` is on one of several nodes with as many processes
  // each, and every node's segment carries channels (the same on every process).
  bool node_level = false;
};
Result<NodeMemory> share_node_memory(bootstrap::Bootstrap& boot, std::size_t per_process,
                                     std::size_t world, const Config& config, const node::Tag& tag,
                                     const std::atomic<bool>* abort, bool oversubscribed);

}  // namespace ruccl::world
