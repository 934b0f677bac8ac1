// Each collective's buffer layout (which buffers the algorithm reads and
// writes, what the rank gets back) is in its file of src/collectives.
// Every rank passes through the same barriers: setup, each algorithm step (the
// in-process executor), and completion, so a failure in any of them reaches
// every local rank. A rank whose algorithm fails still goes to the completion
// barrier with its error (after announcing it to the other processes): the
// transport executor has no local barrier per step, so a local peer that
// finished its own exchanges learns of the failure there, at once, instead of
// waiting out its deadline. Once a barrier of the collective returned an
// error, every later barrier of it returns that error at once (the rendezvous
// keeps it), so ranks that left the algorithm at different barriers still
// meet no more than once.
#include "core/engine.hpp"

#include <unistd.h>

#include <cstdio>
#include <new>
#include <optional>
#include <string>

#include "collectives/collective.hpp"
#include "collectives/execution.hpp"
#include "core/fault.hpp"
#include "core/remote_ranks.hpp"
#include "ring/algorithms.hpp"
#include "ring/schedule.hpp"

namespace ruccl::core {
namespace {

// Across processes, a local rank that is late to a barrier is almost always
// blocked in a transport exchange, which fails at its own deadline with the
// error that names the remote rank at fault. The local barriers wait that much
// longer, so that this error, not "rank R did not arrive" (R being the local
// peer), is what every local rank gets; a local rank that is truly stuck is
// still found, a little later.
constexpr auto kLocalGrace = std::chrono::milliseconds(500);

Clock::time_point barrier_deadline(const RankJob& job) {
  return Clock::now() + job.timeout +
         (job.remote != nullptr ? kLocalGrace : Clock::duration::zero());
}

class InProcRun final : public ring::RankRun {
 public:
  // `rank` of `world`: the whole in-process group (rank = global rank), or this
  // process's level of a hierarchy (rank = local seat, world = local ranks).
  InProcRun(const RankJob& job, std::size_t rank, std::size_t world)
      : job_(job), rank_(rank), world_(world) {}
  std::size_t rank() const override { return rank_; }
  std::size_t world() const override { return world_; }
  // A pull is one range read straight from the peer's memory: no message, no
  // staging, so nothing to cut to the budget (executors that stage do cut).
  std::size_t message_elements() const override { return SIZE_MAX; }
  // The receiving rank pulls its incoming ranges; sends need no action here.
  Status step(std::span<const Transfer>, std::span<const Transfer> recvs,
              Combine combine) override {
    Status mine = job_.rendezvous->enter_device();
    if (mine.is_ok()) {
      // (job_.adapter is the GuardedAdapter: what the adapter throws is caught there.)
      mine = exchange(*job_.adapter, job_.generation->work, job_.rank, recvs, combine);
      job_.rendezvous->leave_device();
    }
    return share(std::move(mine));
  }
  Status share(Status mine) override {
    return job_.rendezvous->barrier(job_.rank, std::move(mine), barrier_deadline(job_));
  }

 private:
  const RankJob& job_;
  const std::size_t rank_;
  const std::size_t world_;
};

// With tracing on, wraps an executor: each RankRun::phase mark becomes a span
// (annotated with the group's size and the bytes of the collective).
class PhasedRun final : public ring::RankRun {
 public:
  PhasedRun(ring::RankRun& inner, Tracer* tracer, std::size_t local, std::string args)
      : inner_(inner), tracer_(tracer), local_(local), args_(std::move(args)) {}
  std::size_t rank() const override { return inner_.rank(); }
  std::size_t world() const override { return inner_.world(); }
  std::size_t message_elements() const override { return inner_.message_elements(); }
  Status step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
              Combine combine) override {
    return inner_.step(sends, recvs, combine);
  }
  Status share(Status mine) override { return inner_.share(std::move(mine)); }
  void phase(const char* name) override {
    span_.reset();
    span_.emplace(tracer_, local_, name, "phase",
                  args_ + ",\"group\":" + std::to_string(inner_.world()) +
                      ",\"group_rank\":" + std::to_string(inner_.rank()));
  }

 private:
  ring::RankRun& inner_;
  Tracer* tracer_;
  std::size_t local_;
  std::string args_;
  std::optional<ScopedSpan> span_;
};

// Fault injection (exit and oom faults, RankJob::faults): wraps an executor and
// counts the steps this rank starts in the collective, over every level (the
// local and the cross-process rings share one counter, 0-based). When the
// planned step starts, the process ends at once, as a crashed peer would: no
// unwinding, no destructors, only stderr flushed so the line explaining it is
// not lost. An oom fault (at=step) throws std::bad_alloc there instead, as an
// allocation of the algorithm would.
class ExitRun final : public ring::RankRun {
 public:
  ExitRun(ring::RankRun& inner, const FaultPlan& plan, std::size_t rank, std::uint64_t seq,
          std::uint32_t& steps)
      : inner_(inner), plan_(plan), rank_(rank), seq_(seq), steps_(steps) {}
  std::size_t rank() const override { return inner_.rank(); }
  std::size_t world() const override { return inner_.world(); }
  std::size_t message_elements() const override { return inner_.message_elements(); }
  Status step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
              Combine combine) override {
    const std::uint32_t step = steps_++;
    if (const Fault* f = plan_.find(FaultKind::kExit, rank_, seq_, step)) {
      std::fprintf(stderr, "ruccl fault injection: rank %zu exits in collective #%llu step %u\n",
                   rank_, static_cast<unsigned long long>(seq_), step);
      std::fflush(stderr);
      ::_exit(f->exit_code);
    }
    if (const Fault* f = plan_.find(FaultKind::kOom, rank_, seq_, step); f && f->at == "step")
      throw std::bad_alloc();
    return inner_.step(sends, recvs, combine);
  }
  Status share(Status mine) override { return inner_.share(std::move(mine)); }
  void phase(const char* name) override { inner_.phase(name); }

 private:
  ring::RankRun& inner_;
  const FaultPlan& plan_;
  const std::size_t rank_;  // global
  const std::uint64_t seq_;
  std::uint32_t& steps_;
};

// An executor with the decorators its job asks for: the exit fault (when
// planned for this rank and collective), then tracing (when `tracer` is set).
// Without either, it is the executor itself.
class Decorated {
 public:
  Decorated(ring::RankRun& base, const RankJob& job, std::uint32_t& steps, Tracer* tracer,
            std::string trace_args)
      : run_(&base) {
    if (job.faults)
      run_ = &exit_.emplace(*run_, *job.faults, job.global_rank, job.generation->seq, steps);
    if (tracer) run_ = &phased_.emplace(*run_, tracer, job.rank, std::move(trace_args));
  }
  Decorated(const Decorated&) = delete;
  Decorated& operator=(const Decorated&) = delete;
  ring::RankRun& operator*() { return *run_; }

 private:
  ring::RankRun* run_;
  std::optional<ExitRun> exit_;
  std::optional<PhasedRun> phased_;
};

// One rank's side of one collective: the barriers around its collective's
// hooks (collectives/collective.hpp).
class RankExecution {
 public:
  explicit RankExecution(const RankJob& job)
      : job_(job), x_(job), kind_(rules(job.request->kind)) {}

  Result<RankOutcome> run() {
    Status setup_status =
        catch_to_status(ErrorCode::kInternal, "collective setup", [&] { return setup(); });
    RUCCL_TRY(job_.rendezvous->barrier(x_.local, std::move(setup_status), barrier_deadline(job_)));
    Status done = catch_to_status(ErrorCode::kInternal, "the algorithm", [&] {
      InProcRun in_process(job_, x_.rank, x_.world);
      Decorated run(job_.run != nullptr ? *job_.run : in_process, job_, steps_, job_.tracer,
                    job_.tracer ? trace_args() : std::string());
      return algorithm(*run);
    });
    if (!done.is_ok() && job_.remote != nullptr) {  // remote and local peers may wait on us
      (void)catch_to_status(ErrorCode::kInternal, "the failure notice", [&] {
        job_.remote->failed(x_.local, job_.generation->seq, done);
        return Status::ok();
      });
    }
    if (done.is_ok())
      done = catch_to_status(ErrorCode::kInternal, "collective completion",
                             [&] { return complete(); });
    RUCCL_TRY(job_.rendezvous->barrier(x_.local, std::move(done), barrier_deadline(job_)));
    return std::move(x_.outcome);
  }

 private:
  Status setup() {
    const Request& req = x_.req;
    RankBuffers& me = x_.me;
    me.device = req.in.device;
    me.stream = req.in.stream;
    me.state = job_.state;
    if (!req.has_input && req.out) {
      me.device = req.out->device;
      me.stream = req.out->stream;
    }
    if (req.has_input) {
      me.input = req.in.data;
      me.input_count = x_.geo.count;
    }
    RUCCL_TRY(job_.adapter->begin(x_.me.queue(), x_.me.state.get()));
    return kind_.setup(x_);
  }

  Status algorithm(ring::RankRun& run) {
    if (job_.algorithm == Algorithm::kHierarchical &&
        job_.across != nullptr) {  // local: in-process
      InProcRun in_process(job_, x_.local, x_.work.world);
      Decorated local(in_process, job_, steps_, job_.tracer,
                      job_.tracer ? trace_args() : std::string());
      Decorated across(*job_.across, job_, steps_, nullptr, std::string());
      std::optional<Decorated> node;
      if (job_.node != nullptr) node.emplace(*job_.node, job_, steps_, nullptr, std::string());
      return kind_.run(x_, Levels{run, &*local, node ? &**node : nullptr, &*across, false});
    }
    return kind_.run(x_,
                     Levels{run, nullptr, nullptr, nullptr, job_.algorithm == Algorithm::kOneShot});
  }

  std::string trace_args() const {
    return "\"bytes\":" + std::to_string(x_.geo.count * x_.es) +
           ",\"rank\":" + std::to_string(x_.rank);
  }

  Status complete() {
    std::optional<Shape> shape = x_.req.in.shape;
    RUCCL_TRY(kind_.complete(x_, shape));
    RUCCL_TRY(job_.adapter->finish(x_.me.queue()));
    if (!x_.req.out && shape) {
      std::shared_ptr<void>& allocated = x_.allocated();
      if (!allocated) {  // an empty result still gets a (zero-element) tensor
        auto mem = job_.adapter->allocate(x_.me.device, 0);
        RUCCL_TRY(mem);
        allocated = std::move(mem.value());
      }
      x_.outcome.tensor.emplace(std::move(allocated), x_.work.dtype, std::move(*shape),
                                x_.me.device);
    }
    return Status::ok();
  }

  const RankJob& job_;
  Execution x_;
  const CollectiveRules& kind_;
  std::uint32_t steps_ = 0;  // steps started, over every level (exit faults count them)
};

}  // namespace

Result<RankOutcome> execute(const RankJob& job) {
  if (job.failed) {  // to the setup barrier with the error, where the others are
    Status common = job.rendezvous->barrier(job.rank, *job.failed, barrier_deadline(job));
    return common.is_ok() ? *job.failed : common;
  }
  return RankExecution(job).run();
}

}  // namespace ruccl::core
