// The engine: one rank's execution of one agreed collective on the in-process
// communicator. It lays out the rank's buffers for the collective kind, runs
// the algorithm from src/ring over the device adapter, and produces the rank's
// output. Every device call is guarded: an exception becomes kDeviceError.
#pragma once

#include <optional>
#include <vector>

#include "core/log.hpp"
#include "core/rendezvous.hpp"
#include "ring/rank_run.hpp"

namespace ruccl::core {

class FaultPlan;

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
  // All-reduce only: `run` delivers every rank's input as it was when the
  // collective began (the world's fused small-tensor path), and the one-shot
  // algorithm runs over it (ring/one_shot_all_reduce.cpp).
  bool one_shot = false;
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
  // Set only when the plan holds an exit fault for this rank and collective:
  // the executors are wrapped to _exit() when the planned step starts.
  const FaultPlan* faults = nullptr;
};

Result<RankOutcome> execute(const RankJob& job);

// Runs `f` (returning Status or Result), turning any exception into kDeviceError.
template <typename F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Status(ErrorCode::kDeviceError, std::string("device adapter threw: ") + e.what());
  } catch (...) {
    return Status(ErrorCode::kDeviceError, "device adapter threw a non-standard exception");
  }
}

}  // namespace ruccl::core
