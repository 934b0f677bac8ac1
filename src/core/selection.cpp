#include "core/selection.hpp"

#include <algorithm>

#include <cctype>
#include <string>

namespace ruccl::core {
namespace {

constexpr CollectiveKind kKinds[] = {CollectiveKind::kAllReduce,     CollectiveKind::kReduce,
                                     CollectiveKind::kBroadcast,     CollectiveKind::kAllGather,
                                     CollectiveKind::kReduceScatter, CollectiveKind::kAllToAllV};
constexpr Algorithm kAlgorithms[] = {Algorithm::kInProcess, Algorithm::kFlatRing,
                                     Algorithm::kHierarchical, Algorithm::kOneShot,
                                     Algorithm::kNodeMailbox};

Status bad(std::string_view item, const std::string& why) {
  return Status(ErrorCode::kInvalidArgument,
                "algorithm selection item '" + std::string(item) + "': " + why);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Calls f(item) for each ';'-separated non-empty item.
template <typename F>
Status each_item(std::string_view text, F&& f) {
  while (!text.empty()) {
    const std::size_t end = text.find(';');
    const std::string_view item = trim(text.substr(0, end));
    if (!item.empty()) RUCCL_TRY(f(item));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return Status::ok();
}

std::optional<GlobalStrategy> shorthand(std::string_view item) {
  if (item == "hierarchical") return GlobalStrategy::kHierarchical;
  if (item == "flat_ring" || item == "flat") return GlobalStrategy::kFlatRing;
  return std::nullopt;
}

// "4k", "1m", "0", "inf" (SIZE_MAX).
std::optional<std::size_t> parse_bytes(std::string_view s) {
  s = trim(s);
  if (s == "inf") return SIZE_MAX;
  if (s.empty()) return std::nullopt;
  std::size_t shift = 0;
  const char last = static_cast<char>(std::tolower(static_cast<unsigned char>(s.back())));
  if (last == 'k' || last == 'm' || last == 'g') {
    shift = last == 'k' ? 10 : last == 'm' ? 20 : 30;
    s.remove_suffix(1);
  }
  if (s.empty()) return std::nullopt;
  std::size_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    if (v > (SIZE_MAX - static_cast<std::size_t>(c - '0')) / 10) return std::nullopt;
    v = v * 10 + static_cast<std::size_t>(c - '0');
  }
  if (shift != 0 && v > (SIZE_MAX >> shift)) return std::nullopt;
  return v << shift;
}

// The collectives written over a hierarchy's levels (src/ring/hierarchical_*.cpp).
bool hierarchical_kind(CollectiveKind kind) { return kind != CollectiveKind::kAllToAllV; }

void add(AlgorithmTable& t, CollectiveKind kind, Algorithm a, std::size_t lo = 0,
         std::size_t hi = SIZE_MAX) {
  t.rules.push_back({kind, lo, hi, a});
}

}  // namespace

std::string_view algorithm_name(Algorithm a) noexcept {
  switch (a) {
    case Algorithm::kInProcess: return "in_process";
    case Algorithm::kFlatRing: return "flat_ring";
    case Algorithm::kHierarchical: return "hierarchical";
    case Algorithm::kOneShot: return "one_shot";
    case Algorithm::kNodeMailbox: return "node_mailbox";
  }
  return "?";
}

Result<std::optional<GlobalStrategy>> strategy_of(std::string_view text) {
  std::optional<GlobalStrategy> out;
  RUCCL_TRY(each_item(text, [&](std::string_view item) {
    if (auto s = shorthand(item)) out = s;
    return Status::ok();
  }));
  return out;
}

Result<std::vector<SelectionRule>> parse_selection(std::string_view text) {
  std::vector<SelectionRule> out;
  RUCCL_TRY(each_item(text, [&](std::string_view item) -> Status {
    if (shorthand(item)) return Status::ok();
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos)
      return bad(item, "expected hierarchical, flat_ring or <collective>:<rules>");
    const std::string_view name = trim(item.substr(0, colon));
    std::optional<CollectiveKind> kind;
    for (CollectiveKind k : kKinds)
      if (collective_name(k) == name) kind = k;
    if (!kind) return bad(item, "unknown collective '" + std::string(name) + "'");
    std::string_view rules = item.substr(colon + 1);
    while (true) {
      const std::size_t hash = rules.find('#');
      const std::string_view rule = trim(rules.substr(0, hash));
      const std::size_t at = rule.find('@');
      if (at == std::string_view::npos) return bad(item, "a rule without @<algorithm>");
      SelectionRule r{*kind, 0, SIZE_MAX, Algorithm::kInProcess};
      std::string_view range = trim(rule.substr(0, at));
      if (!range.empty()) {
        if (range.back() != ':') return bad(item, "expected <lo>-<hi>:@<algorithm>");
        range.remove_suffix(1);
        const std::size_t dash = range.find('-');
        const auto lo =
            dash == std::string_view::npos ? std::nullopt : parse_bytes(range.substr(0, dash));
        const auto hi =
            dash == std::string_view::npos ? std::nullopt : parse_bytes(range.substr(dash + 1));
        if (!lo || !hi || *lo >= *hi)
          return bad(item, "bad byte range '" + std::string(range) + "'");
        r.lo = *lo;
        r.hi = *hi;
      }
      const std::string_view algo = trim(rule.substr(at + 1));
      bool known = false;
      for (Algorithm a : kAlgorithms)
        if (algorithm_name(a) == algo) r.algorithm = a, known = true;
      if (!known) return bad(item, "unknown algorithm '" + std::string(algo) + "'");
      out.push_back(r);
      if (hash == std::string_view::npos) break;
      rules.remove_prefix(hash + 1);
    }
    return Status::ok();
  }));
  return out;
}

namespace {
std::size_t lean_direct_cap(CollectiveKind kind);  // (below)
}  // namespace

AlgorithmTable make_table(const Config& config) {
  AlgorithmTable t;
  if (auto forced = parse_selection(config.algorithm())) t.rules = std::move(forced).value();
  const std::size_t one_shot = config.one_shot_bytes();
  const std::size_t one_shot_end = one_shot == SIZE_MAX ? SIZE_MAX : one_shot + 1;
  const bool hierarchical = config.global_strategy() == GlobalStrategy::kHierarchical;
  // Hierarchical: whatever can stay in this process does; a small all-reduce
  // rides with the fingerprints; a larger one and the other collectives but
  // the all-to-all-v run level by level (in-process, the node's shared memory, across processes or
  // nodes over UCX); every other transfer is a UCX message.
  // Flat ring: every transfer is a message, a small all-reduce's included.
  for (CollectiveKind kind : kKinds) {
    // The whole world on one node: small collectives through its mailboxes
    // (np=2 all_reduce here: 0.4-1.0 of Open MPI's time from 8 KiB to 64
    // KiB, against 0.9-1.4 for the ring over UCX; up to 8 KiB 0.8-1.5).
    if (hierarchical && config.lean_bytes() > 0) {
      // (The collectives that copy past the slot in the direct form only,
      // where only the input's address rides in it; an all-reduce past the
      // slot in its own direct form: feasible.)
      const bool full = config.lean_bytes() >= kNodeMailboxBytes;
      add(t, kind, Algorithm::kNodeMailbox, 0,
          full && has_lean_direct_form(kind) ? lean_direct_cap(kind) + 1
          : full && kind == CollectiveKind::kAllReduce
              ? kNodeMailboxAllReduceDirectBytes + 1
              : std::min(config.lean_bytes(), kNodeMailboxBytes) + 1);
    }
    if (hierarchical) add(t, kind, Algorithm::kInProcess);
    if (kind == CollectiveKind::kAllReduce && one_shot > 0)
      add(t, kind, Algorithm::kOneShot, 0, one_shot_end);
    // Level by level (all but the all-to-all-v).
    if (hierarchical && hierarchical_kind(kind))
      add(t, kind, Algorithm::kHierarchical,
          kind == CollectiveKind::kBroadcast ? kHierarchicalBroadcastBytes : 0);
    add(t, kind, Algorithm::kFlatRing);
  }
  return t;
}

namespace {
// bytes * n <= cap, without the overflow (and without a division: this runs
// per call).
bool fits(std::size_t bytes, std::size_t n, std::size_t cap) {
  std::size_t product = 0;
  return !__builtin_mul_overflow(bytes, n, &product) && product <= cap;
}

// The largest input the lean path takes in the direct form (0: it has none).
std::size_t lean_direct_cap(CollectiveKind kind) {
  return kind == CollectiveKind::kAllGather   ? kNodeMailboxAllGatherDirectBytes
         : kind == CollectiveKind::kAllToAllV ? kNodeMailboxAllToAllVDirectBytes
         : kind == CollectiveKind::kBroadcast ? kNodeMailboxBroadcastDirectBytes
                                              : 0;
}
}  // namespace

bool has_lean_direct_form(CollectiveKind kind) noexcept { return lean_direct_cap(kind) > 0; }

bool lean_in_slot(std::size_t bytes, std::size_t world, std::size_t capacity) noexcept {
  return bytes <= capacity && fits(bytes, world, kNodeMailboxTotalBytes);
}

bool lean_slot_holds(CollectiveKind kind, std::size_t bytes, std::size_t world,
                     std::size_t capacity) noexcept {
  if (kind == CollectiveKind::kAllToAllV) {
    std::size_t counts = 0;
    if (__builtin_mul_overflow(world, sizeof(std::uint64_t), &counts) || counts > capacity)
      return false;
    capacity -= counts;
  }
  return lean_in_slot(bytes, world, capacity);
}

bool lean_copy_direct(CollectiveKind kind, std::size_t bytes, std::size_t world,
                      std::size_t capacity, std::size_t configured) noexcept {
  return has_lean_direct_form(kind) && configured > 0 && bytes > 0 &&
         bytes <= lean_direct_cap(kind) &&
         (bytes >= configured || !lean_slot_holds(kind, bytes, world, capacity));
}

bool lean_reduction_direct(CollectiveKind kind, std::size_t bytes, std::size_t world,
                           std::size_t capacity, std::size_t configured, bool wide) noexcept {
  const std::size_t n = std::min<std::size_t>(world, 1024);  // (no overflow below)
  const std::size_t cap = n == 2 && !wide ? kNodeMailboxPairAllReduceDirectBytes
                                          : std::min(kNodeMailboxAllReduceDirectBytes,
                                                     kNodeMailboxAllReduceShardBytes * n * n);
  return kind == CollectiveKind::kAllReduce && configured > 0 && bytes > 0 && bytes <= cap &&
         !lean_in_slot(bytes, world, capacity);
}

bool feasible(Algorithm a, const CallShape& call, const Topology& topo) {
  switch (a) {
    case Algorithm::kInProcess: return topo.world == topo.local;
    case Algorithm::kFlatRing: return topo.remote;
    case Algorithm::kHierarchical:
      // A level below the ring across: this process's ranks, or its node's.
      return topo.remote && hierarchical_kind(call.kind) && topo.world > topo.local &&
             (topo.local > 1 || (topo.node > topo.local && topo.world > topo.node));
    case Algorithm::kOneShot:
      // The other ranks' inputs, which a rank holds at once, must fit the
      // byte budget (a bounded call keeps its bound).
      return topo.remote && call.kind == CollectiveKind::kAllReduce && topo.host_buffers &&
             topo.world >= 2 && call.inputs_delivered && call.bytes > 0 &&
             call.bytes <= call.fused_capacity && fits(call.bytes, topo.world - 1, call.budget);
    case Algorithm::kNodeMailbox: {
      // A rank holds the others' inputs at once (a broadcast's receiver only
      // the sender's): within the budget, but in the direct form.
      const bool kind =
          call.kind == CollectiveKind::kAllReduce || call.kind == CollectiveKind::kReduce ||
          call.kind == CollectiveKind::kBroadcast || call.kind == CollectiveKind::kAllGather ||
          call.kind == CollectiveKind::kReduceScatter || call.kind == CollectiveKind::kAllToAllV;
      const std::size_t held = call.kind == CollectiveKind::kBroadcast ? 1 : topo.world - 1;
      // The direct form, as the lean path decides it (lean_post; a
      // reduction has none within the slot: its cap is 0; an all-reduce's
      // own past the slot is below).
      const bool direct = lean_copy_direct(call.kind, call.bytes, topo.world, call.fused_capacity,
                                           call.lean_direct);
      // Within the slot and its total over the node; in the direct form
      // (its address rides in the slot, every rank reads what it needs from
      // the owner's memory) within the direct form's total.
      const bool in_slot = lean_slot_holds(call.kind, call.bytes, topo.world, call.fused_capacity);
      // (An all-reduce's direct form holds nothing either: each rank reads
      // its shard of the others' inputs piece by piece.)
      const bool reduction =
          lean_reduction_direct(call.kind, call.bytes, topo.world, call.fused_capacity,
                                call.lean_direct, topo.wide_reductions);
      // A world of one process: within the slot only. Its direct forms read
      // its own memory through process_vm_readv, slower than its threads'
      // copies in-process from 256 KiB (one process of 2 ranks, 1 MiB:
      // broadcast 151-160 us against 74-83, all-gather 145-151 against
      // 78-81, all-to-all-v 158-166 against 53-76).
      if (topo.world == topo.local && !in_slot) return false;
      // (Not with several ranks per process: the hierarchy's in-process
      // level was faster.)
      if (reduction)
        return topo.node_mailbox && call.lean_offer && topo.host_buffers && topo.world >= 2 &&
               topo.local == 1;
      if (!in_slot && !(direct && fits(call.bytes, topo.world, kNodeMailboxDirectTotalBytes)))
        return false;
      // (The direct form holds nothing: each reader copies straight into
      // the caller's output, as an in-process rank does.)
      return topo.node_mailbox && call.lean_offer && kind && topo.host_buffers && topo.world >= 2 &&
             (direct || fits(call.bytes, held, call.budget));
    }
  }
  return false;
}

Algorithm choose_algorithm(const CallShape& call, const Topology& topo,
                           const AlgorithmTable& table) {
  for (const SelectionRule& r : table.rules)
    if (r.kind == call.kind && call.bytes >= r.lo && (call.bytes < r.hi || r.hi == SIZE_MAX) &&
        feasible(r.algorithm, call, topo))
      return r.algorithm;
  return Algorithm::kInProcess;
}

}  // namespace ruccl::core
