// The in-process native communicator: an ordered group of distinct devices, one
// thread per device rank.
//
// Every call blocks its rank's thread until the collective (a "generation")
// completes on every rank, and then returns the same outcome on every rank: all
// succeed, or all get the same typed error naming the rank and the collective's
// sequence number. Generations are reusable: call collectives back to back.
// Ranks must call the same collectives, in the same order, with agreeing
// arguments (dtype, counts/shape, op, root); a disagreement is a typed error.
//
// Forms of every collective:
//   value form   all_reduce(rank, in, op) -> Tensor: a new tensor; `in` is unchanged.
//   into form    all_reduce_into(rank, in, out, op): the caller's output view.
//   in-place     the into form with out.data == in.data (all_gather: `in` is the
//                rank's block inside `out`; reduce_scatter: `out` is the rank's
//                shard inside `in`, as in NCCL).
// Views must stay valid until the call returns on this rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "ruccl/config.hpp"
#include "ruccl/device.hpp"
#include "ruccl/status.hpp"
#include "ruccl/tensor.hpp"

namespace ruccl {

class Communicator;
namespace core {
class RemoteRanks;
class FaultPlan;
}  // namespace core
namespace bootstrap {
class Bootstrap;
}  // namespace bootstrap

enum class CollectiveKind : std::uint8_t {
  kAllReduce, kReduce, kBroadcast, kAllGather, kReduceScatter, kAllToAllV
};
std::string_view collective_name(CollectiveKind kind) noexcept;

struct CallOptions {
  // Overrides Config::max_chunk_bytes for this call (all ranks must agree).
  std::optional<std::size_t> max_chunk_bytes;
};

// The staging memory of one rank in one collective (Communicator::last_staging).
//
// Staging is memory a rank holds for message payload on its way between the
// wire and the rank's own buffers, counted from what the executor really
// allocated (the most held at once during the collective), not from a formula:
//   - in-process (every rank in this process, and the local levels of a
//     hierarchical collective): 0. A rank reads its peer's range straight from
//     the peer's memory, so nothing is staged and the budget cuts nothing.
//   - across processes, host buffers (and device buffers UCX moves itself):
//     copies land in place (all_gather, broadcast, all_to_all_v: 0); a
//     reduction receives each message into a buffer first and combines it,
//     two messages per peer in flight where two fit max_chunk_bytes (the
//     next arrives while one is combined; messages between processes carry
//     at most 1 MiB, so from a 2 MiB budget on), else one at a time: the
//     peak is at most max_chunk_bytes, or the largest message where one is
//     all the budget holds (one or two buffers per peer a step receives
//     from; every algorithm here receives from one peer per reducing step).
//   - across processes, device buffers UCX cannot move (the staged pipeline):
//     its host buffers: (peers sent to + peers received from in a step) x 2
//     slots x one message, i.e. up to 4 x max_chunk_bytes for a ring step.
//   - a small all-reduce run one-shot (Config::one_shot_bytes): the other
//     n-1 ranks' inputs, held for the whole call (within max_chunk_bytes: the
//     fast path is taken only then).
// Not counted: scratch of the engine (the partial sums of reduce, the work
// buffer of out-of-place reduce_scatter), result tensors, UCX's own buffers,
// the transport's header frames (72 B per message, which also carry payloads
// below about 8 KiB inline: with a budget that small, every message of an
// exchange is copied there), and device-side staging inside
// the CUDA adapter (cross-GPU copies without peer access).
struct StagingStats {
  std::uint64_t sequence = 0;    // the collective (its sequence number on this rank)
  std::size_t peak_bytes = 0;    // the most staging bytes this rank held at once
  std::size_t budget_bytes = 0;  // the max_chunk_bytes the call ran under
};

// all_to_all_v's result: rows received from each source, in source-rank order.
struct AllToAllV {
  Tensor data;                          // shape [sum(recv_counts), row...]
  std::vector<std::size_t> recv_counts;  // rows from each source rank
};

class Communicator {
 public:
  // A group of distinct devices in the caller's exact rank order, served by `adapter`.
  static Result<std::shared_ptr<Communicator>> create(std::vector<DeviceId> devices,
                                                      std::shared_ptr<DeviceAdapter> adapter,
                                                      Config config);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // Ranks in the whole group (all processes). This process serves the ranks
  // first_rank() .. first_rank() + devices().size() - 1; in-process, all of them.
  std::size_t world_size() const;
  std::size_t first_rank() const;
  const std::vector<DeviceId>& devices() const;
  const Config& config() const;

  // --- all-reduce: every rank gets the reduction of all inputs.
  Result<Tensor> all_reduce(std::size_t rank, const TensorView& in, ReduceOp op, CallOptions = {});
  Status all_reduce_into(std::size_t rank, const TensorView& in, const TensorView& out,
                         ReduceOp op, CallOptions = {});
  // --- reduce: the root gets the reduction; other ranks get nothing (their
  //     `out` is not touched and may be empty).
  Result<std::optional<Tensor>> reduce(std::size_t rank, const TensorView& in, ReduceOp op,
                                       std::size_t root, CallOptions = {});
  Status reduce_into(std::size_t rank, const TensorView& in, const TensorView& out, ReduceOp op,
                     std::size_t root, CallOptions = {});
  // --- broadcast: exactly one rank (the root) passes a tensor, the others pass none.
  Result<Tensor> broadcast(std::size_t rank, const TensorView* in, CallOptions = {});
  // The root's `in` is copied into every rank's `out` (the root's too, unless in-place).
  Status broadcast_into(std::size_t rank, const TensorView* in, const TensorView& out,
                        CallOptions = {});
  // --- all-gather: inputs of shape [rows, ...] (equal on all ranks) are
  //     concatenated in rank order along axis 0: [world*rows, ...].
  Result<Tensor> all_gather(std::size_t rank, const TensorView& in, CallOptions = {});
  Status all_gather_into(std::size_t rank, const TensorView& in, const TensorView& out,
                         CallOptions = {});
  // --- reduce-scatter: the reduction of inputs [rows, ...] is split along axis 0
  //     into world balanced shards (the first rows % world ranks get one row more);
  //     rank r gets shard r. In-place: pass `out` = shard r inside `in`
  //     (in.data + its row offset); `in` then holds partial sums elsewhere.
  Result<Tensor> reduce_scatter(std::size_t rank, const TensorView& in, ReduceOp op,
                                CallOptions = {});
  Status reduce_scatter_into(std::size_t rank, const TensorView& in, const TensorView& out,
                             ReduceOp op, CallOptions = {});
  // --- all-to-all-v: `in` holds rows [sum(send_counts), row...], sent to rank
  //     d in blocks in destination order; send_counts[d] rows go to rank d.
  //     Row widths and dtypes must agree across ranks.
  Result<AllToAllV> all_to_all_v(std::size_t rank, const TensorView& in,
                                 std::span<const std::size_t> send_counts, CallOptions = {});
  // `out` must hold at least the received rows; recv_counts gets the rows per source.
  Status all_to_all_v_into(std::size_t rank, const TensorView& in,
                           std::span<const std::size_t> send_counts, const TensorView& out,
                           std::vector<std::size_t>& recv_counts, CallOptions = {});

  // --- barrier: returns on each rank once every rank has called it (a
  //     collective of no data: it is numbered and agreed like the others).
  Status barrier(std::size_t rank);

  // --- split (MPI_Comm_split, ncclCommSplit): collective over every rank of
  //     this communicator. The ranks passing one color >= 0 form a new
  //     communicator, ranked by (key, rank here); kNoColor: none for this rank
  //     (Split::comm is null). The ranks of one color in one process get the
  //     same Communicator object and use it from their threads as here.
  //     In-process: an in-process communicator of those devices. Spanning
  //     processes: it opens nothing (no endpoint, no segment) and sends
  //     through this one's UCX transports under a communicator slot of its
  //     own (at most 40 live at once on one rank); its collectives between
  //     processes go over UCX, not yet through the node's shared memory.
  //     A child and its parent (or two children) may be called at once from
  //     different threads, in any order relative to each other: on a shared
  //     transport their messages take turns (a UCX worker per local rank).
  //     Shared transports are one failure domain: a transport failure (a dead
  //     peer, a timeout, an abort) ends this communicator and every one split
  //     from it; a typed error of a call (a mismatch, a bad argument) stays in
  //     its communicator. Across processes a group needs the same number of
  //     ranks in each of its processes, consecutive in the new order (keys that
  //     keep a process's ranks together, e.g. the rank here, do):
  //     kInvalidArgument otherwise, on every rank of that color. A color below
  //     kNoColor is kInvalidArgument on every rank.
  static constexpr std::int64_t kNoColor = -1;
  struct Split {
    std::shared_ptr<Communicator> comm;  // null: this rank passed kNoColor
    std::size_t rank = 0;                // this rank's rank in `comm`
  };
  Result<Split> split(std::size_t rank, std::int64_t color, std::int64_t key);

  // Wakes every blocked rank with kAborted and makes every later call fail with
  // kAborted. Never waits for the blocked ranks. Across processes, the ranks of
  // other processes get kAborted at once too ("rank R aborted the communicator
  // in|before collective #S: <reason>"): each local rank's transport sends a
  // failure notice, from this thread when that rank is not inside a transport
  // call (bounded: at most ~0.5 s per local rank, a few ms normally), else from
  // the rank's own thread as its call returns. Any thread, any time.
  void abort(std::string reason);
  bool aborted() const;
  // Sequence number of the next collective `rank` will call (0 first).
  std::uint64_t next_sequence(std::size_t rank) const;
  // The staging of `rank`'s last collective that succeeded (see StagingStats).
  // Recorded by the rank's own thread when its call returns (a few relaxed
  // stores per collective); read it from that thread after the call, or once
  // the call has returned. kInvalidArgument: a rank this communicator does not
  // serve, or one that has completed no collective yet.
  Result<StagingStats> last_staging(std::size_t rank) const;

  // --- host memory for collectives' buffers (as ncclMemAlloc): `bytes` of
  //     zero-filled, page-aligned host memory, freed when the last copy of the
  //     pointer goes (it may outlive the communicator). Where this
  //     communicator's processes share a node segment, the node's other
  //     processes read it in place: a collective whose buffers lie in such
  //     memory skips the copy through the segment (two processes then move
  //     bytes as two threads do). At most 16 such allocations live per
  //     process (kOutOfMemory beyond); elsewhere (in-process, across nodes
  //     only) it is plain memory. Do not free it while a collective uses it.
  //     kInvalidArgument for 0 bytes. Any thread.
  Result<std::shared_ptr<std::byte>> allocate_host(std::size_t bytes);
  // Whether allocate_host's memory is read in place by the node's other
  // processes (this communicator's processes share a node segment).
  bool shares_host_memory() const;

  struct Impl;

 private:
  friend Result<std::shared_ptr<Communicator>> make_communicator(
      std::vector<DeviceId>, std::shared_ptr<DeviceAdapter>, Config,
      std::unique_ptr<core::RemoteRanks>, std::shared_ptr<const core::FaultPlan>);
  // A split by member list, collective over the members only (internal:
  // src/core/remote_ranks.hpp).
  friend Result<std::shared_ptr<Communicator>> split_members(Communicator&, std::size_t,
                                                             std::span<const std::size_t>,
                                                             bootstrap::Bootstrap&, const Config*);
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Returns the same communicator for the same ordered device group (until that
// one is aborted; then a fresh one). One registry per adapter; no global state.
class CommunicatorRegistry {
 public:
  CommunicatorRegistry(std::shared_ptr<DeviceAdapter> adapter, Config config);
  Result<std::shared_ptr<Communicator>> communicator(const std::vector<DeviceId>& devices);
  const Config& config() const { return config_; }
  // Aborts and forgets every communicator.
  void clear(const std::string& reason);

 private:
  std::shared_ptr<DeviceAdapter> adapter_;
  Config config_;
  std::mutex mutex_;
  std::map<std::vector<DeviceId>, std::shared_ptr<Communicator>> groups_;
};

}  // namespace ruccl
