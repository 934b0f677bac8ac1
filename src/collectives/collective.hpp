// One home per collective: each file of src/collectives holds the rules of one
// collective kind, in the three places a call meets them:
//   1. the local checks (check_local, core/request.cpp: what one rank alone
//      can tell is wrong with its arguments);
//   2. the agreement (agree, core/agreement.cpp: what ranks compare, and
//      what the Plan holds beyond the common fields);
//   3. the buffer layout (the engine, core/engine.cpp: which buffers the
//      algorithm reads and writes, which src/ring algorithm runs, what the
//      rank gets back).
// The generic parts (view checks, dtype/op/budget comparison, barriers, the
// value form's tensor) stay in those files; a hook left null does nothing.
// The rules are a table of plain functions, read once per call (rules(kind)).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "core/agreement.hpp"
#include "core/request.hpp"

namespace ruccl::ring {
class RankRun;
}

namespace ruccl::core {

class Execution;  // collectives/execution.hpp

// The step executors one rank's algorithm runs over (engine.cpp builds them
// from the chosen Algorithm): `run` spans the algorithm's whole world; for a
// hierarchical collective, `local` is this process's level, `node` (or null)
// the group across this node's processes of this rank's local index, and
// `across` the group across processes (or, with `node`, across nodes) of this
// rank's index.
struct Levels {
  ring::RankRun& run;
  ring::RankRun* local = nullptr;
  ring::RankRun* node = nullptr;
  ring::RankRun* across = nullptr;
  bool one_shot = false;  // `run` delivers every rank's input as it was at the start

  // The hierarchy's levels, innermost first (local, node if any, across),
  // held in `out`; empty without a hierarchy (across null).
  std::span<ring::RankRun* const> nested(std::array<ring::RankRun*, 3>& out) const {
    if (across == nullptr) return {};
    std::size_t n = 0;
    out[n++] = local;
    if (node != nullptr) out[n++] = node;
    out[n++] = across;
    return {out.data(), n};
  }
};

struct CollectiveRules {
  CollectiveKind kind;
  // The op must be reducible, and ranks must agree on it.
  bool reducing = false;
  // Split by rows: shape[0] rows of row_unit(shape) elements (else 1-element rows).
  bool row_split = false;
  // Broadcast: ranks are compared against the one sender, whose request leads.
  bool compare_to_root = false;

  // ---- local checks (check_local) ---------------------------------------------
  // Before the views are checked (e.g. a root outside the world).
  Status (*check_arguments)(const Request&, std::size_t rank, std::size_t world) = nullptr;
  // After the geometry is known, on what a request's record says alone (sizes
  // that overflow, send counts): also what a fingerprint from another process
  // is held to.
  Status (*check_geometry)(const Request&, const Geometry&, std::size_t rank,
                           std::size_t world) = nullptr;
  // Then on the caller's buffers (overlaps, an output's view).
  Status (*check_buffers)(const Request&, const Geometry&, std::size_t rank,
                          DeviceId device) = nullptr;
  // Elements a caller's output must hold on `rank`; nullopt: not checked here
  // (no output on this rank, or check_geometry checks it).
  std::optional<std::size_t> (*output_count)(const Request&, const Geometry&, std::size_t rank,
                                             std::size_t world) = nullptr;

  // ---- agreement (agree) -----------------------------------------------------
  // Before any field is compared: what must hold to index the requests at all;
  // may set plan.root (the request that leads).
  Status (*agree_first)(std::span<const Request* const>, const std::string& what,
                        Plan& plan) = nullptr;
  // Fields compared after dtype and op, before the budget (reduce's root).
  Status (*agree_fields)(std::span<const Request* const>, const std::string& what) = nullptr;
  // Whether rank `q`'s shape matches the leading one; null: equal shapes.
  bool (*same_shape)(const Request& q, const Geometry& g, const Request& lead,
                     const Plan& plan) = nullptr;
  // After the shapes: what the plan holds for this kind alone (all_to_all_v's rows).
  Status (*agree_last)(std::span<const Request* const>, const std::string& what,
                       Plan& plan) = nullptr;

  // ---- buffer layout (engine) ----------------------------------------------------
  // After begin(): the rank's send/recv buffers in Work.
  Status (*setup)(Execution&) = nullptr;
  // The src/ring algorithm over the executors.
  Status (*run)(Execution&, const Levels&) = nullptr;
  // Before finish(): the rank's output. Sets `shape` to the value form's
  // shape (preset to the input's), or resets it: this rank gets no output.
  Status (*complete)(Execution&, std::optional<Shape>& shape) = nullptr;
};

const CollectiveRules& rules(CollectiveKind kind);

// One per file of src/collectives.
extern const CollectiveRules kAllReduceRules;
extern const CollectiveRules kReduceRules;
extern const CollectiveRules kBroadcastRules;
extern const CollectiveRules kAllGatherRules;
extern const CollectiveRules kReduceScatterRules;
extern const CollectiveRules kAllToAllVRules;

// kInvalidArgument "rank R <what>".
Status invalid(std::size_t rank, const std::string& what);

// The first rank whose `field` differs from rank `ref`'s, as an error naming both.
// Ranks for which `takes_part` is false are not compared.
template <typename Get, typename Show, typename Part>
Status first_difference(std::span<const Request* const> reqs, std::size_t ref, ErrorCode code,
                        const char* what, const std::string& prefix, Get get, Show show,
                        Part takes_part) {
  for (std::size_t r = 0; r < reqs.size(); ++r) {
    if (r == ref || !takes_part(*reqs[r])) continue;
    if (!(get(*reqs[r]) == get(*reqs[ref]))) {
      return Status(code, prefix + ": rank " + std::to_string(r) + " passed " + what + " " +
                              show(*reqs[r]) + ", rank " + std::to_string(ref) + " passed " +
                              show(*reqs[ref]));
    }
  }
  return Status::ok();
}

inline constexpr auto kEveryRank = [](const Request&) { return true; };

}  // namespace ruccl::core
