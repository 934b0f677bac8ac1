#include "core/split.hpp"

#include <algorithm>
#include <string>
#include <thread>

namespace ruccl::core {

Status check_colors(std::span<const SplitEntry> entries) {
  for (std::size_t r = 0; r < entries.size(); ++r)
    if (entries[r].color < -1)
      return Status(ErrorCode::kInvalidArgument,
                    "split: rank " + std::to_string(r) + " passed color " +
                        std::to_string(entries[r].color) + " (a color is >= 0, or kNoColor)");
  return Status::ok();
}

Result<SplitPlan> plan_split(std::span<const SplitEntry> entries, std::int64_t color,
                             std::size_t first_rank, std::size_t per_process, bool spanning,
                             std::uint32_t max_slots) {
  if (per_process == 0 || first_rank > entries.size() || per_process > entries.size() - first_rank)
    return Status(ErrorCode::kInternal, "split: this process's ranks lie outside the group");
  SplitPlan plan;
  for (std::size_t r = 0; r < entries.size(); ++r)
    if (entries[r].color == color) plan.members.push_back(r);
  std::stable_sort(plan.members.begin(), plan.members.end(),
                   [&](std::size_t a, std::size_t b) { return entries[a].key < entries[b].key; });
  const auto here = [&](std::size_t r) { return r >= first_rank && r - first_rank < per_process; };
  const auto found = std::find_if(plan.members.begin(), plan.members.end(), here);
  if (found == plan.members.end())
    return Status(ErrorCode::kInternal,
                  "split: color " + std::to_string(color) + " has no rank in this process");
  plan.first = static_cast<std::size_t>(found - plan.members.begin());
  plan.per_process =
      static_cast<std::size_t>(std::count_if(plan.members.begin(), plan.members.end(), here));
  if (!spanning) return plan;

  // Every process's members: one block of `run` consecutive ranks each.
  const std::size_t n = plan.members.size();
  const auto process = [&](std::size_t r) { return r / per_process; };
  std::size_t run = 0;  // members in the group's first process
  while (run < n && process(plan.members[run]) == process(plan.members[0])) ++run;
  const auto broken = [&](std::size_t j) {
    return Status(ErrorCode::kInvalidArgument,
                  "split: color " + std::to_string(color) + " has " + std::to_string(run) +
                      " ranks in process " + std::to_string(process(plan.members[0])) +
                      ", but its rank " + std::to_string(j) + " (rank " +
                      std::to_string(plan.members[j]) + " here, in process " +
                      std::to_string(process(plan.members[j])) +
                      ") breaks the blocks of that many consecutive ranks per process that a "
                      "group across processes needs");
  };
  std::vector<std::size_t> seen;
  for (std::size_t b = 0; b * run < n; ++b) {
    const std::size_t p = process(plan.members[b * run]);
    if (std::find(seen.begin(), seen.end(), p) != seen.end()) return broken(b * run);
    seen.push_back(p);
    for (std::size_t j = b * run; j < (b + 1) * run; ++j)
      if (j >= n || process(plan.members[j]) != p) return broken(std::min(j, n - 1));
  }
  std::uint64_t used = 1;
  for (std::size_t r : plan.members) used |= entries[r].slots;
  plan.slot = lowest_free_slot(used, max_slots);
  return plan;
}

std::uint32_t lowest_free_slot(std::uint64_t used, std::uint32_t max_slots) {
  for (std::uint32_t s = 1; s < max_slots && s < 64; ++s)
    if ((used >> s & 1u) == 0) return s;
  return max_slots;
}

ClaimVerdict claim_verdict(std::span<const SlotClaim> claims, std::span<const std::size_t> group) {
  ClaimVerdict v;
  for (SlotClaim c : claims) {
    v.collided = v.collided || c == SlotClaim::kCollided;
    v.none_free = v.none_free || c == SlotClaim::kNoneFree;
  }
  for (std::size_t r : group) {
    const SlotClaim c = r < claims.size() ? claims[r] : SlotClaim::kCollided;
    v.group_holds = v.group_holds && c == SlotClaim::kHeld;
    v.group_none_free = v.group_none_free || c == SlotClaim::kNoneFree;
  }
  return v;
}

Result<std::uint32_t> agree_on_slot(SlotRounds& rounds, SlotHolder& holder, bool joining,
                                    std::uint32_t max_slots, int tries, const std::string& what) {
  std::uint32_t slot = max_slots;
  bool held = !joining;  // a rank outside every group "holds" nothing from the start
  for (int attempt = 0;; ++attempt) {
    auto used = rounds.used_by_group(held ? 0 : holder.in_use());
    if (!used) {
      if (held && joining) holder.release(slot);
      return used.status();
    }
    SlotClaim mine = SlotClaim::kHeld;
    bool claimed = false;
    if (!held) {
      slot = lowest_free_slot(used.value(), max_slots);
      if (slot == max_slots) mine = SlotClaim::kNoneFree;
      else mine = (claimed = holder.claim(slot)) ? SlotClaim::kHeld : SlotClaim::kCollided;
    }
    auto verdict = rounds.claims(mine);
    if (!verdict) {
      if (claimed || (held && joining)) holder.release(slot);
      return verdict.status();
    }
    const ClaimVerdict& v = verdict.value();
    if (v.group_holds) held = true;
    else if (claimed) holder.release(slot);
    const bool last = attempt + 1 >= tries;
    if (!v.collided || v.none_free || last) {
      if (v.group_holds) return joining ? slot : max_slots;
      if (v.group_none_free)
        return Status(ErrorCode::kUnsupported,
                      what +
                          ": no communicator slot is free on every member's transport (at "
                          "most " +
                          std::to_string(max_slots - 1) +
                          " communicators split from one world may share a rank at once)");
      return Status(ErrorCode::kUnsupported,
                    what + ": no communicator slot could be claimed on every member in " +
                        std::to_string(attempt + 1) +
                        (v.none_free ? " tries (another group of this split found none free)"
                                     : " tries (other communicators were being created on the "
                                       "same transports at the same time)"));
    }
    const std::uint32_t draw =
        (rounds.seed() + static_cast<std::uint32_t>(attempt)) * 2654435761u;  // (Knuth's)
    std::this_thread::sleep_for(std::chrono::microseconds(100 + (draw >> 16) % 2000));
  }
}

}  // namespace ruccl::core
