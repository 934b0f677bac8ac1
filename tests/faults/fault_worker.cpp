// ruccl_fault_worker: the program the `faults` tests run under mpirun.
//
//   mpirun -np P ruccl_fault_worker [--devices-per-process D] [--dir DIR] <mode> [args]
//
// Modes:
//   allreduce-loop [ITERS] [COUNT]   all-reduces of COUNT f32 (default 1 Mi = 4 MiB) back
//                                    to back until an error or ITERS (default 100000);
//                                    RUCCL_FAULT_KIND=all_gather|broadcast|reduce|
//                                    reduce_scatter|all_to_all_v loops over that
//                                    collective instead;
//                                    RUCCL_FAULT_HOST_MEMORY=1 takes its buffers from
//                                    Communicator::allocate_host
//   mismatch op|count|dtype|root|bcast-senders|order|dims
//                                    one good all-reduce (#0), then collective #1 where
//                                    rank 1 deviates; every rank must get the typed error
//   soak N                           N collectives of random kinds and sizes, checked
//   create                           creation only: prints one CREATE line per process
//                                    and ends (create_test.sh)
// --invalid-config gives this process a Config that fails validate()
// (segment_bytes 0): the other processes must learn of it through creation.
//
// Creation prints, on success and on failure alike, one line per process:
//   CREATE rank=<MPI rank from the launcher's environment> status=<ErrorCode name> ms=<creation ms>
//   msg="<message>"
//
// Every rank prints exactly one machine-readable line that the scripts parse:
//   RESULT rank=<g> status=<ErrorCode name> ms=<ms> seq=<K> iters=<n> at=<epoch ms> msg="<message>"
// (soak adds its figures to the same line). ms is the time from the end of the
// rank's last successful collective to the error; seq is the failing collective;
// at is the wall clock when the line was made (kill_trials.sh subtracts the kill time).
//
// The fault modes end with std::_Exit, not by destroying the communicator and
// returning: after a peer died (kill -9) or stalled, MPI_Finalize (which the
// communicator's bootstrap calls when ruccl initialised MPI) waits in a fence
// for every process, and the graceful UCX endpoint closes wait for peers too.
// A survivor that has printed its RESULT has nothing left to give; exiting at
// once keeps a dead peer from turning the reported error into a hang. A run
// where every collective succeeded tears down normally, so MPI's exit path
// stays exercised. The worker makes no MPI call of its own (all through
// create_world_communicator, as the library promises).
//
// With --dir DIR each rank writes DIR/pid.<g> (its pid) at start and
// DIR/running.<g> once it has finished 5 all-reduces, so that kill_trials.sh
// can kill one rank in the middle of the loop.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ruccl/ruccl.hpp"
#include "ruccl/world.hpp"

namespace {

using namespace ruccl;
using Clock = std::chrono::steady_clock;

struct Options {
  std::size_t per_process = 1;
  std::string dir;
  std::string mode;
  std::vector<std::string> args;
  bool invalid_config = false;
};

// The launcher's rank of this process (the worker makes no MPI call of its own).
const char* launcher_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char* r = std::getenv(v)) return r;
  return "?";
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Quotes for the RESULT line: the message goes between double quotes.
std::string quoted(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == '"' || c == '\n') ? '\'' : c;
  return out;
}

std::mutex g_print;  // one line per rank, not interleaved (threads of one process)

void print_result(std::size_t rank, const Status& s, double ms, std::uint64_t seq,
                  std::uint64_t iters, const std::string& extra = {}) {
  const auto at = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count();
  std::lock_guard lock(g_print);
  std::printf("RESULT rank=%zu status=%s ms=%.0f seq=%" PRIu64 " iters=%" PRIu64 " at=%lld%s msg=\"%s\"\n",
              rank, std::string(error_code_name(s.code())).c_str(), ms, seq, iters,
              static_cast<long long>(at), extra.c_str(), quoted(s.message()).c_str());
  std::fflush(stdout);
}

void write_file(const std::string& dir, const std::string& name, const std::string& text) {
  if (dir.empty()) return;
  const std::string tmp = dir + "/." + name, path = dir + "/" + name;
  { std::ofstream(tmp) << text << "\n"; }
  std::rename(tmp.c_str(), path.c_str());  // readers never see a half-written file
}

// ---------------------------------------------------------------- allreduce-loop

// Returns true when the loop ended in an error (a fault was seen).
// RUCCL_FAULT_KIND: the collective of the loop, all_reduce (the default),
// all_gather (also RUCCL_FAULT_GATHER=1: the lean path's direct form for
// copies), broadcast (RUCCL_FAULT_ROOT_IN_PLACE below) or reduce (from rank 0), reduce_scatter,
// all_to_all_v (rows of one element, dealt out to the ranks as a reduce-scatter's shards). Every
// input element is 1; every element a rank gets is 1 (copies) or the world (sums).
CollectiveKind loop_kind() {
  const char* gather = std::getenv("RUCCL_FAULT_GATHER");
  if (gather != nullptr && std::string(gather) == "1") return CollectiveKind::kAllGather;
  const char* kind = std::getenv("RUCCL_FAULT_KIND");
  const std::string k = kind != nullptr ? kind : "";
  for (CollectiveKind c :
       {CollectiveKind::kAllGather, CollectiveKind::kBroadcast, CollectiveKind::kReduce,
        CollectiveKind::kReduceScatter, CollectiveKind::kAllToAllV})
    if (k == collective_name(c)) return c;
  return CollectiveKind::kAllReduce;
}

bool allreduce_loop(Communicator& comm, std::size_t local, const Options& opt) {
  const std::size_t rank = comm.first_rank() + local;
  const std::uint64_t iters = opt.args.size() > 0 ? std::strtoull(opt.args[0].c_str(), nullptr, 10) : 100000;
  const std::size_t count = opt.args.size() > 1 ? std::strtoull(opt.args[1].c_str(), nullptr, 10) : (1u << 20);
  const CollectiveKind kind = loop_kind();
  const std::size_t world = comm.world_size();
  // reduce_scatter: this rank's balanced shard (the first count % world ranks one more).
  const auto shard_of = [&](std::size_t r) { return count / world + (r < count % world ? 1 : 0); };
  const std::size_t shard = shard_of(rank);
  const std::size_t out_count = kind == CollectiveKind::kAllGather       ? count * world
                                : kind == CollectiveKind::kReduceScatter ? shard
                                : kind == CollectiveKind::kAllToAllV     ? shard * world
                                                                         : count;
  // all_to_all_v: rank d gets its shard's worth of rows from every rank.
  std::vector<std::size_t> send_counts(world), recv_counts;
  for (std::size_t d = 0; d < world; ++d) send_counts[d] = shard_of(d);
  // RUCCL_FAULT_HOST_MEMORY=1: both buffers from allocate_host (the node's
  // other processes read them in place).
  const char* host_memory = std::getenv("RUCCL_FAULT_HOST_MEMORY");
  const bool shared = host_memory != nullptr && std::string(host_memory) == "1";
  std::vector<float> own_data, own_out;
  std::shared_ptr<std::byte> shared_data, shared_out;
  const std::size_t out_size = std::max<std::size_t>(out_count, 1);
  std::span<float> data, out;
  if (shared) {
    auto a = comm.allocate_host(std::max<std::size_t>(count, 1) * sizeof(float));
    auto b = comm.allocate_host(out_size * sizeof(float));
    if (!a || !b) {
      print_result(rank, a ? b.status() : a.status(), 0, comm.next_sequence(rank), 0);
      return true;
    }
    shared_data = std::move(a).value(), shared_out = std::move(b).value();
    data = {reinterpret_cast<float*>(shared_data.get()), count};
    out = {reinterpret_cast<float*>(shared_out.get()), out_size};
    std::fill(data.begin(), data.end(), 1.0f);
  } else {
    own_data.assign(count, 1.0f), own_out.assign(out_size, 0.0f);
    data = own_data, out = own_out;
  }
  const DeviceId dev = comm.devices()[local];
  const TensorView in = TensorView::of(data.data(), DataType::kF32, count, dev);
  const TensorView ov = TensorView::of(out.data(), DataType::kF32, out_count, dev);
  const bool copies = kind == CollectiveKind::kAllGather || kind == CollectiveKind::kBroadcast ||
                      kind == CollectiveKind::kAllToAllV;
  const float want = copies ? 1.0f : float(world);
  // RUCCL_FAULT_ROOT_IN_PLACE=1: a broadcast's root sends from its output
  // (the lean path's direct form then has it write a share of each
  // receiver's output); it checks nothing then.
  const char* root_in_place_env = std::getenv("RUCCL_FAULT_ROOT_IN_PLACE");
  const bool root_in_place = kind == CollectiveKind::kBroadcast && root_in_place_env != nullptr &&
                             std::string(root_in_place_env) == "1";
  const bool checked = out_count > 0 && (kind != CollectiveKind::kReduce || rank == 0) &&
                       !(root_in_place && rank == 0);
  auto last_ok = Clock::now();
  for (std::uint64_t i = 0; i < iters; ++i) {
    const std::uint64_t seq = comm.next_sequence(rank);
    out[0] = out[out.size() - 1] = -1.0f;
    Status s;
    switch (kind) {
      case CollectiveKind::kAllGather: s = comm.all_gather_into(rank, in, ov); break;
      case CollectiveKind::kBroadcast:
        s = comm.broadcast_into(rank, rank == 0 ? &in : nullptr,
                                rank == 0 && root_in_place ? in : ov);
        break;
      case CollectiveKind::kReduce: s = comm.reduce_into(rank, in, ov, ReduceOp::kSum, 0); break;
      case CollectiveKind::kReduceScatter:
        s = comm.reduce_scatter_into(rank, in, ov, ReduceOp::kSum);
        break;
      case CollectiveKind::kAllToAllV:
        s = comm.all_to_all_v_into(rank, in, send_counts, ov, recv_counts);
        break;
      default: s = comm.all_reduce_into(rank, in, ov, ReduceOp::kSum); break;
    }
    if (!s) {
      print_result(rank, s, ms_since(last_ok), seq, i);
      return true;
    }
    if (checked && (out[0] != want || out[out_count - 1] != want)) {
      print_result(rank,
                   Status(ErrorCode::kInternal,
                          std::string("wrong ") + std::string(collective_name(kind)) + " result"),
                   0, seq, i);
      return true;
    }
    last_ok = Clock::now();
    if (i == 5) write_file(opt.dir, "running." + std::to_string(rank), std::to_string(i));
  }
  print_result(rank, Status::ok(), 0, comm.next_sequence(rank), iters);
  return false;
}

// ---------------------------------------------------------------- mismatch

// Collective #1 with rank 1 deviating in `what`; returns the code every rank must get.
std::optional<ErrorCode> expected_mismatch(const std::string& what) {
  if (what == "op") return ErrorCode::kOpMismatch;
  if (what == "count") return ErrorCode::kShapeMismatch;
  if (what == "dtype") return ErrorCode::kDtypeMismatch;
  if (what == "root") return ErrorCode::kRootMismatch;
  if (what == "bcast-senders") return ErrorCode::kBroadcastSenderCount;
  if (what == "order") return ErrorCode::kCollectiveMismatch;
  if (what == "dims") return ErrorCode::kShapeMismatch;  // more than a fingerprint carries
  return std::nullopt;
}

Status mismatch_call(Communicator& comm, std::size_t rank, std::size_t local, const std::string& what) {
  const bool odd = rank == 1;  // the deviating rank
  std::vector<std::int32_t> buf(65, 1);
  const DeviceId dev = comm.devices()[local];
  const TensorView v = TensorView::of(buf.data(), DataType::kI32, buf.size(), dev);
  if (what == "op") return comm.all_reduce(rank, v, odd ? ReduceOp::kMax : ReduceOp::kSum).status();
  if (what == "count") {
    const TensorView shorter = TensorView::of(buf.data(), DataType::kI32, odd ? 64 : 65, dev);
    return comm.all_reduce(rank, shorter, ReduceOp::kSum).status();
  }
  if (what == "dtype") {
    const TensorView t = TensorView::of(buf.data(), odd ? DataType::kF32 : DataType::kI32, buf.size(), dev);
    return comm.all_reduce(rank, t, ReduceOp::kSum).status();
  }
  if (what == "root") return comm.reduce(rank, v, ReduceOp::kSum, odd ? 1 : 0).status();
  if (what == "bcast-senders") return comm.broadcast(rank, rank == 0 || odd ? &v : nullptr).status();
  if (what == "dims") {  // rank 1: the same 65 elements as [65, 1 x 16], 17 dims
    TensorView t = v;
    if (odd) t.shape.resize(17, 1);
    return comm.all_reduce(rank, t, ReduceOp::kSum).status();
  }
  // order: rank 1 calls all-gather where the others call all-reduce (same view).
  if (odd) return comm.all_gather(rank, v).status();
  return comm.all_reduce(rank, v, ReduceOp::kSum).status();
}

// Returns 0 when this rank got the expected code naming rank 1 and collective #1.
int mismatch(Communicator& comm, std::size_t local, const Options& opt) {
  const std::size_t rank = comm.first_rank() + local;
  const std::string what = opt.args.empty() ? "" : opt.args[0];
  const auto want = expected_mismatch(what);
  std::int32_t one = 1;
  const TensorView v = TensorView::of(&one, DataType::kI32, 1, comm.devices()[local]);
  if (auto warm = comm.all_reduce(rank, v, ReduceOp::kSum); !warm) {  // #0 agrees
    print_result(rank, warm.status(), 0, 0, 0);
    return 1;
  }
  const auto t0 = Clock::now();
  const Status s = mismatch_call(comm, rank, local, what);
  print_result(rank, s, ms_since(t0), 1, 1);
  const std::string& m = s.message();
  // Names rank 1: "rank 1 passed ...", or for broadcast "2 senders (ranks 0, 1)".
  const bool names_rank1 = m.find(what == "bcast-senders" ? "ranks 0, 1" : "rank 1 ") != std::string::npos;
  const bool good = want && s.code() == *want && names_rank1 &&
                    m.find("collective #1") != std::string::npos;
  if (!good)
    std::fprintf(stderr, "rank %zu: mismatch %s: expected %s naming rank 1 and collective #1, got %s\n",
                 rank, what.c_str(), want ? std::string(error_code_name(*want)).c_str() : "(unknown case)",
                 s.to_string().c_str());
  return good ? 0 : 1;
}

// ---------------------------------------------------------------- soak

// The same pseudo-random stream on every rank (splitmix64: fully specified, unlike
// the standard distributions), so every rank draws the same collective.
struct Rng {
  std::uint64_t x;
  std::uint64_t next() {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : std::size_t(next() % n); }
};

// Input element i of rank r in collective `seq`: small integers, exact in every
// dtype used and in any sum over up to 16 ranks.
double value(std::size_t r, std::size_t i, std::uint64_t seq) {
  return double((r + 1) * (i % 7 + 1) + seq % 5);
}
double reduced(ReduceOp op, std::size_t world, std::size_t i, std::uint64_t seq) {
  const double w = double(world), base = double(i % 7 + 1), shift = double(seq % 5);
  switch (op) {
    case ReduceOp::kMin: return base + shift;
    case ReduceOp::kMax: return base * w + shift;
    default: return base * w * (w + 1) / 2 + w * shift;  // kSum
  }
}
// all-to-all-v element k of the block src sends to dst.
double a2a_value(std::size_t src, std::size_t dst, std::size_t k) {
  return double((src + 1) * 100 + dst * 10 + k % 7);
}

struct Typed {  // element access by dtype, through double (all values are exact)
  DataType dtype;
  double get(const void* p, std::size_t i) const {
    switch (dtype) {
      case DataType::kF32: return static_cast<const float*>(p)[i];
      case DataType::kF64: return static_cast<const double*>(p)[i];
      case DataType::kI32: return static_cast<const std::int32_t*>(p)[i];
      default: return double(static_cast<const std::int64_t*>(p)[i]);
    }
  }
  void set(void* p, std::size_t i, double v) const {
    switch (dtype) {
      case DataType::kF32: static_cast<float*>(p)[i] = float(v); break;
      case DataType::kF64: static_cast<double*>(p)[i] = v; break;
      case DataType::kI32: static_cast<std::int32_t*>(p)[i] = std::int32_t(v); break;
      default: static_cast<std::int64_t*>(p)[i] = std::int64_t(v); break;
    }
  }
};

long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

struct SoakCounts {
  std::uint64_t collectives = 0, mismatches = 0, elements = 0, bytes = 0;
  std::uint64_t by_kind[6] = {};
};

// One random collective; returns its error, counts wrong elements into `c`.
Status soak_one(Communicator& comm, std::size_t rank, std::size_t local, Rng& rng,
                std::vector<unsigned char>& buf, SoakCounts& c) {
  constexpr DataType kTypes[] = {DataType::kF32, DataType::kF64, DataType::kI32, DataType::kI64};
  constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax};
  const std::size_t world = comm.world_size();
  const std::uint64_t seq = comm.next_sequence(rank);
  const auto kind = static_cast<CollectiveKind>(rng.below(6));
  const Typed t{kTypes[rng.below(4)]};
  const ReduceOp op = kOps[rng.below(3)];
  const std::size_t root = rng.below(world);
  const std::size_t esize = dtype_size(t.dtype);
  // 0 .. 256 KiB per rank (a few exactly empty).
  const std::size_t count = rng.below(50) == 0 ? 0 : rng.below((256u << 10) / esize + 1);
  const DeviceId dev = comm.devices()[local];
  auto check = [&](double got, double want) {
    ++c.elements;
    if (got != want) ++c.mismatches;
  };
  ++c.by_kind[static_cast<int>(kind)];
  c.bytes += count * esize;

  if (kind == CollectiveKind::kAllToAllV) {
    std::vector<std::size_t> rows(world * world);  // rows[s*world+d]: s sends d
    const std::size_t cap = count / world + 1;
    for (auto& r : rows) r = rng.below(cap);
    std::vector<std::size_t> send(rows.begin() + rank * world, rows.begin() + (rank + 1) * world);
    std::size_t total = 0;
    for (std::size_t d = 0; d < world; ++d) total += send[d];
    buf.resize(std::max<std::size_t>(total * esize, 1));
    for (std::size_t d = 0, at = 0; d < world; ++d)
      for (std::size_t k = 0; k < send[d]; ++k) t.set(buf.data(), at++, a2a_value(rank, d, k));
    auto r = comm.all_to_all_v(rank, TensorView::of(buf.data(), t.dtype, total, dev), send);
    if (!r) return r.status();
    for (std::size_t s = 0, at = 0; s < world; ++s) {
      check(double(r->recv_counts[s]), double(rows[s * world + rank]));
      for (std::size_t k = 0; k < r->recv_counts[s]; ++k) check(t.get(r->data.data(), at++), a2a_value(s, rank, k));
    }
    return Status::ok();
  }

  buf.resize(std::max<std::size_t>(count * esize, 1));
  for (std::size_t i = 0; i < count; ++i) t.set(buf.data(), i, value(rank, i, seq));
  const TensorView in = TensorView::of(buf.data(), t.dtype, count, dev);
  switch (kind) {
    case CollectiveKind::kAllReduce: {
      auto r = comm.all_reduce(rank, in, op);
      if (!r) return r.status();
      for (std::size_t i = 0; i < count; ++i) check(t.get(r->data(), i), reduced(op, world, i, seq));
      break;
    }
    case CollectiveKind::kReduce: {
      auto r = comm.reduce(rank, in, op, root);
      if (!r) return r.status();
      check(double(r->has_value()), double(rank == root));
      if (rank == root && r->has_value())
        for (std::size_t i = 0; i < count; ++i) check(t.get((*r)->data(), i), reduced(op, world, i, seq));
      break;
    }
    case CollectiveKind::kBroadcast: {
      auto r = comm.broadcast(rank, rank == root ? &in : nullptr);
      if (!r) return r.status();
      for (std::size_t i = 0; i < count; ++i) check(t.get(r->data(), i), value(root, i, seq));
      break;
    }
    case CollectiveKind::kAllGather: {
      auto r = comm.all_gather(rank, in);
      if (!r) return r.status();
      for (std::size_t s = 0; s < world; ++s)
        for (std::size_t i = 0; i < count; ++i) check(t.get(r->data(), s * count + i), value(s, i, seq));
      break;
    }
    case CollectiveKind::kReduceScatter: {
      auto r = comm.reduce_scatter(rank, in, op);
      if (!r) return r.status();
      const std::size_t base = count / world, extra = count % world;
      const std::size_t offset = rank * base + std::min(rank, extra);
      const std::size_t rows = base + (rank < extra ? 1 : 0);
      check(double(r->count()), double(rows));
      for (std::size_t j = 0; j < std::min(rows, r->count()); ++j)
        check(t.get(r->data(), j), reduced(op, world, offset + j, seq));
      break;
    }
    default: break;
  }
  return Status::ok();
}

constexpr std::uint64_t kSoakWarmup = 200;
constexpr long kSoakRssGrowthKib = 16 << 10;  // 16 MiB

// Returns 0 when every collective succeeded with exact results and RSS stayed flat.
int soak(Communicator& comm, std::size_t local, const Options& opt) {
  const std::size_t rank = comm.first_rank() + local;
  const std::uint64_t n = opt.args.empty() ? 10000 : std::strtoull(opt.args[0].c_str(), nullptr, 10);
  Rng rng{0x5EEDF00Dull};  // the same seed on every rank
  std::vector<unsigned char> buf;
  SoakCounts c;
  long rss_start = rss_kib();
  const auto t0 = Clock::now();
  auto last_ok = t0;
  Status failed;
  for (std::uint64_t i = 0; i < n && failed.is_ok(); ++i) {
    if (i == std::min(kSoakWarmup, n / 2)) rss_start = rss_kib();  // after the warm-up
    failed = soak_one(comm, rank, local, rng, buf, c);
    if (failed.is_ok()) { ++c.collectives; last_ok = Clock::now(); }
  }
  const long rss_end = rss_kib();
  char extra[512];
  std::snprintf(extra, sizeof extra,
                " collectives=%" PRIu64 " mismatches=%" PRIu64 " elements=%" PRIu64
                " mib=%.1f rss_start_kib=%ld rss_end_kib=%ld wall_s=%.2f kinds=%" PRIu64 "/%" PRIu64
                "/%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64,
                c.collectives, c.mismatches, c.elements, double(c.bytes) / (1 << 20), rss_start, rss_end,
                ms_since(t0) / 1000, c.by_kind[0], c.by_kind[1], c.by_kind[2], c.by_kind[3],
                c.by_kind[4], c.by_kind[5]);
  print_result(rank, failed, failed ? 0 : ms_since(last_ok), comm.next_sequence(rank), c.collectives, extra);
  const bool good = failed.is_ok() && c.mismatches == 0 && c.collectives == n &&
                    rss_end - rss_start <= kSoakRssGrowthKib;
  if (!good)
    std::fprintf(stderr, "rank %zu: soak FAILED (%" PRIu64 " mismatches, RSS %ld -> %ld KiB, %s)\n", rank,
                 c.mismatches, rss_start, rss_end, failed.to_string().c_str());
  return good ? 0 : 1;
}

int usage() {
  std::fprintf(stderr,
               "usage: ruccl_fault_worker [--devices-per-process D] [--dir DIR] "
               "allreduce-loop [ITERS] [COUNT] | mismatch <op|count|dtype|root|bcast-senders|order> "
               "| soak [N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--devices-per-process" && i + 1 < argc) opt.per_process = std::strtoul(argv[++i], nullptr, 10);
    else if (arg == "--dir" && i + 1 < argc) opt.dir = argv[++i];
    else if (arg == "--invalid-config") opt.invalid_config = true;
    else break;
  }
  if (i >= argc || opt.per_process == 0) return usage();
  opt.mode = argv[i++];
  for (; i < argc; ++i) opt.args.push_back(argv[i]);
  if (opt.mode != "allreduce-loop" && opt.mode != "soak" && opt.mode != "create" &&
      !(opt.mode == "mismatch" && !opt.args.empty() && expected_mismatch(opt.args[0])))
    return usage();

  auto config = Config::from_env(Config().with_timeout(std::chrono::seconds(10)));
  if (!config) { std::fprintf(stderr, "%s\n", config.status().to_string().c_str()); return 2; }
  std::vector<DeviceId> devices;
  for (std::size_t d = 0; d < opt.per_process; ++d) devices.push_back(host_device(d));
  if (opt.invalid_config) config.value().with_segment_bytes(0);
  const auto t0 = Clock::now();
  auto created = create_world_communicator(devices, config.value());
  if (opt.mode == "create" || !created) {
    const Status& s = created.status();
    std::printf("CREATE rank=%s status=%s ms=%.0f msg=\"%s\"\n", launcher_rank(),
                std::string(error_code_name(s.code())).c_str(), ms_since(t0),
                quoted(s.message()).c_str());
    std::fflush(stdout);
    if (!created) {
      std::fprintf(stderr, "create_world_communicator: %s\n", s.to_string().c_str());
      return 1;
    }
    return 0;
  }
  std::shared_ptr<Communicator> comm = created.value();
  for (std::size_t d = 0; d < opt.per_process; ++d)
    write_file(opt.dir, "pid." + std::to_string(comm->first_rank() + d), std::to_string(getpid()));

  std::atomic<int> failures{0};
  std::atomic<bool> faulted{false};
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < opt.per_process; ++d) {
    threads.emplace_back([&, d] {
      if (opt.mode == "allreduce-loop") {
        if (allreduce_loop(*comm, d, opt)) faulted = true;
      } else if (opt.mode == "mismatch") {
        failures += mismatch(*comm, d, opt);
      } else {
        const int bad = soak(*comm, d, opt);
        failures += bad;
        if (bad) faulted = true;  // peers may be stuck: do not wait for them at teardown
      }
    });
  }
  for (auto& t : threads) t.join();
  if (faulted) {
    std::fflush(nullptr);
    // See the header: a dead or stalled peer must not hang our exit.
    std::_Exit(failures == 0 ? 0 : 1);
  }
  comm.reset();
  return failures == 0 ? 0 : 1;
}
