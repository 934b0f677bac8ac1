// Communicator::split's plan: which ranks form the new group and in which
// order, from what every rank contributed. Pure: unit-tested without devices.
// And the slot claim both splits across processes use (by colour here, by
// member list in src/world): the rounds that give a new communicator a slot
// no other communicator on its members' transports holds, also when other
// threads create communicators on the same transports at the same time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
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

// The lowest slot 1 .. max_slots - 1 (and below 64) whose bit is clear in
// `used`; max_slots when none is.
std::uint32_t lowest_free_slot(std::uint64_t used, std::uint32_t max_slots);

// What a rank says in a claim round.
enum class SlotClaim : std::uint8_t {
  kCollided = 0,  // the agreed slot was taken on its transport meanwhile (another creation)
  kHeld = 1,      // it holds the slot (or joins no group: it only takes part)
  kNoneFree = 2,  // no slot is free on every member of its group
};

// A claim round as one rank reads it: its group's claims and everyone's
// (every rank of the round reads the same claims, so all stop together).
struct ClaimVerdict {
  bool group_holds = true;       // every member of its group holds the slot
  bool group_none_free = false;  // a member of its group found no free slot
  bool collided = false;         // some rank, of any group, collided
  bool none_free = false;        // some rank found no free slot
};
// claims[r] is rank r's; `group`: the ranks of this rank's group (empty: none).
ClaimVerdict claim_verdict(std::span<const SlotClaim> claims, std::span<const std::size_t> group);

// The rounds of one creation, each over every rank taking part (the same
// number of rounds on every rank; a failed round fails the creation).
class SlotRounds {
 public:
  virtual ~SlotRounds() = default;
  // Every rank passes the slots in use on its transport; returns the OR over
  // this rank's group.
  virtual Result<std::uint64_t> used_by_group(std::uint64_t mine) = 0;
  // Every rank passes its claim; returns the verdict.
  virtual Result<ClaimVerdict> claims(SlotClaim mine) = 0;
  // A number agreed by this rank's group once the first round is done,
  // drawn at random for each creation: the retry delays derive from it.
  virtual std::uint32_t seed() const = 0;
};

// This rank's transport's slots (its bit mask of slots in use).
class SlotHolder {
 public:
  virtual ~SlotHolder() = default;
  virtual std::uint64_t in_use() const = 0;
  // Sets the bit: whether it was clear (then this caller holds the slot).
  virtual bool claim(std::uint32_t slot) = 0;
  virtual void release(std::uint32_t slot) = 0;
};

// Claim rounds until every group holds a slot: each attempt agrees on the
// lowest slot free on every member of the group, every member claims it, and
// if another creation took it on some member's transport meanwhile, the
// group's holders let go and every rank tries again (groups that hold keep
// their slot and take part) after a delay drawn from the rounds' seed (so
// racing creations draw apart), at most `tries` attempts.
// `joining`: whether this rank is a member of a group (else it only takes
// part; it claims nothing and gets max_slots). The slot returned is held by
// this rank's transport (SlotHolder::claim): the caller passes it on or lets
// it go. kUnsupported when no slot is free on every member, or when the
// attempts ran out.
Result<std::uint32_t> agree_on_slot(SlotRounds& rounds, SlotHolder& holder, bool joining,
                                    std::uint32_t max_slots, int tries, const std::string& what);

}  // namespace ruccl::core
