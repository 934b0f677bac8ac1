// Cross-rank agreement: the last rank to arrive compares every rank's request
// and either derives the collective's Plan or returns the one typed error that
// every rank of the generation will get.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/request.hpp"

namespace ruccl::core {

struct Plan {
  std::size_t root = 0;                            // reduce root, or broadcast sender
  DataType dtype = DataType::kF32;                 // common (the sender's for broadcast)
  Geometry geometry;                               // common (the root's for broadcast)
  Shape shape;                                     // common input shape (the root's for broadcast)
  std::vector<std::vector<std::size_t>> a2a_rows;  // [src][dst] rows, all_to_all_v
  std::size_t message_elements = 1;                // per message, from the byte budget
  // Set by a communicator spanning processes: every rank's input was delivered
  // with its fingerprint, so the all-reduce may run one-shot over them
  // (choose_algorithm; multinode/world_agreement.cpp). Part of the plan so that
  // the rendezvous checks every local rank decided alike.
  bool one_shot = false;
};

// Whether two plans are the same in every field.
bool same_plan(const Plan& a, const Plan& b);

// `locals[i]` is rank i's check_local outcome (its Geometry when ok).
// The requests may come off the wire (world::decode, which checks each
// record against its own shape): agree() reads no request out of range
// whatever they hold (fuzzed: tests/fuzz/fuzz_agree.cpp); a field it cannot
// use (a root outside the world, send counts of another world size, sizes that
// overflow) is kProtocolError naming the rank, not an out-of-bounds index.
Result<Plan> agree(std::span<const Request* const> requests,
                   std::span<const Result<Geometry>* const> locals, std::uint64_t seq);

// "collective #7 (all_reduce)"; without a kind "collective #7".
std::string describe(std::uint64_t seq, CollectiveKind kind);
std::string describe(std::uint64_t seq, std::optional<CollectiveKind> kind);

}  // namespace ruccl::core
