// NodeRun: the step executor of a collective whose ranks all share this node
// (every rank of the world on one node, RUCCL_INTRA_NODE_TRANSPORT=shm), or
// of the node level of a hierarchical collective across nodes (this node's
// processes), so that the src/ring algorithms run unchanged over shared
// memory instead of UCX.
//
// Each message of a step travels through the channel of its two ranks in the
// node segment (node/mailbox.hpp): the sender copies it in, piece by piece
// (channel_piece bytes), into the channel's slots, and the receiver combines
// each piece from the slot into its buffer (core::combine: a copy, or a
// reduction in place) and releases the slot. Several pieces are in flight per
// channel, and one thread drives all of its rank's channels of the step in
// turn, so copying a piece in overlaps the peer's combining of the one before,
// and a reduction reads each piece while it is still in cache. Both sides cut
// a message alike (its count in elements, channel_piece / dtype size each),
// and each piece's header carries its number and size, checked before use:
// ranks that disagree get kProtocolError, never a wrong sum.
//
// Host buffers, where the receiver's process can read the sender's memory
// (Mailbox::reads_directly), for the messages of a copy step up to
// NodeRunOptions::direct_copy_bytes (all messages with
// RUCCL_INTRA_NODE_TRANSPORT=shm-direct): a piece carries only the address of
// the sender's range, the receiver reads it itself (process_vm_readv: one
// copy, straight into its buffer for a copy, into a piece of scratch for a
// reduction), and the sender's step returns only once every such piece was
// released, so that no peer reads a caller's buffer after the call returned.
// The receiver takes either form of every piece (its header says which).
// A message that lies in one of the sender's regions (Communicator::
// allocate_host, node/regions.hpp) goes as addresses at any size, and the
// receiver combines it where it lies, through its own mapping of the region
// (no copy at all: processes then move bytes as threads do); while it reads,
// the sender cannot have withdrawn (Mailbox::read_guarded). A rank that
// offers addresses pulls one piece at a time between its pushes, so that its
// peers are not left waiting for its next address while it combines.
//
// Waits are the mailbox's (spin, yield, futex), with the step's deadline, the
// abort flag, the node's failure notices and the liveness of the peers'
// processes. Host or device buffers: the adapter copies and combines.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/work.hpp"
#include "node/mailbox.hpp"
#include "ring/rank_run.hpp"
#include "ruccl/communicator.hpp"  // CollectiveKind

namespace ruccl::world {

struct NodeRunOptions {
  std::uint64_t seq = 0;                 // the collective (errors name it)
  std::size_t message_elements = 1;      // from the byte budget (ring::message_elements)
  std::chrono::milliseconds timeout{0};  // deadline of each step
  // The group's rank g is node rank peer_base + g * peer_stride - the node's
  // first global rank (a sub-ring of the world: the ranks with one local index).
  std::size_t peer_base = 0;
  std::size_t peer_stride = 1;
  // The collective, named in front of every error ("collective #7
  // (all_reduce)", core::describe; made only then); none: "collective #<seq>".
  std::optional<CollectiveKind> kind{};
  // A piece's worth of host memory a reduction reads a peer's piece into,
  // kept by the caller across collectives (per local rank); null: the run's own.
  std::vector<std::byte>* scratch = nullptr;
  // Toward a rank that reads directly (Mailbox::reads_directly), host
  // buffers: every message goes as addresses (RUCCL_INTRA_NODE_TRANSPORT=
  // shm-direct), or else those of a copy step (Combine::kCopy) of at most
  // `direct_copy_bytes` each (Config::node_direct_bytes; 0: none).
  bool direct_all = false;
  std::size_t direct_copy_bytes = 0;
};

class NodeRun final : public ring::RankRun {
 public:
  // `work` holds this rank's buffers at index `local`; `rank`/`world` are the
  // algorithm's (its group's).
  NodeRun(node::Mailbox& box, DeviceAdapter& adapter, Work& work, std::size_t local,
          std::size_t rank, std::size_t world, NodeRunOptions options);

  std::size_t rank() const override { return rank_; }
  std::size_t world() const override { return world_; }
  std::size_t message_elements() const override { return options_.message_elements; }
  Status step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
              Combine combine) override;
  // The largest piece a reduction combined from staging, a slot of the
  // segment or the scratch (at most one message, at most channel_piece): the
  // memory one message in flight holds. The channels themselves are fixed at
  // creation; copies are not counted (as over UCX, where they land in place).
  std::size_t peak_staging_bytes() const override { return peak_staging_; }

 private:
  // One peer's messages of the step in one direction, in order, and how far
  // they went (message `at`, elements `done` of it).
  struct Stream {
    std::size_t node_peer = 0;
    std::vector<const Transfer*> messages;
    std::size_t at = 0;
    std::size_t done = 0;
    bool direct = false;  // pieces as addresses (outs: to drain before the step ends)
  };
  std::size_t node_rank(std::size_t group_rank) const {
    return options_.peer_base + group_rank * options_.peer_stride - box_.shape().first;
  }
  Status file(std::vector<Stream>& streams, const Transfer& t);
  // The message a piece belongs to, in its header: the collective's sequence
  // number, the step, the message's index among the step's to that peer.
  std::uint64_t stamp(const Stream& s) const {
    return options_.seq << 32 | std::uint64_t{step_} << 16 | (s.at & 0xffff);
  }
  // The piece a message of `count` elements is cut into, alike on both
  // sides: channel_piece, but a reduction's message into at least
  // kMinPieces pieces of at least kMinPieceBytes, so that the receiver
  // reduces one piece while the sender copies the next (np=2 reduce of 256
  // KiB, one piece before: the two copies ran one after the other); not on
  // an oversubscribed node, where the ranks take turns on the cores and
  // every piece is a hand-off (np=4 on 2 cores, all-reduce of 128-256 KiB:
  // 1.1-1.5x the time of whole messages). Every process of the node reads
  // the same online CPU count, so both sides cut alike.
  static constexpr std::size_t kMinPieces = 4;
  static constexpr std::size_t kMinPieceBytes = std::size_t{16} << 10;
  std::size_t piece_of(std::size_t count, Combine combine) const {
    if (combine == Combine::kCopy || box_.oversubscribed()) return piece_elements_;
    const std::size_t floor = std::max<std::size_t>(1, kMinPieceBytes / dtype_size(work_.dtype));
    const std::size_t quarter = (count + kMinPieces - 1) / kMinPieces;
    return std::min(piece_elements_, std::max(floor, quarter));
  }
  // Whether every message of `s` lies in one of this process's regions
  // (Communicator::allocate_host): the peer reads it in place.
  bool in_regions(const Stream& s) const;
  Result<bool> push(Stream& s, Combine combine);  // pieces out while slots are free
  // Pieces in while published, at most `max_pieces`.
  Result<bool> pull(Stream& s, Combine combine, std::size_t max_pieces);
  bool ready() const;                             // a push or pull could progress
  bool drained() const;                           // every address-piece of the step released
  void withdraw_offered() noexcept;               // the address pieces of the step not yet released
  Status run(Combine combine, std::chrono::steady_clock::time_point deadline);

  node::Mailbox& box_;
  DeviceAdapter& adapter_;
  Work& work_;
  const std::size_t local_, rank_, world_, me_;  // me_: this rank's node rank
  const NodeRunOptions options_;
  std::size_t piece_elements_ = 1;
  std::uint32_t step_ = 0;
  // This step's (kept across steps: no allocation once warm).
  std::vector<Stream> outs_, ins_;
  std::size_t outs_used_ = 0, ins_used_ = 0;
  std::vector<Transfer> self_;
  std::vector<std::size_t> watch_;
  std::vector<std::byte> own_scratch_;
  std::size_t peak_staging_ = 0;
  std::chrono::steady_clock::time_point deadline_{};  // of the step in progress
};

}  // namespace ruccl::world
