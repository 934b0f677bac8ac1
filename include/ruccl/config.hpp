// Config: every tunable of ruccl, read once and passed down.
//
// Build one from code (the with_* setters) or from the environment
// (Config::from_env, which reads every RUCCL_* variable in one place).
// Nothing below this layer reads the environment.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "ruccl/status.hpp"

namespace ruccl {

// Deprecated: nothing reads it (Config::with_local_strategy is a no-op, kept
// with RUCCL_LOCAL_ALGO=ring so that existing callers build and run). The
// algorithm of each collective is chosen by src/core/selection.hpp and can be
// forced per collective with RUCCL_ALGO / Config::with_algorithm.
enum class LocalStrategy : std::uint8_t { kRing };
// Strategy across processes/nodes (used by the multinode layer).
enum class GlobalStrategy : std::uint8_t { kHierarchical, kFlatRing };
// What ruccl logs (RUCCL_DEBUG): kWarn failed collectives, kInfo also creation
// (world, strategy, the UCX lanes to each peer), kTrace also every collective.
enum class LogLevel : std::uint8_t { kOff, kWarn, kInfo, kTrace };

class Config {
 public:
  static constexpr std::size_t kDefaultMaxChunkBytes = std::size_t{4} << 20;   // 4 MiB
  static constexpr std::size_t kDefaultSegmentBytes = std::size_t{1} << 20;    // 1 MiB
  static constexpr std::chrono::milliseconds kDefaultTimeout{300'000};         // 300 s
  static constexpr std::chrono::milliseconds kMaxTimeout{10'000'000'000};      // 10^7 s
  static constexpr std::size_t kDefaultFlightRecorder = 64;                    // entries per rank
  static constexpr std::size_t kDefaultOneShotBytes = 4096;                    // 4 KiB
  static constexpr std::size_t kMaxLeanBytes = std::size_t{64} << 10;          // 64 KiB
  // Off: the copy-only collectives that gained from it take the lean path's
  // direct form at those sizes since the thirty-first session, and the
  // all-reduce's gathers were slower with it (README "Node shared memory").
  static constexpr std::size_t kDefaultNodeDirectBytes = 0;
  // 128 KiB: past the lean slot (64 KiB) only, where the direct form is taken anyway.
  static constexpr std::size_t kDefaultLeanDirectBytes = std::size_t{128} << 10;
  static constexpr std::size_t kDefaultMpiAllocMemBytes = 0;  // off

  // Reads RUCCL_TIMEOUT (seconds, may be fractional), RUCCL_MAX_CHUNK_BYTES,
  // RUCCL_SEGMENT_BYTES, RUCCL_ALGO (hierarchical|flat_ring, or a selection
  // string: with_algorithm), RUCCL_LOCAL_ALGO (ring; deprecated, checked and ignored),
  // RUCCL_NUM_DEVICES, RUCCL_INTRA_NODE_TRANSPORT (shm|shm-direct|tcp), RUCCL_DEBUG
  // (WARN|INFO|TRACE), RUCCL_DEBUG_FILE, RUCCL_TRACE, RUCCL_FAULT (a fault plan),
  // RUCCL_FLIGHT_RECORDER (entries per rank; 0 = off) and
  // RUCCL_FLIGHT_RECORDER_SIGNAL (0 = no SIGUSR1 handler), RUCCL_CHECKSUM (1 =
  // payload checksums), RUCCL_ONE_SHOT_BYTES, RUCCL_NODE_DIRECT_BYTES,
  // RUCCL_LEAN_DIRECT_BYTES, RUCCL_MPI_ALLOC_MEM_BYTES. An unparsable value is an
  // error naming the variable.
  static Result<Config> from_env();
  // Same, over `base` instead of the defaults.
  static Result<Config> from_env(Config base);

  Config& with_num_devices(std::size_t n) { num_devices_ = n; return *this; }
  Config& with_max_chunk_bytes(std::size_t bytes) { max_chunk_bytes_ = bytes; return *this; }
  Config& with_segment_bytes(std::size_t bytes) { segment_bytes_ = bytes; return *this; }
  Config& with_timeout(std::chrono::milliseconds t) { timeout_ = t; return *this; }
  // Deprecated no-op (LocalStrategy).
  Config& with_local_strategy(LocalStrategy) { return *this; }
  Config& with_global_strategy(GlobalStrategy s) { global_ = s; return *this; }
  // The algorithm selection string (RUCCL_ALGO): ';'-separated items, each a
  // strategy shorthand (hierarchical | flat_ring | flat, which also sets
  // global_strategy) or <collective>:<rules> forcing algorithms for one
  // collective, e.g. "all_reduce:0-4k:@one_shot#4k-inf:@flat_ring;broadcast:@flat_ring".
  // Grammar and algorithms: src/core/selection.hpp. Every process must pass
  // the same (checked at creation). Meant for tests and tuning.
  Config& with_algorithm(std::string selection);
  Config& with_log_level(LogLevel level) { log_level_ = level; return *this; }
  Config& with_log_file(std::string pattern) { log_file_ = std::move(pattern); return *this; }
  Config& with_trace_file(std::string pattern) { trace_file_ = std::move(pattern); return *this; }
  Config& with_intra_node_shared_memory(bool on) { intra_node_shm_ = on; return *this; }
  Config& with_node_single_copy(bool on) {
    node_single_copy_ = on;
    return *this;
  }
  Config& with_fault(std::string spec) { fault_ = std::move(spec); return *this; }
  Config& with_flight_recorder(std::size_t entries) { flight_recorder_ = entries; return *this; }
  Config& with_flight_recorder_signal(bool on) { flight_recorder_signal_ = on; return *this; }
  Config& with_checksum(bool on) { checksum_ = on; return *this; }
  Config& with_one_shot_bytes(std::size_t bytes) { one_shot_bytes_ = bytes; return *this; }
  Config& with_lean_bytes(std::size_t bytes) {
    lean_bytes_ = bytes;
    return *this;
  }
  Config& with_node_direct_bytes(std::size_t bytes) {
    node_direct_bytes_ = bytes;
    return *this;
  }
  Config& with_mpi_alloc_mem_bytes(std::size_t bytes) {
    mpi_alloc_mem_bytes_ = bytes;
    return *this;
  }
  Config& with_lean_direct_bytes(std::size_t bytes) {
    lean_direct_bytes_ = bytes;
    return *this;
  }

  // Number of local participating devices (ranks in this process).
  std::size_t num_devices() const { return num_devices_; }
  // Byte budget for the tensor payload of one message. Excludes metadata,
  // complete result tensors and scratch.
  std::size_t max_chunk_bytes() const { return max_chunk_bytes_; }
  // Pipelining unit of broadcast and reduce (also capped by max_chunk_bytes).
  std::size_t segment_bytes() const { return segment_bytes_; }
  // Deadline of every blocking wait of one collective.
  std::chrono::milliseconds timeout() const { return timeout_; }
  LocalStrategy local_strategy() const { return LocalStrategy::kRing; }  // deprecated
  GlobalStrategy global_strategy() const { return global_; }
  const std::string& algorithm() const { return algorithm_; }
  // Log lines ("[ruccl host:pid rank R] LEVEL ...") go to stderr, or to
  // log_file (RUCCL_DEBUG_FILE; %h = host name, %p = process id) when set.
  LogLevel log_level() const { return log_level_; }
  const std::string& log_file() const { return log_file_; }
  // Non-empty (RUCCL_TRACE): each rank writes a Chrome/Perfetto trace (JSON)
  // of its collectives and their phases to this path, streamed while it runs
  // (at most 256 spans per rank in memory) and closed, valid JSON, when the
  // communicator is destroyed; %r = global rank, %h = host, %p = pid (without %r, ".rank<R>"
  // is appended so that ranks never share a file).
  const std::string& trace_file() const { return trace_file_; }
  // Between processes of one node (RUCCL_INTRA_NODE_TRANSPORT): true (shm or
  // shm-direct; shm is the default): the node's shared segment (src/node) carries
  // fingerprints, small collectives and, when the world is one node, the data
  // of larger ones; a dead process of the node is found through its pidfd;
  // false (tcp): every byte over UCX, with UCX's peer-failure detection on
  // every endpoint (tcp over loopback in UCX 1.13).
  bool intra_node_shared_memory() const { return intra_node_shm_; }
  // Large messages between host buffers of one node: false (shm, the
  // default): copied in and out of the segment (two copies, the second while
  // the piece is in cache); true (shm-direct): the receiver reads the sender's
  // buffer itself (one copy, process_vm_readv, where the kernel lets it;
  // slower on the development VM, where pinning the pages of each read costs
  // more than the copy it saves).
  bool node_single_copy() const { return node_single_copy_; }
  // Fault injection plan (RUCCL_FAULT), for testing failure paths; empty: none.
  // Grammar (src/core/fault.hpp): faults separated by ';', each
  // "kind:key=value,...", e.g. "stall:rank=1,seq=3,ms=2000",
  // "exit:rank=2,seq=5,step=3,code=9", "adapter:rank=0,seq=1,verb=combine",
  // "drop:rank=0,seq=4,step=1", "corrupt:rank=1,seq=2".
  const std::string& fault() const { return fault_; }
  // Flight recorder (RUCCL_FLIGHT_RECORDER): each rank keeps its last N
  // collectives (sequence number, kind, bytes, state, times) and the
  // communicator dumps them to the log destination when a collective fails
  // (timeout, peer failure, device error). 0 disables it.
  std::size_t flight_recorder() const { return flight_recorder_; }
  // Whether ruccl installs a SIGUSR1 handler that dumps every live flight
  // recorder (RUCCL_FLIGHT_RECORDER_SIGNAL=0: no). Installed only while
  // SIGUSR1 has its default action: an application's handler is never replaced.
  bool flight_recorder_signal() const { return flight_recorder_signal_; }
  // Payload checksums on messages between processes (RUCCL_CHECKSUM=1, default
  // off): the sender sums each payload, the receiver checks it before use, and
  // a mismatch is kProtocolError on every rank. It costs a read pass over every
  // message on each side (np=2 all-reduce of 2 MiB: about 2x the time here);
  // message headers (job token, sequence number, size, their own checksum) are
  // checked either way. Processes may differ: each sender says in its header whether
  // it summed the payload.
  bool checksum() const { return checksum_; }
  // Across processes, an all-reduce of host tensors of at most this many bytes
  // (RUCCL_ONE_SHOT_BYTES, default 4 KiB; 0 = never) travels with the
  // collective's fingerprint, one message to every rank, and each rank reduces
  // all inputs itself in rank order (one round instead of the ring's 2(n-1)+1).
  // Also capped by what fits one message with the fingerprint (about 7.5 KiB
  // at 2 ranks, less for larger worlds), and by the byte budget: the other
  // ranks' inputs, which a rank holds at once, must fit max_chunk_bytes.
  // Processes may differ: the fast path runs only where every rank sent its input.
  std::size_t one_shot_bytes() const { return one_shot_bytes_; }
  // When the whole world is on one node: all-reduce, reduce, broadcast,
  // all-gather and reduce-scatter of at most this many bytes per rank take
  // the lean path, one round through the node's mailboxes
  // (RUCCL_LEAN_BYTES, default and most kMaxLeanBytes = 64 KiB, the
  // mailbox slot; 0 = never; also bounded by the byte budget and by 256 KiB
  // of all ranks' inputs together). Every process must have the same
  // (creation compares it). RUCCL_ALGO rows override it.
  std::size_t lean_bytes() const { return lean_bytes_; }
  // On the node's channels, a message that only copies (all-gather,
  // broadcast, all-to-all-v, the gathers of an all-reduce) between host
  // buffers of at most this many bytes is read by the receiver straight from
  // the sender's buffer (process_vm_readv: one copy instead of two) where the
  // kernel allows it; larger ones go through the segment, whose two copies
  // pipeline better on the development VM (README "Node shared memory").
  // RUCCL_NODE_DIRECT_BYTES, default kDefaultNodeDirectBytes; 0 = never.
  // Processes may differ (the receiver takes either form of a piece).
  std::size_t node_direct_bytes() const { return node_direct_bytes_; }
  // On the lean path of a broadcast, all-gather or all-to-all-v, a rank whose
  // input (host memory) holds at least this many bytes, or more than its slot holds, publishes its
  // address instead of a copy in its slot, where every other rank of the node can read this
  // process's memory: each reader copies what it needs straight from it (process_vm_readv) and says
  // so, and the rank returns only once every other rank did (README "Node shared memory").
  // RUCCL_LEAN_DIRECT_BYTES, default kDefaultLeanDirectBytes; 0 = never. Processes may differ (a
  // reader takes either form).
  std::size_t lean_direct_bytes() const { return lean_direct_bytes_; }
  // The MPI layer (libruccl_mpi): MPI_Alloc_mem of at least this many bytes
  // returns memory from MPI_COMM_WORLD's allocate_host, which the node's
  // other processes read in place (README "MPI programs, unchanged").
  // RUCCL_MPI_ALLOC_MEM_BYTES; 0 (the default) = never: collectives of 1-8
  // MiB on such memory measured slower than on private memory.
  std::size_t mpi_alloc_mem_bytes() const { return mpi_alloc_mem_bytes_; }

  // Checks ranges (num_devices >= 1, budget >= 1, segment >= 1,
  // 0 < timeout <= kMaxTimeout) and parses the fault plan and the algorithm
  // selection.
  Status validate() const;
  // The settings that differ between two configs, e.g. "max_chunk_bytes 4 vs 8"; empty if equal.
  std::string difference(const Config& other) const;
  friend bool operator==(const Config&, const Config&) = default;

 private:
  std::size_t num_devices_ = 1;
  std::size_t max_chunk_bytes_ = kDefaultMaxChunkBytes;
  std::size_t segment_bytes_ = kDefaultSegmentBytes;
  std::chrono::milliseconds timeout_ = kDefaultTimeout;
  GlobalStrategy global_ = GlobalStrategy::kHierarchical;
  std::string algorithm_;
  LogLevel log_level_ = LogLevel::kOff;
  std::string log_file_;
  std::string trace_file_;
  bool intra_node_shm_ = true;
  bool node_single_copy_ = false;
  std::string fault_;
  std::size_t flight_recorder_ = kDefaultFlightRecorder;
  bool flight_recorder_signal_ = true;
  bool checksum_ = false;
  std::size_t one_shot_bytes_ = kDefaultOneShotBytes;
  std::size_t lean_bytes_ = kMaxLeanBytes;
  std::size_t node_direct_bytes_ = kDefaultNodeDirectBytes;
  std::size_t lean_direct_bytes_ = kDefaultLeanDirectBytes;
  std::size_t mpi_alloc_mem_bytes_ = kDefaultMpiAllocMemBytes;
};

std::string_view global_strategy_name(GlobalStrategy s) noexcept;
std::string_view log_level_name(LogLevel level) noexcept;

}  // namespace ruccl
