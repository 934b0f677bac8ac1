// Algorithm selection: one pure function decides how a collective runs, from
// the agreed plan, where the ranks are, and a size-range table built once
// from the Config (UCC's selection string and MSCCL++'s selectAlgorithm are
// the models).
//
// The table is a list of rules in priority order; choose_algorithm takes the
// first rule of the collective whose byte range holds the call and whose
// algorithm can run there (feasible()), else kInProcess.
//
// RUCCL_ALGO / Config::algorithm is a ';'-separated list of items, each one of
//   hierarchical | flat_ring | flat   the strategy across processes (shorthands,
//                                     as before: GlobalStrategy)
//   <collective>:<rules>              forces algorithms for one collective, ahead
//                                     of the defaults; <rules> is '#'-separated
//                                     [<lo>-<hi>:]@<algorithm>, the range half
//                                     open [lo, hi) in bytes with k/m/g suffixes
//                                     (powers of 1024) and hi 'inf' for no bound;
//                                     no range: every size
// e.g. RUCCL_ALGO='flat_ring;all_reduce:0-4k:@one_shot#4k-inf:@flat_ring'.
// <collective> is a collective_name() (all_reduce, reduce, broadcast,
// all_gather, reduce_scatter, all_to_all_v); <algorithm> an algorithm_name().
// A forced algorithm that cannot run where it is asked (hierarchical for an
// all-to-all-v, one_shot for device buffers) falls through to the next rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ruccl/communicator.hpp"
#include "ruccl/config.hpp"
#include "ruccl/status.hpp"
#include "ruccl/types.hpp"

namespace ruccl::core {

enum class Algorithm : std::uint8_t {
  // The collective's src/ring algorithm over the in-process executor: every
  // rank of the world is in this process.
  kInProcess,
  // The collective's src/ring algorithm with every step a transport message
  // (TransportRun), also between ranks of one process.
  kFlatRing,
  // Every collective but the all-to-all-v: the local level in-process, then
  // across processes (through the node's channels when the world is on one
  // node, else over UCX), with a node level through the node's shared memory
  // between the two where the world spans nodes (ring/hierarchical_*.cpp).
  kHierarchical,
  // All-reduce: each rank's input rides with its fingerprint; the sum is
  // taken over the delivered inputs (ring/one_shot_all_reduce.cpp).
  kOneShot,
  // All-reduce, reduce, broadcast or all-gather, every rank of the world on
  // one node: one round through the node's shared-memory mailboxes
  // (node/mailbox.hpp), no engine, rendezvous or UCX; the fingerprint rides
  // in the same slot (RemoteRanks::lean_post, lean_collect).
  kNodeMailbox,
};
std::string_view algorithm_name(Algorithm a) noexcept;

// Where the ranks are: the same for every call of a communicator.
struct Topology {
  std::size_t world = 1;      // ranks in all processes
  std::size_t local = 1;      // ranks in this process (every process has as many)
  bool remote = false;        // there is a transport to other processes
  bool host_buffers = true;   // the ranks' buffers are host memory
  bool node_mailbox = false;  // every rank of the world shares this node's mailboxes
  // Ranks of this node, where the world spans nodes that each share memory
  // between their processes (a hierarchical collective gets a node level);
  // 0: no node level.
  std::size_t node = 0;
  // The host reductions run on 512-bit vectors (lean_reduction_direct).
  bool wide_reductions = true;
};

// What of one call the choice reads (from the plan, or before the agreement
// from this rank's own request).
struct CallShape {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::size_t bytes = 0;          // of the (common) input
  std::size_t budget = SIZE_MAX;  // max_chunk_bytes
  // Bytes one message of the agreement can carry beside the fingerprint.
  std::size_t fused_capacity = 0;
  // One-shot only: every rank's input was delivered with its fingerprint
  // (Plan::one_shot). Before the agreement, a rank asks with `true` whether
  // to send its input along.
  bool inputs_delivered = false;
  // kNodeMailbox only: asked before the agreement, with `fused_capacity` the
  // lean lane's (RemoteRanks::lean_capacity).
  bool lean_offer = false;
  // kNodeMailbox only: inputs of at least this many bytes go in the direct
  // form (RemoteRanks::lean_direct_bytes); 0: none.
  std::size_t lean_direct = 0;
  bool operator==(const CallShape&) const = default;
};

// The node_mailbox rows: every collective up to kNodeMailboxBytes, and while
// all ranks' inputs together stay within kNodeMailboxTotalBytes (each rank
// reads every other's: 64 KiB at 4 ranks, 8 KiB at 32).
inline constexpr std::size_t kNodeMailboxBytes = std::size_t{64} << 10;
inline constexpr std::size_t kNodeMailboxTotalBytes = std::size_t{256} << 10;
// The collectives that only copy (broadcast, all-gather, all-to-all-v) have
// a direct form besides (lean_copy_direct below): each reader copies the
// input straight from its owner's memory. Past the slot that form goes on, a
// broadcast up to 2 MiB and an all-gather up to 4 MiB per rank at first
// (np=2, `ruccl-perf --world --peers mpi -b 64K -e 8M`, p50 ratio to Open
// MPI, out of place / in place, these caps alternated twice with the
// slot's: broadcast 128 KiB-1 MiB 0.78-0.94 / 0.99-1.15 against 1.11-1.32 /
// 1.11-1.59, 2 MiB 0.72-0.83 / 1.05-1.07 against 0.99-1.01 / 1.11-1.12, 4
// MiB 0.72-0.77 / 1.02-1.03 against 0.73-0.78 / 0.79-0.81, so 2 MiB;
// all-gather (output bytes) 128 KiB-8 MiB in place 0.79-1.08 against
// 1.09-1.72, out of place 0.71-1.01 against 0.68-1.58).
// The all-gather's cap was 4 MiB per rank, the all-to-all-v's below 2 MiB,
// the total 8 MiB, and the direct form held to the byte budget like a value
// form; it holds nothing (each reader copies into the caller's output), so
// the budget no longer bounds it (feasible()), and both caps are 16 MiB per
// rank within 64 MiB in all. Before / after, alternated twice, `ruccl-perf
// --world --peers mpi --coll all_gather|all_to_all_v --max-chunk-bytes 32M` (np=4: 64M)
// (after: the raised caps; before: the channels), p50 ratio to Open MPI, out
// of place / in place: np=2 all-gather of 16 / 32 MiB (output) 1.19-1.29 /
// 1.35-1.52 against 0.68-1.00 / 0.97-1.01, all-to-all-v of 4-16 MiB
// 1.20-1.28 against 0.92-0.99 (32 MiB 1.13-1.14 against 1.12-1.15); np=4 on
// 2 cores, all-gather of 16 MiB 1.21-1.30 / 1.20-1.41 against 0.86-0.93 /
// 0.89-0.92, all-to-all-v of 16 MiB 1.26-1.31 against 1.01-1.02, 64 MiB
// alike (0.68-1.17 against 0.70-1.12).
inline constexpr std::size_t kNodeMailboxBroadcastDirectBytes = std::size_t{2} << 20;
inline constexpr std::size_t kNodeMailboxAllGatherDirectBytes = std::size_t{16} << 20;
// An all-to-all-v in the direct form goes past the slot (its address rides
// there), up to 16 MiB per rank while all ranks' inputs together stay within
// 64 MiB (was 2 and 8 MiB: see above; a value form's reader reads its blocks into scratch of its
// peers' input sizes; a caller's buffer takes them straight). np=2, p50 ratio to Open MPI,
// interleaved, each cap alternated with the one before (512 KiB): 1 MiB 1.03-1.08
// (channels 1.30-1.36), 2 MiB 0.98-1.00 (0.96-0.99), 4 MiB (a cap of 8 MiB, not kept) 1.04
// against 1.03-1.05; np=4 on 2 cores, 1 MiB 1.00-1.01 (1.29). Below 512 KiB: 64 KiB 0.89-0.90, 256
// KiB 0.91-0.92.
inline constexpr std::size_t kNodeMailboxAllToAllVDirectBytes = std::size_t{16} << 20;
inline constexpr std::size_t kNodeMailboxDirectTotalBytes = std::size_t{64} << 20;

// Whether the lean path sends an input of `bytes` of `kind` (a collective
// that only copies) in the direct form, at `world` ranks with the lean
// lane's `capacity` (RemoteRanks::lean_capacity) and the configured
// threshold (Config::lean_direct_bytes; 0: never): from the threshold on,
// and past the slot (lean_slot_holds false) whatever it says, up to the
// kind's direct cap. Within the slot its copies were faster than the direct
// reads (process_vm_readv) at every size measured, p50 out of place: np=2,
// `ruccl-perf --world --peers mpi --coll all -b 16K -e 128K`, two rounds
// alternated, copies through the slot up to 64 KiB against the copy caps
// before (16 KiB for a broadcast, 8 KiB per rank for an all-gather, from a
// slot path that still copied into scratch first; the direct form past
// them): broadcast of 32 / 64 KiB 3.05-3.20 / 5.05-5.09 us against
// 6.18-6.64 / 10.35-10.39 (Open MPI 6.39-6.85 / 8.28-9.01), with the inputs
// written anew before each call 3.24-3.80 / 4.69-6.73 against 10.21-10.24 /
// 13.75-14.92; all-gather of 16 / 32 KiB per rank 2.67-2.71 / 3.81-3.94
// against 6.05-6.32 / 7.03-7.50; all-to-all-v of 32 KiB 2.80-2.82 against
// 7.60-7.75 in the direct form (RUCCL_LEAN_DIRECT_BYTES 128K and 32K).
// np=4 on 2 cores, the same two thresholds alternated twice: broadcast of 32
// / 64 KiB 28.7-29.3 / 32.3-33.6 against 53.0-56.8 / 55.5-63.8, all-gather
// of 32 / 64 KiB per rank 40.9-41.6 / 54.7-55.2 against 88.8-195.0 /
// 90.3-112.1, all-to-all-v of 32 KiB 32.3-56.6 against 76.7-76.9; an
// all-to-all-v past the slot in the value form (the channels, after the
// agreement) was slower still: 64 KiB 172-343 us against 79-80 direct.
bool lean_copy_direct(CollectiveKind kind, std::size_t bytes, std::size_t world,
                      std::size_t capacity, std::size_t configured) noexcept;
// Whether the lean path has a direct form for `kind` within the slot and
// past it: the collectives that only copy (broadcast, all-gather,
// all-to-all-v); a reduction's reader copies and then reduces either way
// (an all-reduce past the slot has its own, below).
bool has_lean_direct_form(CollectiveKind kind) noexcept;
// An all-reduce past the slot (lean_in_slot false) has a direct form of its
// own where the caller gives an output buffer: each rank reduces its shard
// of the inputs, read from their ranks' memory, into its output, and then
// reads the others' shards from their outputs (a reduce-scatter and an
// all-gather in two rounds, where the ring over the channels takes 2(n-1)
// hand-offs, each a switch on an oversubscribed node), up to
// kNodeMailboxAllReduceShardBytes x n x n for n ranks (np=4: 128 KiB; at
// np=2 that is within the slot: none) and at most
// kNodeMailboxAllReduceDirectBytes: beyond, the ring over the channels
// pipelines its copies and was faster. It was 32 KiB x n x n until the
// thirty-second session, whose faster host reductions (AVX-512) and channels
// without process_vm_readv (RUCCL_NODE_DIRECT_BYTES 0) made the ring the
// faster from the slot's end at np=2 and from 256 KiB at np=4 (p50 ratio to
// Open MPI, out of place / in place, alternated: np=2 72-112 KiB 0.59-0.61 /
// 0.64-0.69 against 0.71-0.76 / 0.88-0.94, 128 KiB 0.54-0.64 / 0.61-0.79
// against 0.71-0.77 / 0.90-1.01 (three rounds); np=4 on 2 cores 256 KiB
// 0.64-0.80 / 0.70-0.82 against 0.98-1.00 / 0.91-1.03, 512 KiB 0.58-0.91 /
// 0.55-0.80 against 0.93 / 1.03-1.08 (two rounds each); at 96 KiB the direct
// form 0.91-1.00 against the ring's 0.74-1.07). The first measurements, of
// 32 KiB x n x n against the ring before those changes: np=2 / np=4 on 2
// cores, `ruccl-perf --world --peers mpi`, p50 ratio to Open MPI, out of
// place / in place, the direct form alternated twice with the channels:
// np=2 80-96 KiB 0.69-0.71 / 0.86-0.87 against 0.75-0.87 / 1.18-1.24, 128
// KiB 0.72-0.73 / 0.93-0.96 against 0.88-0.89 / 1.26-1.27, 256 KiB
// 0.98-1.00 / 0.93-0.96 against 0.96 / 0.77-0.80, 1 MiB and up 0.96-1.10
// against 0.60-0.96 (64 KiB even: 13.7-14.7 us against 13.1-13.4 out of
// place); np=4 128 KiB 0.86-0.89 / 0.96-1.03 against 1.59-1.62 /
// 1.41-1.42, 256 KiB 0.96-0.98 / 0.96-1.08 against 1.29-1.39 / 1.20-1.21,
// 512 KiB 0.91 / 0.92-1.02 against 1.17 / 1.04-1.08, 2 MiB 0.92-1.06
// against 0.57-0.64. One rank per process only: 2 processes x 2 ranks
// took 168-205 / 248-292 / 441-453 us p50 at 128 / 256 / 512 KiB in the
// direct form against the hierarchy's (an in-process level, then the
// node's) 111-128 / 151-161 / 245-250. A reduce in the same form (its other ranks' shards in
// scratch, read by the root) was slower than the channels' chain: np=2 128
// KiB 2.1-2.4 against 0.96-1.49, np=4 128-512 KiB 1.09-2.0 against
// 0.73-1.20 (the reduce keeps the channels).
inline constexpr std::size_t kNodeMailboxAllReduceShardBytes = std::size_t{8} << 10;
inline constexpr std::size_t kNodeMailboxAllReduceDirectBytes = std::size_t{64} << 20;
// ... but two ranks whose host reductions lack 512-bit vectors (AVX-512):
// up to this much, the direct form's own bound. The ring over the channels
// reduces each piece as it arrives, and without AVX-512 that reduction keeps
// it behind the direct form. Measured on a 2-vCPU AMD EPYC VM with AVX2 only
// (the thirty-fourth session; `ruccl-perf --world --peers mpi`, two rounds
// alternated, p50 in us, out of place / in place): 128 KiB 29 / 25-32
// against the ring's 45 / 45-46 (Open MPI 37-45 / 31-32), 256 KiB 60-61 /
// 70-80 against 81-83 / 80-82, 1 MiB 209-222 / 238-270 against 282-292 /
// 278-297, 4 MiB 886-920 / 964-978 against 1113-1176 / 1071-1105, 16 MiB
// 4456-4573 / 4263-4459 against 5185-5431 / 5197-5204, 64 MiB 17202-17216
// / 16301-16412 against 22599-22896 / 22600-22650 (Open MPI 38850-39092 /
// 29942-30041). np=4 there kept the shard bound: 8 KiB x n x n and past it
// the ring (256 KiB-1 MiB in place, 191-198 / 333-347 / 636-640 us against
// the direct form's 213-218 / 394-397 / 749-778).
inline constexpr std::size_t kNodeMailboxPairAllReduceDirectBytes =
    kNodeMailboxAllReduceDirectBytes;
// Whether an input of `bytes` rides in the lean slot, whose message capacity
// is `capacity` (RemoteRanks::lean_capacity), at `world` ranks (within
// kNodeMailboxTotalBytes over the node).
bool lean_in_slot(std::size_t bytes, std::size_t world, std::size_t capacity) noexcept;
// The same for a collective of `kind`: an all-to-all-v's slot holds its send
// counts too, a word per rank, before its rows.
bool lean_slot_holds(CollectiveKind kind, std::size_t bytes, std::size_t world,
                     std::size_t capacity) noexcept;
// Whether the lean path takes an all-reduce of `bytes` in its direct form
// (above), given the configured threshold (0: no direct form); `wide`: the
// host reductions run on 512-bit vectors (host::HostIsa::kAvx512; the same
// for every process of a node).
bool lean_reduction_direct(CollectiveKind kind, std::size_t bytes, std::size_t world,
                           std::size_t capacity, std::size_t configured, bool wide = true) noexcept;

// A broadcast runs level by level from this size; below, the flat chain.
// 2 namespace hosts x 2 processes x 1 device on the development VM, each
// alone, alternated A B A B (2 rounds of 10 iterations): the hierarchical
// broadcast took 1.08-1.64x the flat chain's p50 at 8-64 B (its last hop
// wakes a node peer that slept through the hop across the nodes), 0.59-1.16x
// at 512 B, 0.64-1.10x at 4 KiB and 0.26-0.82x from 32 KiB to 16 MiB. The
// other collectives' hierarchies were no slower from 8 B (reduce 0.64-1.08x
// with one outlier, all-gather 0.41-1.14x, reduce-scatter 0.57-0.93x, but
// 1.52-1.78x out of place at 64 B).
inline constexpr std::size_t kHierarchicalBroadcastBytes = 512;

struct SelectionRule {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::size_t lo = 0;         // bytes, inclusive
  std::size_t hi = SIZE_MAX;  // bytes, exclusive; SIZE_MAX: no bound
  Algorithm algorithm = Algorithm::kInProcess;
  friend bool operator==(const SelectionRule&, const SelectionRule&) = default;
};

struct AlgorithmTable {
  std::vector<SelectionRule> rules;
};

// The forced rules of a selection string (the shorthand items are skipped;
// see strategy_of). kInvalidArgument naming the item on a syntax error.
Result<std::vector<SelectionRule>> parse_selection(std::string_view text);
// The strategy a selection string's shorthand items name, if any (the last wins).
Result<std::optional<GlobalStrategy>> strategy_of(std::string_view text);
// The forced rules of config.algorithm(), then the defaults for
// config.global_strategy() and config.one_shot_bytes(). The config is valid.
AlgorithmTable make_table(const Config& config);

// Whether `a` can run `call` over `topo` (the hierarchy needs several
// processes and several ranks in each; one-shot needs host buffers and
// inputs that fit one message and the budget; ...).
bool feasible(Algorithm a, const CallShape& call, const Topology& topo);

// The algorithm for `call`: the first feasible rule of the table that holds
// it, else kInProcess. Pure, and allocates nothing (it runs per collective).
Algorithm choose_algorithm(const CallShape& call, const Topology& topo,
                           const AlgorithmTable& table);

}  // namespace ruccl::core
