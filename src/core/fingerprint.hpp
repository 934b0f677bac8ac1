// Cross-rank agreement: the last rank to arrive compares every rank's request
// and either derives the collective's Plan or returns the one typed error that
// every rank of the generation will get.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/request.hpp"

namespace ruccl::core {

struct Plan {
  std::size_t root = 0;        // reduce root, or broadcast sender
  DataType dtype = DataType::kF32;  // common (the sender's for broadcast)
  Geometry geometry;           // common (the root's for broadcast)
  Shape shape;                 // common input shape (the root's for broadcast)
  std::vector<std::vector<std::size_t>> a2a_rows;  // [src][dst] rows, all_to_all_v
  std::size_t message_elements = 1;  // per message, from the byte budget
};

// `locals[i]` is rank i's check_local outcome (its Geometry when ok).
Result<Plan> agree(std::span<const Request* const> requests,
                   std::span<const Result<Geometry>* const> locals, std::uint64_t seq);

// "collective #7 (all_reduce)".
std::string describe(std::uint64_t seq, CollectiveKind kind);

}  // namespace ruccl::core
