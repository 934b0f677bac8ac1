#include "world/node_run.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/agreement.hpp"

namespace ruccl::world {

NodeRun::NodeRun(node::Mailbox& box, DeviceAdapter& adapter, Work& work, std::size_t local,
                 std::size_t rank, std::size_t world, NodeRunOptions options)
    : box_(box),
      adapter_(adapter),
      work_(work),
      local_(local),
      rank_(rank),
      world_(world),
      me_(options.peer_base + rank * options.peer_stride - box.shape().first),
      options_(options) {
  piece_elements_ = std::max<std::size_t>(1, box_.shape().channel_piece / dtype_size(work_.dtype));
}

Status NodeRun::file(std::vector<Stream>& streams, const Transfer& t) {
  if (t.peer >= world_)
    return Status(ErrorCode::kInternal, "a message between rank " + std::to_string(rank_) +
                                            " and rank " + std::to_string(t.peer) +
                                            ", outside the group of " + std::to_string(world_));
  const std::size_t peer = node_rank(t.peer);
  std::size_t& used = &streams == &outs_ ? outs_used_ : ins_used_;
  Stream* s = nullptr;
  for (std::size_t i = 0; i < used; ++i)
    if (streams[i].node_peer == peer) s = &streams[i];
  if (s == nullptr) {
    if (used == streams.size()) streams.emplace_back();
    s = &streams[used++];
    s->node_peer = peer;
    s->messages.clear();
    s->at = s->done = 0;
    // Addresses only toward a rank that reads them, of host memory (step()
    // narrows it to the messages it suits).
    s->direct =
        &streams == &outs_ && adapter_.kind() == DeviceKind::kHost && box_.reads_directly(peer);
  }
  s->messages.push_back(&t);
  return Status::ok();
}

Status NodeRun::step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
                     Combine combine) {
  outs_used_ = ins_used_ = 0;
  self_.clear();
  for (const Transfer& t : sends) {
    if (t.src.count == 0 || t.peer == rank_) continue;  // self: done as a receive
    // The range comes from a schedule over the agreed plan: one that does not
    // fit this rank's buffer must not copy the memory behind it to a peer.
    RUCCL_TRY(core::resolve(work_, t, Combine::kCopy, local_, core::kElsewhere));
    RUCCL_TRY(file(outs_, t));
  }
  // Without shm-direct, addresses only for messages in this process's
  // regions (the peer reads them in place), or else a copy step's of at most
  // direct_copy_bytes (larger ones pipeline better through the segment than
  // through process_vm_readv).
  if (!options_.direct_all) {
    const std::size_t es = dtype_size(work_.dtype);
    for (std::size_t i = 0; i < outs_used_; ++i) {
      Stream& s = outs_[i];
      bool small = combine == Combine::kCopy && options_.direct_copy_bytes > 0;
      for (std::size_t m = 0; m < s.messages.size() && small; ++m)
        small = s.messages[m]->src.count <= options_.direct_copy_bytes / es;
      s.direct = s.direct && (small || in_regions(s));
    }
  }
  for (const Transfer& t : recvs) {
    if (t.src.count == 0) continue;
    if (t.peer == rank_) {
      self_.push_back(Transfer{local_, t.src, t.dst_offset, t.source});
      continue;
    }
    RUCCL_TRY(core::resolve(work_, t, combine, core::kElsewhere, local_));
    RUCCL_TRY(file(ins_, t));
  }
  ++step_;
  if (!self_.empty()) RUCCL_TRY(core::exchange(adapter_, work_, local_, self_, combine));
  deadline_ = std::chrono::steady_clock::now() + options_.timeout;
  // No peer may read this rank's buffers once the call returns: whatever ends
  // the step but success (an error, an exception) withdraws the address
  // pieces still offered.
  struct Guard {
    explicit Guard(NodeRun& r) : run(r) {}
    NodeRun& run;
    bool armed = true;
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() {
      if (armed) run.withdraw_offered();
    }
  } guard{*this};
  Status status = run(combine, deadline_);
  if (status) {
    guard.armed = false;
    return status;
  }
  status = status.with_context(core::describe(options_.seq, options_.kind) + " step " +
                               std::to_string(step_ - 1) + " (node shared memory)");
  // At once, not only once the error left the algorithm (a hierarchy's other
  // levels may still run): the node's waiters on this rank stop waiting.
  box_.notify(me_, options_.seq, status);
  return status;
}

bool NodeRun::in_regions(const Stream& s) const {
  const std::size_t es = dtype_size(work_.dtype);
  for (const Transfer* t : s.messages) {
    auto r = core::resolve(work_, *t, Combine::kCopy, local_, core::kElsewhere);
    if (!r.is_ok() || !box_.regions()->owns(r.value().src, t->src.count * es)) return false;
  }
  return true;
}

void NodeRun::withdraw_offered() noexcept {
  try {
    for (std::size_t i = 0; i < outs_used_; ++i)
      if (outs_[i].direct &&
          box_.consumed(me_, outs_[i].node_peer) != box_.written(me_, outs_[i].node_peer))
        box_.withdraw(me_, outs_[i].node_peer, deadline_);
  } catch (...) {  // withdraw allocates only to name a dead peer
  }
}

Result<bool> NodeRun::push(Stream& s, Combine combine) {
  const std::size_t es = dtype_size(work_.dtype);
  const Queue queue = work_.ranks[local_].queue();
  bool moved = false;
  while (s.at < s.messages.size()) {
    const std::uint64_t piece = box_.written(me_, s.node_peer);
    if (!box_.writable(me_, s.node_peer, piece)) break;
    const Transfer& t = *s.messages[s.at];
    const std::size_t n = std::min(piece_of(t.src.count, combine), t.src.count - s.done);
    auto r = core::resolve(work_, Transfer{t.peer, Range{t.src.offset + s.done, n}, 0, t.source},
                           Combine::kCopy, local_, core::kElsewhere);
    RUCCL_TRY(r);
    if (s.direct) {
      box_.publish_piece(me_, s.node_peer, piece, n * es,
                         reinterpret_cast<std::uintptr_t>(r.value().src), stamp(s));
    } else {
      RUCCL_TRY(
          core::completed(adapter_, queue,
                          adapter_.copy(queue, box_.piece_slot(me_, s.node_peer, piece).data(),
                                        r.value().src, n * es)));
      box_.publish_piece(me_, s.node_peer, piece, n * es, 0, stamp(s));
    }
    moved = true;
    if ((s.done += n) == t.src.count) ++s.at, s.done = 0;
  }
  return moved;
}

Result<bool> NodeRun::pull(Stream& s, Combine combine, std::size_t max_pieces) {
  const std::size_t es = dtype_size(work_.dtype);
  const Queue queue = work_.ranks[local_].queue();
  bool moved = false;
  for (std::size_t pulled = 0; s.at < s.messages.size() && pulled < max_pieces; ++pulled) {
    const Transfer& t = *s.messages[s.at];
    const std::size_t n = std::min(piece_of(t.src.count, combine), t.src.count - s.done);
    const std::uint64_t piece = box_.consumed(s.node_peer, me_);
    auto got = box_.readable(s.node_peer, me_, piece, n * es, stamp(s));
    RUCCL_TRY(got);
    const node::Mailbox::Piece& p = got.value();
    if (!p.ready) break;
    const void* message = p.bytes.data();
    bool staged = true;  // the piece lies in the segment or the scratch
    if (p.address != 0 && combine == Combine::kCopy && adapter_.kind() == DeviceKind::kHost) {
      // Read straight into the destination (read_from copies from this
      // process's mapping where the piece lies in one of the producer's
      // regions, else through the kernel).
      auto r = core::resolve(work_, Transfer{t.peer, Range{0, n}, t.dst_offset + s.done, t.source},
                             combine, core::kElsewhere, local_);
      RUCCL_TRY(r);
      RUCCL_TRY(box_.read_from(s.node_peer, me_, p.address, r.value().dst, n * es, deadline_));
      message = nullptr;
    } else if (p.address != 0) {
      if (const std::byte* in_place = box_.view(s.node_peer, p.address, n * es)) {
        // In a region of the producer's process, mapped here: combined from
        // there, while the producer cannot have withdrawn it.
        RUCCL_TRY(box_.read_guarded(s.node_peer, me_, deadline_, [&] {
          return core::completed(adapter_, queue,
                                 core::combine(adapter_, work_, local_, t.dst_offset + s.done,
                                               in_place, n, combine));
        }));
        message = nullptr;
        staged = false;
      } else {  // read into scratch, then combined
        std::vector<std::byte>& scratch = options_.scratch ? *options_.scratch : own_scratch_;
        if (scratch.size() < n * es) scratch.resize(n * es);
        RUCCL_TRY(box_.read_from(s.node_peer, me_, p.address, scratch.data(), n * es, deadline_));
        message = scratch.data();
      }
    }
    if (combine != Combine::kCopy && staged) peak_staging_ = std::max(peak_staging_, n * es);
    if (message != nullptr)
      RUCCL_TRY(core::completed(adapter_, queue,
                                core::combine(adapter_, work_, local_, t.dst_offset + s.done,
                                              message, n, combine)));
    box_.release_piece(s.node_peer, me_, piece);
    moved = true;
    if ((s.done += n) == t.src.count) ++s.at, s.done = 0;
  }
  return moved;
}

bool NodeRun::ready() const {
  for (std::size_t i = 0; i < outs_used_; ++i) {
    const Stream& s = outs_[i];
    if (s.at < s.messages.size() && box_.writable(me_, s.node_peer, box_.written(me_, s.node_peer)))
      return true;
  }
  for (std::size_t i = 0; i < ins_used_; ++i) {
    const Stream& s = ins_[i];
    if (s.at < s.messages.size() &&
        box_.written(s.node_peer, me_) > box_.consumed(s.node_peer, me_))
      return true;
  }
  return false;
}

bool NodeRun::drained() const {
  for (std::size_t i = 0; i < outs_used_; ++i)
    if (outs_[i].direct &&
        box_.consumed(me_, outs_[i].node_peer) != box_.written(me_, outs_[i].node_peer))
      return false;
  return true;
}

Status NodeRun::run(Combine combine, std::chrono::steady_clock::time_point deadline) {
  watch_.clear();
  for (std::size_t i = 0; i < outs_used_; ++i) watch_.push_back(outs_[i].node_peer);
  for (std::size_t i = 0; i < ins_used_; ++i) watch_.push_back(ins_[i].node_peer);
  // A producer of address pieces publishes its next one only when its thread
  // comes back to push: one piece in at a time between pushes, so that its
  // peer is not left without pieces while this thread combines.
  bool one_at_a_time = false;
  for (std::size_t i = 0; i < outs_used_; ++i) one_at_a_time = one_at_a_time || outs_[i].direct;
  for (;;) {
    bool moved = false, done = true;
    for (std::size_t i = 0; i < outs_used_; ++i) {
      auto m = push(outs_[i], combine);
      RUCCL_TRY(m);
      moved = moved || m.value();
      done = done && outs_[i].at == outs_[i].messages.size();
    }
    for (std::size_t i = 0; i < ins_used_; ++i) {
      auto m = pull(ins_[i], combine, one_at_a_time ? 1 : SIZE_MAX);
      RUCCL_TRY(m);
      moved = moved || m.value();
      done = done && ins_[i].at == ins_[i].messages.size();
    }
    if (done && drained()) return Status::ok();
    if (moved) continue;
    RUCCL_TRY(box_.await(
        me_, watch_, deadline, [&] { return done ? drained() : ready(); },
        [this] {
          std::string peers;
          for (std::size_t r : watch_)
            peers += (peers.empty() ? "rank " : ", rank ") + std::to_string(box_.shape().first + r);
          return "the pieces of this step with " + peers + " on the node's shared memory";
        }));
  }
}

}  // namespace ruccl::world
