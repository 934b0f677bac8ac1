// ruccl-perf: bandwidth and latency of ruccl's collectives, modelled on nccl-tests.
//
// In-process mode (default): `--ranks` threads, one per host device rank, on one
// Communicator. World mode (--world, built with ruccl::multinode): run under
// mpirun; every process drives --devices-per-process host devices, one thread
// each, on the world communicator (P x D ranks over UCX), and global rank 0
// prints. For each collective, reduction op and size of the sweep it measures
// out-of-place and in-place, checks every element (-c 1), and prints the
// nccl-tests table (see perf_report.hpp, and perf_runner.hpp for how the times
// are taken). World mode can measure peers in the same launch (--peers mpi,gloo:
// perf_peers.hpp), in-process mode the all_reduce memory-traffic model (--model:
// perf_model.hpp). Exit status: 0 when every call succeeded and every checked
// element was right (peers' included), 1 otherwise, 2 on bad usage.
//
// Example: ruccl-perf --coll all_reduce --ranks 4 -b 8 -e 64M -f 4 -n 20 -w 5 --model
//          mpirun -np 2 ruccl-perf --world --devices-per-process 2 --algo both -b 1M -e 64M -f 8
//          mpirun -np 2 ruccl-perf --world --peers mpi,gloo -b 8 -e 64M --json np2.json
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perf_peers.hpp"
#include "perf_report.hpp"
#include "perf_runner.hpp"
#include "perf_types.hpp"

namespace {

using namespace ruccl;
using namespace ruccl::perf;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

void print_usage(std::FILE* to) {
  std::string peers;
  for (const std::string& p : available_peers()) peers += (peers.empty() ? "" : ", ") + p;
  if (peers.empty()) peers = "none in this build";
  std::fprintf(
      to,
      "usage: ruccl-perf [options]                              (in-process)\n"
      "       mpirun -np P ruccl-perf --world [--devices-per-process D]\n"
      "                  [--algo hierarchical|flat_ring|both] [--peers LIST] [options]  (world)\n"
      "      --coll, --op-kind NAME  all_reduce|broadcast|reduce|all_gather|reduce_scatter|\n"
      "                              all_to_all_v|all (default all_reduce)\n"
      "      --ranks N               in-process ranks (threads), 1..1024 (default 2)\n"
      "      --world                 world mode: the world communicator across the mpirun\n"
      "                              processes (needs a build with ruccl::multinode, i.e.\n"
      "                              MPI and UCX); global rank 0 prints\n"
      "      --devices-per-process D world mode: host devices (threads) per process\n"
      "                              (default 1); the world has P x D ranks\n"
      "      --algo NAME             world mode: hierarchical|flat_ring|both (default\n"
      "                              RUCCL_ALGO, else hierarchical); both measures the two\n"
      "                              communicators interleaved per iteration and prints\n"
      "                              the ratio of their p50 times\n"
      "      --peers LIST            world mode, --devices-per-process 1: also measure\n"
      "                              these implementations on the same ranks, sizes and\n"
      "                              buffers, interleaved with ruccl per iteration, and\n"
      "                              print the ratio ruccl/peer of p50 times per size:\n"
      "                              mpi (MPI_Allreduce, _Bcast, _Reduce, _Allgather,\n"
      "                              _Reduce_scatter_block, _Alltoallv), gloo (Gloo's\n"
      "                              ring all-reduce; in place only), gloo_chunked\n"
      "                              (Gloo's chunked ring). This build: %s\n"
      "      --model                 in-process all_reduce: print the memory-traffic model\n"
      "                              per size: per rank the ring reads 3(n-1)/n S and\n"
      "                              writes 2(n-1)/n S bytes (reduce-scatter 2 reads + 1\n"
      "                              write per chunk, all-gather 1 + 1); t_model =\n"
      "                              n (R+W) / (2 M c), M = single-thread memcpy GB/s of\n"
      "                              S (p50, timed in every iteration of this run after\n"
      "                              the collective), c = min(n, CPUs); and the achieved\n"
      "                              fraction t_model / p50\n"
      "      --label TEXT            a name for this run, written to --json (plots)\n"
      "  -b, --minbytes SIZE         smallest size (default 32M); suffixes K, M, G (x1024)\n"
      "  -e, --maxbytes SIZE         largest size (default 32M)\n"
      "  -f, --stepfactor N          size multiplication factor (default 2)\n"
      "  -n, --iters N               timed iterations (default 20)\n"
      "  -w, --warmup_iters N        warm-up iterations (default 5)\n"
      "  -c, --check 0|1             check every result element (default 1)\n"
      "      --fresh-inputs          every rank writes its input anew before each timed\n"
      "                              call (untimed; ruccl's and each peer's), as new\n"
      "                              gradients are; default: the inputs stay as they are\n"
      "      --allocate-host         the buffers come from Communicator::allocate_host:\n"
      "                              on one node, memory the other processes read in\n"
      "                              place (no copy through the node segment)\n"
      "  -d, --datatype NAME         f16|bf16|f32|f64|i8|u8|i32|i64|u64|bytes (default f32)\n"
      "  -o, --op, --redop NAME      sum|mean|min|max|prod|all (default sum)\n"
      "  -r, --root N                root of broadcast and reduce (default 0); -r NAME is\n"
      "                              still read as the reduction op\n"
      "      --max-chunk-bytes SIZE  byte budget of one message (default: Config); adds the\n"
      "                              columns staging (peak bytes of message staging a rank\n"
      "                              held at once, Communicator::last_staging) and budget\n"
      "      --budget-compare SIZE   measure every communicator twice, interleaved per\n"
      "                              iteration on the same buffers: unbounded (one message\n"
      "                              per transfer) and through a BoundedCommunicator of\n"
      "                              SIZE bytes; prints the throughput ratio and the peak\n"
      "                              staging against SIZE per size\n"
      "      --json FILE, --csv FILE write the results there too\n"
      "      --memcpy, --no-memcpy   print the single-thread memcpy bandwidth of the\n"
      "                              largest size before the table (default on)\n"
      "  -h, --help\n"
      "size is nccl-tests': all_gather's output bytes, reduce_scatter's input bytes,\n"
      "all_to_all_v's per-rank send bytes, else the tensor bytes. busbw = algbw x the\n"
      "nccl-tests factor of n = all ranks (all_reduce 2(n-1)/n; all_gather,\n"
      "reduce_scatter, all_to_all_v (n-1)/n; broadcast, reduce 1). time = mean over\n"
      "iterations of the per-iteration max over all ranks. RUCCL_* environment\n"
      "variables (Config::from_env) apply, e.g. RUCCL_SEGMENT_BYTES; world mode's\n"
      "timeout defaults to 60 s (RUCCL_TIMEOUT). A progress line goes to stderr when\n"
      "it is a terminal.\n",
      peers.c_str());
}

std::optional<std::size_t> parse_count(std::string_view text) {
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// "64", "64K", "64k", "1M", "2G", "8KB": suffixes are powers of 1024.
std::optional<std::size_t> parse_bytes(std::string_view text) {
  if (!text.empty() && (text.back() == 'B' || text.back() == 'b') && text.size() > 1 &&
      !std::isdigit(static_cast<unsigned char>(text[text.size() - 2])))
    text.remove_suffix(1);
  std::size_t shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      default: break;
    }
    if (shift) text.remove_suffix(1);
  }
  const auto value = parse_count(text);
  if (!value || *value > (std::numeric_limits<std::size_t>::max() >> shift)) return std::nullopt;
  return *value << shift;
}

// One command-line flag: its names and what its value does to the options.
struct Flag {
  char short_name;                          // 0: long names only
  std::vector<std::string_view> long_names;
  bool takes_value;
  std::function<std::optional<std::string>(std::string_view)> apply;  // error or nothing
};

std::vector<Flag> make_flags(Options& o, bool& help) {
  auto count_into = [](std::size_t& field, std::size_t min, const char* what) {
    return [&field, min, what](std::string_view v) -> std::optional<std::string> {
      const auto n = parse_count(v);
      if (!n || *n < min) return std::string(what) + " needs an integer >= " + std::to_string(min);
      field = *n;
      return std::nullopt;
    };
  };
  auto set_op = [&o](std::string_view v) -> std::optional<std::string> {
    if (v == "all") {
      o.ops.assign(std::begin(kAllReduceOps), std::end(kAllReduceOps));
      return std::nullopt;
    }
    const auto op = parse_op(v);
    if (!op) return "unknown reduction op '" + std::string(v) + "'";
    o.ops = {*op};
    return std::nullopt;
  };
  auto bytes_into = [](std::size_t& field, const char* what) {
    return [&field, what](std::string_view v) -> std::optional<std::string> {
      const auto n = parse_bytes(v);
      if (!n) return std::string(what) + " needs a size like 8, 64K, 16M or 1G";
      field = *n;
      return std::nullopt;
    };
  };
  // One flag per line, as the usage text lists them.
  // clang-format off
  return {
      {0, {"op-kind", "coll"}, true, [&o](std::string_view v) -> std::optional<std::string> {
         if (v == "all") {
           o.collectives.assign(std::begin(kAllCollectives), std::end(kAllCollectives));
           return std::nullopt;
         }
         const auto kind = parse_kind(v);
         if (!kind) return "unknown collective '" + std::string(v) + "'";
         o.collectives = {*kind};
         return std::nullopt;
       }},
      {0, {"ranks"}, true, [&o, ranks = count_into(o.ranks, 1, "--ranks")](std::string_view v) {
         o.ranks_given = true;
         return ranks(v);
       }},
      {0, {"world"}, false, [&o](std::string_view) { o.world = true; return std::optional<std::string>(); }},
      {0, {"devices-per-process"}, true,
       [&o, devices = count_into(o.devices_per_process, 1, "--devices-per-process")](std::string_view v) {
         o.devices_given = true;
         return devices(v);
       }},
      {0, {"algo"}, true, [&o](std::string_view v) -> std::optional<std::string> {
         if (v == "hierarchical") o.algos = {GlobalStrategy::kHierarchical};
         else if (v == "flat_ring") o.algos = {GlobalStrategy::kFlatRing};
         else if (v == "both") o.algos = {GlobalStrategy::kHierarchical, GlobalStrategy::kFlatRing};
         else return "--algo needs hierarchical, flat_ring or both";
         return std::nullopt;
       }},
      {'b', {"minbytes", "min-bytes"}, true, bytes_into(o.min_bytes, "-b")},
      {'e', {"maxbytes", "max-bytes"}, true, bytes_into(o.max_bytes, "-e")},
      {'f', {"stepfactor"}, true, count_into(o.step_factor, 1, "-f")},
      {'n', {"iters"}, true, count_into(o.iters, 1, "-n")},
      {'w', {"warmup_iters", "warmup"}, true, count_into(o.warmup, 0, "-w")},
      {'c', {"check"}, true, [&o](std::string_view v) -> std::optional<std::string> {
         if (v != "0" && v != "1") return "-c needs 0 or 1";
         o.check = v == "1";
         return std::nullopt;
       }},
      {'d', {"datatype", "dtype"}, true, [&o](std::string_view v) -> std::optional<std::string> {
         const auto dtype = parse_dtype(v);
         if (!dtype) return "unknown dtype '" + std::string(v) + "'";
         o.dtype = *dtype;
         return std::nullopt;
       }},
      {'o', {"op", "redop"}, true, set_op},
      // -r N: the root (nccl-tests); -r NAME: the op (this tool's earlier -r).
      {'r', {"root"}, true, [&o, set_op, root = count_into(o.root, 0, "--root")](std::string_view v) {
         if (!v.empty() && !std::isdigit(static_cast<unsigned char>(v[0]))) return set_op(v);
         return root(v);
       }},
      {0, {"peers"}, true, [&o](std::string_view v) -> std::optional<std::string> {
         o.peers.clear();
         while (!v.empty()) {
           const auto comma = v.find(',');
           const std::string name(v.substr(0, comma));
           v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
           if (name.empty()) continue;
           if (const std::string why = peer_unavailable(name); !why.empty()) return why;
           if (std::find(o.peers.begin(), o.peers.end(), name) == o.peers.end())
             o.peers.push_back(name);
         }
         return std::nullopt;
       }},
      {0, {"fresh-inputs"}, false, [&o](std::string_view) { o.fresh_inputs = true; return std::optional<std::string>(); }},
      {0, {"allocate-host"}, false, [&o](std::string_view) { o.host_buffers = true; return std::optional<std::string>(); }},
      {0, {"model"}, false, [&o](std::string_view) { o.model = true; return std::optional<std::string>(); }},
      {0, {"label"}, true, [&o](std::string_view v) { o.label = v; return std::optional<std::string>(); }},
      {0, {"max-chunk-bytes"}, true, [&o](std::string_view v) -> std::optional<std::string> {
         const auto n = parse_bytes(v);
         if (!n || *n == 0) return "--max-chunk-bytes needs a size >= 1";
         o.max_chunk_bytes = *n;
         return std::nullopt;
       }},
      {0, {"budget-compare"}, true, [&o](std::string_view v) -> std::optional<std::string> {
         const auto n = parse_bytes(v);
         if (!n || *n == 0) return "--budget-compare needs a size >= 1";
         o.budget_compare = *n;
         return std::nullopt;
       }},
      {0, {"json"}, true, [&o](std::string_view v) { o.json_path = v; return std::optional<std::string>(); }},
      {0, {"csv"}, true, [&o](std::string_view v) { o.csv_path = v; return std::optional<std::string>(); }},
      {0, {"memcpy"}, false, [&o](std::string_view) { o.memcpy_baseline = true; return std::optional<std::string>(); }},
      {0, {"no-memcpy"}, false, [&o](std::string_view) { o.memcpy_baseline = false; return std::optional<std::string>(); }},
      {'h', {"help"}, false, [&help](std::string_view) { help = true; return std::optional<std::string>(); }},
  };
  // clang-format on
}

// Accepts -x VALUE, -xVALUE, --name VALUE and --name=VALUE.
std::optional<std::string> parse_args(int argc, char** argv, Options& o, bool& help) {
  const std::vector<Flag> flags = make_flags(o, help);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const Flag* flag = nullptr;
    std::optional<std::string_view> value;
    if (arg.starts_with("--")) {
      std::string_view name = arg.substr(2);
      if (const auto eq = name.find('='); eq != std::string_view::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      for (const Flag& f : flags)
        if (std::find(f.long_names.begin(), f.long_names.end(), name) != f.long_names.end()) flag = &f;
    } else if (arg.size() >= 2 && arg[0] == '-') {
      for (const Flag& f : flags)
        if (f.short_name == arg[1]) flag = &f;
      if (arg.size() > 2) value = arg.substr(2);
    }
    if (flag == nullptr) return "unknown option '" + std::string(arg) + "'";
    if (!flag->takes_value) {
      if (value) return "option '" + std::string(arg) + "' takes no value";
    } else if (!value) {
      if (i + 1 >= argc) return "option '" + std::string(arg) + "' needs a value";
      value = argv[++i];
    }
    if (auto error = flag->apply(value.value_or(""))) return error;
  }
  if (o.ranks > 1024) return "--ranks must be at most 1024";
  if (o.min_bytes > o.max_bytes) return "-b must not exceed -e";
  if (o.step_factor < 2 && o.min_bytes < o.max_bytes) return "-f must be >= 2 for a sweep";
  if (o.budget_compare && o.max_chunk_bytes)
    return "--budget-compare sets both budgets (unbounded and SIZE); drop --max-chunk-bytes";
  if (o.world) {
    if (o.ranks_given) return "--ranks is for in-process mode; with --world use --devices-per-process";
    if (o.devices_per_process > 1024) return "--devices-per-process must be at most 1024";
    if (!o.peers.empty() && o.devices_per_process != 1)
      return "--peers needs --devices-per-process 1: a peer (MPI, Gloo) runs one rank per "
             "process, so only then do ruccl and the peer have the same ranks and bytes per "
             "rank (measure D > 1 with --algo, and the peers in a separate launch with D = 1 "
             "and P x D processes)";
    if (o.model) return "--model is for the in-process all_reduce (no --world)";
    // --root is checked against the world size once the world exists.
  } else {
    if (o.devices_given) return "--devices-per-process needs --world";
    if (!o.algos.empty()) return "--algo needs --world";
    if (!o.peers.empty()) return "--peers needs --world (run under mpirun)";
    if (o.root >= o.ranks) return "--root must be below --ranks";
  }
  return std::nullopt;
}

std::vector<std::size_t> size_sweep(const Options& o) {
  std::vector<std::size_t> sizes;
  for (std::size_t s = o.min_bytes; s <= o.max_bytes;) {
    sizes.push_back(s);
    if (s == o.max_bytes || s > o.max_bytes / o.step_factor) break;
    s *= o.step_factor;
  }
  return sizes;
}

// The cases of one collective, in order (none when the dtype cannot serve it);
// sizes that round to nothing or to the previous size are dropped.
std::vector<Case> plan_cases(const Options& o, CollectiveKind kind) {
  std::vector<Case> cases;
  if (kind_reduces(kind) && o.dtype == DataType::kBytes) return cases;
  std::vector<std::optional<ReduceOp>> ops;
  if (kind_reduces(kind)) ops.assign(o.ops.begin(), o.ops.end());
  else ops.push_back(std::nullopt);
  for (const auto& op : ops) {
    std::size_t previous = 0;
    for (std::size_t size : size_sweep(o)) {
      auto c = make_case(kind, o.dtype, op, o.root, o.ranks, size);
      if (!c || c->size_bytes == previous) continue;
      previous = c->size_bytes;
      cases.push_back(*c);
    }
  }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  bool help = false;
  if (const auto error = parse_args(argc, argv, options, help)) {
    std::fprintf(stderr, "ruccl-perf: %s\n", error->c_str());
    print_usage(stderr);
    return kExitUsage;
  }
  if (help) {
    print_usage(stdout);
    return 0;
  }
#if !RUCCL_PERF_WITH_WORLD
  if (options.world) {
    std::fprintf(stderr,
                 "ruccl-perf: --world needs ruccl::multinode (the MPI bootstrap and the UCX "
                 "transport), and this ruccl-perf was built without it: CMake found no MPI or "
                 "no UCX (see its 'ruccl: MPI=... UCX=...' line). The in-process mode (--ranks) "
                 "works in every build.\n");
    return kExitUsage;
  }
#endif

  // World mode: a shorter timeout than the library's, so a lost peer ends the run.
  auto env = options.world ? Config::from_env(Config().with_timeout(std::chrono::seconds(60)))
                           : Config::from_env();
  if (!env) {
    std::fprintf(stderr, "ruccl-perf: %s\n", env.status().to_string().c_str());
    return kExitUsage;
  }
  Config config = env.value();
  config.with_num_devices(options.world ? options.devices_per_process : options.ranks);
  if (options.max_chunk_bytes) config.with_max_chunk_bytes(*options.max_chunk_bytes);
  if (const Status valid = config.validate(); !valid) {
    std::fprintf(stderr, "ruccl-perf: %s\n", valid.to_string().c_str());
    return kExitUsage;
  }

  Result<std::unique_ptr<Runner>> runner = Status(ErrorCode::kInternal, "no runner");
#if RUCCL_PERF_WITH_WORLD
  if (options.world) runner = Runner::create_world(options, config);
  else
#endif
    runner = Runner::create(options, config);
  if (!runner) {
    std::fprintf(stderr, "ruccl-perf: %s\n", runner.status().to_string().c_str());
    return kExitFailed;
  }
  Runner& run = *runner.value();
  std::optional<WorldInfo> world;
  if (run.world()) {
    options.ranks = run.world_size();  // every Case is planned for the global n
    world = WorldInfo{run.world_size() / run.local_ranks(), run.local_ranks(), run.algos(),
                      run.peers(), run.peer_descriptions()};
  }
  // Only global rank 0 prints the table (in-process: the only process).
  const bool printer = run.first_rank() == 0;
  std::FILE* const out = printer ? stdout : nullptr;
  auto usage_error = [&](const char* message) {
    if (printer) std::fprintf(stderr, "ruccl-perf: %s\n", message);
    return kExitUsage;
  };
  if (run.world() && options.root >= options.ranks)
    return usage_error("--root must be below the world size");

  std::vector<std::vector<Case>> plan;
  std::size_t total = 0;
  std::size_t largest = 0;
  for (CollectiveKind kind : options.collectives) {
    plan.push_back(plan_cases(options, kind));
    total += plan.back().size();
    for (const Case& c : plan.back()) largest = std::max(largest, c.size_bytes);
  }
  if (total == 0)
    return usage_error("nothing to measure (sizes below one element per rank, or dtype bytes "
                       "with only reducing collectives)");
  std::optional<MemcpyBaseline> baseline;
  if (options.memcpy_baseline) {
    // World mode: every process measures (at about the same time), rank 0's is printed.
    const std::size_t reps = std::clamp<std::size_t>((std::size_t{256} << 20) / largest, 5, 1000);
    baseline = measure_memcpy(largest, reps);
  }
  if (out) print_header(out, options, config, baseline, world);

  const bool progress = printer && isatty(STDERR_FILENO) != 0;
  std::size_t done = 0;
  std::vector<Row> rows;
  bool stopped = false;
  for (std::size_t k = 0; k < plan.size() && !stopped; ++k) {
    if (out) print_section(out, options.collectives[k]);
    if (out && plan[k].empty())
      print_note(out, kind_reduces(options.collectives[k]) && options.dtype == DataType::kBytes
                          ? "skipped: dtype bytes cannot be reduced"
                          : "skipped: every size is below one element per rank");
    if (out && options.model && options.collectives[k] != CollectiveKind::kAllReduce)
      print_note(out, "--model: the model covers all_reduce only");
    std::optional<ReduceOp> noted;  // peers without rows: said once per op of a section
    for (const Case& c : plan[k]) {
      if (out && (&c == &plan[k].front() || c.op != noted)) {
        for (const std::string& note : run.peers_without(c)) print_note(out, note);
        noted = c.op;
      }
      if (progress) {
        std::fprintf(stderr, "\r[%zu/%zu] %s %zu bytes...", ++done, total,
                     std::string(kind_name(c.kind)).c_str(), c.size_bytes);
        std::fflush(stderr);
      }
      const std::vector<Row> measured = run.run(c);
      if (progress) std::fprintf(stderr, "\r\033[K");
      for (const Row& row : measured) {
        if (out) print_row(out, row, options);
        if (out && row.model) print_model(out, row);
        rows.push_back(row);
      }
      // Interleaved rows: each ruccl row against every later row (the other
      // strategy, the peers).
      // With --budget-compare a lane's unbounded row is followed by its bounded
      // twin: that pair gets the budget line, rows of other budgets no ratio.
      for (std::size_t a = 0; out && a < measured.size(); ++a)
        for (std::size_t b = a + 1; !measured[a].peer && b < measured.size(); ++b) {
          const bool twins = options.budget_compare && b == a + 1 && !measured[b].peer &&
                             measured[b].budget_bytes == options.budget_compare;
          if (twins) print_budget_ratio(out, measured[a], measured[b]);
          else if (!options.budget_compare || measured[b].peer ||
                   measured[a].budget_bytes == measured[b].budget_bytes)
            print_ratio(out, measured[a], measured[b]);
        }
      // A world communicator cannot be renewed after an error: the run ends.
      if (run.world() && any_error(measured)) {
        if (out) print_note(out, "stopped: the world communicator failed");
        stopped = true;
        break;
      }
    }
  }
  if (out) print_footer(out, rows);

  int status = any_error(rows) ? kExitFailed : 0;
  if (printer && !options.json_path.empty())
    if (const Status s = write_json(options.json_path, options, config, baseline, rows, world); !s) {
      std::fprintf(stderr, "ruccl-perf: %s\n", s.to_string().c_str());
      status = kExitFailed;
    }
  if (printer && !options.csv_path.empty())
    if (const Status s = write_csv(options.csv_path, rows,
                                   run.world() || options.budget_compare.has_value());
        !s) {
      std::fprintf(stderr, "ruccl-perf: %s\n", s.to_string().c_str());
      status = kExitFailed;
    }
  return status;
}
