// Communicator::split's plan: which ranks form the new group and in which
// order, from what every rank contributed. Pure: unit-tested without devices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ruccl/status.hpp"

namespace ruccl::core {

// What one rank contributes to a split (one all-gathered record per rank).
struct SplitEntry {
  std::int64_t color = -1;  // >= 0, or -1 (no group)
  std::int64_t key = 0;
  std::uint64_t slots = 0;  // communicator slots in use on its transport (spanning processes)
};

// The group of one color, as this process sees it.
struct SplitPlan {
  std::vector<std::size_t> members;  // ranks here, in the new rank order
  std::size_t first = 0;             // new rank of this process's first member
  std::size_t per_process = 0;       // members this process serves
  std::uint32_t slot = 0;            // spanning processes: lowest slot free on every member
};

// kInvalidArgument naming the first rank whose color is below -1 (every rank
// reads the same entries: all say the same).
Status check_colors(std::span<const SplitEntry> entries);

// The plan of `color` (>= 0) from every rank's entry (entries[r] is rank r's).
// This process serves ranks [first_rank, first_rank + per_process); with
// `spanning` (processes ordered by rank, per_process ranks each), every
// process of the group must hold the same number of members, consecutive in
// the new order (kInvalidArgument naming the process otherwise). `max_slots`: slots are 1 ..
// max_slots - 1 (spanning only).
Result<SplitPlan> plan_split(std::span<const SplitEntry> entries, std::int64_t color,
                             std::size_t first_rank, std::size_t per_process, bool spanning,
                             std::uint32_t max_slots);

}  // namespace ruccl::core
