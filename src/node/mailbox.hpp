// The mailboxes of a node's ranks in its shared segment (segment.hpp): one
// slot per rank and parity of the collective's sequence number, a failure
// notice per rank, and each process's pid. A rank writes its message (a
// fingerprint record, a small collective's input riding along) into its own
// slot for collective `seq` and publishes it with a release store of seq + 1;
// every rank reads every slot of `seq` in place. Two slots per rank suffice:
// a rank writes the slot of seq + 2 only after every rank published seq + 1,
// that is after every rank finished reading seq.
//
// Waits poll a few times (with a pause for up to 1 us where every rank has a
// core), then yield (up to 1 ms where every rank has a core,
// 50 us on an oversubscribed node), then sleep on the waiting rank's own futex
// bell, rung by what it may wait for (await), so that oversubscribed runs do
// not burn the cores and a piece wakes only its consumer. Every
// wait has a deadline, ends on the abort flag, on a failure notice of any rank
// of the node (the mailbox stays failed: every later wait returns it), and on
// the death of the awaited rank's process (pidfd; kPeerFailure naming it)
// within kLivenessPeriod.
//
// The bytes in the segment come from other processes: lengths are checked
// against the slot before use; what a slot holds is the reader's to validate.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/yield_window.hpp"
#include "node/regions.hpp"
#include "node/segment.hpp"
#include "ruccl/status.hpp"

namespace ruccl::node {

using Clock = std::chrono::steady_clock;
using Tag = std::array<std::uint8_t, 16>;

inline constexpr auto kLivenessPeriod = std::chrono::milliseconds(20);

// Each rank has two lanes of slots: kFull carries the agreement of every
// collective (a fingerprint record, a small input riding along); kLean the
// lean path of a small collective (a short fingerprint and the input). A rank
// that tries the lean path and finds a peer on the full lane falls back to
// the agreement, in the same collective (world_agreement.cpp).
enum class Lane : std::uint8_t { kFull = 0, kLean = 1 };

struct MailboxShape {
  std::size_t ranks = 0;          // ranks of the node (processes x per_process)
  std::size_t processes = 0;      // processes of the node
  std::size_t per_process = 1;    // ranks per process
  std::size_t slot_bytes = 0;     // message capacity of one full-lane slot
  std::size_t lean_bytes = 0;     // ... of one lean-lane slot
  std::size_t first = 0;          // global rank of the node's rank 0 (errors name global ranks)
  std::size_t first_process = 0;  // world process index of the node's process 0
  // The channels (bulk data of larger collectives, node_run.hpp): one per
  // ordered pair of node ranks, `channel_slots` pieces of `channel_piece`
  // bytes in flight each. 0 slots: none.
  std::size_t channel_slots = 0;
  std::size_t channel_piece = 0;
};

// The channel geometry for `ranks` node ranks: kChannelSlots pieces of at
// most kChannelPiece bytes per ordered pair, the piece cut (to a multiple of
// 4 KiB, at least 4 KiB) so that all channels together stay within
// kChannelBound bytes; a node of more than kChannelRanks ranks has none (its
// data goes over UCX: the pairs grow with the square of the ranks).
inline constexpr std::size_t kChannelRanks = 64;
inline constexpr std::size_t kChannelSlots = 4;
inline constexpr std::size_t kChannelPiece = std::size_t{256} << 10;
inline constexpr std::size_t kChannelBound = std::size_t{64} << 20;
std::size_t channel_piece_for(std::size_t ranks);

// A memory page here: the channels' pieces and the lean broadcast root's
// share (world_agreement.cpp) are whole ones.
inline constexpr std::size_t kPageBytes = 4096;

// Bytes of the segment for `shape`: a 256-byte control block, 64 bytes per
// process, 512 per rank's notice, and per rank 2 parities x (64 + slot_bytes
// rounded up to 64) on the full lane and 2 x (64 + lean_bytes, rounded) on
// the lean one; then per ordered pair of ranks a channel of 128 bytes of
// counters and channel_slots x (64 + channel_piece rounded up to 64); then
// per process a table of kRegionsPerProcess x kRegionBytes (regions.hpp).
std::size_t segment_bytes(const MailboxShape& shape);
// Where each part of a segment of `shape` lies (offsets and strides in bytes).
struct SegmentLayout {
  std::size_t processes_at, notices_at, bells_at, slots_at, full_stride, lean_stride, rank_stride,
      channels_at, piece_stride, channel_stride, regions_at, total;
};
SegmentLayout layout_of(const MailboxShape& shape);

class Mailbox {
 public:
  // The creator lays the segment out (a zero-filled one) and stamps it with
  // `tag` (a MAC of the job token: a process that opened another job's
  // segment finds another tag).
  static void lay_out(Segment& segment, const MailboxShape& shape, const Tag& tag);
  // Every process: the segment checked against the shape and the tag, this
  // process's pid registered (process `process` of the node). `abort`: the
  // communicator's abort flag (outlives the mailbox).
  static Result<Mailbox> attach(Segment segment, const MailboxShape& shape, const Tag& tag,
                                std::size_t process, const std::atomic<bool>* abort);
  // After every process attached: the pids of the others, watched (pidfd).
  // This process tries to read every other's memory (process_vm_readv of a
  // word it published) and says whether it can (reads_directly).
  Status watch_processes();

  Mailbox(Mailbox&&) noexcept = default;
  Mailbox& operator=(Mailbox&&) noexcept = default;
  ~Mailbox() = default;

  const MailboxShape& shape() const { return shape_; }
  // Whether the node's ranks outnumber its online CPUs (they then take turns
  // on the cores: every hand-off between them costs a switch), or the
  // creation found more of the world's ranks on this machine than cores
  // (set_oversubscribed: hosts made of namespaces share the machine's cores).
  // The same on every process of the node.
  bool oversubscribed() const { return oversubscribed_; }
  void set_oversubscribed(bool machine) {
    oversubscribed_ = oversubscribed_ || machine;
    spin_ = spin_ && !machine;
  }
  void close_segment_fd() { segment_.close_fd(); }
  // The slot of node rank `rank` for collective `seq` on `lane`: the lane's
  // capacity (slot_bytes, lean_bytes) to write.
  std::span<std::byte> slot(std::size_t rank, std::uint64_t seq, Lane lane) const;
  // Publishes `bytes` (<= the lane's capacity) written into slot(rank, seq, lane).
  void publish(std::size_t rank, std::uint64_t seq, std::size_t bytes, Lane lane);
  // The message node rank `rank` published for `seq`, in place (valid until
  // this rank publishes seq + 1): on the full lane; waiting on the lean lane,
  // on either (the full lane wins: that rank went, or fell back, to the
  // agreement). Callable from one thread per local rank; `me` is the waiting
  // node rank (it sleeps on its own bell). `expect`: the bytes the waiter
  // expects on the lean lane (its own input's, on a collective of equal
  // inputs); where they are a few lines (up to 320 B with the flag's), those
  // past the flag's are fetched at every poll along with the flag, so that
  // such a message costs its reader one miss's time, not two in a row
  // (NCCL's LL128 puts a flag in every line for that; a fetch is only a
  // hint: the flag's acquire still orders the reads).
  struct Message {
    Lane lane = Lane::kFull;
    std::span<const std::byte> bytes;
  };
  Result<Message> wait(std::size_t me, std::size_t rank, std::uint64_t seq,
                       Clock::time_point deadline, Lane lane = Lane::kFull, std::size_t expect = 0);
  // Fetches the lines of node rank `rank`'s lean slot of `seq` that a
  // message of `expect` bytes fills, without waiting, where they are a few
  // (a hint, as above; wait's poll).
  void prefetch_lean(std::size_t rank, std::uint64_t seq, std::size_t expect) const;
  // ---- Channels: node rank `from` to node rank `to` (from != to), one
  // producer and one consumer; pieces are numbered from 0 over the
  // communicator's life, piece i in slot i % channel_slots.
  // The next piece the producer writes / the consumer reads.
  std::uint64_t written(std::size_t from, std::size_t to) const;
  std::uint64_t consumed(std::size_t from, std::size_t to) const;
  // Producer: whether piece `piece` has a free slot; the slot (channel_piece
  // bytes); publishing `bytes` of it, or (address != 0) a piece that stays in
  // the producer's memory at `address`, for the consumer to read itself
  // (read_from) before it releases the slot.
  bool writable(std::size_t from, std::size_t to, std::uint64_t piece) const;
  std::span<std::byte> piece_slot(std::size_t from, std::size_t to, std::uint64_t piece) const;
  // `stamp` names the message (collective, step, index), checked by the reader.
  void publish_piece(std::size_t from, std::size_t to, std::uint64_t piece, std::size_t bytes,
                     std::uint64_t address = 0, std::uint64_t stamp = 0);
  // Consumer: piece `piece` when published (ready), checked to hold `bytes`
  // under its number (kProtocolError naming `from` otherwise): in the slot,
  // or at `address` in the producer's memory; releasing its slot once combined.
  struct Piece {
    bool ready = false;
    std::span<const std::byte> bytes;  // in the slot (address == 0)
    std::uint64_t address = 0;
  };
  Result<Piece> readable(std::size_t from, std::size_t to, std::uint64_t piece, std::size_t bytes,
                         std::uint64_t stamp = 0) const;
  void release_piece(std::size_t from, std::size_t to, std::uint64_t piece);
  // Whether node rank `rank`'s process can read the memory of every process
  // of the node (watch_processes). Producers toward it publish addresses only then.
  bool reads_directly(std::size_t rank) const;
  // This process's regions (Communicator::allocate_host; regions.hpp).
  const std::shared_ptr<Regions>& regions() const { return regions_.get(); }
  // Consumer of a piece at `address` in the memory of node rank `from`'s
  // process: those bytes mapped here when they lie in one of that process's
  // regions, else null (read_from reads them then).
  const std::byte* view(std::size_t from, std::uint64_t address, std::size_t bytes) const;
  // Consumer of channel from -> to: `bytes` at `address` in the memory of
  // node rank `from`'s process into `dst` (a copy from this process's mapping
  // where they lie in one of that process's regions, else process_vm_readv, also within this
  // process: a bad address is an error, never a fault), unless the producer
  // withdrew its addresses (withdraw): then the node's failure notice (waited
  // for until `deadline`). kPeerFailure when that process is gone.
  Status read_from(std::size_t from, std::size_t to, std::uint64_t address, void* dst,
                   std::size_t bytes, Clock::time_point deadline);
  // The same for a write of `bytes` at `src` (this process's memory) into
  // node rank `from`'s memory at `address` (process_vm_writev), which `from`
  // published as a target (the lean broadcast's receivers): guarded alike,
  // so that once `from` withdrew no write starts and none is in progress
  // (but for withdraw's one exception: a writer stopped inside it, by
  // SIGSTOP or a debugger, for a second past the owner's deadline, whose
  // write, resumed, lands in the failed collective's output after the
  // owner returned).
  Status write_to(std::size_t from, std::size_t to, std::uint64_t address, const void* src,
                  std::size_t bytes, Clock::time_point deadline);
  // The same protection for a read of `from`'s memory the consumer makes
  // itself (through view()): `read` runs only if the producer has not
  // withdrawn, and withdraw waits for it to end.
  template <typename Read>
  Status read_guarded(std::size_t from, std::size_t to, Clock::time_point deadline, Read&& read);
  // Producer of channel from -> to, whose step failed with address pieces not
  // yet released: no read of its memory starts after this, and none is in
  // progress when it returns (or the consumer's process died, or a read is
  // still in progress a second past `deadline`: a reader stopped in the
  // middle of one, by SIGSTOP or a debugger, must not hang this rank; what
  // it reads belongs to a failed collective, the failure its rank reports).
  // The channel stays closed: after a failure the node's mailbox stays
  // failed anyway.
  void withdraw(std::size_t from, std::size_t to, Clock::time_point deadline);
  static constexpr auto kWithdrawGrace = std::chrono::seconds(1);
  // The lean path's direct form (world_agreement.cpp), on the words of
  // channel from -> to: node rank `to` is done with node rank `from`'s input
  // of collective `seq` (read it, or needed none of it), and rings `from`;
  // whether it said so for `seq` (or later).
  void lean_done(std::size_t from, std::size_t to, std::uint64_t seq);
  bool lean_released(std::size_t from, std::size_t to, std::uint64_t seq) const;
  // The lean path's direct all-reduce (world_agreement.cpp): node rank
  // `rank` has reduced its shard of collective `seq` into its output, where
  // the others read it, and rings every rank; whether it said so for `seq`
  // (or later). A word per rank beside its bell.
  void lean_stage(std::size_t rank, std::uint64_t seq);
  bool lean_staged(std::size_t rank, std::uint64_t seq) const;
  // Waits until `ready()` holds, like wait(): spin, yield, then the futex;
  // ends with the notices, the abort flag, the death of a process of the
  // node ranks in `watch`, or kTimeout at `deadline` (its text: "waiting for
  // " + what()). `me`, the waiting node rank, sleeps on its own bell: a
  // publish on a lane and a notice ring every rank's, a piece its consumer's,
  // a release its producer's (only a rank that sleeps costs a wake-up).
  template <typename Ready, typename What>
  Status await(std::size_t me, std::span<const std::size_t> watch, Clock::time_point deadline,
               Ready&& ready, What&& what);

  // Posts node rank `rank`'s failure notice of collective `seq` (once per
  // rank; later calls do nothing) and wakes every waiter of the node.
  void notify(std::size_t rank, std::uint64_t seq, const Status& error);
  // kPeerFailure naming it if the process of node rank `rank` has exited
  // (its pidfd turned readable). Any thread.
  Status alive(std::size_t rank) const;

 private:
  Mailbox(Segment segment, const MailboxShape& shape, const std::atomic<bool>* abort)
      : segment_(std::move(segment)),
        shape_(shape),
        layout_(layout_of(shape)),
        abort_(abort),
        oversubscribed_(core::outnumber_cores(shape.ranks)),
        spin_(!oversubscribed_ && !core::crowd_cores(shape.per_process)) {}
  std::byte* at(std::size_t offset) const { return segment_.data() + offset; }
  std::byte* slot_at(std::size_t rank, std::uint64_t seq, Lane lane) const;
  // The first notice posted (the mailbox's lasting error); ok if none.
  Status notice() const;
  std::string name(std::size_t rank) const;  // "rank R (process P, pid N)"
  std::byte* bell_at(std::size_t rank) const;
  void ring(std::size_t rank);  // wakes node rank `rank` if it sleeps
  void ring_all();
  std::byte* channel_at(std::size_t from, std::size_t to) const;
  // The waiting of wait() and await(): `ready` is polled; kOk when it held.
  struct Waiting {
    virtual bool ready() = 0;
    virtual std::string what() = 0;
    virtual ~Waiting() = default;
  };
  Status wait_until(std::size_t me, std::span<const std::size_t> watch, Clock::time_point deadline,
                    Waiting& waiting);

  Segment segment_;
  MailboxShape shape_;
  SegmentLayout layout_;  // of shape_, computed once: every slot and wait reads it
  const std::atomic<bool>* abort_ = nullptr;
  bool oversubscribed_ = false;
  // Whether its waits poll with a pause before they yield: not where the
  // ranks outnumber the cores, of the machine or of this process's CPU
  // affinity (core::crowd_cores; may differ between processes).
  bool spin_ = true;
  std::size_t process_ = 0;       // this process's index on the node
  std::vector<UniqueFd> pidfds_;  // per process of the node (-1: this one, or none)
  std::vector<pid_t> pids_;
  RegionsHandle regions_;  // after segment_: detached before the tables are unmapped
  // read_guarded's halves: raises the consumer's `reading` flag, or returns
  // the error of a producer that withdrew (flag lowered again); lowers it.
  Status begin_read(std::size_t from, std::size_t to, Clock::time_point deadline);
  // read_from's and write_to's system calls, guarded: into `here` (a read)
  // or from it (a write).
  Status cross(std::size_t from, std::size_t to, std::uint64_t address, std::byte* here,
               std::size_t bytes, Clock::time_point deadline, bool write);
  void end_read(std::size_t from, std::size_t to);
};

template <typename Read>
Status Mailbox::read_guarded(std::size_t from, std::size_t to, Clock::time_point deadline,
                             Read&& read) {
  RUCCL_TRY(begin_read(from, to, deadline));
  Status s = Status::ok();
  try {
    s = read();
  } catch (...) {
    end_read(from, to);
    throw;
  }
  end_read(from, to);
  return s;
}

template <typename Ready, typename What>
Status Mailbox::await(std::size_t me, std::span<const std::size_t> watch,
                      Clock::time_point deadline, Ready&& ready, What&& what) {
  struct W final : Waiting {
    W(Ready& r, What& w) : r_(r), w_(w) {}
    bool ready() override { return r_(); }
    std::string what() override { return w_(); }
    Ready& r_;
    What& w_;
  } w(ready, what);
  return wait_until(me, watch, deadline, w);
}

}  // namespace ruccl::node
