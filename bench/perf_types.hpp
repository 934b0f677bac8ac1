// ruccl-perf: the vocabulary shared by the CLI, the runner and the reports.
//
// Sizes follow nccl-tests: `size` is the bytes of the buffer a collective is
// named after (all_gather: the gathered output; reduce_scatter: the input;
// all_to_all_v: one rank's send total), and `count` is size / element bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ruccl/communicator.hpp"
#include "ruccl/config.hpp"
#include "ruccl/types.hpp"

namespace ruccl::perf {

// Every collective ruccl-perf measures, in the order `--coll all` runs them.
inline constexpr CollectiveKind kAllCollectives[] = {
    CollectiveKind::kAllReduce, CollectiveKind::kBroadcast,     CollectiveKind::kReduce,
    CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, CollectiveKind::kAllToAllV};

std::string_view kind_name(CollectiveKind kind);
std::optional<CollectiveKind> parse_kind(std::string_view name);
bool kind_reduces(CollectiveKind kind);
bool kind_has_root(CollectiveKind kind);
bool kind_has_in_place(CollectiveKind kind);  // all_to_all_v is out-of-place only
// nccl-tests' bus-bandwidth factor: busbw = algbw * factor.
double bus_factor(CollectiveKind kind, std::size_t ranks);
// "1M", "64K", "3G" for exact multiples of 1024, else the bytes; "unbounded" for SIZE_MAX.
std::string bytes_text(std::size_t bytes);

struct Options {
  std::vector<CollectiveKind> collectives{CollectiveKind::kAllReduce};
  // In-process: the ranks (threads). World mode: set to the world size once the
  // world communicator exists (every Case is planned with the global n).
  std::size_t ranks = 2;
  bool ranks_given = false;             // --ranks on the command line
  // World mode (--world): the communicator of create_world_communicator across
  // the processes of mpirun, devices_per_process host devices (threads) each.
  bool world = false;
  std::size_t devices_per_process = 1;
  bool devices_given = false;           // --devices-per-process on the command line
  // --algo: the global strategies to measure, interleaved (empty: the Config's,
  // i.e. RUCCL_ALGO or hierarchical). World mode only.
  std::vector<GlobalStrategy> algos;
  std::size_t min_bytes = std::size_t{32} << 20;
  std::size_t max_bytes = std::size_t{32} << 20;
  std::size_t step_factor = 2;
  std::size_t iters = 20;
  std::size_t warmup = 5;
  bool check = true;
  // --fresh-inputs: every rank writes its input anew before each call (ruccl's
  // and each peer's, untimed), as a training step's new gradients are: a
  // reader then finds none of it in its own cache from the call before.
  bool fresh_inputs = false;
  bool host_buffers = false;  // --allocate-host: buffers from Communicator::allocate_host
  DataType dtype = DataType::kF32;
  std::vector<ReduceOp> ops{ReduceOp::kSum};
  std::size_t root = 0;
  std::optional<std::size_t> max_chunk_bytes;  // nullopt: the Config's (env or default)
  // --budget-compare SIZE: every communicator is measured twice, interleaved
  // per iteration on the same buffers: unbounded (CallOptions max_chunk_bytes =
  // SIZE_MAX: one message per transfer) and through a BoundedCommunicator of
  // SIZE bytes; the rows get the peak staging and the throughput ratio.
  std::optional<std::size_t> budget_compare;
  bool memcpy_baseline = true;
  std::string json_path;
  std::string csv_path;
  // --label: a free text written to the JSON ("label"), e.g. "np2-shm"; the plot
  // prefixes the implementation names with it.
  std::string label;
  // --peers (world mode, one device per process): other implementations measured
  // on the same ranks, sizes and buffers, interleaved with ruccl per iteration.
  std::vector<std::string> peers;
  // --model (in-process): the memory-traffic model of all_reduce per row.
  bool model = false;
};

// One measured case: a collective at one size, one op and one placement.
struct Case {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  DataType dtype = DataType::kF32;
  std::optional<ReduceOp> op;       // nullopt for collectives that do not reduce
  std::optional<std::size_t> root;  // nullopt for collectives without a root
  std::size_t ranks = 0;
  std::size_t size_bytes = 0;       // nccl-tests' size (see the file comment)
  std::size_t count = 0;            // size_bytes / element bytes
  std::size_t chunk = 0;            // elements per rank-block: the per-rank input of
                                    // all_gather, the output of reduce_scatter, the
                                    // per-destination count of all_to_all_v; else count
};

// The measurement of one placement (out-of-place or in-place).
struct Timing {
  bool ran = false;          // false: not applicable (in-place all_to_all_v) or skipped
  double mean_us = 0;        // mean over iterations of the per-iteration max across ranks
                             // (world mode: across every rank of every process)
  double p50_us = 0;
  double p99_us = 0;
  double algbw_gbps = 0;     // size / mean time, 1e9 bytes per second
  double busbw_gbps = 0;
  std::optional<std::size_t> wrong;  // mismatching elements; nullopt when not checked
  // ruccl rows: the most staging bytes any rank held at once in any warm-up or
  // timed call (Communicator::last_staging; world mode: max over all processes).
  std::size_t staging_peak_bytes = 0;
  std::string error;                 // a collective's error; empty when it succeeded
};

// --model: what the in-process ring all_reduce must move per rank, and the time
// that takes at the memcpy bandwidth measured in the same run (perf_model.hpp).
struct ModelEstimate {
  double read_bytes = 0;    // per rank
  double write_bytes = 0;   // per rank
  double memcpy_gbps = 0;   // every rank thread copying size_bytes at once, all of them
                            // together (p50, interleaved with the iterations), 1e9 B/s
  std::size_t cores = 0;    // min(ranks, CPUs this process may run on)
  double time_us = 0;       // the model's time
  double fraction_out_of_place = 0;  // model time / measured p50 time
  double fraction_in_place = 0;
};

// Whether the table gets the staging columns (peak staging, budget): calls made
// with an explicit budget (--max-chunk-bytes, --budget-compare).
inline bool shows_staging(const Options& o) { return o.max_chunk_bytes || o.budget_compare; }

struct Row {
  Case c;
  std::string algo;  // world mode: the global strategy's name, or the peer's; empty in-process
  // The implementation, for plots: "ruccl-inproc", "ruccl-hierarchical",
  // "ruccl-flat_ring", or a peer's name ("mpi", "gloo", "gloo_chunked").
  std::string impl;
  bool peer = false;  // measured by a peer (not ruccl)
  // ruccl rows: the byte budget of the calls (SIZE_MAX: unbounded, the
  // --budget-compare reference); nullopt for peers.
  std::optional<std::size_t> budget_bytes;
  Timing out_of_place;
  Timing in_place;
  std::optional<ModelEstimate> model;
};

// World mode: what the header and the JSON say about the world.
struct WorldInfo {
  std::size_t processes = 0;
  std::size_t devices_per_process = 0;
  std::vector<std::string> algos;  // measured interleaved, in this order
  std::vector<std::string> peers;  // --peers, measured interleaved after the algos
  std::vector<std::string> peer_descriptions;  // "<name>: <what it runs, how>"
};

struct MemcpyBaseline {
  std::size_t bytes = 0;
  double gbps = 0;
};

}  // namespace ruccl::perf
