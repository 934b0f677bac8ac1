#include "perf_runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>

#include "perf_data.hpp"
#include "perf_model.hpp"
#include "ruccl/device.hpp"
#if RUCCL_PERF_WITH_WORLD
#include "ruccl/world.hpp"
#endif

namespace ruccl::perf {
namespace {

// The in-process runs' barrier before each timed call: it yields instead of
// sleeping, so that every rank leaves it within a yield of the last arrival.
// (std::barrier sleeps on a futex: a rank woken from it on this VM came up
// to tens of us after the others, which timed the wake, not ruccl; the
// world runs' barrier is a ruccl all-reduce, whose waits yield too.)
class YieldingBarrier {
 public:
  explicit YieldingBarrier(std::size_t n) : expected_(n), next_expected_(n) {}
  void arrive_and_wait() {
    const std::uint64_t phase = arrive(false);
    while (phase_.load(std::memory_order_acquire) == phase) std::this_thread::yield();
  }
  // As std::barrier's: arrives, and later phases expect one rank fewer.
  void arrive_and_drop() { arrive(true); }

 private:
  std::uint64_t arrive(bool drop) {
    while (busy_.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
    const std::uint64_t phase = phase_.load(std::memory_order_relaxed);
    if (drop) --next_expected_;
    if (++count_ == expected_) {
      count_ = 0;
      expected_ = next_expected_;
      phase_.store(phase + 1, std::memory_order_release);
    }
    busy_.clear(std::memory_order_release);
    return phase;
  }

  std::atomic_flag busy_;  // guards the counts (a lock that yields, never sleeps)
  std::size_t count_ = 0, expected_, next_expected_;
  std::atomic<std::uint64_t> phase_{0};
};

}  // namespace

// ---------------------------------------------------------------- RankPool

RankPool::RankPool(std::size_t ranks) {
  threads_.reserve(ranks);
  for (std::size_t rank = 0; rank < ranks; ++rank)
    threads_.emplace_back([this, rank] { serve(rank); });
}

RankPool::~RankPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

Status RankPool::run(const std::function<void(std::size_t)>& task) {
  std::unique_lock lock(mutex_);
  task_ = &task;
  running_ = threads_.size();
  first_error_ = Status::ok();
  ++generation_;
  wake_.notify_all();
  done_.wait(lock, [&] { return running_ == 0; });
  task_ = nullptr;
  return first_error_;
}

void RankPool::serve(std::size_t rank) {
  std::uint64_t seen = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    const auto* task = task_;
    lock.unlock();
    Status error;
    try {
      (*task)(rank);
    } catch (const std::exception& e) {
      error = Status(ErrorCode::kInternal, "rank " + std::to_string(rank) + " threw: " + e.what());
    } catch (...) {
      error = Status(ErrorCode::kInternal, "rank " + std::to_string(rank) + " threw");
    }
    lock.lock();
    if (!error.is_ok() && first_error_.is_ok()) first_error_ = error;
    if (--running_ == 0) done_.notify_one();
  }
}

// ---------------------------------------------------------------- cases

std::optional<Case> make_case(CollectiveKind kind, DataType dtype, std::optional<ReduceOp> op,
                              std::size_t root, std::size_t ranks, std::size_t size_bytes) {
  Case c;
  c.kind = kind;
  c.dtype = dtype;
  c.op = kind_reduces(kind) ? op : std::nullopt;
  c.root = kind_has_root(kind) ? std::optional(root) : std::nullopt;
  c.ranks = ranks;
  const std::size_t elem = dtype_size(dtype);
  switch (kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAllV:
      // Whole blocks of `chunk` elements, one per rank.
      c.chunk = size_bytes / (ranks * elem);
      c.count = c.chunk * ranks;
      break;
    default:
      c.count = size_bytes / elem;
      c.chunk = c.count;
      break;
  }
  c.size_bytes = c.count * elem;
  if (c.count == 0) return std::nullopt;
  return c;
}

namespace {
volatile unsigned char memcpy_sink;
}  // namespace

MemcpyBaseline measure_memcpy(std::size_t bytes, std::size_t reps) {
  MemcpyBaseline out{bytes, 0};
  auto src = Tensor::host(DataType::kU8, {bytes});
  auto dst = Tensor::host(DataType::kU8, {bytes});
  if (!src || !dst || bytes == 0) return out;
  std::memset(src->data(), 0x5a, bytes);
  std::memcpy(dst->data(), src->data(), bytes);  // warm-up: fault in every page
  double total_s = 0;
  for (std::size_t i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst->data(), src->data(), bytes);
    const auto t1 = std::chrono::steady_clock::now();
    total_s += std::chrono::duration<double>(t1 - t0).count();
    // Keep the copy observable so it cannot be dropped.
    memcpy_sink = static_cast<unsigned char*>(dst->data())[i % bytes];
  }
  out.gbps = total_s > 0 ? static_cast<double>(bytes) * static_cast<double>(reps) / total_s / 1e9 : 0;
  return out;
}

// ---------------------------------------------------------------- Runner

// One rank's buffers and the views of the placement being measured.
struct Runner::RankState {
  Tensor in;   // the input (and, in place, the result of most collectives)
  Tensor out;  // the output (and the in-place buffer of all_gather)
  TensorView in_view;
  TensorView out_view;
  std::vector<std::size_t> send_counts;  // all_to_all_v
  std::vector<std::size_t> recv_counts;
  // Per slot (lanes, then peers):
  std::vector<std::vector<double>> times_us;  // this rank's time of each iteration
  std::vector<std::vector<double>> max_us;    // world: the max over all ranks
  std::vector<std::uint64_t> wrong;
  std::vector<std::uint64_t> staging;         // per lane: peak staging of this rank's calls
  std::vector<std::uint64_t> staging_max;     // world: the max over all ranks
  std::int32_t token_in = 0, token_out = 0;   // world: the barrier's all_reduce
  Tensor copy_from, copy_to;                  // --model (local rank 0): the memcpy
  std::vector<double> copy_us;                //   and its time per iteration
  Status status;
};

namespace {

// `shared`: from its allocate_host (every call: the communicator may be new).
Status ensure_bytes(Tensor& t, std::size_t bytes, std::size_t rank, Communicator* shared) {
  if (shared == nullptr && t.data() != nullptr && t.bytes() >= bytes) return Status::ok();
  t = Tensor();  // free first: peak memory stays one buffer per role
  bytes = std::max<std::size_t>(bytes, 1);
  if (shared != nullptr) {
    auto memory = shared->allocate_host(bytes);
    RUCCL_TRY(memory);
    t = Tensor(std::move(memory).value(), DataType::kU8, {bytes}, host_device(rank));
    return Status::ok();
  }
  auto fresh = Tensor::host(DataType::kU8, {bytes}, rank);
  RUCCL_TRY(fresh);
  t = std::move(fresh).value();
  return Status::ok();
}

std::byte* at(const Tensor& t, std::size_t byte_offset) {
  return static_cast<std::byte*>(t.data()) + byte_offset;
}

// The nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto index = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(index, 1, sorted.size()) - 1];
}

}  // namespace

Runner::Runner(const Options& options, const Config& config,
               std::shared_ptr<DeviceAdapter> adapter, std::vector<Lane> lanes, bool world)
    : options_(options),
      config_(config),
      adapter_(std::move(adapter)),
      lanes_(std::move(lanes)),
      world_(world),
      ranks_(lanes_.front().comm->devices().size()),
      pool_(lanes_.front().comm->devices().size()) {}

Runner::~Runner() {
  // The pool's threads are idle here. The peers first (they use MPI), then the
  // communicators in reverse order of creation: in world mode the first one may
  // own MPI (and finalise it).
  peers_.clear();
  while (!lanes_.empty()) lanes_.pop_back();
}

std::size_t Runner::world_size() const { return lanes_.front().comm->world_size(); }
std::size_t Runner::first_rank() const { return lanes_.front().comm->first_rank(); }
std::size_t Runner::local_ranks() const { return lanes_.front().comm->devices().size(); }

std::vector<Runner::Lane> Runner::lanes_of(const Options& options, std::string name,
                                           std::shared_ptr<Communicator> comm,
                                           const std::string& impl) {
  std::vector<Lane> lanes;
  if (!options.budget_compare) {
    lanes.push_back({std::move(name), std::move(comm), impl, std::nullopt, std::nullopt});
    return lanes;
  }
  const std::size_t budget = *options.budget_compare;
  const std::string prefix = name.empty() ? "" : name + " ";
  lanes.push_back({prefix + "unbounded", comm, impl + "-unbounded",
                   std::numeric_limits<std::size_t>::max(), std::nullopt});
  lanes.push_back({prefix + "budget " + bytes_text(budget), comm,
                   impl + "-budget-" + bytes_text(budget), budget,
                   BoundedCommunicator(comm, budget)});
  return lanes;
}

std::vector<std::string> Runner::algos() const {
  std::vector<std::string> names;
  for (const Lane& lane : lanes_) names.push_back(lane.name);
  return names;
}

std::vector<std::string> Runner::peers_without(const Case& c) const {
  std::vector<std::string> notes;
  for (const auto& peer : peers_) {
    const std::string out_of_place = peer->unsupported(c, false);
    const std::string in_place = kind_has_in_place(c.kind) ? peer->unsupported(c, true) : "";
    if (!out_of_place.empty() && (!kind_has_in_place(c.kind) || !in_place.empty()))
      notes.push_back(peer->name() + ": no rows (" + (in_place.empty() ? out_of_place : in_place) +
                      ")");
  }
  return notes;
}

std::vector<std::string> Runner::peer_descriptions() const {
  std::vector<std::string> out;
  for (const auto& peer : peers_) out.push_back(peer->name() + ": " + peer->description());
  return out;
}

std::vector<std::string> Runner::peers() const {
  std::vector<std::string> names;
  for (const auto& peer : peers_) names.push_back(peer->name());
  return names;
}

Result<std::unique_ptr<Runner>> Runner::create(const Options& options, const Config& config) {
  std::vector<DeviceId> devices;
  for (std::size_t rank = 0; rank < options.ranks; ++rank) devices.push_back(host_device(rank));
  std::shared_ptr<DeviceAdapter> adapter = make_host_adapter();
  auto comm = Communicator::create(std::move(devices), adapter, config);
  if (!comm) return comm.status();
  std::vector<Lane> lanes = lanes_of(options, "", std::move(comm).value(), "ruccl-inproc");
  return std::unique_ptr<Runner>(
      new Runner(options, config, std::move(adapter), std::move(lanes), false));
}

#if RUCCL_PERF_WITH_WORLD
Result<std::unique_ptr<Runner>> Runner::create_world(const Options& options, const Config& config) {
  std::vector<GlobalStrategy> algos = options.algos;
  if (algos.empty()) algos.push_back(config.global_strategy());
  std::vector<DeviceId> devices;
  for (std::size_t d = 0; d < options.devices_per_process; ++d) devices.push_back(host_device(d));
  // The communicators coexist: the first initialises MPI (and finalises it when
  // destroyed, last); the later ones find MPI initialised and leave it alone.
  std::vector<Lane> lanes;
  for (GlobalStrategy algo : algos) {
    Config c = config;
    c.with_global_strategy(algo);
    auto comm = create_world_communicator(devices, c);
    if (!comm)
      return Status(comm.status().code(), "create_world_communicator(" +
                                              std::string(global_strategy_name(algo)) +
                                              "): " + comm.status().message());
    const std::string name(global_strategy_name(algo));
    for (Lane& lane : lanes_of(options, name, std::move(comm).value(), "ruccl-" + name))
      lanes.push_back(std::move(lane));
  }
  std::unique_ptr<Runner> runner(new Runner(options, config, nullptr, std::move(lanes), true));
  if (!options.peers.empty() && options.devices_per_process != 1)
    return Status(ErrorCode::kInvalidArgument,
                  "--peers needs --devices-per-process 1 (a peer runs one rank per process)");
  // Every process creates the same peers in the same order (each is collective).
  for (const std::string& name : options.peers) {
    auto peer = make_peer(name, runner->first_rank(), options.max_bytes);
    if (!peer) return peer.status();
    runner->peers_.push_back(std::move(peer).value());
  }
  return runner;
}
#endif

Status Runner::task_error(const Status& pool_status) const {
  if (!pool_status) return pool_status;
  const Status* aborted = nullptr;
  for (const RankState& st : ranks_) {
    if (st.status.is_ok()) continue;
    if (st.status.code() != ErrorCode::kAborted) return st.status;
    if (aborted == nullptr) aborted = &st.status;
  }
  return aborted ? *aborted : Status::ok();
}

Status Runner::renew_communicators() {
  // Lanes sharing a communicator (--budget-compare) share its replacement.
  std::vector<std::pair<Communicator*, std::shared_ptr<Communicator>>> renewed;
  for (Lane& lane : lanes_) {
    if (!lane.comm->aborted()) continue;
    // A world communicator is collective to create; after an error the run ends.
    if (world_)
      return Status(ErrorCode::kAborted,
                    "the world communicator (" + lane.name + ") was aborted by an earlier error");
    auto done = std::find_if(renewed.begin(), renewed.end(),
                             [&](const auto& r) { return r.first == lane.comm.get(); });
    if (done == renewed.end()) {
      auto comm = Communicator::create(lane.comm->devices(), adapter_, config_);
      if (!comm) return comm.status();
      renewed.emplace_back(lane.comm.get(), std::move(comm).value());
      done = renewed.end() - 1;
    }
    lane.comm = done->second;
    if (lane.bounded) lane.bounded.emplace(lane.comm, lane.bounded->max_chunk_bytes());
  }
  return Status::ok();
}

std::vector<Row> Runner::run(const Case& c) {
  const std::size_t slots = lanes_.size() + peers_.size();
  copy_us_.clear();
  std::vector<Timing> out_of_place = measure(c, false);
  std::vector<Timing> in_place(slots);
  if (kind_has_in_place(c.kind)) in_place = measure(c, true);
  std::vector<Row> rows;
  for (std::size_t l = 0; l < slots; ++l) {
    if (!out_of_place[l].ran && !in_place[l].ran) continue;  // a peer without this case
    Row row;
    row.c = c;
    if (l < lanes_.size()) {
      row.algo = lanes_[l].name;
      row.impl = lanes_[l].impl;
      row.budget_bytes = lanes_[l].budget.value_or(config_.max_chunk_bytes());
    } else {
      row.algo = row.impl = peers_[l - lanes_.size()]->name();
      row.peer = true;
    }
    row.out_of_place = out_of_place[l];
    row.in_place = in_place[l];
    if (!copy_us_.empty() && l < lanes_.size()) {
      // The simultaneous copies' p50 over both placements' iterations: every
      // rank thread copied S bytes, so together they copied n S in that time.
      std::vector<double> sorted = copy_us_;
      std::sort(sorted.begin(), sorted.end());
      const double p50 = sorted[(sorted.size() - 1) / 2];
      const double gbps =
          p50 > 0 ? static_cast<double>(c.ranks * c.size_bytes) / p50 / 1e3 : 0;
      row.model = all_reduce_model(c.ranks, c.size_bytes, gbps, usable_cpus(), row);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Timing> Runner::measure(const Case& c, bool in_place) {
  const std::size_t lanes = lanes_.size();
  const std::size_t slots = lanes + peers_.size();  // ruccl lanes, then peers
  std::vector<Timing> timings(slots);
  // A peer takes part only in the cases and placements it can run.
  std::vector<bool> active(slots, true);
  for (std::size_t p = 0; p < peers_.size(); ++p)
    active[lanes + p] = peers_[p]->unsupported(c, in_place).empty();
  for (std::size_t l = 0; l < slots; ++l) timings[l].ran = active[l];
  auto fail_all = [&](const Status& s) {
    for (Timing& t : timings)
      if (t.ran) t.error = s.to_string();
    for (auto& peer : peers_) peer->release();
    return timings;
  };
  auto slot_name = [&](std::size_t slot) -> const std::string& {
    return slot < lanes ? lanes_[slot].name : peers_[slot - lanes]->name();
  };
  if (Status s = renew_communicators(); !s) return fail_all(s);
  const DataModel model(c);
  const std::size_t elem = dtype_size(c.dtype);
  const std::size_t n = c.ranks;  // the global world
  const std::size_t first = first_rank();
  const std::size_t local_n = ranks_.size();
  const std::size_t root = c.root.value_or(0);
  // In place follows nccl-tests (and ruccl's engine): all_gather's input is block r
  // of rank r's output; reduce_scatter's output is block r of rank r's input.
  const bool gather_in_out = in_place && c.kind == CollectiveKind::kAllGather;

  // Where rank's input goes, and where its result comes back (rank: global).
  auto input_at = [&](RankState& st, std::size_t rank) -> std::byte* {
    return gather_in_out ? at(st.out, rank * c.chunk * elem) : at(st.in, 0);
  };
  auto result_at = [&](RankState& st, std::size_t rank) -> std::byte* {
    if (!in_place || c.kind == CollectiveKind::kAllGather) return at(st.out, 0);
    if (c.kind == CollectiveKind::kReduceScatter) return at(st.in, rank * c.chunk * elem);
    return at(st.in, 0);
  };
  // Lane `lane`'s call: through its BoundedCommunicator, or with its budget.
  auto call = [&](std::size_t lane, RankState& st, std::size_t rank) -> Status {
    if (BoundedCommunicator* bounded = lanes_[lane].bounded ? &*lanes_[lane].bounded : nullptr) {
      switch (c.kind) {
        case CollectiveKind::kAllReduce:
          return bounded->all_reduce_into(rank, st.in_view, st.out_view, *c.op);
        case CollectiveKind::kReduce:
          return bounded->reduce_into(rank, st.in_view, st.out_view, *c.op, root);
        case CollectiveKind::kBroadcast:
          return bounded->broadcast_into(rank, rank == root ? &st.in_view : nullptr, st.out_view);
        case CollectiveKind::kAllGather: return bounded->all_gather_into(rank, st.in_view, st.out_view);
        case CollectiveKind::kReduceScatter:
          return bounded->reduce_scatter_into(rank, st.in_view, st.out_view, *c.op);
        case CollectiveKind::kAllToAllV:
          return bounded->all_to_all_v_into(rank, st.in_view, st.send_counts, st.out_view,
                                            st.recv_counts);
      }
      return Status(ErrorCode::kInternal, "unknown collective");
    }
    Communicator& comm = *lanes_[lane].comm;
    const CallOptions options{lanes_[lane].budget};
    switch (c.kind) {
      case CollectiveKind::kAllReduce:
        return comm.all_reduce_into(rank, st.in_view, st.out_view, *c.op, options);
      case CollectiveKind::kReduce:
        return comm.reduce_into(rank, st.in_view, st.out_view, *c.op, root, options);
      case CollectiveKind::kBroadcast:
        return comm.broadcast_into(rank, rank == root ? &st.in_view : nullptr, st.out_view,
                                 options);
      case CollectiveKind::kAllGather: return comm.all_gather_into(rank, st.in_view, st.out_view, options);
      case CollectiveKind::kReduceScatter:
        return comm.reduce_scatter_into(rank, st.in_view, st.out_view, *c.op, options);
      case CollectiveKind::kAllToAllV:
        return comm.all_to_all_v_into(rank, st.in_view, st.send_counts, st.out_view, st.recv_counts,
                                    options);
    }
    return Status(ErrorCode::kInternal, "unknown collective");
  };
  // A failure aborts every communicator, so that this process's other ranks
  // return from any collective they are blocked in (world mode: the other
  // processes' ranks fail by their timeout).
  auto fail = [&](RankState& st, std::size_t lane, std::size_t rank, const Status& s) {
    const std::string where = slot_name(lane).empty() ? "" : slot_name(lane) + ": ";
    st.status = Status(s.code(), where + s.message());
    for (Lane& l : lanes_)
      l.comm->abort("ruccl-perf: rank " + std::to_string(rank) + " failed: " + s.to_string());
  };
  // World: every rank of every process gets the elementwise `op` of `in`.
  auto agree = [&](std::size_t lane, RankState& st, std::size_t rank, void* in, void* out,
                   DataType dtype, std::size_t count, ReduceOp op) -> bool {
    const DeviceId device = lanes_[lane].comm->devices()[rank - first];
    const Status s = lanes_[lane].comm->all_reduce_into(
        rank, TensorView::of(in, dtype, count, device), TensorView::of(out, dtype, count, device), op);
    if (!s) fail(st, lane, rank, s);
    return s.is_ok();
  };

  // 1. Buffers, inputs and views (untimed).
  const std::size_t out_count = c.kind == CollectiveKind::kReduce ? c.count : model.output_count(0);
  Status setup = pool_.run([&](std::size_t local) {
    const std::size_t rank = first + local;
    RankState& st = ranks_[local];
    st.status = Status::ok();
    st.wrong.assign(slots, 0);
    st.staging.assign(lanes, 0);
    st.staging_max.assign(lanes, 0);
    Communicator* shared = options_.host_buffers ? lanes_.front().comm.get() : nullptr;
    st.status = ensure_bytes(st.in, model.input_count() * elem, local, shared);
    if (st.status) st.status = ensure_bytes(st.out, out_count * elem, local, shared);
    if (!st.status) return;
    const DeviceId device = lanes_.front().comm->devices()[local];
    st.in_view = TensorView::of(input_at(st, rank), c.dtype, model.input_count(), device);
    st.out_view = TensorView::of(at(st.out, 0), c.dtype, out_count, device);
    if (in_place && !gather_in_out) st.out_view = st.in_view;
    if (in_place && c.kind == CollectiveKind::kReduceScatter)  // shard r stays at its offset
      st.out_view = TensorView::of(result_at(st, rank), c.dtype, c.chunk, device);
    st.send_counts.assign(n, c.chunk);
    st.recv_counts.clear();
    model.fill_input(rank, input_at(st, rank));
    // Peers (one local rank): the same buffers, ready once for the whole loop.
    for (std::size_t p = 0; p < peers_.size() && st.status; ++p)
      if (active[lanes + p])
        st.status = peers_[p]->prepare(c, in_place, rank,
                                       PeerBuffers{st.in_view.data, st.out_view.data});
  });
  setup = task_error(setup);
  if (!setup) return fail_all(setup);
  // --model: local rank 0 times a single-thread memcpy of the same bytes in every
  // iteration, after the collective, while the other ranks wait at the next
  // barrier: the model's bandwidth comes from the same moments as the ring's.
  const bool copy_model = options_.model && !world_ && c.kind == CollectiveKind::kAllReduce;
  if (copy_model) {
    for (std::size_t local = 0; local < ranks_.size(); ++local) {
      RankState& st = ranks_[local];
      Status s = ensure_bytes(st.copy_from, c.size_bytes, local, nullptr);
      if (s) s = ensure_bytes(st.copy_to, c.size_bytes, local, nullptr);
      if (!s) return fail_all(s);
      std::memset(st.copy_from.data(), 0x5a, c.size_bytes);
      std::memset(st.copy_to.data(), 0, c.size_bytes);
      st.copy_us.clear();
    }
  }

  // 2. Warm-up and timed iterations; a barrier before each call, only the call
  //    timed; with several communicators, one call of each per iteration.
  const std::size_t iters = options_.iters;
  const std::size_t warmup = options_.warmup;
  YieldingBarrier sync(local_n);
  Status timed = pool_.run([&](std::size_t local) {
    const std::size_t rank = first + local;
    RankState& st = ranks_[local];
    st.times_us.assign(slots, std::vector<double>(iters, 0.0));
    st.max_us.assign(slots, std::vector<double>(iters, 0.0));
    // ruccl's call on lane l: its barrier (a ruccl all-reduce across
    // processes), then the call alone timed. False: it failed (recorded).
    const auto ruccl_call = [&](std::size_t l, std::size_t it) {
      if (options_.fresh_inputs) model.fill_input(rank, input_at(st, rank));
      if (world_) {
        if (!agree(l, st, rank, &st.token_in, &st.token_out, DataType::kI32, 1, ReduceOp::kMax))
          return false;
      } else {
        sync.arrive_and_wait();
      }
      const auto t0 = std::chrono::steady_clock::now();
      const Status s = call(l, st, rank);
      const auto t1 = std::chrono::steady_clock::now();
      if (!s) {
        fail(st, l, rank, s);
        if (!world_) sync.arrive_and_drop();
        return false;
      }
      if (it >= warmup)
        st.times_us[l][it - warmup] = std::chrono::duration<double, std::micro>(t1 - t0).count();
      // Untimed: what the call staged (this rank's own thread, right after it).
      if (auto staged = lanes_[l].comm->last_staging(rank))
        st.staging[l] = std::max<std::uint64_t>(st.staging[l], staged->peak_bytes);
      return true;
    };
    // A peer's call (slot l): the peer's own barrier (untimed), then its call
    // alone timed.
    const auto peer_call = [&](std::size_t l, std::size_t it) {
      Peer& peer = *peers_[l - lanes];
      if (options_.fresh_inputs) model.fill_input(rank, input_at(st, rank));
      Status s = peer.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      if (s) s = peer.call();
      const auto t1 = std::chrono::steady_clock::now();
      if (!s) {
        fail(st, l, rank, s);
        return false;
      }
      if (it >= warmup)
        st.times_us[l][it - warmup] = std::chrono::duration<double, std::micro>(t1 - t0).count();
      return true;
    };
    // Every communicator and peer once per iteration, in an order drawn anew
    // each iteration (the same on every rank: one seed), so that each follows
    // each other alike often over the run: a call can run slower right after
    // another implementation's (np=2 all-reduce of 128 KiB in place, ruccl
    // and Open MPI always in that order after Gloo: ruccl's p50 27.3-28.3 us
    // against 20.0 without Gloo, Open MPI's 22.5-23.4; with Gloo between
    // them, the other way round). A fixed rotation would not do: with three
    // implementations one of them follows a given one twice as often.
    std::vector<std::size_t> order(slots);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937 draw(20261207);
    for (std::size_t it = 0; it < warmup + iters; ++it) {
      std::shuffle(order.begin(), order.end(), draw);
      for (const std::size_t l : order)
        if (l < lanes ? !ruccl_call(l, it) : active[l] && !peer_call(l, it)) return;
      if (copy_model) {  // every rank thread at once, as the ring's threads run
        sync.arrive_and_wait();
        const auto t0 = std::chrono::steady_clock::now();
        std::memcpy(st.copy_to.data(), st.copy_from.data(), c.size_bytes);
        asm volatile("" : : "r"(st.copy_to.data()) : "memory");  // the copy happens
        const auto t1 = std::chrono::steady_clock::now();
        if (it >= warmup) st.copy_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
    }
    // World: the per-iteration max over every rank, with ruccl (off the timed path).
    if (world_ && iters > 0)
      for (std::size_t l = 0; l < lanes; ++l)
        if (!agree(l, st, rank, st.times_us[l].data(), st.max_us[l].data(), DataType::kF64, iters,
                   ReduceOp::kMax) ||
            !agree(l, st, rank, &st.staging[l], &st.staging_max[l], DataType::kU64, 1,
                   ReduceOp::kMax))
          return;
    // Peers: the same max, with MPI.
    for (std::size_t l = lanes; l < slots && iters > 0; ++l) {
      if (!active[l]) continue;
      st.max_us[l] = st.times_us[l];
      if (const Status s = peers_[l - lanes]->max_over_ranks(st.max_us[l]); !s) {
        fail(st, l, rank, s);
        return;
      }
    }
  });
  timed = task_error(timed);
  if (!timed) return fail_all(timed);
  if (copy_model)  // per iteration, the slowest of the simultaneous copies
    for (std::size_t it = 0; it < ranks_.front().copy_us.size(); ++it) {
      double slowest = 0;
      for (const RankState& st : ranks_)
        if (it < st.copy_us.size()) slowest = std::max(slowest, st.copy_us[it]);
      copy_us_.push_back(slowest);
    }

  for (std::size_t l = 0; l < slots; ++l) {
    if (!active[l]) continue;
    Timing& timing = timings[l];
    std::vector<double> per_iter(iters, 0.0);
    for (std::size_t it = 0; it < iters; ++it)
      for (const RankState& st : ranks_)
        per_iter[it] = std::max(per_iter[it], world_ ? st.max_us[l][it] : st.times_us[l][it]);
    double total = 0;
    for (double t : per_iter) total += t;
    timing.mean_us = iters ? total / static_cast<double>(iters) : 0;
    std::sort(per_iter.begin(), per_iter.end());
    timing.p50_us = percentile(per_iter, 50);
    timing.p99_us = percentile(per_iter, 99);
    if (l < lanes)
      for (const RankState& st : ranks_)
        timing.staging_peak_bytes = std::max<std::size_t>(
            timing.staging_peak_bytes, world_ ? st.staging_max[l] : st.staging[l]);
    if (timing.mean_us > 0) {
      timing.algbw_gbps = static_cast<double>(c.size_bytes) / timing.mean_us / 1e3;
      timing.busbw_gbps = timing.algbw_gbps * bus_factor(c.kind, n);
    }
  }

  // 3. Check, each communicator in turn: fresh inputs, poisoned outputs, one
  //    call, every element compared (world: the counts summed over all ranks).
  if (!options_.check) {
    for (auto& peer : peers_) peer->release();
    return timings;
  }
  Status checked = pool_.run([&](std::size_t local) {
    const std::size_t rank = first + local;
    RankState& st = ranks_[local];
    for (std::size_t l = 0; l < slots; ++l) {
      if (!active[l]) continue;
      model.fill_input(rank, input_at(st, rank));
      if (!in_place) std::memset(at(st.out, 0), 0xa5, out_count * elem);
      if (const Status s = l < lanes ? call(l, st, rank) : peers_[l - lanes]->call();
          !s) {
        fail(st, l, rank, s);
        return;
      }
      std::uint64_t wrong = model.count_wrong_output(rank, result_at(st, rank));
      if (!in_place) wrong += model.count_wrong_input(rank, at(st.in, 0));
      if (c.kind == CollectiveKind::kAllToAllV) {
        if (st.recv_counts.size() != n) wrong += n;
        else for (std::size_t got : st.recv_counts) wrong += got != c.chunk;
      }
      st.wrong[l] = wrong;
      if (l >= lanes) {  // a peer: summed with MPI
        if (const Status s = peers_[l - lanes]->sum_over_ranks(st.wrong[l]); !s) {
          fail(st, l, rank, s);
          return;
        }
      } else if (world_ &&
                 !agree(l, st, rank, &wrong, &st.wrong[l], DataType::kU64, 1, ReduceOp::kSum)) {
        return;
      }
    }
  });
  checked = task_error(checked);
  if (!checked) return fail_all(checked);
  for (auto& peer : peers_) peer->release();
  for (std::size_t l = 0; l < slots; ++l) {
    if (!active[l]) continue;
    std::size_t wrong = 0;
    if (world_) wrong = ranks_.front().wrong[l];  // already the sum over every rank
    else for (const RankState& st : ranks_) wrong += st.wrong[l];
    timings[l].wrong = wrong;
  }
  return timings;
}

}  // namespace ruccl::perf
