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

#include "core/log.hpp"
#include "core/rendezvous.hpp"
#include "core/selection.hpp"
#include "ring/rank_run.hpp"

namespace ruccl::core {

class FaultPlan;
class Spanning;

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
  // All-reduce only: the inter-process ring of this rank's local index. Set,
  // the all-reduce is hierarchical: its local levels run in-process over the
  // local group (rank = local seat), its middle level over `across`.
  ring::RankRun* across = nullptr;
  // choose_algorithm's choice (core/selection.hpp). kOneShot: `run` delivers
  // every rank's input as it was when the collective began (the world's fused
  // small-tensor path), and the one-shot algorithm runs over it.
  Algorithm algorithm = Algorithm::kInProcess;
  const Request* request = nullptr;
  const Geometry* geometry = nullptr;
  Rendezvous::Generation* generation = nullptr;
  Rendezvous* rendezvous = nullptr;
  DeviceAdapter* adapter = nullptr;
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
  // algorithm is announced to the other processes (Spanning::failed) before
  // the completion barrier, so that no peer, local or remote, waits on it.
  Spanning* spanning = nullptr;
  // Set: this rank failed after it arrived and before it could run (e.g. no
  // memory for its executors). execute() brings this error to the setup
  // barrier instead of setting up (every local rank gets it there) and reads
  // nothing of the job but rank, rendezvous and timeout.
  std::optional<Status> failed;
};

Result<RankOutcome> execute(const RankJob& job);

// The exception being handled, as a Status (call it only inside a catch
// block): std::bad_alloc is kOutOfMemory, any other exception `other`. The
// message says `where` it was thrown; should building it fail too, it is empty.
Status current_exception_status(ErrorCode other, std::string_view where) noexcept;

// Runs `f` (returning Status or Result) of ruccl's own code: an exception
// becomes kInternal (bad_alloc: kOutOfMemory), saying `where`.
template <typename F>
auto contained(std::string_view where, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    return current_exception_status(ErrorCode::kInternal, where);
  }
}

// Runs `f`, a device adapter's verb: an exception becomes kDeviceError
// ("device adapter threw: ..."), a bad_alloc kOutOfMemory.
template <typename F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    return current_exception_status(ErrorCode::kDeviceError, "device adapter");
  }
}

// Forwards every verb to `inner` through guarded(): nothing an adapter throws
// passes it. The communicator hands the engine and the executors this one, so
// that what escapes them is ruccl's own (kInternal).
class GuardedAdapter final : public DeviceAdapter {
 public:
  explicit GuardedAdapter(DeviceAdapter& inner) : inner_(inner) {}
  DeviceKind kind() const noexcept override { return inner_.kind(); }
  Result<std::shared_ptr<AdapterState>> prepare(const TensorView& view, DeviceId device) override;
  Status begin(Work& work, std::size_t rank) override;
  Result<std::shared_ptr<void>> allocate(DeviceId device, std::size_t bytes) override;
  Status copy(Work& work, std::size_t rank, void* dst, const void* src, std::size_t count) override;
  Status exchange(Work& work, std::size_t rank, std::span<const Transfer> incoming,
                  Combine combine) override;
  Status combine(Work& work, std::size_t rank, std::size_t dst_offset, const void* staged,
                 std::size_t count, Combine combine) override;
  Result<std::shared_ptr<void>> allocate_host_staging(DeviceId device, std::size_t bytes) override;
  Result<StageTicket> stage_out(Work& work, std::size_t rank, Source source, Range range,
                                void* host_dst) override;
  Result<StageTicket> stage_in(Work& work, std::size_t rank, std::size_t dst_offset,
                               const void* host_src, std::size_t count, Combine how) override;
  Status wait_staged(Work& work, std::size_t rank, StageTicket ticket) override;
  Status scale(Work& work, std::size_t rank, void* data, std::size_t count,
               std::size_t divisor) override;
  Status finish(Work& work, std::size_t rank) override;

 private:
  DeviceAdapter& inner_;
};

}  // namespace ruccl::core
