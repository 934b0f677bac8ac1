// TransportRun: the step executor that moves an algorithm's messages over a
// Transport, so the algorithms of src/ring run unchanged across processes.
//
// One TransportRun serves one rank for one collective. Every step:
//   - each send becomes one tagged message (tag: communicator, collective
//     sequence number, step, source rank, piece = the message's index among
//     this step's messages between the same two ranks, which both sides
//     number alike because both cut transfers with ring::append_messages);
//   - each receive lands straight in the recv buffer (Combine::kCopy) or in a
//     staging buffer of one message, applied with core::combine;
//   - transfers from this rank to itself are done locally through the adapter;
//   - Transport::exchange waits for all of them, with `timeout` as the deadline.
// A step that stages (a reduction) runs in rounds: round r carries the r-th
// message (piece r) between every pair of ranks, both directions, and two
// rounds are in flight (Transport::exchange_rounds) where two messages per
// peer fit the budget (TransportRunOptions::staging_bytes): round r + 1's
// messages move while round r's are combined, and round r + 2 receives into
// round r's buffers once those were combined; else one round at a time. So
// a rank holds one or two staging buffers per peer it receives from in the
// step, each at most one message, together at most max_chunk_bytes (or one
// message, if that is more): staging never grows with the tensor. Peers'
// rounds pair up by piece number, as in the staged pipeline below, so they
// cannot deadlock. peak_staging_bytes() reports the most staging memory held
// at once. Memory types are chosen in one place, choose_memory_path(), once
// per TransportRun: host buffers go to the transport as they are; device
// buffers too when the transport takes device memory (UCX built with CUDA);
// otherwise every step runs staged_step(): the staging_pipeline.hpp schedule,
// device ranges copied through a few host buffers per peer (the adapter's
// copy, and core::combine of what arrived) in rounds, so that the copy of one
// segment overlaps the send of the one before. The staged path sends the same
// messages under the same tags as the direct one (unless
// staging_segment_bytes cuts them).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/work.hpp"
#include "ring/rank_run.hpp"
#include "ruccl/communicator.hpp"  // CollectiveKind
#include "transport/staging_pipeline.hpp"
#include "transport/transport.hpp"

namespace ruccl::transport {

// How a rank's buffers meet the transport.
enum class MemoryPath : std::uint8_t {
  kHost,          // host memory: pointers go to the transport
  kDirectDevice,  // device memory the transport moves itself (CUDA-aware UCX)
  kStaged,        // device memory staged through host buffers (staged_step)
};
const char* memory_path_name(MemoryPath path) noexcept;
// The decision: `buffers` is the adapter's device kind; `force_staging` stages
// host memory too (tests of the staged path without a GPU).
MemoryPath choose_memory_path(DeviceKind buffers, bool transport_takes_device_memory,
                              bool force_staging) noexcept;

// A host buffer a reduction step on the direct path receives into.
struct StagingBuffer {
  std::unique_ptr<std::byte[]> data;
  std::size_t bytes = 0;
};

struct TransportRunOptions {
  std::uint32_t comm = 0;          // communicator id (tag field)
  std::uint64_t seq = 0;           // collective sequence number (tag field)
  std::size_t message_elements = 1;  // from the byte budget (ring::message_elements)
  std::chrono::milliseconds timeout{0};  // deadline of each step's exchange
  // The group's rank g is the transport's peer peer_base + g * peer_stride
  // (a sub-ring of the world: e.g. the ranks with one local index).
  std::size_t peer_base = 0;
  std::size_t peer_stride = 1;
  // The staged path (MemoryPath::kStaged): host buffers per peer and direction
  // (>= 1; 2 overlaps a copy with a send), and the segment each one holds in
  // bytes (0: one message, so the wire carries the direct path's messages;
  // otherwise every rank must stage with the same value).
  std::size_t staging_slots = 2;
  std::size_t staging_segment_bytes = 0;
  bool force_staging = false;  // tests: stage host memory as if it were device memory
  // Receives one line naming the memory path, at construction (debug log).
  std::function<void(const std::string&)> log{};
  // Receive buffers of reduction steps, kept by the caller across collectives
  // (one vector per local rank) so that a run does not allocate and fault in
  // fresh pages; null: the run's own. A kept buffer is reused only when it
  // fits this run's message size (never larger than its budget).
  std::vector<StagingBuffer>* staging_cache = nullptr;
  // What a reduction step on the direct path may hold in receive buffers
  // (the call's budget, max_chunk_bytes): two rounds in flight where two
  // buffers per receiving stream fit in it, else one round at a time (0).
  std::size_t staging_bytes = 0;
  // The collective, named in front of every error ("collective #7
  // (all_reduce)", core::describe; made only then); none: "collective #<seq>".
  std::optional<CollectiveKind> kind{};
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
  MemoryPath memory_path() const { return path_; }
  Status step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
              Combine combine) override;
  // step(), with `alongside` run on this thread during it (the messages of
  // another executor's part of the same step, world::RoutedRun): a copy
  // step on the direct paths posts its messages first and runs it while they
  // are in flight (Transport::exchange_rounds: an empty round, then all); a
  // reduction step, or the staged path, runs it first. An error from it ends
  // the step (the peers hear of it as of any failure) and is returned as it
  // is. It must not wait on this step's messages (it may run before any
  // were posted).
  Status step(std::span<const Transfer> sends, std::span<const Transfer> recvs, Combine combine,
              const std::function<Status()>& alongside);
  // The direct path: the bytes of its reduction staging buffers (held from the
  // step that needs them to the end of the collective); the staged path: its
  // host buffers (peers x directions x staging_slots segments).
  std::size_t peak_staging_bytes() const override { return peak_staging_; }

 private:
  // transport_.exchange of send_ops_/recv_ops_, stamped with the collective's
  // full sequence number (errors name step `step`).
  Status exchange_ops(std::uint32_t step, Clock::time_point deadline);
  // send_ops_ and recv_ops_ stamped with the collective's full sequence number.
  void stamp_ops();
  // `status`, named after the collective and step `step` where it failed.
  Status step_error(Status status, std::uint32_t step) const;
  // Rounds of a reduction step on the direct path in flight at once
  // (staged_rounds): receive buffers per receiving stream.
  static constexpr std::size_t kRoundsInFlight = 2;
  // The direct path's staged receives of one step, in rounds (see the top).
  Status staged_rounds(Combine combine, Clock::time_point deadline);
  // The memory a send reads, and a receive writes (core::resolve: kInternal
  // when its range leaves this rank's buffer).
  Result<const void*> source(const Transfer& t) const;
  Result<std::byte*> destination(const Transfer& t, Combine combine) const;
  bool staging(Combine combine) const;            // receive into staging, then combine?
  std::size_t peer_of(std::size_t group_rank) const {
    return options_.peer_base + group_rank * options_.peer_stride;
  }

  // The staged path (transport_run.cpp, below step()).
  struct StagedMessage {
    const Transfer* transfer = nullptr;
    std::uint64_t tag = 0;
  };
  struct StagedStream {
    std::size_t peer = 0;  // group rank
    std::vector<StagedMessage> messages;
  };
  Status staged_step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
                     Combine combine);
  Status collect_streams(std::span<const Transfer> sends, std::span<const Transfer> recvs,
                         Combine combine);
  Status run_schedule(const staging::Schedule& plan, Combine combine, Clock::time_point deadline);
  std::byte* slot_buffer(bool send, std::size_t stream, std::size_t slot) const;

  Transport& transport_;
  DeviceAdapter& adapter_;
  Work& work_;
  const std::size_t local_;
  const std::size_t rank_;
  const std::size_t world_;
  const TransportRunOptions options_;
  const MemoryPath path_;
  std::uint32_t step_ = 0;
  // Per-step scratch, reused across steps.
  std::vector<SendOp> send_ops_;
  std::vector<RecvOp> recv_ops_;
  // The direct path's staged receives (a reduction step, staged_rounds): all
  // of the step's sends and receives, each stream's (peer's) messages in piece
  // order, and one buffer per receiving stream, kept for later steps.
  struct StagedRecv {
    RecvOp op;  // op.data: its stream's buffer, set per round
    const Transfer* transfer = nullptr;
  };
  std::vector<SendOp> step_sends_;
  std::vector<StagedRecv> step_recvs_;
  std::vector<std::vector<std::size_t>> out_pieces_, in_pieces_;  // per stream: indices
  std::size_t out_used_ = 0, in_used_ = 0;                        // streams in this step
  std::vector<std::size_t> out_stream_of_, in_stream_of_;         // group rank -> stream
  std::vector<std::size_t> send_begin_, recv_begin_;              // rounds of send_ops_, recv_ops_
  // kRoundsInFlight per receiving stream (staged_rounds)
  std::vector<StagingBuffer> staging_buffers_;
  std::size_t peak_staging_ = 0;
  std::vector<std::uint32_t> pieces_;
  std::vector<Transfer> self_;  // transfers from this rank to itself (local indices)
  // Staged path scratch: streams per peer, the host buffers (send streams'
  // slots first, then receive streams'), and the tickets of staging work.
  std::vector<StagedStream> out_streams_, in_streams_;
  std::vector<std::size_t> stream_of_;  // group rank -> stream index (per direction)
  std::shared_ptr<void> host_staging_;
  std::size_t host_staging_bytes_ = 0;
  std::size_t slot_bytes_ = 0, slots_ = 0;
  std::vector<DeviceAdapter::Ticket> out_tickets_, in_tickets_;
};

}  // namespace ruccl::transport
