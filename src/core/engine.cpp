// Buffer layout per collective kind (element offsets; es = element size):
//   all_reduce      work = output; the ring combines inputs as it goes.
//   reduce          root: work = output; chain head: its input only; others:
//                   work = scratch for the partial sums.
//   broadcast       root sends from its input; the others receive into output.
//   all_gather      work = output [world * count]; input copied to rank's chunk.
//   reduce_scatter  work = scratch (the input itself if in-place); the rank's
//                   balanced shard is copied out at the end.
// Reducing kinds never copy the input in first (Combine::kReduceInput), except
// with a world of one, where no step runs.
//   all_to_all_v    send = input, recv = output (rows in source order).
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

#include "core/fault.hpp"
#include "core/spanning.hpp"
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
         (job.spanning != nullptr ? kLocalGrace : Clock::duration::zero());
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

Shape with_rows(const Shape& shape, std::size_t rows) {
  Shape out = shape.size() <= 1 ? Shape{rows} : shape;
  out[0] = rows;
  return out;
}

// One rank's side of one collective.
class RankExecution {
 public:
  explicit RankExecution(const RankJob& job)
      : job_(job),
        req_(*job.request),
        geo_(*job.geometry),
        plan_(job.generation->plan.value()),
        work_(job.generation->work),
        me_(work_.ranks[job.rank]),
        es_(dtype_size(work_.dtype)),
        world_(job.world),
        rank_(job.global_rank),
        local_(job.rank) {}

  Result<RankOutcome> run() {
    Status setup_status =
        catch_to_status(ErrorCode::kInternal, "collective setup", [&] { return setup(); });
    RUCCL_TRY(job_.rendezvous->barrier(local_, std::move(setup_status), barrier_deadline(job_)));
    Status done = catch_to_status(ErrorCode::kInternal, "the algorithm", [&] {
      InProcRun in_process(job_, rank_, world_);
      Decorated run(job_.run != nullptr ? *job_.run : in_process, job_, steps_, job_.tracer,
                    job_.tracer ? trace_args() : std::string());
      return algorithm(*run);
    });
    if (!done.is_ok() && job_.spanning != nullptr) {  // remote and local peers may wait on us
      (void)catch_to_status(ErrorCode::kInternal, "the failure notice", [&] {
        job_.spanning->failed(local_, job_.generation->seq, done);
        return Status::ok();
      });
    }
    if (done.is_ok())
      done = catch_to_status(ErrorCode::kInternal, "collective completion",
                             [&] { return complete(); });
    RUCCL_TRY(job_.rendezvous->barrier(local_, std::move(done), barrier_deadline(job_)));
    return std::move(outcome_);
  }

 private:
  std::byte* at(void* base, std::size_t elements) const {
    return static_cast<std::byte*>(base) + elements * es_;
  }
  // The caller's output, or `count` freshly allocated elements of the value form.
  Result<void*> output(std::size_t count) {
    if (req_.out) return req_.out->data;
    auto mem = job_.adapter->allocate(me_.device, count * es_);
    RUCCL_TRY(mem);
    allocated_ = std::move(mem.value());
    return allocated_.get();
  }
  Result<void*> scratch(std::size_t count) {
    ScratchCache& cache = *job_.scratch;
    if (cache.bytes < count * es_ || !cache.memory) {
      cache.memory.reset();  // free first: peak memory stays one scratch buffer
      auto mem = job_.adapter->allocate(me_.device, count * es_);
      RUCCL_TRY(mem);
      cache.memory = std::move(mem.value());
      cache.bytes = count * es_;
    }
    scratch_ = cache.memory;
    return scratch_.get();
  }
  Status copy(void* dst, const void* src, std::size_t count) {
    if (dst == src || count == 0) return Status::ok();
    return completed(*job_.adapter, me_.queue(),
                     job_.adapter->copy(me_.queue(), dst, src, count * es_));
  }
  std::vector<Range> segments() const {
    std::size_t bytes = std::min(job_.segment_bytes, req_.max_chunk_bytes);
    return ring::segment_ranges(plan_.geometry.count, std::max<std::size_t>(1, bytes / es_));
  }
  Range shard() const { return ring::balanced_range(geo_.rows, world_, rank_, geo_.unit); }

  Status setup() {
    me_.device = req_.in.device;
    me_.stream = req_.in.stream;
    me_.state = job_.state;
    if (!req_.has_input && req_.out) {
      me_.device = req_.out->device;
      me_.stream = req_.out->stream;
    }
    const std::size_t n = geo_.count;
    if (req_.has_input) {
      me_.input = req_.in.data;
      me_.input_count = n;
    }
    RUCCL_TRY(job_.adapter->begin(me_.queue(), me_.state.get()));
    switch (req_.kind) {
      case CollectiveKind::kAllReduce: {
        auto work = output(n);
        RUCCL_TRY(work);
        if (world_ == 1) RUCCL_TRY(copy(work.value(), req_.in.data, n));
        return use(work.value(), n);
      }
      case CollectiveKind::kReduce: {
        if (rank_ == plan_.root) {
          auto work = output(n);
          RUCCL_TRY(work);
          if (world_ == 1) RUCCL_TRY(copy(work.value(), req_.in.data, n));
          return use(work.value(), n);
        }
        if (ring::reduce_position(rank_, plan_.root, world_) == 0) return Status::ok();  // head
        auto work = scratch(n);
        RUCCL_TRY(work);
        return use(work.value(), n);
      }
      case CollectiveKind::kBroadcast: {
        if (rank_ == plan_.root) {
          me_.send = req_.in.data;
          me_.send_count = n;
          return Status::ok();  // the root's own copy is made at completion
        }
        auto work = output(plan_.geometry.count);
        RUCCL_TRY(work);
        return use(work.value(), plan_.geometry.count);
      }
      case CollectiveKind::kAllGather: {
        auto work = output(n * world_);
        RUCCL_TRY(work);
        RUCCL_TRY(copy(at(work.value(), rank_ * n), req_.in.data, n));
        return use(work.value(), n * world_);
      }
      case CollectiveKind::kReduceScatter: {
        const bool in_place = req_.out && req_.out->data == at(req_.in.data, shard().offset);
        auto work = in_place ? Result<void*>(req_.in.data) : scratch(n);
        RUCCL_TRY(work);
        if (world_ == 1) RUCCL_TRY(copy(work.value(), req_.in.data, n));
        return use(work.value(), n);
      }
      case CollectiveKind::kAllToAllV: {
        std::size_t rows = 0;
        for (std::size_t s = 0; s < world_; ++s) {
          rows += plan_.a2a_rows[s][rank_];
          outcome_.recv_counts.push_back(plan_.a2a_rows[s][rank_]);
        }
        auto recv = output(rows * geo_.unit);
        RUCCL_TRY(recv);
        me_.send = req_.in.data;
        me_.send_count = n;
        me_.recv = recv.value();
        me_.recv_count = req_.out ? req_.out->count() : rows * geo_.unit;
        out_rows_ = rows;
        return Status::ok();
      }
    }
    return Status(ErrorCode::kInternal, "unknown collective kind");
  }

  Status use(void* work, std::size_t count) {
    me_.send = work;
    me_.recv = work;
    me_.send_count = me_.recv_count = count;
    return Status::ok();
  }

  Status algorithm(ring::RankRun& run) {
    switch (req_.kind) {
      case CollectiveKind::kAllReduce:
        if (job_.one_shot) return ring::one_shot_all_reduce(run, geo_.count);
        if (job_.across != nullptr) {
          InProcRun in_process(job_, local_, work_.world);
          Decorated local(in_process, job_, steps_, job_.tracer,
                          job_.tracer ? trace_args() : std::string());
          Decorated across(*job_.across, job_, steps_, nullptr, std::string());
          return ring::hierarchical_all_reduce(*local, *across, geo_.count, 1);
        }
        return ring::ring_all_reduce(run, geo_.count, 1);
      case CollectiveKind::kReduce: return ring::chain_reduce(run, segments(), plan_.root);
      case CollectiveKind::kBroadcast: return ring::chain_broadcast(run, segments(), plan_.root);
      case CollectiveKind::kAllGather: {
        std::vector<Range> chunks;
        for (std::size_t r = 0; r < world_; ++r) chunks.push_back(Range{r * geo_.count, geo_.count});
        return ring::ring_all_gather(run, chunks);
      }
      case CollectiveKind::kReduceScatter:
        return ring::ring_reduce_scatter(run, ring::balanced_ranges(geo_.rows, world_, geo_.unit));
      case CollectiveKind::kAllToAllV:
        return ring::pairwise_all_to_all_v(run, plan_.a2a_rows, geo_.unit);
    }
    return Status(ErrorCode::kInternal, "unknown collective kind");
  }

  std::string trace_args() const {
    return "\"bytes\":" + std::to_string(geo_.count * es_) + ",\"rank\":" + std::to_string(rank_);
  }

  Status scale_if_mean(void* data, std::size_t count) {
    if (req_.op != ReduceOp::kMean || count == 0) return Status::ok();
    return completed(*job_.adapter, me_.queue(),
                     job_.adapter->divide(me_.queue(), data, count, work_.dtype, world_));
  }

  Status complete() {
    Shape shape = req_.in.shape;
    switch (req_.kind) {
      case CollectiveKind::kAllReduce:
        RUCCL_TRY(scale_if_mean(me_.recv, geo_.count));
        break;
      case CollectiveKind::kReduce:
        if (rank_ != plan_.root) return job_.adapter->finish(me_.queue());
        RUCCL_TRY(scale_if_mean(me_.recv, geo_.count));
        break;
      case CollectiveKind::kBroadcast:
        shape = plan_.shape;
        if (rank_ == plan_.root) {
          auto out = output(geo_.count);
          RUCCL_TRY(out);
          RUCCL_TRY(copy(out.value(), req_.in.data, geo_.count));
        }
        break;
      case CollectiveKind::kAllGather:
        shape = with_rows(req_.in.shape, geo_.rows * world_);
        break;
      case CollectiveKind::kReduceScatter: {
        const Range mine = shard();
        RUCCL_TRY(scale_if_mean(at(me_.recv, mine.offset), mine.count));
        auto out = output(mine.count);
        RUCCL_TRY(out);
        RUCCL_TRY(copy(out.value(), at(me_.recv, mine.offset), mine.count));
        shape = with_rows(req_.in.shape, ring::balanced_range(geo_.rows, world_, rank_).count);
        break;
      }
      case CollectiveKind::kAllToAllV:
        shape = with_rows(req_.in.shape, out_rows_);
        break;
    }
    RUCCL_TRY(job_.adapter->finish(me_.queue()));
    if (!req_.out) {
      if (!allocated_) {  // an empty result still gets a (zero-element) tensor
        auto mem = job_.adapter->allocate(me_.device, 0);
        RUCCL_TRY(mem);
        allocated_ = std::move(mem.value());
      }
      outcome_.tensor.emplace(std::move(allocated_), work_.dtype, std::move(shape), me_.device);
    }
    return Status::ok();
  }

  const RankJob& job_;
  const Request& req_;
  const Geometry& geo_;
  const Plan& plan_;
  Work& work_;
  RankBuffers& me_;
  const std::size_t es_;
  const std::size_t world_;  // the algorithm's world and rank (global)
  const std::size_t rank_;
  const std::size_t local_;  // this rank's index in the local Work and rendezvous
  std::shared_ptr<void> allocated_;  // the value form's output
  std::shared_ptr<void> scratch_;    // kept until every peer is done reading it
  std::size_t out_rows_ = 0;
  std::uint32_t steps_ = 0;  // steps started, over every level (exit faults count them)
  RankOutcome outcome_;
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
