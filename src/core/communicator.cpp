// The in-process native communicator: request building, the per-call protocol
// (check_and_prepare, agree, execute, record) and the registry. Each call
// reports to the call observer (tracing, logging, the flight recorder,
// staging stats), and meets the faults planned for it at named points
// (PlannedFaults: adapter faults wrap the device, exit faults the executors).
#include "ruccl/communicator.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>

#include "core/call_observer.hpp"
#include "core/catch_to_status.hpp"
#include "core/engine.hpp"
#include "core/fault.hpp"
#include "core/remote_ranks.hpp"
#include "core/rendezvous.hpp"
#include "core/split.hpp"
#include "device/host/host_kernels.hpp"

namespace ruccl {

Result<std::shared_ptr<Communicator>> make_communicator(
    std::vector<DeviceId> devices, std::shared_ptr<DeviceAdapter> adapter, Config config,
    std::unique_ptr<core::RemoteRanks> remote, std::shared_ptr<const core::FaultPlan> faults);

struct Communicator::Impl {
  Impl(std::vector<DeviceId> devs, std::shared_ptr<DeviceAdapter> adp, Config cfg,
       std::unique_ptr<core::RemoteRanks> span, std::shared_ptr<const core::FaultPlan> plan)
      : devices(std::move(devs)),
        adapter(std::move(adp)),
        config(std::move(cfg)),
        remote(std::move(span)),
        first(remote ? remote->first_rank() : 0),
        world(remote ? remote->world() : devices.size()),
        // (A world's ranks may all be on this machine: at most that many.)
        rendezvous(devices.size(), config.timeout() + std::chrono::seconds(1), first, world),
        next_seq(devices.size()),
        scratch(devices.size()),
        requests(core::kRequestWays * devices.size()),
        kept_requests(core::kRequestWays * devices.size()),
        recent_way(devices.size(), 0),
        checked(devices.size()),
        lean_choice(core::kRequestWays * devices.size()),
        observer(first, devices.size(), world, config),
        fault_plan(std::move(plan)),
        faults(*fault_plan),
        topology{world,
                 devices.size(),
                 remote != nullptr,
                 adapter->kind() == DeviceKind::kHost,
                 remote != nullptr && remote->lean_capacity() > 0,
                 remote != nullptr ? remote->node_level_ranks() : 0,
                 host::wide_reductions()},
        algorithms(core::make_table(config)) {}

  // A rank outside this communicator's local ranks: refused before anything.
  Status not_served(std::size_t rank) const {
    return Status(ErrorCode::kInvalidArgument,
                  "rank " + std::to_string(rank) + " is not served by this communicator (ranks " +
                      std::to_string(first) + ".." + std::to_string(first + devices.size() - 1) +
                      " of a world of " + std::to_string(world) + ")");
  }
  // One rank's collective (`rank` one of this process's). No exception leaves
  // it: see Seat and call_body.
  // `fill` writes the call's request into the rank's own (requests: a
  // barrier's its own, so that barriers between collectives do not make the
  // collectives' views differ each time), every field anew; a rank outside
  // this communicator gets a request of its own.
  // A fill returning bool says whether the request already held the call's
  // arguments (then it changed nothing): the call may take what it derived
  // from them last time (KeptRequest).
  enum class RequestOf : std::uint8_t { kCollective, kBarrier };
  template <typename Fill>
  Result<core::RankOutcome> call(std::size_t rank, const CallOptions& options, Fill&& fill,
                                 RequestOf of = RequestOf::kCollective);
  class Seat;
  struct Call;
  struct KeptRequest;
  Result<core::RankOutcome> call_body(Seat& seat, std::size_t rank, core::Request& req,
                                      const CallOptions& options, KeptRequest* kept,
                                      bool unchanged);
  // The protocol of one call, in order (call_body):
  // check_and_prepare: the local check, then the device's prepare.
  void check(Call& c);
  static void shape_for_agreement(core::Request& req);
  void prepare(Call& c);
  // The lean path (Algorithm::kNodeMailbox) when the table picks it: the
  // outcome, or nullopt to go on with agree (also when the ranks fell back).
  std::optional<Result<core::RankOutcome>> try_lean(Call& c);
  void agree(Call& c, Seat& seat);
  Result<core::RankOutcome> execute(Call& c);
  void record(Call& c, Result<core::RankOutcome>& outcome);
  // A stall fault: sleeps before the agreement, waking when the communicator
  // breaks (abort, or peers' timeout) so the test does not wait it out.
  void stall(const core::Fault& fault, std::size_t rank, std::uint64_t seq);

  const std::vector<DeviceId> devices;
  const std::shared_ptr<DeviceAdapter> adapter;
  const Config config;
  const std::unique_ptr<core::RemoteRanks> remote;  // null: every rank is in this process
  const std::size_t first;  // global rank of devices[0]
  const std::size_t world;  // global world size
  core::Rendezvous rendezvous;
  std::vector<std::atomic<std::uint64_t>> next_seq;  // per rank; ranks agree on order
  std::vector<core::ScratchCache> scratch;           // per rank, its thread only
  // Per rank, its thread only: the request of its call in progress, kept
  // between calls so that copying the caller's views into it reuses the
  // shapes' storage (a small collective allocates nothing for them);
  // core::kRequestWays per rank from kRequestWays * local: two collectives'
  // (a loop of two calls taking turns, as a timed call and a barrier made of
  // an all-reduce, finds each in its own), then a barrier's.
  std::vector<core::Request> requests;
  // Per request of `requests`: what its last call derived from it alone. A
  // call whose fill changed nothing (nor its budget) takes the local check's
  // geometry from here, and its key tells the lean path that its header is
  // the one it built for that key.
  struct KeptRequest {
    bool checked = false;  // the last call's local check passed, with `geometry`
    core::Geometry geometry;
    std::uint64_t key = 0;      // this content's (lean_post's request_key); 0: none yet
    std::uint64_t version = 0;  // of this request's contents
    // New contents (a fill that changed them, or threw halfway): a new key,
    // nothing checked yet; key % kRequestWays is the request's way (its
    // place among the rank's requests), so no two requests of a rank share
    // a key.
    void renew(std::size_t way) {
      checked = false;
      key = core::kRequestWays * ++version + way;
    }
  };
  std::vector<KeptRequest> kept_requests;
  // Per rank, its thread only: the collective way its last call used (the
  // next call compares its arguments with that request first).
  std::vector<std::uint8_t> recent_way;
  // Per rank, its thread only: the last two requests whose local check
  // passed, and their geometries. check_local is a pure function of the
  // request (the rank's world and device are fixed), so the same request
  // again, a loop over the same buffers (or two calls taking turns), takes
  // the geometry without the checks (check()).
  struct Checked {
    struct Entry {
      bool valid = false;
      core::Request request;
      core::Geometry geometry;
    };
    std::array<Entry, 2> entries;
    std::size_t next = 0;  // the entry a new request replaces
  };
  std::vector<Checked> checked;
  // Per request of `requests` (a collective's and a barrier's per rank), its
  // thread only: whether the table took the lean path for the last offer
  // (try_lean; the table and the topology are fixed).
  struct LeanChoice {
    std::optional<core::CallShape> offer;  // none yet
    bool lean = false;                     // the table's answer for it
    std::uint64_t key = 0;                 // the request it was last asked for (KeptRequest)
  };
  std::vector<LeanChoice> lean_choice;
  core::CallObserver observer;  // tracing, logging, flight recorder, staging stats
  const std::shared_ptr<const core::FaultPlan> fault_plan;  // RUCCL_FAULT, parsed once
  const core::FaultPlan& faults;                            // empty almost always
  const core::Topology topology;
  const core::AlgorithmTable algorithms;  // from Config: strategy, one_shot_bytes, RUCCL_ALGO
  std::atomic<bool> user_aborted{false};  // abort() was called: kAborted is no failure to dump
  // Per rank: inside a call (its collective is next_seq - 1), for abort()'s notice.
  std::vector<std::atomic<bool>> in_call = std::vector<std::atomic<bool>>(devices.size());
  // split(): the communicator of a color, made by its first member rank of
  // this process to get there and taken by the others (keyed by the split's
  // all-gather sequence number and the color; dropped when all took it).
  struct PendingSplit {
    std::optional<Result<std::shared_ptr<Communicator>>> comm;
    std::size_t left = 0;  // member ranks of this process yet to take it
  };
  std::mutex split_mutex;
  std::map<std::pair<std::uint64_t, std::int64_t>, PendingSplit> pending_splits;
  // The split's new communicator of `plan` (this process's part), made once.
  Result<std::shared_ptr<Communicator>> split_child(std::uint64_t seq, std::int64_t color,
                                                    const core::SplitPlan& plan);
};

namespace {

// The faults RUCCL_FAULT plans for one (rank, seq) that the call itself acts
// on. Each acts through a decorator or at one named point: an adapter fault
// wraps the device (FaultyAdapter), a stall sleeps before the agreement, an
// oom fault throws at the local check ("check"), before running ("run") or at
// a step ("step", the engine's ExitRun, like exit faults); drop and corrupt
// faults act in the transport executor.
struct PlannedFaults {
  const core::Fault* adapter = nullptr;
  const core::Fault* stall = nullptr;
  const core::Fault* oom = nullptr;  // whatever its step
  bool exit = false;
  bool oom_at(std::string_view at) const { return oom != nullptr && oom->at == at; }
  // The engine wraps the executors (exit, or oom at a step).
  bool in_steps() const { return exit || oom_at("step"); }
};

PlannedFaults planned(const core::FaultPlan& plan, std::size_t rank, std::uint64_t seq) {
  PlannedFaults out;
  if (plan.empty()) return out;
  out.adapter = plan.find(core::FaultKind::kAdapter, rank, seq);
  out.stall = plan.find(core::FaultKind::kStall, rank, seq);
  for (const core::Fault& f : plan.faults())
    if (f.kind == core::FaultKind::kOom && f.rank == rank && f.seq == seq) out.oom = &f;
  out.exit = plan.any(core::FaultKind::kExit, rank, seq);
  return out;
}

}  // namespace

// One rank's call in progress, from its sequence number to its outcome.
struct Communicator::Impl::Call {
  Call(Impl& impl, std::size_t global_rank, std::uint64_t sequence, core::Request& request)
      : rank(global_rank),
        local(global_rank - impl.first),
        seq(sequence),
        req(request),
        watch(impl.observer, local, rank, seq, request.kind),
        faults(planned(impl.faults, rank, seq)) {}
  const std::size_t rank;
  const std::size_t local;
  const std::uint64_t seq;
  core::Request& req;
  Communicator::Impl::KeptRequest* kept = nullptr;  // the request's (set by call_body)
  bool unchanged = false;  // the request is its last call's (kept->checked holds for it)
  core::CallWatch watch;
  const PlannedFaults faults;
  Result<core::Geometry> geometry = core::Geometry{};  // the local check's outcome
  std::size_t bytes = 0;                               // of the input, once checked
  // The device: every verb through the guard (what the adapter throws is
  // kDeviceError, kOutOfMemory; what escapes the engine or the executors is
  // ruccl's own), and through the faulty adapter when one is planned.
  std::optional<core::FaultyAdapter> faulty;
  std::optional<core::GuardedAdapter> guarded;
  DeviceAdapter* device = nullptr;
  std::shared_ptr<AdapterState> state;       // from prepare
  std::optional<Result<core::Plan>> agreed;  // across processes: this rank's agreement
  Result<core::Rendezvous::Generation*> generation =
      static_cast<core::Rendezvous::Generation*>(nullptr);
  std::size_t peak_staging = 0;  // of the executors, once they ran
};

void Communicator::Impl::stall(const core::Fault& fault, std::size_t rank, std::uint64_t seq) {
  const auto length =
      fault.stall.count() > 0 ? fault.stall : config.timeout() + std::chrono::seconds(2);
  observer.logger().log(LogLevel::kWarn, rank,
                        "fault injection: stalls " + std::to_string(length.count()) +
                            " ms before collective #" + std::to_string(seq));
  const auto until = core::Clock::now() + length;
  while (!rendezvous.broken()) {
    const auto now = core::Clock::now();
    if (now >= until) return;
    std::this_thread::sleep_for(
        std::min<core::Clock::duration>(std::chrono::milliseconds(10), until - now));
  }
}

// The last resort of a call against exceptions (an allocation can fail almost
// anywhere). Each phase that can fail in the usual way turns its exceptions
// into its error (kOutOfMemory for std::bad_alloc, kInternal otherwise) where
// the protocol can still carry it: before the rendezvous as the rank's local
// failure (agreed on like a bad argument), after it into the engine's setup
// barrier (RankJob::failed), inside the engine at its barriers. Whatever
// escapes all that reaches call(), where the Seat, which knows how far the
// rank got, leaves the protocol cleanly: once the rank has a sequence number
// and until it departed, the rendezvous is broken with the error (every local
// rank waiting on this one wakes with it, and the communicator is failed:
// later calls return it), other processes get the failure notice, and a rank
// that arrived departs. After it departed, the collective is over everywhere
// and only this rank's result is lost.
class Communicator::Impl::Seat {
 public:
  Seat(Impl& impl, std::size_t local) : impl_(impl), local_(local) {}
  Seat(const Seat&) = delete;
  Seat& operator=(const Seat&) = delete;
  ~Seat() { depart(); }
  void numbered(std::uint64_t seq) { seq_ = seq; }
  void watched(core::CallWatch* watch) { watch_ = watch; }
  void arrived() { arrived_ = true; }
  void depart() noexcept {
    if (arrived_ && !departed_) impl_.rendezvous.depart(local_);
    departed_ = true;
  }
  void fail(Status& why) noexcept {
    if (!seq_) return;
    if (watch_) watch_->unwound(why, impl_.user_aborted.load());  // the flight entry ends
    if (departed_) return;
    try {
      why = why.with_context("collective #" + std::to_string(*seq_) + " failed on rank " +
                             std::to_string(impl_.first + local_));
    } catch (...) {  // no memory for the context: the bare error
    }
    try {
      if (impl_.remote) impl_.remote->failed(local_, *seq_, why);
    } catch (...) {  // the other processes find out at their deadlines
    }
    impl_.rendezvous.abort(why);
    depart();
  }

 private:
  Impl& impl_;
  const std::size_t local_;
  std::optional<std::uint64_t> seq_;
  core::CallWatch* watch_ = nullptr;
  bool arrived_ = false;
  bool departed_ = false;
};

template <typename Fill>
Result<core::RankOutcome> Communicator::Impl::call(std::size_t rank, const CallOptions& options,
                                                   Fill&& fill, RequestOf of) {
  if (rank < first || rank - first >= devices.size()) return not_served(rank);
  Seat seat(*this, rank - first);
  try {
    const std::size_t local = rank - first;
    // A collective whose fill can compare: the way it used last, if that
    // holds its arguments, else the other one, refilled unless it holds them.
    // Any other fill: the first way, refilled (a barrier: its own way).
    std::size_t way = of == RequestOf::kBarrier ? core::kBarrierWay : 0;
    bool unchanged = false;
    const auto request_at = [&](std::size_t w) -> core::Request& {
      return requests[core::kRequestWays * local + w];
    };
    try {
      if constexpr (std::is_invocable_r_v<bool, Fill&, core::Request&, bool>) {
        if (of == RequestOf::kCollective) {
          way = recent_way[local];
          if (!fill(request_at(way), true)) {
            way = 1 - way;
            recent_way[local] = static_cast<std::uint8_t>(way);
            unchanged = fill(request_at(way), false);
          } else {
            unchanged = true;
          }
        } else {
          unchanged = fill(request_at(way), false);
        }
      } else if constexpr (std::is_same_v<decltype(fill(request_at(way))), bool>) {
        unchanged = fill(request_at(way));
      } else {
        fill(request_at(way));
      }
    } catch (...) {
      kept_requests[core::kRequestWays * local + way].renew(way);
      throw;
    }
    KeptRequest* kept = &kept_requests[core::kRequestWays * local + way];
    if (!unchanged) kept->renew(way);
    return call_body(seat, rank, request_at(way), options, kept, unchanged);
  } catch (...) {
    Status why = core::current_exception_status(ErrorCode::kInternal, "the collective call");
    seat.fail(why);
    return why;
  }
}

// A call is: check_and_prepare, agree, execute, record.
Result<core::RankOutcome> Communicator::Impl::call_body(Seat& seat, std::size_t rank,
                                                        core::Request& req,
                                                        const CallOptions& options,
                                                        KeptRequest* kept, bool unchanged) {
  const std::size_t local = rank - first;
  if (auto broken = rendezvous.broken()) {
    // Ranks in other processes may wait on this one's collective: tell them
    // (once per transport; nothing when abort() or a notice told them already).
    if (remote) remote->failed(local, next_seq[local].load(), *broken);
    return *broken;
  }
  // Only this rank's thread writes its counter and flag (abort() reads them,
  // the flag first: acquire, so a set flag comes with the counter past this
  // call's number). No read-modify-write, no full fence per call.
  const std::uint64_t seq = next_seq[local].load(std::memory_order_relaxed);
  next_seq[local].store(seq + 1, std::memory_order_relaxed);
  seat.numbered(seq);
  in_call[local].store(true, std::memory_order_release);
  struct Leave {
    std::atomic<bool>& flag;
    ~Leave() { flag.store(false, std::memory_order_release); }
  } leave{in_call[local]};
  const std::size_t budget = options.max_chunk_bytes.value_or(config.max_chunk_bytes());
  if (unchanged && req.max_chunk_bytes != budget)
    kept->renew(static_cast<std::size_t>(kept - kept_requests.data()) % core::kRequestWays);
  unchanged = unchanged && req.max_chunk_bytes == budget;
  req.max_chunk_bytes = budget;
  if (!req.has_input) req.in.device = devices[local];

  Call c(*this, rank, seq, req);
  c.kept = kept;
  c.unchanged = unchanged && kept->checked;
  seat.watched(&c.watch);
  // (Caught here, not only in call(): the Seat ends the call's flight entry
  // through c.watch, which must still be alive.)
  try {
    // check_and_prepare, with the lean path between its halves: a small
    // collective on one node needs no prepared device state.
    check(c);
    if (auto lean = try_lean(c)) {
      seat.depart();
      record(c, *lean);
      seat.watched(nullptr);
      return std::move(*lean);
    }
    if (!c.watch.has_begun()) c.watch.begun(req, c.bytes);
    shape_for_agreement(req);
    prepare(c);
    agree(c, seat);
    Result<core::RankOutcome> outcome = execute(c);
    // A rank that failed to arrive never joined the generation: nothing to depart.
    seat.depart();
    record(c, outcome);
    seat.watched(nullptr);
    return outcome;
  } catch (...) {
    Status why = core::current_exception_status(ErrorCode::kInternal, "the collective call");
    // (Thrown before the entry began, as on the lean path before its post:
    // the dump still shows the call.)
    if (!c.watch.has_begun()) c.watch.begun(req, c.bytes);
    seat.fail(why);
    seat.watched(nullptr);
    return why;
  }
}

// The shape a fingerprint carries: the input's, a receiver's output's. Only
// the agreement reads it, so a lean call (most small ones) copies no shape.
void Communicator::Impl::shape_for_agreement(core::Request& req) {
  req.shape = !req.has_input && req.out ? req.out->shape : req.in.shape;
}

// Checks what this rank alone can check, and captures its tensor (prepare). A
// failure here is not returned yet: it travels to the agreement so every rank
// gets it. (An exception here is this rank's local failure, agreed on like
// the others.)
void Communicator::Impl::check(Call& c) {
  c.geometry = core::catch_to_status(ErrorCode::kInternal, "the local check", [&] {
    if (c.faults.oom_at("check")) throw std::bad_alloc();  // fault injection
    if (c.unchanged) return Result<core::Geometry>(c.kept->geometry);
    Checked& kept = checked[c.local];
    for (Checked::Entry& e : kept.entries)
      if (e.valid && core::same_request(e.request, c.req))
        return Result<core::Geometry>(e.geometry);
    Result<core::Geometry> g = core::check_local(c.req, c.rank, world, devices[c.local]);
    if (g) {  // in place of the older entry
      Checked::Entry& e = kept.entries[kept.next];
      kept.next = (kept.next + 1) % kept.entries.size();
      e.valid = false;
      core::assign_request(e.request, c.req);
      e.geometry = g.value();
      e.valid = true;
    }
    return g;
  });
  if (!c.unchanged && c.geometry.is_ok()) {
    c.kept->geometry = c.geometry.value();
    c.kept->checked = true;
  }
  c.bytes = c.geometry.is_ok() ? c.geometry.value().count * dtype_size(c.req.dtype) : 0;
  // The flight entry begins here where a stall follows (it shows the
  // stalled call), else once the lean path posted (try_lean) or before the
  // agreement (call_body).
  if (c.faults.stall) {
    c.watch.begun(c.req, c.bytes);
    stall(*c.faults.stall, c.rank, c.seq);
  }
}

void Communicator::Impl::prepare(Call& c) {
  DeviceAdapter* device = adapter.get();
  if (c.faults.adapter) device = &c.faulty.emplace(*adapter, *c.faults.adapter);
  c.device = &c.guarded.emplace(*device);
  if (c.geometry.is_ok()) {
    const core::Request& req = c.req;
    const TensorView& view = req.has_input ? req.in : (req.out ? *req.out : req.in);
    auto prepared = c.device->prepare(view, devices[c.local]);
    if (prepared.is_ok()) c.state = std::move(prepared.value());
    else c.geometry = prepared.status();
  }
}

std::optional<Result<core::RankOutcome>> Communicator::Impl::try_lean(Call& c) {
  if (!topology.node_mailbox || !c.geometry.is_ok() || c.faults.adapter || c.faults.in_steps() ||
      c.faults.oom_at("run"))
    return std::nullopt;
  // (The table's choice for the same offer again is kept: a loop of one
  // collective asks it once; the same request, by its key, builds no offer.
  // The direct form's threshold is read anew: it turns on once the node's
  // processes can read each other.)
  LeanChoice& kept = lean_choice[static_cast<std::size_t>(c.kept - kept_requests.data())];
  const std::size_t direct_bytes = remote->lean_direct_bytes();
  if (!(c.unchanged && kept.offer && kept.key == c.kept->key &&
        kept.offer->lean_direct == direct_bytes)) {
    const core::CallShape offer{c.req.kind, c.bytes, c.req.max_chunk_bytes, remote->lean_capacity(),
                                true,       true,    direct_bytes};
    if (!kept.offer || !(*kept.offer == offer)) {
      kept.lean =
          core::choose_algorithm(offer, topology, algorithms) == core::Algorithm::kNodeMailbox;
      kept.offer = offer;
    }
    kept.key = c.kept->key;
  }
  if (!kept.lean) return std::nullopt;
  // This rank's slot first, then its flight entry while the peers post theirs.
  auto posted = remote->lean_post(c.local, c.seq, c.req, c.geometry.value(), c.kept->key);
  if (!posted) return std::nullopt;
  if (!c.watch.has_begun()) c.watch.begun(c.req, c.bytes);
  if (!posted->is_ok()) return Result<core::RankOutcome>(std::move(*posted));
  auto lean = remote->lean_collect(c.local, c.seq, c.req, *adapter, devices[c.local],
                                   c.watch.deadline(config.timeout()));
  // The other ranks' inputs, read where they lie (the node's slots), as the
  // one-shot holds them in its receive buffers.
  if (lean && lean->is_ok()) {
    c.peak_staging = c.bytes * (world - 1);
    c.watch.ran(core::algorithm_name(core::Algorithm::kNodeMailbox));
  }
  return lean;
}

// Across processes, every rank agrees with every other before the local
// rendezvous; in-process, the last local rank to arrive does it. Either way
// the rank then arrives at the rendezvous, which checks that every local rank
// holds the same plan.
void Communicator::Impl::agree(Call& c, Seat& seat) {
  const auto agree_started = core::Clock::now();
  if (remote) {
    core::ScopedSpan span = c.watch.phase("agree (fingerprints)");
    // Whether this rank's input rides with its fingerprint: if every rank's
    // does, the plan says so, and the all-reduce may run one-shot.
    bool send_input = false;
    if (c.geometry.is_ok() && c.req.has_input && c.req.in.data != nullptr) {
      const core::CallShape offer{c.req.kind, c.bytes, c.req.max_chunk_bytes,
                                  remote->fused_capacity(), true};
      send_input = core::choose_algorithm(offer, topology, algorithms) == core::Algorithm::kOneShot;
    }
    bool threw = true;
    c.agreed = core::catch_to_status(ErrorCode::kInternal, "the agreement", [&] {
      auto plan =
          remote->agree_all(c.local, c.seq, c.req, c.geometry, send_input, config.timeout());
      threw = false;
      return plan;
    });
    // Thrown mid-exchange: ranks of other processes may wait on this one.
    if (threw) remote->failed(c.local, c.seq, c.agreed->status());
    if (c.agreed->is_ok()) c.watch.agreed();
  }
  // After a failed agreement the local peers get no fresh deadline: a peer
  // that never came to the agreement (stalled, hung) is not waited for twice.
  // (Ranks that agreed, even on an error, all arrive right after it.)
  auto deadline = core::Clock::now() + config.timeout();
  if (c.agreed && !c.agreed->is_ok())
    deadline = std::max(agree_started + config.timeout(),
                        core::Clock::now() + std::chrono::milliseconds(100));
  c.generation = rendezvous.arrive(c.local, c.seq, c.req, c.geometry, deadline,
                                   c.agreed ? &*c.agreed : nullptr);
  if (c.generation.is_ok()) seat.arrived();
  // This rank agreed, but another local rank did not (or agreed otherwise):
  // its peers in other processes may go on with the plan. Tell them.
  if (remote && c.agreed->is_ok() && c.generation.is_ok() && !c.generation.value()->plan.is_ok())
    remote->failed(c.local, c.seq, c.generation.value()->plan.status());
}

// Runs the agreed plan with the chosen algorithm's executors (the engine).
Result<core::RankOutcome> Communicator::Impl::execute(Call& c) {
  if (!c.generation.is_ok()) {
    // A rank that failed to arrive (aborted, timed out, the group broken) was
    // not told by the transport: its peers in other processes may wait on it.
    if (remote) remote->failed(c.local, c.seq, c.generation.status());
    return c.generation.status();
  }
  core::Rendezvous::Generation& generation = *c.generation.value();
  if (!generation.plan.is_ok()) return generation.plan.status();  // every rank derived it
  if (c.faults.oom_at("run")) throw std::bad_alloc();  // fault injection: the Seat's case
  c.watch.running();
  core::RankJob job;
  core::Executors executors;
  // This rank's own agreement failed where the group's plan holds (another
  // local rank's agreement completed first): it brings its error along.
  if (c.agreed && !c.agreed->is_ok()) job.failed = c.agreed->status();
  const Status prepared =
      core::catch_to_status(ErrorCode::kInternal, "preparing the executors", [&] {
        job.rank = c.local;
        job.global_rank = c.rank;
        job.world = world;
        const core::Plan& plan = generation.plan.value();
        const core::CallShape call{c.req.kind, plan.geometry.count * dtype_size(plan.dtype),
                                   c.req.max_chunk_bytes, remote ? remote->fused_capacity() : 0,
                                   plan.one_shot};
        job.algorithm = core::choose_algorithm(call, topology, algorithms);
        if (remote) {
          executors = remote->executors(c.local, c.seq, job.algorithm, c.req.kind, generation.work,
                                        *c.device, plan, config.timeout());
          job.run = executors.run.get();
          job.across = executors.across.get();
          job.node = executors.node.get();
          job.algorithm = executors.algorithm;
          job.remote = remote.get();
        }
        c.watch.ran(core::algorithm_name(job.algorithm));
        job.request = &c.req;
        job.geometry = &c.geometry.value();
        job.generation = &generation;
        job.rendezvous = &rendezvous;
        job.adapter = c.device;
        job.state = std::move(c.state);
        job.segment_bytes = config.segment_bytes();
        job.scratch = &scratch[c.local];
        job.timeout = config.timeout();
        job.tracer = observer.tracer();
        if (c.faults.in_steps()) job.faults = &faults;
        return Status::ok();
      });
  if (!prepared.is_ok() && !job.failed) job.failed = prepared;
  if (job.failed) {  // the setup barrier carries it (engine.hpp); nothing else is used
    job.rank = c.local;
    job.rendezvous = &rendezvous;
    job.timeout = config.timeout();
    job.remote = remote.get();
  }
  Result<core::RankOutcome> outcome = core::execute(job);
  if (outcome.is_ok()) {
    // The executors' staging (the in-process one stages nothing: no executor).
    c.peak_staging = executors.run ? executors.run->peak_staging_bytes() : 0;
    if (executors.across)
      c.peak_staging = std::max(c.peak_staging, executors.across->peak_staging_bytes());
    if (executors.node)
      c.peak_staging = std::max(c.peak_staging, executors.node->peak_staging_bytes());
  }
  // A failure while running (not a plan error, which every rank derived
  // alike): ranks in other processes may be blocked on this one. Tell them.
  if (remote && !outcome.is_ok()) remote->failed(c.local, c.seq, outcome.status());
  return outcome;
}

// The observer's record of the call (staging, flight recorder, trace, log).
void Communicator::Impl::record(Call& c, Result<core::RankOutcome>& outcome) {
  c.watch.finished(outcome, c.peak_staging, c.req.max_chunk_bytes, user_aborted.load());
}

Result<std::shared_ptr<Communicator>> Communicator::create(std::vector<DeviceId> devices,
                                                           std::shared_ptr<DeviceAdapter> adapter,
                                                           Config config) {
  // The plan of a valid config (make_communicator validates it first).
  auto plan = core::FaultPlan::parse(config.fault());
  auto faults =
      std::make_shared<const core::FaultPlan>(plan ? std::move(plan).value() : core::FaultPlan{});
  return make_communicator(std::move(devices), std::move(adapter), std::move(config), nullptr,
                           std::move(faults));
}

Result<std::shared_ptr<Communicator>> core::make_world_communicator(
    std::vector<DeviceId> devices, std::shared_ptr<DeviceAdapter> adapter, Config config,
    std::unique_ptr<RemoteRanks> remote, std::shared_ptr<const FaultPlan> faults) {
  if (!remote) return Status(ErrorCode::kInvalidArgument, "no remote part");
  return make_communicator(std::move(devices), std::move(adapter), std::move(config),
                           std::move(remote), std::move(faults));
}

Result<std::shared_ptr<Communicator>> make_communicator(
    std::vector<DeviceId> devices, std::shared_ptr<DeviceAdapter> adapter, Config config,
    std::unique_ptr<core::RemoteRanks> remote, std::shared_ptr<const core::FaultPlan> faults) {
  if (devices.empty())
    return Status(ErrorCode::kInvalidArgument, "a communicator needs at least one device");
  if (!adapter) return Status(ErrorCode::kInvalidArgument, "the device adapter is null");
  RUCCL_TRY(config.validate());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].kind != adapter->kind())
      return Status(ErrorCode::kInvalidArgument,
                    "device " + device_name(devices[i]) + " (rank " + std::to_string(i) +
                        ") is not served by the " +
                        std::string(device_kind_name(adapter->kind())) + " adapter");
    for (std::size_t j = 0; j < i; ++j)
      if (devices[j] == devices[i])
        return Status(ErrorCode::kInvalidArgument,
                      "devices must be distinct: ranks " + std::to_string(j) + " and " +
                          std::to_string(i) + " both use " + device_name(devices[i]));
  }
  if (!faults) faults = std::make_shared<const core::FaultPlan>();
  auto impl =
      std::make_unique<Communicator::Impl>(std::move(devices), std::move(adapter),
                                           std::move(config), std::move(remote), std::move(faults));
  return std::shared_ptr<Communicator>(new Communicator(std::move(impl)));
}

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

std::size_t Communicator::world_size() const { return impl_->world; }
std::size_t Communicator::first_rank() const { return impl_->first; }
const std::vector<DeviceId>& Communicator::devices() const { return impl_->devices; }
const Config& Communicator::config() const { return impl_->config; }

void Communicator::abort(std::string reason) {
  impl_->user_aborted.store(true);
  if (impl_->remote) {
    // Every local rank's notice names it and its collective (the one it is
    // in, else the next): that is what its peers in other processes wait on.
    std::vector<std::pair<std::uint64_t, Status>> notices;
    for (std::size_t local = 0; local < impl_->devices.size(); ++local) {
      const bool inside = impl_->in_call[local].load(std::memory_order_acquire);
      const std::uint64_t next = impl_->next_seq[local].load(std::memory_order_relaxed);
      const bool busy = inside && next > 0;
      const std::uint64_t seq = busy ? next - 1 : next;
      notices.emplace_back(seq, Status(ErrorCode::kAborted,
                                       "rank " + std::to_string(impl_->first + local) +
                                           " aborted the communicator " +
                                           (busy ? "in" : "before") + " collective #" +
                                           std::to_string(seq) + ": " + reason));
    }
    impl_->remote->abort(notices);
  }
  impl_->rendezvous.abort(Status(ErrorCode::kAborted, std::move(reason)));
}
bool Communicator::aborted() const { return impl_->rendezvous.broken().has_value(); }
Result<StagingStats> Communicator::last_staging(std::size_t rank) const {
  const std::size_t local = rank - impl_->first;
  if (rank < impl_->first || local >= impl_->devices.size())
    return Status(ErrorCode::kInvalidArgument,
                  "last_staging: rank " + std::to_string(rank) + " is not served by this communicator");
  auto stats = impl_->observer.last_staging(local);
  if (!stats)
    return Status(ErrorCode::kInvalidArgument,
                  "last_staging: rank " + std::to_string(rank) + " has completed no collective yet");
  return *stats;
}

bool Communicator::shares_host_memory() const {
  return impl_->remote != nullptr && impl_->remote->shares_host_memory();
}

Result<std::shared_ptr<std::byte>> Communicator::allocate_host(std::size_t bytes) {
  return core::catch_to_status(
      ErrorCode::kInternal, "allocate_host", [&]() -> Result<std::shared_ptr<std::byte>> {
        if (impl_->remote) {
          auto shared = impl_->remote->allocate_host(bytes);
          if (!shared.is_ok() || shared.value() != nullptr) return shared;
        }
        // Plain memory, page-aligned and zero-filled as a region is: pages
        // the kernel zeroes when first touched (no pass over a large buffer
        // here; the MPI layer's MPI_Alloc_mem comes here too).
        constexpr std::size_t kPage = 4096;
        if (bytes == 0 || bytes > SIZE_MAX - kPage)
          return Status(ErrorCode::kInvalidArgument,
                        "allocate_host: " + std::to_string(bytes) + " bytes");
        const std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
        void* p =
            ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
          return Status(ErrorCode::kOutOfMemory,
                        "allocate_host: " + std::to_string(bytes) + " bytes");
        return std::shared_ptr<std::byte>(static_cast<std::byte*>(p),
                                          [rounded](std::byte* q) { ::munmap(q, rounded); });
      });
}

namespace {

// dst = src through the adapter (either may be device memory), then waits.
Status copy_now(DeviceAdapter& adapter, DeviceId device, void* dst, const void* src,
                std::size_t bytes) {
  const Queue queue{device, nullptr};
  auto ticket = adapter.copy(queue, dst, src, bytes);
  RUCCL_TRY(ticket);
  return adapter.wait(queue, ticket.value());
}

}  // namespace

namespace {
void refill(core::Request& req, CollectiveKind kind, const TensorView& in, const TensorView* out);
bool refill_unless_same(core::Request& req, bool compare_only, CollectiveKind kind,
                        const TensorView& in, const TensorView* out, ReduceOp op = ReduceOp::kSum,
                        std::size_t root = 0, bool has_input = true,
                        std::span<const std::size_t> send_counts = {});
}  // namespace

Status Communicator::barrier(std::size_t rank) {
  // A collective of no data: numbered, agreed with every rank (across
  // processes each rank hears from every other) and completed by none before
  // all arrived.
  const std::size_t local = rank - impl_->first;
  const DeviceId device =
      rank >= impl_->first && local < impl_->devices.size() ? impl_->devices[local] : DeviceId{};
  // (The views' zero-length shapes are written into the rank's request, whose
  // storage stays: a barrier allocates nothing.)
  const TensorView none{nullptr, DataType::kU8, {}, device, nullptr};
  return impl_
      ->call(
          rank, CallOptions{},
          [&](core::Request& req) {
            // (The same every time but the first: this request is the barrier's
            // own. Every field the fill writes is compared, so that a fill that
            // threw halfway is done again.)
            const auto empty = [&](const TensorView& v) {
              return v.data == nullptr && v.dtype == DataType::kU8 && v.device == device &&
                     v.stream == nullptr && v.shape.size() == 1 && v.shape[0] == 0;
            };
            if (req.out && req.kind == CollectiveKind::kAllReduce && req.op == ReduceOp::kMax &&
                req.dtype == DataType::kU8 && req.root == 0 && req.has_input &&
                req.send_counts.empty() && empty(req.in) && empty(*req.out)) {
              req.shape.clear();
              return true;
            }
            refill(req, CollectiveKind::kAllReduce, none, &none);
            req.in.shape.assign(1, 0);
            req.out->shape.assign(1, 0);
            req.op = ReduceOp::kMax;  // (last: until here, the check above fails)
            return false;
          },
          Impl::RequestOf::kBarrier)
      .status();
}

namespace {

// The words of every rank of `comm` (i64, the same number on every rank, at
// most `max_words`), in rank order, through its own all-gather: agreed,
// bounded by the deadline and abortable like any collective. One pair of
// buffers serves every round. A rank that cannot put its words in (a failed
// allocation or copy) still takes part, with none: the round then fails on
// every rank (the counts differ), and it returns its own error, so that
// every rank leaves the same round.
class WordGather {
 public:
  WordGather(Communicator& comm, DeviceAdapter& adapter, std::size_t rank, DeviceId device,
             std::size_t max_words)
      : comm_(comm),
        adapter_(adapter),
        rank_(rank),
        device_(device),
        in_(allocate(max_words)),
        out_(allocate(max_words * comm.world_size())),
        max_words_(max_words) {}

  Result<std::vector<std::int64_t>> operator()(std::span<const std::int64_t> mine) {
    const std::size_t world = comm_.world_size(), bytes = mine.size_bytes();
    Status put = !in_ ? in_.status() : !out_ ? out_.status() : Status::ok();
    if (put && mine.size() > max_words_)
      put = Status(ErrorCode::kInternal, "split: more words than the gather holds");
    if (put)
      put = core::catch_to_status(ErrorCode::kDeviceError, "split: the device adapter", [&] {
        return copy_now(adapter_, device_, in_.value().get(), mine.data(), bytes);
      });
    if (!put) {  // take part with no words: every rank's round fails
      const TensorView none = TensorView::of(nullptr, DataType::kI64, 0, device_);
      (void)comm_.all_gather_into(rank_, none, none);
      return put;
    }
    RUCCL_TRY(comm_.all_gather_into(
        rank_, TensorView::of(in_.value().get(), DataType::kI64, mine.size(), device_),
        TensorView::of(out_.value().get(), DataType::kI64, mine.size() * world, device_)));
    std::vector<std::int64_t> words(mine.size() * world);
    RUCCL_TRY(core::catch_to_status(ErrorCode::kDeviceError, "split: the device adapter", [&] {
      return copy_now(adapter_, device_, words.data(), out_.value().get(), bytes * world);
    }));
    return words;
  }

 private:
  // `words` i64 of device memory (an adapter that throws: its error).
  Result<std::shared_ptr<void>> allocate(std::size_t words) {
    return core::catch_to_status(ErrorCode::kDeviceError, "split: the device adapter", [&] {
      return adapter_.allocate(device_, words * sizeof(std::int64_t));
    });
  }

  Communicator& comm_;
  DeviceAdapter& adapter_;
  std::size_t rank_;
  DeviceId device_;
  Result<std::shared_ptr<void>> in_, out_;
  std::size_t max_words_;
};

// The slot claim rounds of a split by colour across processes: all-gathers
// over the parent (`gather`), every rank taking part; a rank's group is its
// colour's members. The first round's slots are those of `first`, the
// entries gathered before the rounds.
class ColourRounds final : public core::SlotRounds {
 public:
  ColourRounds(WordGather& gather, std::vector<std::size_t> group,
               const std::vector<core::SplitEntry>& first, std::uint32_t seed)
      : gather_(gather), group_(std::move(group)), seed_(seed) {
    first_slots_.reserve(first.size());
    for (const core::SplitEntry& e : first)
      first_slots_.push_back(static_cast<std::int64_t>(e.slots));
  }

  Result<std::uint64_t> used_by_group(std::uint64_t mine) override {
    if (!first_slots_.empty()) return or_over_group(std::exchange(first_slots_, {}));
    const auto word = static_cast<std::int64_t>(mine);
    auto all = gather_(std::span(&word, 1));
    RUCCL_TRY(all);
    return or_over_group(all.value());
  }
  Result<core::ClaimVerdict> claims(core::SlotClaim c) override {
    const auto word = static_cast<std::int64_t>(c);
    auto all = gather_(std::span(&word, 1));
    RUCCL_TRY(all);
    std::vector<core::SlotClaim> claims(all.value().size());
    for (std::size_t r = 0; r < claims.size(); ++r) {
      if (all.value()[r] < 0 || all.value()[r] > 2)
        return Status(ErrorCode::kProtocolError,
                      "split: rank " + std::to_string(r) + " sent a bad slot claim");
      claims[r] = static_cast<core::SlotClaim>(all.value()[r]);
    }
    return core::claim_verdict(claims, group_);
  }
  std::uint32_t seed() const override { return seed_; }

 private:
  // The OR of the group's masks (bit 0, the world's own slot, always set).
  std::uint64_t or_over_group(const std::vector<std::int64_t>& masks) const {
    std::uint64_t used = 1;
    for (std::size_t r : group_)
      if (r < masks.size()) used |= static_cast<std::uint64_t>(masks[r]);
    return used;
  }

  WordGather& gather_;
  std::vector<std::size_t> group_;
  std::vector<std::int64_t> first_slots_;  // until the first round reads them
  std::uint32_t seed_;
};

constexpr int kSlotClaimTries = 16;  // attempts of a split at claiming a slot

// A split's retry seed: differs between communicators, ranks and calls
// (the clock; the addresses), and cannot fail.
std::uint32_t draw_seed(const void* comm, std::size_t rank) {
  const auto now =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::uint64_t mixed = (now ^ reinterpret_cast<std::uintptr_t>(comm) ^ (rank << 17)) *
                              0x9E3779B97F4A7C15ull;  // (Fibonacci hashing)
  return static_cast<std::uint32_t>(mixed >> 32);
}

}  // namespace

Result<Communicator::Split> Communicator::split(std::size_t rank, std::int64_t color,
                                                std::int64_t key) {
  Impl& m = *impl_;
  const std::size_t local = rank - m.first;
  if (rank < m.first || local >= m.devices.size())
    return Status(ErrorCode::kInvalidArgument,
                  "split: rank " + std::to_string(rank) + " is not served by this communicator");
  return core::catch_to_status(ErrorCode::kInternal, "split", [&]() -> Result<Split> {
    // Every rank's entry: colour, key, the slots in use on its transport and
    // a draw of its own (the slot claim's retry seed).
    const std::uint64_t seq = m.next_seq[local].load();
    const DeviceId device = m.devices[local];
    constexpr std::size_t kWords = 4;
    WordGather gather(*this, *m.adapter, rank, device, kWords);
    const auto finish = [&](const core::SplitPlan& plan) -> Result<Split> {
      auto child = m.split_child(seq, color, plan);
      RUCCL_TRY(child);
      const auto at = std::find(plan.members.begin(), plan.members.end(), rank);
      return Split{std::move(child).value(), static_cast<std::size_t>(at - plan.members.begin())};
    };
    const std::int64_t mine[kWords] = {color, key,
                                       static_cast<std::int64_t>(
                                           m.remote ? m.remote->slots_in_use(local) : 0),
                                       static_cast<std::int64_t>(draw_seed(&m, rank))};
    auto words = gather(mine);
    RUCCL_TRY(words);
    std::vector<core::SplitEntry> entries(m.world);
    for (std::size_t r = 0; r < m.world; ++r)
      entries[r] = {words.value()[kWords * r], words.value()[kWords * r + 1],
                    static_cast<std::uint64_t>(words.value()[kWords * r + 2])};
    RUCCL_TRY(core::check_colors(entries));
    if (!m.remote) {  // in process: the child is a communicator of its own, no slot
      if (color == kNoColor) return Split{};
      auto plan = core::plan_split(entries, color, m.first, m.devices.size(), false, 64);
      RUCCL_TRY(plan);
      return finish(plan.value());
    }
    // Across processes: the colour's slot, claimed on every member's
    // transport (core::agree_on_slot). Every rank takes part in the claim
    // rounds, also one whose group is invalid or that joins none.
    Result<core::SplitPlan> plan = core::SplitPlan{};
    if (color != kNoColor)
      plan =
          core::plan_split(entries, color, m.first, m.devices.size(), true, m.remote->max_slots());
    const bool joining = color != kNoColor && plan.is_ok();
    std::vector<std::size_t> group;
    std::uint32_t seed = 0;
    if (joining) {
      group = plan.value().members;
      seed = static_cast<std::uint32_t>(words.value()[kWords * group.front() + 3]);
    }
    ColourRounds rounds(gather, std::move(group), entries, seed);
    core::RankSlots holder(*m.remote, local);
    auto slot = core::agree_on_slot(rounds, holder, joining, m.remote->max_slots(), kSlotClaimTries,
                                    "split");
    RUCCL_TRY(plan);
    RUCCL_TRY(slot);
    if (color == kNoColor) return Split{};
    plan.value().slot = slot.value();
    return finish(plan.value());
  });
}

Result<std::shared_ptr<Communicator>> Communicator::Impl::split_child(std::uint64_t seq,
                                                                      std::int64_t color,
                                                                      const core::SplitPlan& plan) {
  std::lock_guard lock(split_mutex);
  PendingSplit& pending = pending_splits[{seq, color}];
  if (!pending.comm) {  // the first member here: make it (local work only, no wait)
    pending.left = plan.per_process;
    pending.comm =
        core::catch_to_status(ErrorCode::kInternal, "split",
                              [&]() -> Result<std::shared_ptr<Communicator>> {
                                std::vector<DeviceId> devs;
                                if (!remote) {
                                  for (std::size_t r : plan.members) devs.push_back(devices[r]);
                                  return Communicator::create(std::move(devs), adapter, config);
                                }
                                for (std::size_t l = 0; l < plan.per_process; ++l)
                                  devs.push_back(devices[plan.members[plan.first + l] - first]);
                                auto part = remote->child(plan.members, plan.first,
                                                          plan.per_process, plan.slot, config);
                                RUCCL_TRY(part);
                                return make_communicator(std::move(devs), adapter, config,
                                                         std::move(part).value(), fault_plan);
                              });
  }
  Result<std::shared_ptr<Communicator>> out = *pending.comm;
  if (--pending.left == 0) pending_splits.erase({seq, color});
  return out;
}

Result<std::shared_ptr<Communicator>> split_members(Communicator& parent, std::size_t rank,
                                                    std::span<const std::size_t> members,
                                                    bootstrap::Bootstrap& boot,
                                                    const Config* config) {
  Communicator::Impl& m = *parent.impl_;
  const Config& child_config = config ? *config : m.config;
  if (!m.remote || m.devices.size() != 1)
    return Status(ErrorCode::kUnsupported,
                  "split by members: needs a world communicator with one rank per process");
  if (rank != m.first)
    return Status(ErrorCode::kInvalidArgument,
                  "split by members: rank " + std::to_string(rank) + " is not served here");
  return core::catch_to_status(
      ErrorCode::kInternal, "split", [&]() -> Result<std::shared_ptr<Communicator>> {
        std::vector<core::SplitEntry> entries(m.world);
        for (std::size_t j = 0; j < members.size(); ++j) {
          if (members[j] >= m.world || entries[members[j]].color == 0)
            return Status(ErrorCode::kInvalidArgument,
                          "split by members: member " + std::to_string(j) + " (rank " +
                              std::to_string(members[j]) + ") is out of range or repeated");
          entries[members[j]] = {0, static_cast<std::int64_t>(j), 0};
        }
        if (entries[rank].color != 0)
          return Status(ErrorCode::kInvalidArgument,
                        "split by members: rank " + std::to_string(rank) + " is not a member");
        auto plan = core::plan_split(entries, 0, m.first, 1, true, 64);
        RUCCL_TRY(plan);
        auto part = m.remote->child_by_members(plan.value().members, plan.value().first, boot,
                                               child_config);
        RUCCL_TRY(part);
        return make_communicator({m.devices[0]}, m.adapter, child_config, std::move(part).value(),
                                 m.fault_plan);
      });
}

std::uint64_t Communicator::next_sequence(std::size_t rank) const {
  const std::size_t local = rank - impl_->first;
  return rank >= impl_->first && local < impl_->next_seq.size() ? impl_->next_seq[local].load() : 0;
}

namespace {

// A rank's reused request, filled for one call: every field set anew. `out`:
// the caller's output view, or null (the value form). Each view is copied
// once, into storage the request kept from its last call.
void refill(core::Request& req, CollectiveKind kind, const TensorView& in, const TensorView* out) {
  req.kind = kind;
  req.dtype = in.dtype;
  req.op = ReduceOp::kSum;
  req.root = 0;
  req.has_input = true;
  req.shape.clear();  // (the fingerprint's, filled after the lean path: shape_for_agreement)
  req.send_counts.clear();
  req.max_chunk_bytes = 0;
  core::assign_view(req.in, in);
  core::assign_output(req.out, out);
}

// Whether `req` holds these arguments already (a rank calling again with the
// same buffers): then only the fingerprint's shape is cleared, as refill
// clears it; else refill with them (`op`, `root`, `has_input` too).
// With `compare_only`, the request is left as it is either way.
bool refill_unless_same(core::Request& req, bool compare_only, CollectiveKind kind,
                        const TensorView& in, const TensorView* out, ReduceOp op, std::size_t root,
                        bool has_input, std::span<const std::size_t> send_counts) {
  if (req.kind == kind && req.dtype == in.dtype && req.op == op && req.root == root &&
      req.has_input == has_input && std::ranges::equal(req.send_counts, send_counts) &&
      core::same_view(req.in, in) &&
      (out != nullptr ? req.out && core::same_view(*req.out, *out) : !req.out)) {
    req.shape.clear();
    return true;
  }
  if (compare_only) return false;
  refill(req, kind, in, out);
  req.op = op;
  req.root = root;
  req.has_input = has_input;
  req.send_counts.assign(send_counts.begin(), send_counts.end());
  return false;
}

Result<Tensor> tensor_of(Result<core::RankOutcome> r) {
  RUCCL_TRY(r);
  if (!r.value().tensor) return Status(ErrorCode::kInternal, "collective produced no tensor");
  return std::move(*r.value().tensor);
}

}  // namespace

Result<Tensor> Communicator::all_reduce(std::size_t rank, const TensorView& in, ReduceOp op,
                                        CallOptions o) {
  return tensor_of(impl_->call(rank, o, [&](core::Request& req) {
    refill(req, CollectiveKind::kAllReduce, in, nullptr);
    req.op = op;
  }));
}

Status Communicator::all_reduce_into(std::size_t rank, const TensorView& in, const TensorView& out,
                                     ReduceOp op, CallOptions o) {
  return impl_
      ->call(rank, o,
             [&](core::Request& req, bool compare_only) {
               return refill_unless_same(req, compare_only, CollectiveKind::kAllReduce, in, &out,
                                         op);
             })
      .status();
}

Result<std::optional<Tensor>> Communicator::reduce(std::size_t rank, const TensorView& in,
                                                   ReduceOp op, std::size_t root, CallOptions o) {
  auto r = impl_->call(rank, o, [&](core::Request& req) {
    refill(req, CollectiveKind::kReduce, in, nullptr);
    req.op = op;
    req.root = root;
  });
  RUCCL_TRY(r);
  return std::move(r.value().tensor);
}

Status Communicator::reduce_into(std::size_t rank, const TensorView& in, const TensorView& out,
                                 ReduceOp op, std::size_t root, CallOptions o) {
  return impl_
      ->call(rank, o,
             [&](core::Request& req, bool compare_only) {
               return refill_unless_same(req, compare_only, CollectiveKind::kReduce, in, &out, op,
                                         root);
             })
      .status();
}

Result<Tensor> Communicator::broadcast(std::size_t rank, const TensorView* in, CallOptions o) {
  return tensor_of(impl_->call(rank, o, [&](core::Request& req) {
    if (in != nullptr) {
      refill(req, CollectiveKind::kBroadcast, *in, nullptr);
      return;
    }
    refill(req, CollectiveKind::kBroadcast, TensorView{}, nullptr);  // a receiver
    req.has_input = false;
  }));
}

Status Communicator::broadcast_into(std::size_t rank, const TensorView* in, const TensorView& out,
                                    CallOptions o) {
  return impl_
      ->call(rank, o,
             [&](core::Request& req, bool compare_only) {
               if (in != nullptr)
                 return refill_unless_same(req, compare_only, CollectiveKind::kBroadcast, *in,
                                           &out);
               // A receiver: no input, its dtype and device from the output.
               return refill_unless_same(req, compare_only, CollectiveKind::kBroadcast,
                                         TensorView{nullptr, out.dtype, {}, out.device, out.stream},
                                         &out, ReduceOp::kSum, 0, false);
             })
      .status();
}

Result<Tensor> Communicator::all_gather(std::size_t rank, const TensorView& in, CallOptions o) {
  return tensor_of(impl_->call(rank, o, [&](core::Request& req) {
    refill(req, CollectiveKind::kAllGather, in, nullptr);
  }));
}

Status Communicator::all_gather_into(std::size_t rank, const TensorView& in, const TensorView& out,
                                     CallOptions o) {
  return impl_
      ->call(rank, o,
             [&](core::Request& req, bool compare_only) {
               return refill_unless_same(req, compare_only, CollectiveKind::kAllGather, in, &out);
             })
      .status();
}

Result<Tensor> Communicator::reduce_scatter(std::size_t rank, const TensorView& in, ReduceOp op,
                                            CallOptions o) {
  return tensor_of(impl_->call(rank, o, [&](core::Request& req) {
    refill(req, CollectiveKind::kReduceScatter, in, nullptr);
    req.op = op;
  }));
}

Status Communicator::reduce_scatter_into(std::size_t rank, const TensorView& in,
                                         const TensorView& out, ReduceOp op, CallOptions o) {
  return impl_
      ->call(rank, o,
             [&](core::Request& req, bool compare_only) {
               return refill_unless_same(req, compare_only, CollectiveKind::kReduceScatter, in,
                                         &out, op);
             })
      .status();
}

Result<AllToAllV> Communicator::all_to_all_v(std::size_t rank, const TensorView& in,
                                             std::span<const std::size_t> send_counts,
                                             CallOptions o) {
  auto r = impl_->call(rank, o, [&](core::Request& req) {
    refill(req, CollectiveKind::kAllToAllV, in, nullptr);
    req.send_counts.assign(send_counts.begin(), send_counts.end());
  });
  RUCCL_TRY(r);
  if (!r.value().tensor) return Status(ErrorCode::kInternal, "all_to_all_v produced no tensor");
  return AllToAllV{std::move(*r.value().tensor), std::move(r.value().recv_counts)};
}

Status Communicator::all_to_all_v_into(std::size_t rank, const TensorView& in,
                                       std::span<const std::size_t> send_counts,
                                       const TensorView& out,
                                       std::vector<std::size_t>& recv_counts, CallOptions o) {
  // (Compared first: a loop over the same buffers and counts keeps its key.)
  auto r = impl_->call(rank, o, [&](core::Request& req, bool compare_only) {
    return refill_unless_same(req, compare_only, CollectiveKind::kAllToAllV, in, &out,
                              ReduceOp::kSum, 0, true, send_counts);
  });
  RUCCL_TRY(r);
  // (Into the caller's vector, its room kept.)
  recv_counts.assign(r.value().recv_counts.begin(), r.value().recv_counts.end());
  return Status::ok();
}

CommunicatorRegistry::CommunicatorRegistry(std::shared_ptr<DeviceAdapter> adapter, Config config)
    : adapter_(std::move(adapter)), config_(std::move(config)) {}

Result<std::shared_ptr<Communicator>> CommunicatorRegistry::communicator(
    const std::vector<DeviceId>& devices) {
  std::lock_guard lock(mutex_);
  auto it = groups_.find(devices);
  if (it != groups_.end() && !it->second->aborted()) return it->second;
  auto created = Communicator::create(devices, adapter_, config_);
  RUCCL_TRY(created);
  groups_[devices] = created.value();
  return created;
}

void CommunicatorRegistry::clear(const std::string& reason) {
  std::lock_guard lock(mutex_);
  for (auto& [devices, comm] : groups_) comm->abort(reason);
  groups_.clear();
}

}  // namespace ruccl
