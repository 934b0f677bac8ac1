// The engine: one rank's execution of one agreed collective on the in-process
// communicator. It runs the barriers of the collective around its kind's
// hooks (src/collectives: the buffer layout, the src/ring algorithm, the
// rank's output) over the executors of the chosen algorithm
// (core/selection.hpp). No exception leaves it: every device call goes through a
// GuardedAdapter (an adapter's exception becomes kDeviceError, its bad_alloc
// kOutOfMemory), and each phase of ruccl's own code is contained (an exception
// becomes kInternal, a bad_alloc kOutOfMemory) and reaches the phase's barrier
// like any other failure, so every rank gets it.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "core/catch_to_status.hpp"
#include "core/log.hpp"
#include "core/rendezvous.hpp"
#include "core/selection.hpp"
#include "core/work.hpp"
#include "ring/rank_run.hpp"

namespace ruccl::core {

class FaultPlan;
class RemoteRanks;

struct RankOutcome {
  std::optional<Tensor> tensor;          // value forms
  std::vector<std::size_t> recv_counts;  // all_to_all_v
};

// A rank's scratch memory, kept between collectives so that repeated calls do
// not allocate (and fault in) fresh pages. Only that rank's thread touches it.
struct ScratchCache {
  std::shared_ptr<void> memory;
  std::size_t bytes = 0;
};

struct RankJob {
  // Index of this rank in the local group: its Work slot and rendezvous seat.
  std::size_t rank = 0;
  // The algorithm's view. In-process, global_rank == rank and world == Work::world;
  // an executor spanning processes puts the local group inside a larger world.
  std::size_t global_rank = 0;
  std::size_t world = 0;
  // The step executor; null: the in-process executor (pulls through the adapter).
  ring::RankRun* run = nullptr;
  // The hierarchy's level across processes (or nodes) of this rank's local
  // index. Set, the collective is hierarchical: its local level runs
  // in-process over the local group (rank = local seat), the next over `across`.
  ring::RankRun* across = nullptr;
  // With `across` on a world spanning nodes: the ring across this node's
  // processes of this rank's local index, between the local level and
  // `across` (which then joins the ranks of this node index on every node).
  ring::RankRun* node = nullptr;
  // choose_algorithm's choice (core/selection.hpp). kOneShot: `run` delivers
  // every rank's input as it was when the collective began (the world's fused
  // small-tensor path), and the one-shot algorithm runs over it.
  Algorithm algorithm = Algorithm::kInProcess;
  const Request* request = nullptr;
  const Geometry* geometry = nullptr;
  Rendezvous::Generation* generation = nullptr;
  Rendezvous* rendezvous = nullptr;
  DeviceAdapter* adapter = nullptr;     // a GuardedAdapter: its verbs throw nothing
  std::shared_ptr<AdapterState> state;  // from DeviceAdapter::prepare
  std::size_t segment_bytes = 0;
  ScratchCache* scratch = nullptr;
  std::chrono::milliseconds timeout{};  // of every wait (each barrier gets now + timeout)
  Tracer* tracer = nullptr;  // set: phase spans of the algorithm (RUCCL_TRACE)
  // Set only when the plan holds an exit or oom fault for this rank and
  // collective: the executors are wrapped to _exit() (or throw bad_alloc) when
  // the planned step starts.
  const FaultPlan* faults = nullptr;
  // Set (a communicator spanning processes): a failure of this rank's
  // algorithm is announced to the other processes (RemoteRanks::failed) before
  // the completion barrier, so that no peer, local or remote, waits on it.
  RemoteRanks* remote = nullptr;
  // Set: this rank failed after it arrived and before it could run (e.g. no
  // memory for its executors). execute() brings this error to the setup
  // barrier instead of setting up (every local rank gets it there) and reads
  // nothing of the job but rank, rendezvous and timeout.
  std::optional<Status> failed;
};

Result<RankOutcome> execute(const RankJob& job);

// Forwards every verb to `inner` through catch_to_status(kDeviceError):
// nothing an adapter throws passes it. The communicator hands the engine and
// the executors this one, so that what escapes them is ruccl's own (kInternal).
class GuardedAdapter final : public AdapterDecorator {
 public:
  explicit GuardedAdapter(DeviceAdapter& inner)
      : inner_(inner), decorated_(dynamic_cast<AdapterDecorator*>(&inner)) {}
  DeviceKind kind() const noexcept override { return inner_.kind(); }
  Result<std::shared_ptr<AdapterState>> prepare(const TensorView& view, DeviceId device) override;
  Status begin(const Queue& queue, const AdapterState* producer) override;
  Status finish(const Queue& queue) override;
  Result<std::shared_ptr<void>> allocate(DeviceId device, std::size_t bytes) override;
  Result<std::shared_ptr<void>> allocate_host_staging(DeviceId device, std::size_t bytes) override;
  Result<Ticket> copy(const Queue& queue, void* dst, const void* src, std::size_t bytes) override;
  Result<Ticket> reduce(const Queue& queue, void* dst, const void* a, const void* b,
                        std::size_t count, DataType dtype, ReduceOp op) override;
  Result<Ticket> divide(const Queue& queue, void* data, std::size_t count, DataType dtype,
                        std::size_t divisor) override;
  Status wait(const Queue& queue, Ticket ticket) override;
  Status entering(const char* operation) override;

 private:
  DeviceAdapter& inner_;
  AdapterDecorator* const decorated_;  // inner_, when it is a decorator too
};

}  // namespace ruccl::core
