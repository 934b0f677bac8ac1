// TransportRun: the step executor that moves an algorithm's messages over a
// Transport, so the algorithms of src/ring run unchanged across processes.
//
// One TransportRun serves one rank for one collective. Every step:
//   - each send becomes one tagged message (tag: communicator, collective
//     sequence number, step, source rank, piece = the message's index among
//     this step's messages between the same two ranks, which both sides
//     number alike because both cut transfers with ring::append_messages);
//   - each receive lands straight in the recv buffer (Combine::kCopy) or in a
//     staging buffer of at most one message, applied with DeviceAdapter::combine;
//   - transfers from this rank to itself are done locally through the adapter;
//   - Transport::exchange waits for all of them, with `timeout` as the deadline.
// Staging memory per step is at most (receives in the step) x max_chunk_bytes.
// Buffers are host memory here; the memory-type choice (direct device pointers
// vs staging through pinned host buffers) is made in one place, staging(), so
// the CUDA path slots in there.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "ring/rank_run.hpp"
#include "ruccl/device.hpp"
#include "transport/transport.hpp"

namespace ruccl::transport {

struct TransportRunOptions {
  std::uint32_t comm = 0;          // communicator id (tag field)
  std::uint64_t seq = 0;           // collective sequence number (tag field)
  std::size_t message_elements = 1;  // from the byte budget (ring::message_elements)
  std::chrono::milliseconds timeout{0};  // deadline of each step's exchange
  // The group's rank g is the transport's peer peer_base + g * peer_stride
  // (a sub-ring of the world: e.g. the ranks with one local index).
  std::size_t peer_base = 0;
  std::size_t peer_stride = 1;
};

class TransportRun final : public ring::RankRun {
 public:
  // `work` holds this rank's buffers at index `local`; `rank`/`world` are the
  // algorithm's (its group's: the world, or a sub-ring, see options).
  TransportRun(Transport& transport, DeviceAdapter& adapter, Work& work, std::size_t local,
               std::size_t rank, std::size_t world, TransportRunOptions options);

  std::size_t rank() const override { return rank_; }
  std::size_t world() const override { return world_; }
  std::size_t message_elements() const override { return options_.message_elements; }
  Status step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
              Combine combine) override;

 private:
  const void* source(const Transfer& t) const;  // this rank's buffer a send reads
  bool staging(Combine combine) const;            // receive into staging, then combine?
  std::size_t peer_of(std::size_t group_rank) const {
    return options_.peer_base + group_rank * options_.peer_stride;
  }

  Transport& transport_;
  DeviceAdapter& adapter_;
  Work& work_;
  const std::size_t local_;
  const std::size_t rank_;
  const std::size_t world_;
  const TransportRunOptions options_;
  std::uint32_t step_ = 0;
  // Per-step scratch, reused across steps.
  std::vector<SendOp> send_ops_;
  std::vector<RecvOp> recv_ops_;
  std::vector<std::vector<std::byte>> staged_;
  std::vector<const Transfer*> staged_for_;
  std::vector<std::uint32_t> pieces_;
  std::vector<Transfer> self_;  // transfers from this rank to itself (local indices)
};

}  // namespace ruccl::transport
