// RemoteRanks: the part of a communicator that lies outside this process.
//
// The in-process communicator serves ranks that are threads of one process. A
// communicator spanning processes (src/world) plugs in here: it agrees on
// every collective with all ranks of the world (each rank derives the same Plan
// or the same error from every rank's request) and supplies the step executor
// that moves messages between processes. The engine, the algorithms and the
// device adapters are the same.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core/agreement.hpp"
#include "core/engine.hpp"
#include "core/selection.hpp"
#include "core/split.hpp"
#include "ring/rank_run.hpp"

namespace ruccl::bootstrap {
class Bootstrap;
}  // namespace ruccl::bootstrap

namespace ruccl::core {

// A communicator's requests per local rank: two collectives' ways (two calls
// taking turns keep each its own), then the barrier's. A request_key modulo
// kRequestWays is its request's way.
inline constexpr std::size_t kRequestWays = 3;
inline constexpr std::size_t kBarrierWay = 2;

// The step executors of one rank for one collective.
struct Executors {
  // Runs the algorithm over every rank of the world. Null: the whole world is
  // in this process, and the in-process executor runs it.
  std::unique_ptr<ring::RankRun> run;
  // Set for a hierarchical collective: the group across processes of this
  // rank's local index (engine.hpp, RankJob::across).
  std::unique_ptr<ring::RankRun> across;
  // With `across`, on a world spanning nodes that share memory within each:
  // the ring across this node's processes (RankJob::node); `across` then
  // joins one rank per node.
  std::unique_ptr<ring::RankRun> node;
  // The algorithm these executors serve (the one asked for, or kFlatRing
  // where a one-shot's inputs were not delivered to this rank).
  Algorithm algorithm = Algorithm::kInProcess;
};

class RemoteRanks {
 public:
  virtual ~RemoteRanks() = default;
  // Communicator::abort: tells the ranks in other processes, then makes every
  // blocked wait outside this process return kAborted. notices[local] is local
  // rank `local`'s failure notice: the collective it is in (or calls next) and
  // the error its peers get. May be called from any thread at any time; waits
  // at most a short bound per idle local rank (transport.hpp, abort_notify).
  virtual void abort(const std::vector<std::pair<std::uint64_t, Status>>& notices) = 0;
  virtual std::size_t first_rank() const = 0;  // global rank of this process's local index 0
  virtual std::size_t world() const = 0;       // ranks in all processes
  // Communicator::split. The communicator slots in use on local rank
  // `local`'s links (bit s: slot s; world/shared_links.hpp).
  virtual std::uint64_t slots_in_use(std::size_t local) const = 0;
  // Slots are 1 .. max_slots() - 1 (at most 64).
  virtual std::uint32_t max_slots() const = 0;
  // Sets slot `slot`'s bit there: whether it was clear (the caller holds the
  // slot then; core::agree_on_slot). release_slot clears it.
  virtual bool claim_slot(std::size_t local, std::uint32_t slot) = 0;
  virtual void release_slot(std::size_t local, std::uint32_t slot) = 0;
  // The child world of `members` (this world's ranks, in the child's rank
  // order), sharing this world's links under `slot`: this process serves
  // members[first .. first + per_process), whose links hold the slot already
  // (claim_slot); the child takes those claims over, and lets them go if it
  // fails. Local: nothing is sent.
  virtual Result<std::unique_ptr<RemoteRanks>> child(std::span<const std::size_t> members,
                                                     std::size_t first, std::size_t per_process,
                                                     std::uint32_t slot, const Config& config) = 0;
  // The same for a split by member list (split_members below), collective
  // over the members' processes only, which `boot` connects (one rank per
  // process; member i is process i of `boot`): they agree on the slot through
  // it and, when they share a node, map a node segment of their own.
  virtual Result<std::unique_ptr<RemoteRanks>> child_by_members(
      std::span<const std::size_t> members, std::size_t first, bootstrap::Bootstrap& boot,
      const Config& config) = 0;
  // Bytes of input one agreement message carries beside the fingerprint
  // (CallShape::fused_capacity).
  virtual std::size_t fused_capacity() const = 0;
  // Exchanges local rank `local`'s request with every rank and runs agree()
  // over all of them. Blocking; every rank calls it for every collective.
  // `send_input`: this rank's input rides along (choose_algorithm picked
  // kOneShot if every rank does); Plan::one_shot says whether every rank's did.
  virtual Result<Plan> agree_all(std::size_t local, std::uint64_t seq, const Request& request,
                                 const Result<Geometry>& geometry, bool send_input,
                                 std::chrono::milliseconds timeout) = 0;
  // The lean path of a small collective (Algorithm::kNodeMailbox): bytes of
  // input it carries at most; 0: none here (the default).
  virtual std::size_t lean_capacity() const { return 0; }
  // The lean path's direct form (Config::lean_direct_bytes): inputs of at
  // least this many bytes go as addresses, where every process of the node
  // reads the others' memory; 0: none here (the default). Read per call: the
  // processes say whether they can once they attached.
  virtual std::size_t lean_direct_bytes() const { return 0; }
  // Ranks of this node when the world spans nodes that each share memory
  // between their processes (Topology::node); 0: none (the default).
  virtual std::size_t node_level_ranks() const { return 0; }
  // Communicator::allocate_host: `bytes` the node's other processes read in
  // place (node/regions.hpp), where this world shares a node segment; a null
  // pointer where it does not (the default: the communicator allocates plain
  // memory).
  virtual Result<std::shared_ptr<std::byte>> allocate_host(std::size_t /*bytes*/) {
    return std::shared_ptr<std::byte>();
  }
  // Whether allocate_host gives such memory (a node segment is shared).
  virtual bool shares_host_memory() const { return false; }
  // The lean path of collective `seq` of local rank `local`, in two halves,
  // so that what the caller does between them (its flight recorder entry)
  // overlaps the peers' posting. lean_post writes this rank's slot: nullopt
  // where the lean path cannot take `req` (nothing published: agree_all
  // follows), an error where the transports were aborted, else ok, and then
  // lean_collect follows for the same `seq`: the outcome, or nullopt when
  // the ranks fall back to the agreement (then agree_all follows for the same
  // `seq`, as on every rank). `req` passed the local check with `geometry`;
  // `adapter` and `device` allocate a value form's output. `deadline`: the
  // call's (its start plus the timeout, read once per call).
  // `request_key`: nonzero where the caller promises that the same key of
  // the same local rank means the same request (every field check_local
  // reads): what lean_post derives from the request alone may be kept for it.
  // The key modulo kRequestWays is the request's way (the communicator keeps
  // that many requests per rank, each with its own keys): a cache of
  // kRequestWays entries indexed by it keeps every request's.
  virtual std::optional<Status> lean_post(std::size_t /*local*/, std::uint64_t /*seq*/,
                                          const Request& /*req*/, const Geometry& /*geometry*/,
                                          std::uint64_t /*request_key*/) {
    return std::nullopt;
  }
  virtual std::optional<Result<RankOutcome>> lean_collect(
      std::size_t /*local*/, std::uint64_t /*seq*/, const Request& /*req*/,
      DeviceAdapter& /*adapter*/, DeviceId /*device*/,
      std::chrono::steady_clock::time_point /*deadline*/) {
    return std::nullopt;
  }
  // Collective `seq` failed on `local` after the plan was agreed (an adapter
  // error, a local timeout, a failed step): ranks in other processes may wait
  // on it, so they are sent a failure notice. Never blocks long.
  virtual void failed(std::size_t local, std::uint64_t seq, const Status& error) = 0;
  // The executors of `algorithm` (choose_algorithm's) for `local` running
  // collective `seq` over `work`: see Executors.
  virtual Executors executors(std::size_t local, std::uint64_t seq, Algorithm algorithm,
                              CollectiveKind kind, Work& work, DeviceAdapter& adapter,
                              const Plan& plan, std::chrono::milliseconds timeout) = 0;
};

class FaultPlan;

// A communicator of this process's `devices` inside the world of `remote`.
// `faults`: the config's fault plan, parsed once by the creator (it shares it
// with `remote`).
Result<std::shared_ptr<Communicator>> make_world_communicator(
    std::vector<DeviceId> devices, std::shared_ptr<DeviceAdapter> adapter, Config config,
    std::unique_ptr<RemoteRanks> remote, std::shared_ptr<const FaultPlan> faults);

// Local rank `local`'s slots of `remote`, as agree_on_slot claims them.
class RankSlots final : public SlotHolder {
 public:
  RankSlots(RemoteRanks& remote, std::size_t local) : remote_(remote), local_(local) {}
  std::uint64_t in_use() const override { return remote_.slots_in_use(local_); }
  bool claim(std::uint32_t slot) override { return remote_.claim_slot(local_, slot); }
  void release(std::uint32_t slot) override { remote_.release_slot(local_, slot); }

 private:
  RemoteRanks& remote_;
  std::size_t local_;
};

}  // namespace ruccl::core

namespace ruccl {
// A split by member list (the MPI layer's communicators, made at their first
// routed call, collectively over their own processes only): `parent` is a
// world communicator serving one rank per process, `rank` its rank here;
// `members` are ranks of `parent` in the new rank order (this rank among
// them), and `boot` connects their processes, member i being process i of
// it (an MPI bootstrap over a communicator whose processes are on one node,
// or ordered as the members). The new communicator sends through views of
// parent's transports under a slot free on every member (agreed through
// `boot`) and, when the members share a node, has a node segment of its own.
// kUnsupported: in process, several ranks per process, no slot left, or
// `boot` orders the processes otherwise (the same on every member);
// kInvalidArgument: members out of range, repeated, or without `rank`.
// `config`: the new communicator's (its timeout, logging; what every
// process must share is the parent's); null: the parent's.
Result<std::shared_ptr<Communicator>> split_members(Communicator& parent, std::size_t rank,
                                                    std::span<const std::size_t> members,
                                                    bootstrap::Bootstrap& boot,
                                                    const Config* config = nullptr);
}  // namespace ruccl
