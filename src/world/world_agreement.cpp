// The world's agreement and execution (WorldRemoteRanks, the core::RemoteRanks of
// a world communicator): each local rank owns one UCX transport, agrees on
// every collective with every rank (fingerprints on the wire, a small
// all-reduce's input riding along), and runs the src/ring algorithms through
// the executors of the chosen algorithm (TransportRun, DeliveredRun).
// Creation (world_creation.cpp) hands it the bootstrap and the transports.
#include "world/world_remote_ranks.hpp"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>

#include "collectives/execution.hpp"  // with_rows
#include "core/catch_to_status.hpp"
#include "core/engine.hpp"
#include "core/log.hpp"
#include "device/host/host_kernels.hpp"
#include "ring/schedule.hpp"
#include "ring/transfer.hpp"
#include "transport/transport_run.hpp"
#include "world/bundle_codec.hpp"
#include "world/delivered_run.hpp"
#include "world/faulty_transport.hpp"
#include "world/fingerprint_codec.hpp"
#include "world/lean_codec.hpp"
#include "world/node_run.hpp"
#include "world/routed_run.hpp"
#include "world/shared_links.hpp"

namespace ruccl::world {
namespace {

using transport::Clock;
constexpr std::uint32_t kDataComm = 0;     // tag comm field of algorithm messages
constexpr std::uint32_t kControlComm = 1;  // ... of fingerprint messages
constexpr std::uint32_t kAcrossComm =
    2;  // ... of a hierarchical collective's groups across processes
// Messages between processes carry at most this much even under a larger byte
// budget: a reducing step combines each message while it is still in cache
// (np=2 all-reduce of 16 MiB on the development VM: 1 MiB pieces ran 0.87-0.90
// of the time of 4 MiB ones, interleaved runs).
constexpr std::size_t kPieceBytes = std::size_t{1} << 20;
// Where this rank's output of `bytes` goes: the caller's buffer, or (value
// forms) a new tensor of `shape` in `out`.
Result<std::byte*> output_of(const core::Request& req, core::RankOutcome& out,
                             DeviceAdapter& adapter, DeviceId device, DataType dtype,
                             std::size_t bytes, Shape shape) {
  if (req.out) return static_cast<std::byte*>(req.out->data);
  auto mem = adapter.allocate(device, bytes);
  RUCCL_TRY(mem);
  auto* d = static_cast<std::byte*>(mem.value().get());
  out.tensor.emplace(std::move(mem).value(), dtype, std::move(shape), device);
  return d;
}

// A copy that may be onto itself (an in-place caller's own input, direct form).
void copy_to(std::byte* d, const std::byte* s, std::size_t n) {
  if (d != s && n > 0) std::memcpy(d, s, n);
}

// Whether [a, a + a_bytes) and [b, b + b_bytes) share no byte (an empty
// range shares none).
bool apart(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return a_bytes == 0 || b_bytes == 0 || x >= y + b_bytes || y >= x + a_bytes;
}

// d = in[0] op in[1] op ... in rank order (each input `at` bytes on), the
// first two in one pass, then the mean's division: the same bits wherever it
// runs. `d` may be in[0] or in[1] (the first pass reads both first: the
// kernels allow dst == a and dst == b), no other input.
Status reduce_in_rank_order(DataType dtype, ReduceOp op, std::byte* d,
                            std::span<const std::byte* const> in, std::size_t at,
                            std::size_t count) {
  RUCCL_TRY(host::reduce(dtype, op, d, in[0] + at, in[1] + at, count));
  for (std::size_t r = 2; r < in.size(); ++r)
    RUCCL_TRY(host::reduce(dtype, op, d, d, in[r] + at, count));
  if (op == ReduceOp::kMean) RUCCL_TRY(host::divide(dtype, d, count, in.size()));
  return Status::ok();
}

// This rank's output of a fitting lean collective, from the slots' inputs
// (or, direct form, the copies read from the ranks' memory, and its own).
// `placed[r]`: rank r's part is in the output already (read_direct).
Result<core::RankOutcome> lean_run(const LeanPlan& plan, const core::Request& req, std::size_t me,
                                   const std::vector<const std::byte*>& inputs,
                                   const std::vector<char>& placed, DeviceAdapter& adapter,
                                   DeviceId device) {
  const std::size_t world = inputs.size();
  const std::size_t es = dtype_size(plan.dtype);
  const std::size_t n = plan.count;
  core::RankOutcome out;
  if (plan.kind == CollectiveKind::kAllToAllV) {
    // From each source s, its block for this rank: after its counts and the
    // rows it sends to the ranks before this one.
    const std::size_t row = plan.count * es, counts = world * sizeof(std::uint64_t);
    std::size_t total = 0;
    for (std::size_t s = 0; s < world; ++s) total += plan.rows[s * world + me];
    auto dst = output_of(req, out, adapter, device, plan.dtype, total * row,
                         req.out ? Shape() : core::with_rows(req.in.shape, total));
    RUCCL_TRY(dst);
    std::byte* d = dst.value();
    out.recv_counts.reserve(world);
    for (std::size_t s = 0; s < world; ++s) {
      const std::size_t before = rows_before(plan, world, s, me);
      const std::size_t rows = plan.rows[s * world + me];
      // This rank's own block is not in its slot (lean_post leaves it out): the input.
      const std::byte* from =
          s == me ? static_cast<const std::byte*>(req.in.data) : inputs[s] + counts;
      if (rows > 0 && placed[s] == 0) std::memcpy(d, from + before * row, rows * row);
      d += rows * row;
      out.recv_counts.push_back(rows);
    }
    return out;
  }
  const bool gather = plan.kind == CollectiveKind::kAllGather;
  const bool gets = plan.kind != CollectiveKind::kReduce || me == plan.root;
  if (!gets) return out;  // a reduce's other ranks get nothing
  // A reduce-scatter's rank gets its balanced shard of rows of the reduction.
  const core::Geometry g = core::geometry_of(plan.kind, plan.shape, n);
  const Range shard = plan.kind == CollectiveKind::kReduceScatter
                          ? ring::balanced_range(g.rows, world, me, g.unit)
                          : Range{0, n};
  const std::size_t total = gather ? n * world : shard.count;
  Shape shape;  // of a value form's new tensor (none is built for a caller's buffer)
  if (!req.out) {
    shape = plan.shape;
    if (gather) shape = core::with_rows(plan.shape, g.rows * world);
    if (plan.kind == CollectiveKind::kReduceScatter)
      shape = core::with_rows(plan.shape, ring::balanced_range(g.rows, world, me).count);
  }
  auto dst = output_of(req, out, adapter, device, plan.dtype, total * es, std::move(shape));
  RUCCL_TRY(dst);
  if (total == 0) return out;
  std::byte* d = dst.value();
  switch (plan.kind) {
    case CollectiveKind::kBroadcast:
      if (placed[plan.root] == 0) copy_to(d, inputs[plan.root], n * es);
      break;
    case CollectiveKind::kAllGather:
      for (std::size_t r = 0; r < world; ++r)
        if (placed[r] == 0) copy_to(d + r * n * es, inputs[r], n * es);
      break;
    default: {
      // In rank order, from rank 0's input: the same bits on every rank, the
      // first two inputs in one pass. (This rank's own input is the
      // caller's only where the output leaves it alone, own_from_input;
      // else a copy, own_copy.)
      RUCCL_TRY(
          reduce_in_rank_order(plan.dtype, plan.op, d, inputs, shard.offset * es, shard.count));
    }
  }
  return out;
}

// A local rank's lean-path state, kept across collectives (no allocation once warm).
struct LeanScratch {
  std::vector<LeanHeader> heads;
  std::vector<const std::byte*> inputs;
  std::vector<std::size_t> sizes;
  // Per request way (core::kRequestWays: the request_key's way), the plan of
  // its last lean collective and what it was fitted from.
  struct Fitted {
    LeanPlan plan;  // (its vectors' room kept)
    // The headers and sizes `plan` was made from (lean_fits, a pure function
    // of them but for an all-to-all-v, whose counts ride in the slots): the
    // same slots again take it as it is. Empty: none kept.
    std::vector<LeanHeader> heads;
    std::vector<std::size_t> sizes;
    // The peers' slot forms `plan` was fitted from, two words each, where
    // every one was compact and this rank's request was keyed (`key`): the
    // same words and sizes again are the same headers, taken without
    // decoding.
    std::vector<std::array<std::uint64_t, 2>> raw;
    bool compact = false;
    // An all-to-all-v's: every rank's send counts (world words each, from
    // its slot) beside `heads` and `sizes`, kept where this rank's request
    // was keyed (`key`): the same headers, counts and sizes again are the
    // same plan.
    std::vector<std::uint64_t> counts;
    bool a2a = false;
    std::uint64_t key = 0;
  };
  std::array<Fitted, core::kRequestWays> fits;
  // This rank's own header for a request the communicator keyed (its
  // request_key: the same key, the same request), built and encoded once:
  // one entry per request way.
  struct Own {
    std::uint64_t key = 0;  // 0: none
    bool direct = false;    // its form (the node's readability may turn it on later)
    LeanHeader head{};
    std::array<std::byte, kLeanHeader> raw{};  // its slot form
    std::size_t bytes = 0;                     // of raw
  };
  std::array<Own, core::kRequestWays> own;
  std::vector<std::array<std::uint64_t, 2>> raw;  // per rank: its slot's first two words
  std::vector<char> compact;                      // per rank: its slot this call was compact
  // What lean_post published for lean_collect (head null: nothing posted).
  struct Posted {
    std::uint64_t seq = 0;
    bool direct = false;
    const LeanHeader* head = nullptr;  // own[...].head
    // This rank's own operand: its input in its slot (an all-to-all-v's
    // counts), or own_copy.
    const std::byte* input = nullptr;
    std::size_t bytes = 0;             // counts and data
    std::uint64_t key = 0;             // its request_key
    bool kept = false;                 // a reduce's root: its input is not in its slot
    bool from_input = false;           // its own operand is the caller's input (own_from_input)
    // The bytes a peer's slot holds on a collective like this rank's (its
    // header's form, counts, and the tensor's bytes or an address record):
    // the lines the reader fetches while it waits (Mailbox::wait).
    std::size_t expect = 0;
    bool target = false;    // a broadcast's receiver that posted its output (receives_split)
    std::size_t share = 0;  // a broadcast's root: what it writes of each such output
  };
  Posted posted;
  // This rank's own operand where it may not be the caller's input: a copy
  // of it (at most a slot's bytes), kept across collectives.
  std::vector<std::byte> own_copy;
  std::vector<std::uint64_t> address;  // a direct rank's input (0: in its slot)
  std::vector<std::uint64_t> output;   // a direct all-reduce rank's output, broadcast root's share
  // A broadcast's receiver's output, which the root fills in part (its
  // address, 0: none; its bytes): receives_split.
  std::vector<std::uint64_t> target;
  std::vector<std::size_t> target_bytes;
  std::vector<std::size_t> pending;   // the ranks whose shards a direct all-reduce still reads
  std::vector<std::size_t> unstaged;  // ... as node ranks (their processes watched)
  // Per rank: its part of this rank's output was read straight into the
  // caller's output buffer (read_direct), so lean_run copies nothing of it.
  std::vector<char> placed;
  std::vector<std::byte> read;         // the direct inputs' parts this rank read (value forms)
  std::vector<std::size_t> watch;      // the node's other ranks (await_readers)
};

// Whether the slots hold the headers and sizes f.plan was fitted from (word
// by word, in place: no memcmp call per small collective).
bool fitted_again(const LeanScratch::Fitted& f, const LeanScratch& k) {
  const std::size_t world = k.heads.size();
  if (f.heads.size() != world) return false;
  for (std::size_t r = 0; r < world; ++r) {
    if (f.sizes[r] != k.sizes[r]) return false;
    for (std::size_t w = 0; w < k.heads[r].size(); ++w)
      if (f.heads[r][w] != k.heads[r][w]) return false;
  }
  return true;
}

// Whether rank r's all-to-all-v slot (header, send counts, size) is the one
// `f` kept (keep_a2a): word by word, the counts in place.
bool same_a2a_slot(const LeanScratch::Fitted& f, const LeanScratch& k, std::size_t r) {
  const std::size_t world = k.heads.size();
  if (f.heads.size() != world || f.sizes[r] != k.sizes[r] || f.heads[r] != k.heads[r] ||
      k.sizes[r] < world * sizeof(std::uint64_t))
    return false;
  return std::memcmp(k.inputs[r], f.counts.data() + r * world, world * sizeof(std::uint64_t)) == 0;
}

// Keeps the all-to-all-v's slots that fitted f.plan for request `key`.
void keep_a2a(LeanScratch::Fitted& f, const LeanScratch& k, std::uint64_t key) {
  const std::size_t world = k.heads.size();
  f.heads = k.heads;
  f.sizes = k.sizes;
  f.counts.resize(world * world);
  for (std::size_t r = 0; r < world; ++r)
    std::memcpy(f.counts.data() + r * world, k.inputs[r], world * sizeof(std::uint64_t));
  f.key = key;
  f.a2a = true;
}

// Attempts of one split by member list at claiming a slot on every member
// (core::agree_on_slot); creations on the same transports at once collide.
constexpr int kSlotClaimTries = 16;

// The claim rounds of a split by member list: over `boot`, the members'
// processes, one rank each. The first round also carries member 0's random
// tag (the node segment's, and the retry delays' seed) and this process's
// error, if it has one (then every member fails with it).
class MemberRounds final : public core::SlotRounds {
 public:
  struct Record {
    std::uint64_t slots = 0;
    node::Tag tag{};
  };
  MemberRounds(bootstrap::Bootstrap& boot, Status local, std::chrono::milliseconds timeout)
      : boot_(boot), local_(std::move(local)), timeout_(timeout) {}

  Record mine;          // this process's record (member 0 draws the tag)
  Record first_record;  // member 0's, from the first round
  bool pending() const { return local_.is_ok(); }
  void fail_first(Status s) { local_ = std::move(s); }

  Result<std::uint64_t> used_by_group(std::uint64_t slots) override {
    mine.slots = slots;
    auto all =
        bootstrap::agree_outcome(boot_, std::exchange(local_, Status::ok()),
                                 std::span(reinterpret_cast<const std::byte*>(&mine), sizeof mine),
                                 "split by members (slots)", bootstrap::Wait::within(timeout_));
    RUCCL_TRY(all);
    std::uint64_t used = 1;
    for (std::size_t p = 0; p < all.value().size(); ++p) {
      Record r;
      if (all.value()[p].size() != sizeof r)
        return Status(ErrorCode::kProtocolError,
                      "split by members: process " + std::to_string(p) + " sent a record of " +
                          std::to_string(all.value()[p].size()) + " bytes");
      std::memcpy(&r, all.value()[p].data(), sizeof r);
      used |= r.slots;
      if (p == 0 && first_) first_record = r;
    }
    first_ = false;
    return used;
  }
  Result<core::ClaimVerdict> claims(core::SlotClaim c) override {
    const auto mark = static_cast<std::byte>(c);
    auto all = bootstrap::agree_outcome(boot_, Status::ok(), std::span(&mark, 1),
                                        "split by members (slot claims)",
                                        bootstrap::Wait::within(timeout_));
    RUCCL_TRY(all);
    std::vector<core::SlotClaim> claims(all.value().size());
    std::vector<std::size_t> group(claims.size());
    for (std::size_t p = 0; p < claims.size(); ++p) {
      const auto& b = all.value()[p];
      if (b.size() != 1 || static_cast<unsigned>(b[0]) > 2u)
        return Status(ErrorCode::kProtocolError,
                      "split by members: process " + std::to_string(p) + " sent a bad claim");
      claims[p] = static_cast<core::SlotClaim>(b[0]);
      group[p] = p;
    }
    return core::claim_verdict(claims, group);
  }
  std::uint32_t seed() const override {
    std::uint32_t s = 0;
    std::memcpy(&s, first_record.tag.data(), std::min(sizeof s, first_record.tag.size()));
    return s;
  }

 private:
  bootstrap::Bootstrap& boot_;
  Status local_;
  std::chrono::milliseconds timeout_;
  bool first_ = true;
};

// A random tag (getrandom).
Status draw_tag(node::Tag& tag) {
  std::size_t got = 0;
  while (got < tag.size()) {
    const ssize_t n = getrandom(tag.data() + got, tag.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status(ErrorCode::kInternal, "split by members: getrandom failed");
    got += static_cast<std::size_t>(n);
  }
  return Status::ok();
}

class WorldRemoteRanks final : public core::RemoteRanks {
 public:
  // The root of `links` (views empty, mailbox links->mailbox), or a child of
  // it (its own transport views, no mailbox): see shared_links.hpp.
  // root_peer[r]: this world's rank r in the root's numbering; root_local[i]:
  // this world's local rank i among the root's.
  // `own_mailbox`: a child's node segment (split by member list); null: none.
  WorldRemoteRanks(std::shared_ptr<SharedLinks> links,
                   std::vector<std::unique_ptr<transport::Transport>> views,
                   std::vector<std::size_t> root_peer, std::vector<std::size_t> root_local,
                   std::size_t first, std::size_t world, std::size_t nodes, const Config& config,
                   std::shared_ptr<const core::FaultPlan> faults,
                   std::unique_ptr<node::Mailbox> own_mailbox = nullptr, bool node_level = false)
      : logger_(config),
        links_(std::move(links)),
        views_(std::move(views)),
        transports_(transports_of(*links_, views_)),
        own_mailbox_(std::move(own_mailbox)),
        mailbox_(views_.empty() ? links_->mailbox.get() : own_mailbox_.get()),
        root_peer_(std::move(root_peer)),
        root_local_(std::move(root_local)),
        first_(first),
        world_(world),
        nodes_(nodes),
        node_level_(node_level && mailbox_ != nullptr && nodes > 1),
        node_aware_(config.global_strategy() == GlobalStrategy::kHierarchical),
        direct_all_(config.node_single_copy()),
        direct_copy_bytes_(config.node_direct_bytes()),
        lean_direct_bytes_(config.lean_direct_bytes()),
        wide_reductions_(host::wide_reductions()),
        per_process_(transports_.size()),
        faults_(std::move(faults)),
        record_bytes_(wire_words(world) * sizeof(std::uint64_t)),
        one_shot_(per_process_),
        lean_(per_process_),
        staging_(per_process_),
        scratch_(per_process_) {
    // Peers on this node skip UCX's failure detection (shared memory): their
    // processes are watched through the node's pidfds instead.
    if (mailbox_)
      for (auto& t : transports_)
        t->watch_peers([box = mailbox_](std::size_t peer) -> Status {
          const std::size_t first = box->shape().first;
          if (peer < first || peer - first >= box->shape().ranks) return Status::ok();
          return box->alive(peer - first);
        });
    if (faults_ && has_send_faults(*faults_))
      for (std::size_t i = 0; i < per_process_; ++i)
        faulty_.push_back(make_faulty_transport(*transports_[i], *faults_, first_ + i));
  }
  // The last communicator of the links to go closes the transports
  // (~SharedLinks).
  ~WorldRemoteRanks() override = default;

  // Each local transport sends its abort notice (at once when idle, else at
  // the end of the call in progress), then every blocked exchange of every
  // local transport returns kAborted. The notices are recorded before the
  // flag wakes the exchanges, so that those send the abort's text too.
  void abort(const std::vector<std::pair<std::uint64_t, Status>>& notices) override {
    for (std::size_t local = 0; local < transports_.size() && local < notices.size(); ++local) {
      transports_[local]->abort_notify(notices[local].first, notices[local].second);
      if (mailbox_)
        mailbox_->notify(first_ + local - mailbox_->shape().first, notices[local].first,
                         notices[local].second);
    }
    links_->abort_flag->store(true);
  }
  std::size_t first_rank() const override { return first_; }
  std::size_t world() const override { return world_; }

  std::uint64_t slots_in_use(std::size_t local) const override {
    return local < root_local_.size() ? links_->slots[root_local_[local]].load() : 0;
  }
  std::uint32_t max_slots() const override { return kMaxSlots; }
  bool claim_slot(std::size_t local, std::uint32_t slot) override {
    if (local >= root_local_.size() || slot >= kMaxSlots) return false;
    const std::uint64_t bit = std::uint64_t{1} << slot;
    return (links_->slots[root_local_[local]].fetch_or(bit) & bit) == 0;
  }
  void release_slot(std::size_t local, std::uint32_t slot) override {
    if (local < root_local_.size() && slot < kMaxSlots)
      links_->slots[root_local_[local]].fetch_and(~(std::uint64_t{1} << slot));
  }
  // A child over views of the root's transports (shared_links.hpp); local:
  // nothing is sent.
  Result<std::unique_ptr<core::RemoteRanks>> child(std::span<const std::size_t> members,
                                                   std::size_t first, std::size_t per_process,
                                                   std::uint32_t slot,
                                                   const Config& config) override {
    return child(members, first, per_process, slot, config, nodes_, nullptr);
  }
  // The child's views (and its node segment `box`, if any). Every check is
  // made before the first view takes its claim over; a failed one lets go of
  // the claims of the members this process serves.
  Result<std::unique_ptr<core::RemoteRanks>> child(std::span<const std::size_t> members,
                                                   std::size_t first, std::size_t per_process,
                                                   std::uint32_t slot, const Config& config,
                                                   std::size_t nodes,
                                                   std::unique_ptr<node::Mailbox> box) {
    std::vector<std::size_t> root_peer(members.size()), root_local;
    for (std::size_t l = 0; l < per_process && first + l < members.size(); ++l) {
      const std::size_t rank = members[first + l];
      if (rank >= first_ && rank - first_ < per_process_)
        root_local.push_back(root_local_[rank - first_]);
    }
    const auto fail = [&](ErrorCode code, const std::string& why) {
      if (slot > 0 && slot < kMaxSlots)
        for (std::size_t r : root_local) links_->slots[r].fetch_and(~(std::uint64_t{1} << slot));
      return Result<std::unique_ptr<core::RemoteRanks>>(Status(code, why));
    };
    if (slot == 0 || slot >= kMaxSlots)
      return fail(ErrorCode::kUnsupported,
                  "split: no communicator slot is free on every member's transport (at most " +
                      std::to_string(kMaxSlots - 1) +
                      " communicators split from one world may share a rank at once)");
    if (per_process == 0 || first > members.size() || per_process > members.size() - first ||
        root_local.size() != per_process)
      return fail(ErrorCode::kInternal,
                  "split: this process's members lie outside the group or this process");
    for (std::size_t j = 0; j < members.size(); ++j) {
      if (members[j] >= world_)
        return fail(ErrorCode::kInternal,
                    "split: member " + std::to_string(members[j]) + " is not a rank of the world");
      root_peer[j] = root_peer_[members[j]];
    }
    std::vector<std::unique_ptr<transport::Transport>> views;
    views.reserve(root_local.size());
    for (std::size_t r : root_local)
      views.push_back(make_transport_view(links_, r, root_peer, slot));
    return std::unique_ptr<core::RemoteRanks>(
        std::make_unique<WorldRemoteRanks>(links_, std::move(views), std::move(root_peer),
                                           std::move(root_local), first, members.size(), nodes,
                                           config, faults_, std::move(box)));
  }

  // One rank per process; member i is process i of `boot`. Step 1 agrees on
  // the slot (the OR of every member's slots in use; member 0 adds a random
  // tag for a node segment); step 2 maps the members' own node segment when
  // they share a node (share_node_memory).
  Result<std::unique_ptr<core::RemoteRanks>> child_by_members(std::span<const std::size_t> members,
                                                              std::size_t first,
                                                              bootstrap::Bootstrap& boot,
                                                              const Config& config) override {
    const bootstrap::Topology& topo = boot.topology();
    Status local = Status::ok();
    if (per_process_ != 1 || topo.processes != members.size() || topo.process != first)
      local = Status(ErrorCode::kUnsupported,
                     "split by members: process " + std::to_string(topo.process) + " of " +
                         std::to_string(topo.processes) + " holds member " + std::to_string(first) +
                         " of " + std::to_string(members.size()) +
                         " (the bootstrap must order the processes as the members)");
    MemberRounds rounds(boot, std::move(local), config.timeout());
    if (first == 0 && rounds.pending())
      if (Status s = draw_tag(rounds.mine.tag); !s) rounds.fail_first(std::move(s));
    core::RankSlots holder(*this, 0);
    auto slot =
        core::agree_on_slot(rounds, holder, true, kMaxSlots, kSlotClaimTries, "split by members");
    RUCCL_TRY(slot);
    // The claim passes to the child's view (which lets it go when it goes),
    // or is let go here if no child is made.
    std::unique_ptr<node::Mailbox> box;
    if (config.intra_node_shared_memory() && topo.nodes == 1 && members.size() >= 2) {
      auto shared = share_node_memory(boot, 1, members.size(), config, rounds.first_record.tag,
                                      links_->abort_flag.get(),
                                      mailbox_ != nullptr && mailbox_->oversubscribed());
      if (!shared) release_slot(0, slot.value());
      RUCCL_TRY(shared);
      box = std::move(shared.value().mailbox);
    }
    return child(members, first, 1, slot.value(), config, topo.nodes, std::move(box));
  }

  // Receives take any message up to what one message holds (kMaxUpToBytes).
  // On the node: what a mailbox slot holds beside the record.
  // (Across nodes in bundles the same: a node slot holds as much.)
  std::size_t fused_capacity() const override {
    if (node_agreement()) return mailbox_->shape().slot_bytes - record_bytes_;
    return record_bytes_ < transport::kMaxUpToBytes ? transport::kMaxUpToBytes - record_bytes_ : 0;
  }

  // Every rank sends its fingerprint to every other (one message each; across
  // nodes under the hierarchical strategy bundled per node, exchange_by_node), and,
  // with `send_input`, a small all-reduce's input rides along (choose_algorithm
  // asked for kOneShot): when the plan is agreed and every rank's message
  // carried its input, Plan::one_shot is set, and the collective may run as a
  // one-shot all-reduce over the delivered inputs (executors()). Each rank sees
  // the same messages, so all decide alike; the rendezvous checks the plan is
  // the same for every local rank. What the record cannot carry (too many
  // dims) travels as this rank's local error, so that the peers fail at once too.
  Result<core::Plan> agree_all(std::size_t local, std::uint64_t seq, const core::Request& request,
                               const Result<core::Geometry>& local_check, bool send_input,
                               std::chrono::milliseconds timeout) override {
    const std::size_t me = first_ + local;
    Result<core::Geometry> geometry = local_check;
    if (geometry.is_ok())
      if (Status s = check_encodable(request, me); !s) geometry = s;
    OneShot& os = one_shot_[local];
    os.ready = false;
    os.out = encode(request, geometry, world_);
    os.words = os.out.size();
    const std::size_t record = os.words * sizeof(std::uint64_t);
    const std::size_t payload =
        send_input && geometry.is_ok() ? geometry.value().count * dtype_size(request.dtype) : 0;
    os.out.resize(os.words + (payload + 7) / 8);
    if (payload > 0) std::memcpy(os.out.data() + os.words, request.in.data, payload);
    os.msg.assign(world_, {});
    const Status sent = node_agreement()
                            ? share_on_node(local, seq, record + payload, Clock::now() + timeout)
                        : bundles() ? exchange_by_node(local, seq, record + payload, timeout)
                                    : exchange_over_ucx(local, seq, record + payload, timeout);
    if (!sent)
      return sent.with_context(core::describe(seq, request.kind) + ": agreement (fingerprints)");
    std::vector<Decoded> decoded(world_);
    std::vector<const core::Request*> requests(world_);
    std::vector<const Result<core::Geometry>*> locals(world_);
    bool all_sent_inputs = payload > 0;
    for (std::size_t r = 0; r < world_; ++r) {
      if (r == me) {
        requests[r] = &request;
        locals[r] = &geometry;
      } else {
        const std::span<const std::byte> m = os.msg[r];
        all_sent_inputs = all_sent_inputs && m.size() == record + payload;
        auto d = m.size() < record
                     ? Result<Decoded>(Status(ErrorCode::kProtocolError,
                                              "a message of " + std::to_string(m.size()) +
                                                  " bytes, shorter than a fingerprint record (" +
                                                  std::to_string(record) + ")"))
                     : decode(std::span(reinterpret_cast<const std::uint64_t*>(m.data()), os.words),
                              r, world_);
        if (!d) {
          const Status bad =
              d.status().with_context("collective #" + std::to_string(seq) +
                                      ": the fingerprint from rank " + std::to_string(r));
          failed(local, seq, bad);  // the others agreed: tell them
          return bad;
        }
        decoded[r] = std::move(d).value();
        requests[r] = &decoded[r].request;
        locals[r] = &decoded[r].geometry;
      }
    }
    Result<core::Plan> plan = core::agree(requests, locals, seq);
    if (!plan && plan.status().code() == ErrorCode::kProtocolError) {
      // A record that decoded but cannot be used: the ranks that got another
      // copy of it may have agreed.
      failed(local, seq, plan.status());
      return plan;
    }
    if (plan.is_ok() && all_sent_inputs) {
      os.ready = true;
      os.seq = seq;
      os.count = geometry.value().count;
      plan.value().one_shot = true;
    }
    return plan;
  }

  // Ranks of this node, when the hierarchical collectives run a node level.
  std::size_t node_level_ranks() const override {
    return node_level_ ? mailbox_->shape().ranks : 0;
  }
  Result<std::shared_ptr<std::byte>> allocate_host(std::size_t bytes) override {
    if (mailbox_ == nullptr) return std::shared_ptr<std::byte>();
    return node::Regions::allocate(mailbox_->regions(), bytes);
  }
  bool shares_host_memory() const override { return mailbox_ != nullptr; }

  // The lean path (node mailboxes, every rank of the world on this node): a
  // small all-reduce, reduce, broadcast, all-gather, reduce-scatter or
  // all-to-all-v is one round through the lean lane. Each rank writes a short fingerprint
  // (lean_header) and its input (an all-to-all-v its send counts, then its rows) into its slot;
  // when every rank's fingerprint fits the others
  // (lean_fits, a pure function of the slots), every rank computes its output
  // from the slots: reductions in rank order (the same bits everywhere). A
  // rank that finds otherwise, or a peer on the full lane, falls back to the
  // agreement in the same collective (nullopt), as every rank does: each sees
  // the same slots. No engine, rendezvous or UCX.
  std::size_t lean_capacity() const override {
    return node_agreement() && faulty_.empty() ? mailbox_->shape().lean_bytes - kLeanHeader : 0;
  }
  std::size_t lean_direct_bytes() const override {
    return lean_capacity() > 0 && readable_by_node(*mailbox_) ? lean_direct_bytes_ : 0;
  }
  std::optional<Status> lean_post(std::size_t local, std::uint64_t seq, const core::Request& req,
                                  const core::Geometry& geometry,
                                  std::uint64_t request_key) override {
    const TensorView* view = req.has_input ? &req.in : (req.out ? &*req.out : nullptr);
    if (!lean_kind(req.kind) || (view != nullptr && view->shape.size() > kLeanDims) ||
        lean_capacity() == 0)
      return std::nullopt;
    node::Mailbox& box = *mailbox_;
    const std::size_t base = box.shape().first;
    const std::size_t me = first_ + local;
    // An all_to_all_v's send counts ride before its rows.
    const bool a2a = req.kind == CollectiveKind::kAllToAllV;
    const std::size_t counts = a2a ? world_ * sizeof(std::uint64_t) : 0;
    if (a2a && req.send_counts.size() != world_) return std::nullopt;
    const std::size_t data = req.has_input ? geometry.count * dtype_size(req.dtype) : 0;
    const std::size_t bytes = counts + data;
    // An abort of any communicator over these transports (this one, its
    // parent or a child: one failure domain) ends this one too, also when
    // every slot would be ready at once: the peers hear of it here.
    if (links_->abort_flag->load(std::memory_order_acquire)) {
      const Status aborted(ErrorCode::kAborted,
                           core::describe(seq, req.kind) +
                               ": the lean path: this process's transports were aborted (this "
                               "communicator or one sharing them with it)");
      box.notify(me - base, seq, aborted);
      return aborted;
    }
    // The direct form where every other rank of the node can read this
    // process's memory (and the channels, whose words carry the readers'
    // "done", exist); the input stays where it is.
    // Only for the collectives that copy: there the direct form saves one
    // of two copies, while a reduction's reader copies and then reduces
    // either way (with inputs written anew before each call, np=2
    // all-reduce and reduce of 8-64 KiB measured no faster, at 8-16 KiB
    // slower), and by default only past the slot (core::lean_copy_direct:
    // within it the copies were faster). Not where this rank's output
    // overwrites its input (in place): the readers would race its writes,
    // and waiting for them first was slower.
    const bool copy_direct =
        core::lean_copy_direct(req.kind, data, world_, lean_capacity(), lean_direct_bytes_);
    // An all-reduce past the slot has a direct form of its own
    // (direct_all_reduce: into the caller's output, in place too). A rank
    // that cannot take it (no output buffer, one overlapping its input)
    // goes to the agreement, and so does every rank with it (it sees this
    // rank's full lane): the slots' form would exceed their total.
    const bool past_slot = core::lean_reduction_direct(req.kind, data, world_, lean_capacity(),
                                                       lean_direct_bytes_, wide_reductions_);
    // (Past kRegionReduceBytes not for an input in this process's regions
    // (allocate_host): the ring over the channels reads it in place.)
    const bool reduction =
        past_slot && reduces_apart(req, geometry) && readable_by_node(box) &&
        !(data > kRegionReduceBytes && box.regions() && box.regions()->owns(req.in.data, data));
    if (past_slot && !reduction) return std::nullopt;
    // A broadcast's receiver that the root helps (receives_split): its
    // output's address and bytes in the place of a direct input's.
    const bool target = receives_split(req, geometry, box);
    const bool direct = target || reduction ||
                        (copy_direct && writes_apart(req, geometry, me) && readable_by_node(box));
    // A broadcast's root in the direct form writes the end of every
    // receiver's output that posted it (receives_split), a world's share in
    // whole pages, as the receivers read the rest: where it copies nothing
    // else (in place; out of place, or into a new tensor, its own copy is
    // as much as a receiver's: np=2, 1 MiB out of place with a share, 79-81
    // us against 72 without).
    const bool sends_split = direct && !target && req.kind == CollectiveKind::kBroadcast;
    const std::size_t share =
        sends_split && req.out && req.out->data == req.in.data && data >= kShareFromBytes
            ? data / world_ / node::kPageBytes * node::kPageBytes
            : 0;
    // The slot holds the input, or in the direct form only its address (and
    // an all-reduce's output, a broadcast's share).
    const std::size_t record = reduction || sends_split ? kLeanReduceAddress : kLeanAddress;
    if (kLeanHeader + counts + (direct ? record : data) > box.shape().lean_bytes)
      return std::nullopt;
    LeanScratch& k = lean_[local];
    // (A keyed request's header is built once: the key stands for its
    // arguments, an all-to-all-v's send counts too.)
    LeanScratch::Own& own = k.own[request_key % core::kRequestWays];
    if (request_key == 0 || own.key != request_key || own.direct != direct) {
      own.key = 0;
      own.head = lean_header(req, geometry, view);
      if (direct) own.head[0] |= kDirectBit;
      own.bytes = encode_lean_head(own.head, own.raw.data());  // (an all-to-all-v's: 64)
      own.direct = direct;
      own.key = request_key;
    }
    const LeanHeader& head = own.head;
    const std::span<std::byte> slot = box.slot(me - base, seq, node::Lane::kLean);
    const std::size_t hb = own.bytes;
    // Whether this rank's own operand is the caller's input (own_from_input);
    // a reduce's root leaves it out of its slot then (only it reads it).
    const bool plain = !direct && !a2a && data > 0;
    const bool from_input = plain && own_from_input(req, geometry, me);
    const bool kept = from_input && req.kind == CollectiveKind::kReduce;
    std::memcpy(slot.data(), own.raw.data(), hb);
    for (std::size_t d = 0; d < world_ && a2a; ++d) {
      const std::uint64_t c = req.send_counts[d];
      std::memcpy(slot.data() + hb + d * sizeof c, &c, sizeof c);
    }
    if (target) {
      const std::uint64_t where[2] = {reinterpret_cast<std::uintptr_t>(req.out->data),
                                      geometry.count * dtype_size(req.dtype)};
      std::memcpy(slot.data() + hb, where, record);
    } else if (direct) {
      const std::uint64_t where[3] = {reinterpret_cast<std::uintptr_t>(req.in.data), data,
                                      reduction ? reinterpret_cast<std::uintptr_t>(req.out->data)
                                                : std::uint64_t{share}};
      std::memcpy(slot.data() + hb + counts, where, record);
    } else if (data > 0 && a2a) {
      // Every block but this rank's own, which lean_run copies from the input.
      const std::size_t row = geometry.unit * dtype_size(req.dtype);
      std::size_t before = 0;
      for (std::size_t d = 0; d < me; ++d) before += req.send_counts[d];
      const std::size_t at = std::min(before * row, data);
      const std::size_t end = std::min(at + req.send_counts[me] * row, data);
      const auto* in = static_cast<const std::byte*>(req.in.data);
      std::memcpy(slot.data() + hb + counts, in, at);
      std::memcpy(slot.data() + hb + counts + end, in + end, data - end);
    } else if (data > 0 && !kept) {
      std::memcpy(slot.data() + hb + counts, req.in.data, data);
    }
    const std::size_t sent = direct ? record : kept ? 0 : data;
    box.publish(me - base, seq, hb + counts + sent, node::Lane::kLean);
    // Else (an all-reduce in place on a rank but 0, an output overlapping
    // the input) a copy of its own, for the same reason (np=2 all-reduce in
    // place, 4-32 KiB: 0.37-0.52 -> 0.22-0.38 of Open MPI's p50, alike at 16
    // and 64 KiB). (A reduce's other ranks compute nothing.)
    const std::byte* own_at = slot.data() + hb;
    if (plain && !from_input && req.kind != CollectiveKind::kReduce) {
      if (k.own_copy.size() < data) k.own_copy.resize(box.shape().lean_bytes);
      std::memcpy(k.own_copy.data(), req.in.data, data);
      own_at = k.own_copy.data();
    }
    const std::size_t tensor = geometry.count * dtype_size(req.dtype);
    k.posted = {seq,
                direct,
                &head,
                own_at,
                kept ? 0 : bytes,
                request_key,
                kept,
                from_input,
                hb + counts + (direct ? record : tensor),
                target,
                share};
    return std::optional<Status>(std::in_place);  // ok (built in place: no move per call)
  }
  std::optional<Result<core::RankOutcome>> lean_collect(std::size_t local, std::uint64_t seq,
                                                        const core::Request& req,
                                                        DeviceAdapter& adapter, DeviceId device,
                                                        Clock::time_point deadline) override {
    LeanScratch& k = lean_[local];
    if (k.posted.head == nullptr || k.posted.seq != seq) {
      const Status unposted(ErrorCode::kInternal, core::describe(seq, req.kind) +
                                                      ": the lean path collected a collective "
                                                      "this rank did not post");
      mailbox_->notify(first_ + local - mailbox_->shape().first, seq, unposted);
      return Result<core::RankOutcome>(unposted);
    }
    const LeanScratch::Posted posted = k.posted;
    k.posted.head = nullptr;
    node::Mailbox& box = *mailbox_;
    const std::size_t base = box.shape().first;
    const std::size_t me = first_ + local;
    const bool a2a = req.kind == CollectiveKind::kAllToAllV;
    const bool direct = posted.direct;
    const LeanHeader& head = *posted.head;
    const std::uint64_t request_key = posted.key;
    if (k.heads.size() != world_) {  // (once: every entry is written below, per call)
      k.heads.resize(world_);
      k.inputs.resize(world_);
      k.sizes.resize(world_);
      k.address.resize(world_);
      k.output.resize(world_);
      k.placed.resize(world_);
      k.target.resize(world_);
      k.target_bytes.resize(world_);
      k.raw.resize(world_);
      k.compact.resize(world_);
    }
    bool lean = true, any_direct = false;  // (any_direct: a peer's input is read from its memory)
    LeanScratch::Fitted& fit = k.fits[request_key % core::kRequestWays];
    // Whether every slot so far is as when fit.plan was fitted (this rank's
    // request by its key, the peers' by their words and sizes).
    const bool keyed = request_key != 0 && request_key == fit.key && !direct;
    bool same = fit.compact && keyed && !a2a;
    // (An all-to-all-v's slots, each compared whole with fit's: headers,
    // counts and sizes.)
    bool same_a2a = fit.a2a && keyed && a2a;
    for (std::size_t r = 0; r < world_; ++r) {
      k.inputs[r] = nullptr;
      k.sizes[r] = 0;
      k.address[r] = 0;
      k.placed[r] = 0;
      k.target[r] = 0;
      if (r == me) {
        k.heads[r] = head;
        // (An all-to-all-v's counts stay in the slot; its own rows are the input.)
        k.inputs[r] = (direct && !a2a) || posted.from_input
                          ? static_cast<const std::byte*>(req.in.data)
                          : posted.input;
        k.sizes[r] = posted.bytes;
        continue;
      }
      auto m = box.wait(me - base, r - base, seq, deadline, node::Lane::kLean, posted.expect);
      if (!m) return lean_failed(box, me - base, seq, req.kind, direct, m.status(), deadline);
      const std::span<const std::byte> got = m.value().bytes;
      std::size_t their = 0;  // the bytes of their header's form
      if (m.value().lane != node::Lane::kLean) {
        lean = false;
        continue;
      }
      std::array<std::uint64_t, 2> words{};
      if (got.size() >= kCompactHeader) std::memcpy(words.data(), got.data(), kCompactHeader);
      if (same && got.size() >= kCompactHeader && words == fit.raw[r] &&
          got.size() - kCompactHeader == fit.sizes[r]) {
        k.heads[r] = fit.heads[r];
        their = kCompactHeader;
      } else {
        same = false;
        if (!decode_lean_head(got, k.heads[r], their)) {
          lean = false;
          continue;
        }
      }
      k.raw[r] = words;
      k.compact[r] = their == kCompactHeader ? 1 : 0;
      k.inputs[r] = got.data() + their;
      k.sizes[r] = got.size() - their;
      if (same_a2a && !same_a2a_slot(fit, k, r)) same_a2a = false;
      if ((k.heads[r][0] & kDirectBit) != 0) {
        if (receiver_head(k.heads[r])) {
          if (!target_record(k, r)) lean = false;
        } else if (direct_record(k, r, a2a)) {
          any_direct = true;
        } else {
          lean = false;
        }
      }
    }
    // An all-reduce's direct form takes every rank's (a rank of the other
    // form has no output to read its shard from).
    const bool reduction = req.kind == CollectiveKind::kAllReduce && (direct || any_direct);
    for (std::size_t r = 0; r < world_ && reduction; ++r)
      if (r != me ? k.address[r] == 0 : !direct) lean = false;
    // Every rank saw the same slots: all fall back alike (no rank reads a
    // direct input then).
    if (!lean) return std::nullopt;
    if (a2a ? !same_a2a : !same && !fitted_again(fit, k)) {
      fit.heads.clear();
      fit.compact = false;
      fit.a2a = false;
      if (!lean_fits(k.heads, k.sizes, k.inputs, world_, fit.plan)) return std::nullopt;
      if (!a2a) {
        fit.heads = k.heads;
        fit.sizes = k.sizes;
      } else if (!direct && !any_direct && request_key != 0) {
        keep_a2a(fit, k, request_key);
      }
    }
    // The peers' words kept for the next call where they were all compact
    // (a direct peer's size is its input's, not its slot's: never the same).
    if (!same && !a2a && !direct && !any_direct && request_key != 0 && !fit.heads.empty()) {
      fit.raw = k.raw;
      fit.key = request_key;
      fit.compact = true;
      for (std::size_t r = 0; r < world_; ++r)
        if (r != me && k.compact[r] == 0) fit.compact = false;
    }
    if (reduction) {
      // (Whatever it throws, the memory is withdrawn: lean_failed.)
      Status reduced = core::catch_to_status(ErrorCode::kInternal, "the direct all-reduce", [&] {
        return direct_all_reduce(box, k, fit.plan, req, me, base, seq, deadline);
      });
      if (!reduced.is_ok())
        return lean_failed(box, me - base, seq, req.kind, true, reduced, deadline);
      return Result<core::RankOutcome>(core::RankOutcome{});
    }
    // A broadcast's root fills its share of every receiver that posted its
    // output (receives_split), and says so; those receivers read the rest.
    const bool bcast = fit.plan.kind == CollectiveKind::kBroadcast;
    if (bcast && me == fit.plan.root) {
      Status helped = help_receivers(box, k, fit.plan, req, me, base, seq, posted.share, deadline);
      if (!helped.is_ok())
        return lean_failed(box, me - base, seq, req.kind, direct, helped, deadline);
    }
    // The direct inputs this rank needs, copied from their ranks' memory;
    // then every direct rank hears that this one is done with its input.
    if (any_direct) {
      // (A broadcast root's share: in its record, checked by direct_record.)
      const std::size_t share =
          bcast && posted.target && k.address[fit.plan.root] != 0 ? k.output[fit.plan.root] : 0;
      Status read = read_direct(box, k, fit.plan, req, me, base, share, deadline);
      if (!read.is_ok()) return lean_failed(box, me - base, seq, req.kind, direct, read, deadline);
      for (std::size_t r = 0; r < world_; ++r)
        if (r != me && k.address[r] != 0) box.lean_done(r - base, me - base, seq);
    }
    auto outcome = core::catch_to_status(ErrorCode::kInternal, "the lean path", [&] {
      return lean_run(fit.plan, req, me, k.inputs, k.placed, adapter, device);
    });
    // A direct rank's input stays the readers' until every one is done; a
    // receiver's output the root's until it filled its share.
    if (direct) {
      Status released =
          posted.target ? await_root(box, me - base, fit.plan.root - base, seq, req.kind, deadline)
                        : await_readers(box, k, me - base, seq, req.kind, deadline);
      if (!released.is_ok())
        return lean_failed(box, me - base, seq, req.kind, true, released, deadline);
    }
    if (!outcome) box.notify(me - base, seq, outcome.status());
    return outcome;
  }

  // Whether every rank of the node reads the other processes' memory (the
  // direct form's condition), with the channels' words there for the
  // readers' "done". Each process says so once it attached, and never takes
  // it back: once all said yes, that is kept (no loop over the node per call).
  bool readable_by_node(const node::Mailbox& box) const {
    if (node_readable_.load(std::memory_order_relaxed)) return true;
    if (box.shape().channel_slots == 0) return false;
    for (std::size_t r = 0; r < box.shape().ranks; ++r)
      if (!box.reads_directly(r)) return false;
    node_readable_.store(true, std::memory_order_relaxed);
    return true;
  }
  // The collectives with a direct form: those that only copy.
  static bool copies(CollectiveKind kind) { return core::has_lean_direct_form(kind); }
  // Whether the output a copying collective writes on the lean path leaves
  // this rank's input alone: another buffer, a broadcast's root in place (it
  // writes nothing), or an all-gather's input that is this rank's block of
  // its output (written only from the input).
  bool writes_apart(const core::Request& req, const core::Geometry& g, std::size_t me) const {
    if (!req.out) return true;
    const std::size_t es = dtype_size(req.dtype);
    const auto* out = static_cast<const std::byte*>(req.out->data);
    const auto* in = static_cast<const std::byte*>(req.in.data);
    if (apart(out, req.out->count() * es, in, g.count * es)) return true;
    if (req.kind == CollectiveKind::kBroadcast) return out == in;
    if (req.kind == CollectiveKind::kAllGather) return in == out + me * g.count * es;
    return false;
  }
  // Whether this rank's own operand is the caller's input rather than its
  // copy in its slot (written for the readers all the same, but a reduce
  // root's, which only it reads: lean_fits takes an empty slot from the
  // root): the readers' cores take the slot's lines over as they read them,
  // so reading them back cost a miss (np=2 all-reduce of 8 B back to back:
  // 0.60-0.64 us from the slot, 0.55-0.58 from the input). Where lean_run's
  // writes leave the input alone until it is read: a copying collective's
  // writes_apart; a reduction's output apart from it, or its input in place
  // on rank 0, whose input is the first operand of each step (the kernels
  // allow dst == a; another rank's output, written from the inputs of ranks
  // 0 and 1 first, would overwrite its input before it is read). (A reduce's
  // other ranks compute nothing; an all-to-all-v reads its own rows from its
  // input anyway.)
  bool own_from_input(const core::Request& req, const core::Geometry& g, std::size_t me) const {
    if (!req.has_input || req.in.data == nullptr) return false;
    switch (req.kind) {
      case CollectiveKind::kBroadcast:
      case CollectiveKind::kAllGather: return writes_apart(req, g, me);
      case CollectiveKind::kReduce:
        if (req.root != me) return false;
        [[fallthrough]];
      case CollectiveKind::kAllReduce:
      case CollectiveKind::kReduceScatter: {
        if (!req.out || req.out->data == nullptr) return true;  // (a new tensor)
        if (req.out->data == req.in.data) return me == 0;
        const std::size_t es = dtype_size(req.dtype);
        return apart(req.out->data, req.out->count() * es, req.in.data, g.count * es);
      }
      default: return false;
    }
  }
  // A peer's direct record (its address and bytes, after its counts): taken
  // for a collective that copies, when it has the record's size and a
  // non-null address, with `sizes` then the bytes the input holds (checked
  // against the plan by lean_fits).
  bool direct_record(LeanScratch& k, std::size_t r, bool a2a) const {
    const auto kind = static_cast<CollectiveKind>((k.heads[r][0] >> 24) & 0xff);
    const bool reduction = kind == CollectiveKind::kAllReduce;
    const bool bcast = kind == CollectiveKind::kBroadcast;
    if (!copies(kind) && !reduction) return false;
    const std::size_t counts = a2a ? world_ * sizeof(std::uint64_t) : 0;
    const std::size_t record = reduction || bcast ? kLeanReduceAddress : kLeanAddress;
    if (k.sizes[r] != counts + record) return false;
    std::uint64_t where[3] = {0, 0, 0};
    std::memcpy(where, k.inputs[r] + counts, record);
    const auto size = checked_add(counts, static_cast<std::size_t>(where[1]));
    if (where[0] == 0 || !size || (reduction && where[2] == 0) || (bcast && where[2] > where[1]))
      return false;
    k.address[r] = where[0];
    k.output[r] = where[2];
    k.sizes[r] = *size;
    return true;
  }
  // Whether this rank, a broadcast's receiver into an output of its own,
  // posts that output's address for the root to fill its share of (the
  // root's record says how much: lean_post) while the receiver reads the
  // rest from the root's memory: at the sizes of the direct form.
  bool receives_split(const core::Request& req, const core::Geometry& g,
                      const node::Mailbox& box) const {
    if (req.kind != CollectiveKind::kBroadcast || req.has_input || !req.out ||
        req.out->data == nullptr || req.out->count() < g.count)
      return false;
    const std::size_t bytes = g.count * dtype_size(req.dtype);
    return core::lean_copy_direct(req.kind, bytes, world_, lean_capacity(), lean_direct_bytes_) &&
           readable_by_node(box);
  }
  // A broadcast receiver's header (it has no input).
  static bool receiver_head(const LeanHeader& h) {
    return static_cast<CollectiveKind>((h[0] >> 24) & 0xff) == CollectiveKind::kBroadcast &&
           ((h[0] >> 32) & 1) == 0;
  }
  // A broadcast receiver's target record (its output's address and bytes):
  // taken with a non-null address; its slot then counts as empty for
  // lean_fits, as a receiver's is.
  static bool target_record(LeanScratch& k, std::size_t r) {
    if (k.sizes[r] != kLeanAddress) return false;
    std::uint64_t where[2] = {0, 0};
    std::memcpy(where, k.inputs[r], kLeanAddress);
    if (where[0] == 0) return false;
    k.target[r] = where[0];
    k.target_bytes[r] = static_cast<std::size_t>(where[1]);
    k.sizes[r] = 0;
    return true;
  }
  // The root's share is whole pages (node::kPageBytes: each copy between
  // processes pins them), of broadcasts from 1 MiB: np=2, in place, p50 with Open MPI's
  // broadcast on the same buffers between ruccl's, binaries with and
  // without the share alternated. With it at every size of the direct form
  // (three rounds): 256 KiB 16.9-18.0 us against 14.9-21.2, 512 KiB
  // 26.3-29.4 against 27.3-50.5, 1 MiB 48-55 against 69-98, 2 MiB 97-103
  // against 143-180; with it from 512 KiB (two rounds): 512 KiB 28.6-29.1
  // against 26.4-28.2, 1 MiB 49-55 against 60-67, 2 MiB 100-106 against
  // 128-131. (Below 1 MiB the lines the root writes are mostly those the
  // receiver's cache holds from its last use of the output: each is taken
  // from the other core, and the receiver's next use takes it back.)
  static constexpr std::size_t kShareFromBytes = std::size_t{1} << 20;
  // A broadcast's root: its `share` of every receiver that posted its output
  // (none where its own slot held its input: share 0), written from its
  // input, and every such receiver hears that the root is done with it.
  Status help_receivers(node::Mailbox& box, const LeanScratch& k, const LeanPlan& plan,
                        const core::Request& req, std::size_t me, std::size_t base,
                        std::uint64_t seq, std::size_t share, Clock::time_point deadline) {
    const std::size_t bytes = plan.count * dtype_size(plan.dtype);
    const auto* in = static_cast<const std::byte*>(req.in.data);
    for (std::size_t r = 0; r < world_; ++r) {
      if (r == me || k.target[r] == 0) continue;
      if (share > 0) {
        if (k.target_bytes[r] != bytes)
          return Status(ErrorCode::kProtocolError,
                        "the lean path: rank " + std::to_string(r) + "'s output holds " +
                            std::to_string(k.target_bytes[r]) + " bytes, not the broadcast's " +
                            std::to_string(bytes));
        RUCCL_TRY(box.write_to(r - base, me - base, k.target[r] + (bytes - share),
                               in + (bytes - share), share, deadline));
      }
      box.lean_done(r - base, me - base, seq);
    }
    return Status::ok();
  }
  // Whether this rank's all-reduce may take the direct form: into a
  // caller's output of the input's size, which is the input (in place) or
  // lies apart from it.
  static bool reduces_apart(const core::Request& req, const core::Geometry& g) {
    if (!req.out || req.out->data == nullptr || req.in.data == nullptr ||
        req.out->count() != g.count)
      return false;
    const std::size_t bytes = g.count * dtype_size(req.dtype);
    return req.out->data == req.in.data || apart(req.out->data, bytes, req.in.data, bytes);
  }
  // Pieces of 256 KiB (at most 4 MiB of scratch over the ranks): each read
  // of another process's memory is a system call that pins the pages; np=2,
  // all-reduce of 256 KiB-2 MiB, p50 ratio to Open MPI: 1.10-1.30 with 32
  // KiB pieces, 0.92-1.08 with 256 KiB, alike with 1 MiB (np=4: 0.90-1.30
  // against 0.84-1.09).
  static constexpr std::size_t kReducePieceBytes = std::size_t{256} << 10;
  // The direct all-reduce of inputs in the node's regions (allocate_host)
  // up to this much; past it the ring over the channels, which reads them in
  // place. np=2 without AVX-512, `ruccl-perf --world --allocate-host`, two
  // rounds alternated, p50 in us, out of place / in place: 128 KiB 20.5-21.3
  // / 31.9-32.4 direct against the ring's 26.2-26.6 / 32.0-37.1, 512 KiB
  // 77 / 124 against 74-76 / 109-111, 2 MiB 299-303 / 471-478 against
  // 276-279 / 401-403, 32 MiB 6423-6655 / 6444-6778 against 5336-5392 /
  // 4773-4786.
  static constexpr std::size_t kRegionReduceBytes = std::size_t{512} << 10;
  static constexpr std::size_t kReduceScratchBytes = std::size_t{4} << 20;
  // The direct all-reduce (core::lean_reduction_direct): every rank's input
  // and output stay where they are. Rank me reduces its shard of the
  // inputs (whole cache lines where the count allows) in rank order, the
  // others' read from their ranks' memory piece by piece into scratch, into
  // its output, says so (lean_stage), reads each other rank's shard from
  // that rank's output once staged, and is done with that rank's memory
  // (lean_done); it returns once every rank is done with its own
  // (await_readers). Each shard is reduced once: every rank gets the same
  // bits. In place, the others read this rank's shard r of its input before
  // rank r stages, and this rank writes shard r only after that.
  Status direct_all_reduce(node::Mailbox& box, LeanScratch& k, const LeanPlan& plan,
                           const core::Request& req, std::size_t me, std::size_t base,
                           std::uint64_t seq, Clock::time_point deadline) {
    const std::size_t es = dtype_size(plan.dtype);
    const std::size_t n = plan.count;
    const std::size_t line = std::max<std::size_t>(1, 64 / es);
    const auto shard = [&](std::size_t r) {
      const Range u = ring::balanced_range((n + line - 1) / line, world_, r, line);
      const std::size_t at = std::min(u.offset, n);
      return Range{at, std::min(u.end(), n) - at};
    };
    const auto* in = static_cast<const std::byte*>(req.in.data);
    auto* out = static_cast<std::byte*>(req.out->data);
    const bool in_place = in == out;
    const std::size_t piece_bytes = std::min(kReducePieceBytes, kReduceScratchBytes / world_);
    const std::size_t piece = std::max(line, piece_bytes / es / line * line);
    if (k.read.size() < world_ * piece * es) k.read.resize(world_ * piece * es);
    std::vector<const std::byte*>& from = k.inputs;  // (this call's sources, per rank)
    const Range mine = shard(me);
    for (std::size_t at = mine.offset; at < mine.end(); at += piece) {
      const std::size_t len = std::min(piece, mine.end() - at), bytes = len * es;
      for (std::size_t r = 0; r < world_; ++r) {
        std::byte* scratch = k.read.data() + r * piece * es;
        if (r == me && (!in_place || me < 2)) {
          // (In place, ranks 0 and 1 reduce into their own operand in the
          // first pass, which reads it first: host::reduce allows dst == a
          // and dst == b. np=2 without AVX-512, in place, two rounds
          // alternated: 512 KiB 121-127 us against 145-147 with the copy,
          // 1 MiB 238-257 against 278-285, 2 MiB 481-498 against 547-550.)
          from[r] = in + at * es;
        } else if (r == me) {
          std::memcpy(scratch, in + at * es, bytes);  // (the output overwrites it)
          from[r] = scratch;
        } else {
          RUCCL_TRY(
              box.read_from(r - base, me - base, k.address[r] + at * es, scratch, bytes, deadline));
          from[r] = scratch;
        }
      }
      RUCCL_TRY(reduce_in_rank_order(plan.dtype, plan.op, out + at * es, from, 0, len));
    }
    box.lean_stage(me - base, seq);
    // The others' shards, each once its rank staged it (whichever first).
    k.pending.clear();
    for (std::size_t r = 1; r < world_; ++r) k.pending.push_back((me + r) % world_);
    while (!k.pending.empty()) {
      const auto staged = [&] {
        for (const std::size_t r : k.pending)
          if (box.lean_staged(r - base, seq)) return true;
        return false;
      };
      if (!staged()) {
        k.unstaged.clear();
        for (const std::size_t r : k.pending) k.unstaged.push_back(r - base);
        RUCCL_TRY(box.await(me - base, k.unstaged, deadline, staged, [&] {
          std::string ranks;
          for (const std::size_t r : k.pending)
            ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
          return "rank(s) " + ranks + " to reduce their shards of " +
                 core::describe(seq, plan.kind) + " (the lean path's direct all-reduce)";
        }));
      }
      for (std::size_t i = 0; i < k.pending.size();) {
        const std::size_t r = k.pending[i];
        if (!box.lean_staged(r - base, seq)) {
          ++i;
          continue;
        }
        const Range theirs = shard(r);
        if (theirs.count > 0)
          RUCCL_TRY(box.read_from(r - base, me - base, k.output[r] + theirs.offset * es,
                                  out + theirs.offset * es, theirs.count * es, deadline));
        box.lean_done(r - base, me - base, seq);
        k.pending.erase(k.pending.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    return await_readers(box, k, me - base, seq, plan.kind, deadline);
  }
  // The parts of the direct inputs that this rank's output needs, read from
  // their ranks' memory: into the caller's output buffer where it has one
  // (lean_fits checked that what this rank receives fits it), where
  // lean_run would copy them (k.placed: it copies nothing of them then); for
  // a value form into k.read, at the offsets lean_run reads them at, k.inputs
  // then pointing there. Only the copying collectives come here
  // (direct_record refuses the others).
  // `share`: a broadcast receiver's tail that the root writes (receives_split).
  Status read_direct(node::Mailbox& box, LeanScratch& k, const LeanPlan& plan,
                     const core::Request& req, std::size_t me, std::size_t base, std::size_t share,
                     Clock::time_point deadline) {
    const std::size_t es = dtype_size(plan.dtype);
    const bool a2a = plan.kind == CollectiveKind::kAllToAllV;
    const std::size_t counts = a2a ? world_ * sizeof(std::uint64_t) : 0;
    const std::size_t row = plan.count * es;  // (an all-to-all-v's; else the input's bytes)
    auto* out = req.out ? static_cast<std::byte*>(req.out->data) : nullptr;
    const auto room = [](std::size_t n) { return (n + 63) / 64 * 64; };
    std::size_t total = 0;
    for (std::size_t r = 0; r < world_ && out == nullptr; ++r)
      if (r != me && k.address[r] != 0) total += room(k.sizes[r]);
    if (k.read.size() < total) k.read.resize(total);
    std::size_t at = 0, received = 0;  // (received: an all-to-all-v's rows before source r's)
    for (std::size_t r = 0; r < world_; ++r) {
      const std::size_t before = received;
      if (a2a) received += plan.rows[r * world_ + me];
      if (r == me || k.address[r] == 0) continue;
      const std::size_t data = k.sizes[r] - counts;
      // A broadcast's or all-gather's input; an all-to-all-v's block for
      // this rank.
      std::size_t off = 0, len = row;
      if (a2a) {
        off = rows_before(plan, world_, r, me) * row;
        len = plan.rows[r * world_ + me] * row;
      }
      if (off > data || len > data - off)
        return Status(ErrorCode::kProtocolError,
                      "the lean path: rank " + std::to_string(r) +
                          "'s direct input holds fewer bytes than its collective needs");
      if (out != nullptr) len -= std::min(len, share);
      std::byte* to = nullptr;
      if (out != nullptr) {
        to = out + (a2a ? before * row : plan.kind == CollectiveKind::kAllGather ? r * row : 0);
        k.placed[r] = 1;
      } else {
        std::byte* region = k.read.data() + at;
        at += room(k.sizes[r]);
        // (An all-to-all-v's counts copied along: lean_run reads its block after them.)
        if (a2a) std::memcpy(region, k.inputs[r], counts);
        to = region + counts + off;
        k.inputs[r] = region;
      }
      if (len > 0)
        RUCCL_TRY(box.read_from(r - base, me - base, k.address[r] + off, to, len, deadline));
    }
    return Status::ok();
  }
  // A direct rank: until every other rank is done with its input.
  static Status await_readers(node::Mailbox& box, LeanScratch& k, std::size_t me, std::uint64_t seq,
                              CollectiveKind kind, Clock::time_point deadline) {
    if (k.watch.size() + 1 != box.shape().ranks) {  // (once per local rank)
      k.watch.clear();
      for (std::size_t r = 0; r < box.shape().ranks; ++r)
        if (r != me) k.watch.push_back(r);
    }
    const auto done = [&] {
      for (const std::size_t r : k.watch)
        if (!box.lean_released(me, r, seq)) return false;
      return true;
    };
    return box.await(me, k.watch, deadline, done, [&] {
      return "every rank of the node to be done with the input of rank " +
             std::to_string(box.shape().first + me) + " of " + core::describe(seq, kind) +
             " (the lean path's direct form)";
    });
  }
  // A broadcast's receiver that posted its output: until the root is done
  // with it.
  static Status await_root(node::Mailbox& box, std::size_t me, std::size_t root, std::uint64_t seq,
                           CollectiveKind kind, Clock::time_point deadline) {
    const std::size_t watch[1] = {root};
    return box.await(
        me, watch, deadline, [&] { return box.lean_released(me, root, seq); },
        [&] {
          return "the root (rank " + std::to_string(box.shape().first + root) + ") of " +
                 core::describe(seq, kind) + " to fill its share of the output of rank " +
                 std::to_string(box.shape().first + me) + " (the lean path's direct form)";
        });
  }
  // After a failure on the lean path: a direct rank's input is withdrawn (no
  // read of it starts after this, none is in progress), and the node hears.
  std::optional<Result<core::RankOutcome>> lean_failed(node::Mailbox& box, std::size_t me,
                                                       std::uint64_t seq, CollectiveKind kind,
                                                       bool direct, const Status& why,
                                                       Clock::time_point deadline) {
    if (direct)
      for (std::size_t r = 0; r < box.shape().ranks; ++r)
        if (r != me) box.withdraw(me, r, deadline);
    box.notify(me, seq, why);
    return Result<core::RankOutcome>(
        why.with_context(core::describe(seq, kind) + ": the lean path (node shared memory)"));
  }

  void failed(std::size_t local, std::uint64_t seq, const Status& error) override {
    if (mailbox_) mailbox_->notify(first_ + local - mailbox_->shape().first, seq, error);
    transports_[local]->notify_failure(seq, error);  // once per transport
  }

  // The executors of the chosen algorithm: kInProcess none (the in-process
  // executor), kOneShot the delivered inputs, kHierarchical the group across
  // processes (or nodes, with a node level between) of this rank's local
  // index (the local level runs in-process), kFlatRing a message for every
  // transfer (through the node's channels when the world is this node).
  core::Executors executors(std::size_t local, std::uint64_t seq, core::Algorithm algorithm,
                            CollectiveKind kind, Work& work, DeviceAdapter& adapter,
                            const core::Plan& plan, std::chrono::milliseconds timeout) override {
    core::Executors out;
    out.algorithm = algorithm;
    if (algorithm == core::Algorithm::kInProcess) return out;
    OneShot& os = one_shot_[local];
    // plan.one_shot is every local rank's decision (the rendezvous refused the
    // plan otherwise), and this rank's own: its inputs are in `os`.
    if (algorithm == core::Algorithm::kOneShot && plan.one_shot && os.ready && os.seq == seq &&
        kind == CollectiveKind::kAllReduce) {
      os.ready = false;
      std::vector<const std::byte*> inputs(world_);
      for (std::size_t r = 0; r < world_; ++r)
        inputs[r] = r == first_ + local
                        ? reinterpret_cast<const std::byte*>(os.out.data() + os.words)
                        : os.msg[r].data() + os.words * sizeof(std::uint64_t);
      out.run = std::make_unique<DeliveredRun>(adapter, work, local, first_ + local, world_,
                                               std::move(inputs), os.count);
      return out;
    }
    os.ready = false;
    const std::size_t processes = world_ / per_process_;
    // The budget's elements per message, cut to kPieceBytes where a row fits.
    std::size_t elements = plan.message_elements;
    if (auto piece = ring::message_elements(kPieceBytes, dtype_size(plan.dtype),
                                            std::max<std::size_t>(1, plan.geometry.unit)))
      elements = std::min(elements, piece.value());
    // A reduction's receive buffers, at most the budget (two rounds in
    // flight where two messages per peer fit in it).
    const std::size_t es = dtype_size(plan.dtype);
    const std::size_t budget =
        plan.message_elements <= SIZE_MAX / es ? plan.message_elements * es : SIZE_MAX;
    auto options = [&](std::uint32_t comm) {
      transport::TransportRunOptions o{comm, seq, elements, timeout};
      o.staging_cache = &staging_[local];
      o.staging_bytes = budget;
      o.kind = kind;
      if (logger_.enabled(LogLevel::kTrace))  // the memory path, once per executor
        o.log = [this, rank = first_ + local](const std::string& line) {
          logger_.log(LogLevel::kTrace, rank, line);
        };
      return o;
    };
    // The node's channels carry this collective's data, unless drop and
    // corrupt faults model the wire (they keep UCX) or UCX moves the device
    // buffers itself (CUDA IPC).
    const bool channels_carry =
        faulty_.empty() && (adapter.kind() == DeviceKind::kHost ||
                            !transports_[local]->supports(transport::MemoryType::kCuda));
    // Options of a NodeRun over the group of node ranks peer_base + g * stride.
    const auto node_options = [&](std::size_t peer_base, std::size_t peer_stride) {
      return NodeRunOptions{seq,  elements,         timeout,     peer_base,         peer_stride,
                            kind, &scratch_[local], direct_all_, direct_copy_bytes_};
    };
    // Every rank on this node: the data goes through the node's channels
    // (NodeRun), not UCX.
    if (node_agreement() && mailbox_->shape().channel_slots > 0 && channels_carry) {
      const bool across = algorithm == core::Algorithm::kHierarchical;
      const NodeRunOptions o = node_options(across ? local : 0, across ? per_process_ : 1);
      if (logger_.enabled(LogLevel::kTrace))
        logger_.log(LogLevel::kTrace, first_ + local,
                    "collective #" + std::to_string(seq) +
                        ": the node's shared memory (channels of " +
                        std::to_string(mailbox_->shape().channel_slots) + " x " +
                        std::to_string(mailbox_->shape().channel_piece) + " bytes), not UCX");
      auto run = std::make_unique<NodeRun>(*mailbox_, adapter, work, local,
                                           across ? first_ / per_process_ : first_ + local,
                                           across ? processes : world_, o);
      if (across) {
        out.across = std::move(run);
      } else {
        out.algorithm = core::Algorithm::kFlatRing;
        out.run = std::move(run);
      }
      return out;
    }
    // A world spanning nodes: the node level through the node's channels
    // (the processes of this node with this local index), then the ring
    // across nodes over UCX (the ranks with this rank's index on its node).
    if (algorithm == core::Algorithm::kHierarchical && node_level_ && channels_carry) {
      const node::MailboxShape& shape = mailbox_->shape();
      const std::size_t node_rank = first_ + local - shape.first;
      const NodeRunOptions o = node_options(shape.first + local, per_process_);
      if (logger_.enabled(LogLevel::kTrace))
        logger_.log(LogLevel::kTrace, first_ + local,
                    "collective #" + std::to_string(seq) + ": node level through the node's " +
                        "shared memory (" + std::to_string(shape.processes) +
                        " processes), then a ring across " + std::to_string(world_ / shape.ranks) +
                        " nodes over UCX");
      out.node =
          std::make_unique<NodeRun>(*mailbox_, adapter, work, local,
                                    (first_ - shape.first) / per_process_, shape.processes, o);
      transport::TransportRunOptions a = options(kAcrossComm);
      a.peer_base = node_rank;
      a.peer_stride = shape.ranks;
      out.across = std::make_unique<transport::TransportRun>(executor_transport(local), adapter,
                                                             work, local, shape.first / shape.ranks,
                                                             world_ / shape.ranks, a);
      return out;
    }
    // Else, on a world spanning nodes whose node has channels, the messages
    // between ranks of this node go through them, the others over UCX
    // (RoutedRun): the all-to-all-v, the flat ring, and the hierarchy's level
    // across processes where the nodes have no node level (nodes of
    // different sizes).
    const bool routed =
        mailbox_ != nullptr && nodes_ > 1 && mailbox_->shape().channel_slots > 0 && channels_carry;
    const node::MailboxShape* shape = routed ? &mailbox_->shape() : nullptr;
    auto route = [&](std::unique_ptr<transport::TransportRun> wire, std::size_t node_begin,
                     std::size_t node_ranks, std::size_t stride) -> std::unique_ptr<ring::RankRun> {
      if (!routed) return wire;
      if (logger_.enabled(LogLevel::kTrace))
        logger_.log(LogLevel::kTrace, first_ + local,
                    "collective #" + std::to_string(seq) + ": to the " +
                        std::to_string(node_ranks - 1) +
                        " other ranks of this node through its shared memory, to the other " +
                        std::to_string(wire->world() - node_ranks) + " over UCX");
      NodeRunOptions o = node_options(node_begin * stride + (stride == 1 ? 0 : local), stride);
      // On an oversubscribed machine the messages of copy steps go through
      // the slots, not as addresses, whose sender waits for its reader to
      // take its turn on a core: 2 namespace hosts x 2 processes on 2 cores,
      // all-to-all-v of 64 B-32 KiB 217-275 us p50 against 260-326.
      if (mailbox_->oversubscribed()) o.direct_copy_bytes = 0;
      auto node = std::make_unique<NodeRun>(*mailbox_, adapter, work, local,
                                            wire->rank() - node_begin, node_ranks, o);
      return std::make_unique<RoutedRun>(std::move(node), std::move(wire), node_begin, node_ranks);
    };
    if (algorithm == core::Algorithm::kHierarchical) {
      transport::TransportRunOptions o = options(kAcrossComm);
      o.peer_base = local;
      o.peer_stride = per_process_;
      out.across =
          route(std::make_unique<transport::TransportRun>(executor_transport(local), adapter, work,
                                                          local, first_ / per_process_, processes,
                                                          o),
                shape ? shape->first_process : 0, shape ? shape->processes : 0, per_process_);
      return out;
    }
    out.algorithm = core::Algorithm::kFlatRing;  // also a one-shot without its inputs
    out.run = route(std::make_unique<transport::TransportRun>(executor_transport(local), adapter,
                                                              work, local, first_ + local, world_,
                                                              options(kDataComm)),
                    shape ? shape->first : 0, shape ? shape->ranks : 0, 1);
    return out;
  }

 private:
  // Whether fingerprints travel through the node's mailboxes: every rank of
  // the world is on this node.
  bool node_agreement() const { return mailbox_ != nullptr && nodes_ == 1; }

  // Local rank `local`'s message (os.out, `bytes` of it) to every rank and
  // every rank's to it (os.msg), over UCX: one message each way per peer.
  // Receives take any message up to what one message holds, whatever this
  // rank sends: another process may send its input when this one does not.
  Status exchange_over_ucx(std::size_t local, std::uint64_t seq, std::size_t bytes,
                           std::chrono::milliseconds timeout) {
    OneShot& os = one_shot_[local];
    const std::size_t me = first_ + local;
    const std::size_t record = os.words * sizeof(std::uint64_t);
    const bool up_to = record < transport::kMaxUpToBytes;
    const std::size_t capacity = up_to ? transport::kMaxUpToBytes : record;
    os.in.resize(world_);
    os.got.assign(world_, record);
    std::vector<transport::SendOp>& sends = os.sends;  // kept: this runs per collective
    std::vector<transport::RecvOp>& recvs = os.recvs;
    sends.clear();
    recvs.clear();
    for (std::size_t r = 0; r < world_; ++r) {
      if (r == me) continue;
      os.in[r].resize((capacity + 7) / 8);
      sends.push_back(
          {r, os.out.data(), bytes,
           transport::make_tag({kControlComm, seq, 0, static_cast<std::uint32_t>(me), 0}), seq});
      recvs.push_back(
          {r, os.in[r].data(), capacity,
           transport::make_tag({kControlComm, seq, 0, static_cast<std::uint32_t>(r), 0}), seq,
           up_to ? &os.got[r] : nullptr});
    }
    RUCCL_TRY(transports_[local]->exchange(sends, recvs, Clock::now() + timeout));
    for (std::size_t r = 0; r < world_; ++r)
      if (r != me)
        os.msg[r] = {reinterpret_cast<const std::byte*>(os.in[r].data()),
                     std::min(os.got[r], capacity)};
    return Status::ok();
  }

  // Across nodes that each share memory between their processes (a node
  // level, as many ranks on every node), the hierarchical strategy's
  // agreement: the messages of a node's ranks meet in its mailboxes, and node
  // rank i sends them, bundled, to node rank i of every other node and
  // receives that node's bundle (2 nodes x 2 ranks: 4 bundles over UCX, in 8
  // messages of which 4 are mostly empty, instead of 12 messages; none
  // between ranks of one node).
  bool bundles() const {
    return mailbox_ != nullptr && nodes_ >= 2 && node_level_ && node_aware_ &&
           mailbox_->shape().ranks >= 2 && world_ == mailbox_->shape().ranks * nodes_;
  }

  // The bundle (world/bundle_codec.hpp) travels behind a word with its size
  // in bytes, in two messages of at most kMaxUpToBytes each (bundle_split:
  // receives of up to that much take them whatever the sender's inputs; the
  // second is empty where the first holds it all): a 4 KiB all-reduce's
  // inputs on 2 ranks a node fit, in one round. What exceeds both goes in a
  // second round of its exact size.
  Status exchange_by_node(std::size_t local, std::uint64_t seq, std::size_t bytes,
                          std::chrono::milliseconds timeout) {
    OneShot& os = one_shot_[local];
    node::Mailbox& box = *mailbox_;
    const std::size_t me = first_ + local, base = box.shape().first, ranks = box.shape().ranks;
    const std::size_t i = me - base, node = base / ranks;
    constexpr std::size_t kPart = transport::kMaxUpToBytes;
    static_assert(kPart % 8 == 0, "a bundle's messages are cut at whole words");
    const auto deadline = Clock::now() + timeout;
    const auto fail = [&](Status s) {
      failed(local, seq, s);  // the node and the other nodes hear of it
      return s;
    };
    if (logger_.enabled(LogLevel::kTrace))
      logger_.log(LogLevel::kTrace, me,
                  "collective #" + std::to_string(seq) + ": agreement in bundles (node rank " +
                      std::to_string(i) + " of " + std::to_string(ranks) + " to node rank " +
                      std::to_string(i) + " of each other node)");
    if (Status s = share_on_node(local, seq, bytes, deadline); !s) return fail(s);
    std::vector<std::uint64_t>& bundle = os.bundle;
    bundle.assign(1, 0);
    for (std::size_t j = 0; j < ranks; ++j)  // (each at most a slot)
      bundle_append(bundle, base + j != me
                                ? os.msg[base + j]
                                : std::span<const std::byte>(
                                      reinterpret_cast<const std::byte*>(os.out.data()), bytes));
    bundle[0] = (bundle.size() - 1) * 8;
    const std::size_t mine = bundle.size() * 8;
    // A bundle holds at most a slot's worth per rank.
    const std::size_t most = ranks * bundle_entry_bytes(box.shape().slot_bytes);
    const auto tag = [&](std::size_t from, std::uint32_t part) {
      return transport::make_tag({kControlComm, seq, part, static_cast<std::uint32_t>(from), 0});
    };
    const auto partner_of = [&](std::size_t k) { return k * ranks + i; };
    os.in.resize(world_);
    os.got.assign(world_, 0);
    os.sends.clear();
    os.recvs.clear();
    os.got_second.assign(world_, 0);
    const BundleParts parts = bundle_split(mine, kPart);
    for (std::size_t k = 0; k < nodes_; ++k) {
      if (k == node) continue;
      const std::size_t partner = partner_of(k);
      os.in[partner].resize(2 * kPart / 8);
      os.sends.push_back({partner, bundle.data(), parts.first, tag(me, 0), seq});
      os.sends.push_back({partner, bundle.data() + parts.first / 8, parts.second, tag(me, 1), seq});
      os.recvs.push_back(
          {partner, os.in[partner].data(), kPart, tag(partner, 0), seq, &os.got[partner]});
      os.recvs.push_back({partner, os.in[partner].data() + kPart / 8, kPart, tag(partner, 1), seq,
                          &os.got_second[partner]});
    }
    const auto exchange = [&]() -> Status {
      if (Status s = transports_[local]->exchange(os.sends, os.recvs, deadline); !s) {
        box.notify(i, seq, s);  // (the transport told the other nodes)
        return s;
      }
      return Status::ok();
    };
    RUCCL_TRY(exchange());
    // Each bundle's size, checked against what came and what a bundle holds;
    // the rest, where a bundle is larger than two messages.
    os.sends.clear();
    os.recvs.clear();
    if (parts.rest > 0)
      for (std::size_t k = 0; k < nodes_; ++k)
        if (k != node)
          os.sends.push_back({partner_of(k), bundle.data() + (parts.first + parts.second) / 8,
                              parts.rest, tag(me, 2), seq});
    for (std::size_t k = 0; k < nodes_; ++k) {
      if (k == node) continue;
      const std::size_t partner = partner_of(k);
      const std::size_t got = std::min(os.got[partner], kPart);
      auto received = bundle_received(got >= 8 ? os.in[partner][0] : 0, got,
                                      std::min(os.got_second[partner], kPart), most, kPart);
      if (!received)
        return fail(received.status().with_context("collective #" + std::to_string(seq) +
                                                   ": node " + std::to_string(k) + " from rank " +
                                                   std::to_string(partner)));
      const std::size_t whole = received.value();
      os.got[partner] = whole;
      if (whole > 2 * kPart) {
        os.in[partner].resize(whole / 8);
        os.recvs.push_back({partner, os.in[partner].data() + 2 * kPart / 8, whole - 2 * kPart,
                            tag(partner, 2), seq});
      }
    }
    if (!os.sends.empty() || !os.recvs.empty()) RUCCL_TRY(exchange());
    for (std::size_t k = 0; k < nodes_; ++k) {
      if (k == node) continue;
      const std::size_t partner = partner_of(k);
      Status parsed =
          bundle_parse(std::span(reinterpret_cast<const std::byte*>(os.in[partner].data() + 1),
                                 os.got[partner] - 8),
                       k * ranks, ranks, os.msg);
      if (!parsed)
        return fail(parsed.with_context("collective #" + std::to_string(seq) +
                                        ": the bundle of node " + std::to_string(k) +
                                        " from rank " + std::to_string(partner)));
    }
    return Status::ok();
  }

  // Local rank `local`'s message (os.out, `bytes` of it) into its slot of the
  // full lane, then every other node rank's, read in place into os.msg
  // (node/mailbox.hpp). Records always fit a slot, and inputs ride along only
  // within fused_capacity(); a failure (a message past the slot, a wait) is
  // told to the node and returned.
  Status share_on_node(std::size_t local, std::uint64_t seq, std::size_t bytes,
                       Clock::time_point deadline) {
    OneShot& os = one_shot_[local];
    node::Mailbox& box = *mailbox_;
    const std::size_t me = first_ + local - box.shape().first;
    const auto fail = [&](Status s) {
      box.notify(me, seq, s);  // like a failed exchange: tell the node
      return s;
    };
    const std::span<std::byte> slot = box.slot(me, seq, node::Lane::kFull);
    if (bytes > slot.size())
      return fail(Status(ErrorCode::kInternal, "a message of " + std::to_string(bytes) +
                                                   " bytes for a node slot of " +
                                                   std::to_string(slot.size())));
    std::memcpy(slot.data(), os.out.data(), bytes);
    box.publish(me, seq, bytes, node::Lane::kFull);
    for (std::size_t r = 0; r < box.shape().ranks; ++r) {
      if (r == me) continue;
      auto m = box.wait(me, r, seq, deadline, node::Lane::kFull);
      if (!m) return fail(m.status());
      os.msg[box.shape().first + r] = m.value().bytes;
    }
    return Status::ok();
  }

  // The transport local rank `local`'s executors send through.
  transport::Transport& executor_transport(std::size_t local) {
    return faulty_.empty() ? *transports_[local] : *faulty_[local];
  }

  core::Logger logger_;  // TRACE lines of the executors (the core logs the rest)
  static std::vector<transport::Transport*> transports_of(
      const SharedLinks& links, const std::vector<std::unique_ptr<transport::Transport>>& views) {
    std::vector<transport::Transport*> out;
    for (const auto& t : views.empty() ? links.transports : views) out.push_back(t.get());
    return out;
  }

  // The root's transports, mailbox, bootstrap and abort flag, shared with
  // every communicator split from it; destroyed last.
  const std::shared_ptr<SharedLinks> links_;
  std::vector<std::unique_ptr<transport::Transport>> views_;  // a child's; empty: the root
  std::vector<transport::Transport*> transports_;             // per local rank
  std::unique_ptr<node::Mailbox> own_mailbox_;  // a child's node segment (split by members)
  node::Mailbox* mailbox_;  // the node's shared memory (the root's only); null: none
  const std::vector<std::size_t> root_peer_;   // this world's rank -> the root's
  const std::vector<std::size_t> root_local_;  // this world's local rank -> the root's
  const std::size_t first_;
  const std::size_t world_;
  const std::size_t nodes_;
  // The hierarchical collectives run a node level (make_world_remote_ranks).
  const bool node_level_;
  // The hierarchical strategy: the agreement across nodes goes in bundles
  // (bundles()); the flat ring's stays one message per pair of ranks, for
  // comparison.
  const bool node_aware_;
  // Which messages on the node's channels go as addresses (NodeRunOptions).
  const bool direct_all_;
  const std::size_t direct_copy_bytes_;
  const std::size_t lean_direct_bytes_;
  // This CPU's host reductions run on 512-bit vectors (core::lean_reduction_direct).
  const bool wide_reductions_;
  mutable std::atomic<bool> node_readable_{false};  // readable_by_node, once it held
  const std::size_t per_process_;
  // RUCCL_FAULT, parsed once at creation; its drop/corrupt faults act through
  // faulty_, the executors' transports (one per local rank; empty: none).
  const std::shared_ptr<const core::FaultPlan> faults_;
  std::vector<std::unique_ptr<transport::Transport>> faulty_;

  // The fused small all-reduce of one local rank (touched only by its thread).
  struct OneShot {
    bool ready = false;  // collective `seq` runs one-shot over the inputs below
    std::uint64_t seq = 0;
    std::size_t count = 0;           // elements of each input
    std::size_t words = 0;           // of the fingerprint record, in front of each input
    std::vector<std::uint64_t> out;  // this rank's record + input
    std::vector<std::vector<std::uint64_t>> in;  // each other rank's message
    std::vector<std::size_t> got;                // bytes received from each rank
    // Each rank's message as received (in `in`, or in place in its node
    // mailbox slot); this rank's own is empty.
    std::vector<std::span<const std::byte>> msg;
    std::vector<std::uint64_t> bundle;     // this node's messages (exchange_by_node)
    std::vector<std::size_t> got_second;   // bytes of each bundle's second message
    std::vector<transport::SendOp> sends;  // the agreement's messages (scratch)
    std::vector<transport::RecvOp> recvs;
  };
  const std::size_t record_bytes_;  // of one fingerprint record (wire_words)
  std::vector<OneShot> one_shot_;   // per local rank
  std::vector<LeanScratch> lean_;   // per local rank
  // Receive buffers of reduction steps, kept across collectives (per local rank).
  std::vector<std::vector<transport::StagingBuffer>> staging_;
  std::vector<std::vector<std::byte>> scratch_;  // NodeRun's, per local rank
};

}  // namespace

std::unique_ptr<core::RemoteRanks> make_world_remote_ranks(
    std::unique_ptr<std::atomic<bool>> abort_flag, std::unique_ptr<bootstrap::Bootstrap> boot,
    std::vector<std::unique_ptr<transport::Transport>> transports,
    std::unique_ptr<node::Mailbox> mailbox, std::size_t first, std::size_t world, std::size_t nodes,
    bool node_level, const Config& config, std::shared_ptr<const core::FaultPlan> faults) {
  const std::size_t per_process = transports.size();
  auto links = std::make_shared<SharedLinks>(std::move(abort_flag), std::move(boot),
                                             std::move(transports), std::move(mailbox));
  std::vector<std::size_t> root_peer(world), root_local(per_process);
  for (std::size_t r = 0; r < world; ++r) root_peer[r] = r;
  for (std::size_t i = 0; i < per_process; ++i) root_local[i] = i;
  return std::make_unique<WorldRemoteRanks>(std::move(links),
                                            std::vector<std::unique_ptr<transport::Transport>>{},
                                            std::move(root_peer), std::move(root_local), first,
                                            world, nodes, config, std::move(faults), nullptr,
                                            node_level);
}

}  // namespace ruccl::world
