#include "transport/transport_run.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/agreement.hpp"

namespace ruccl::transport {

TransportRun::TransportRun(Transport& transport, DeviceAdapter& adapter, Work& work,
                           std::size_t local, std::size_t rank, std::size_t world,
                           TransportRunOptions options)
    : transport_(transport),
      adapter_(adapter),
      work_(work),
      local_(local),
      rank_(rank),
      world_(world),
      options_(std::move(options)),
      path_(choose_memory_path(adapter.kind(), transport.supports(MemoryType::kCuda),
                               options_.force_staging)),
      pieces_(world, 0) {
  if (!options_.log) return;
  std::string line = "collective #" + std::to_string(options_.seq) + ": memory path " +
                     memory_path_name(path_) + " (" +
                     std::string(device_kind_name(adapter.kind())) + " buffers, transport " +
                     (transport.supports(MemoryType::kCuda) ? "takes" : "cannot take") +
                     " CUDA memory)";
  if (path_ == MemoryPath::kStaged)
    line += ": " + std::to_string(std::max<std::size_t>(options_.staging_slots, 1)) +
            " host buffers per peer and direction of " +
            (options_.staging_segment_bytes == 0
                 ? std::string("one message")
                 : std::to_string(options_.staging_segment_bytes) + " bytes");
  options_.log(line);
}

const char* memory_path_name(MemoryPath path) noexcept {
  switch (path) {
    case MemoryPath::kHost: return "host";
    case MemoryPath::kDirectDevice: return "direct device";
    case MemoryPath::kStaged: return "staged";
  }
  return "unknown";
}

MemoryPath choose_memory_path(DeviceKind buffers, bool transport_takes_device_memory,
                              bool force_staging) noexcept {
  if (force_staging) return MemoryPath::kStaged;
  if (buffers == DeviceKind::kHost) return MemoryPath::kHost;
  return transport_takes_device_memory ? MemoryPath::kDirectDevice : MemoryPath::kStaged;
}

void TransportRun::stamp_ops() {
  for (RecvOp& op : recv_ops_) op.seq = options_.seq;
  for (SendOp& op : send_ops_) op.seq = options_.seq;
}

Status TransportRun::exchange_ops(std::uint32_t step, Clock::time_point deadline) {
  stamp_ops();
  return step_error(transport_.exchange(send_ops_, recv_ops_, deadline), step);
}

Status TransportRun::step_error(Status status, std::uint32_t step) const {
  if (status) return status;
  return status.with_context(core::describe(options_.seq, options_.kind) + " step " +
                             std::to_string(step));
}

Result<const void*> TransportRun::source(const Transfer& t) const {
  // The range comes from a schedule over the agreed plan: a plan that does
  // not fit this rank's buffer must not send the memory behind it to a peer.
  auto r = core::resolve(work_, t, Combine::kCopy, local_, core::kElsewhere);
  RUCCL_TRY(r);
  return static_cast<const void*>(r.value().src);
}

Result<std::byte*> TransportRun::destination(const Transfer& t, Combine combine) const {
  auto r = core::resolve(work_, t, combine, core::kElsewhere, local_);
  RUCCL_TRY(r);
  return r.value().dst;
}

bool TransportRun::staging(Combine combine) const {
  // Where a received message goes on the direct paths (host memory, or device
  // memory the transport writes itself): a copy lands in place, a reduction
  // needs the message in host memory first (core::combine).
  return combine != Combine::kCopy;
}

Status TransportRun::step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
                          Combine combine) {
  return step(sends, recvs, combine, {});
}

Status TransportRun::step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
                          Combine combine, const std::function<Status()>& alongside) {
  if (path_ == MemoryPath::kStaged) {
    if (alongside) RUCCL_TRY(alongside());
    return staged_step(sends, recvs, combine);
  }
  const std::size_t es = dtype_size(work_.dtype);
  const bool stage = staging(combine);
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  // A staged step files each message under its stream (peer), in piece order.
  auto file = [](std::vector<std::vector<std::size_t>>& streams, std::size_t& used,
                 std::vector<std::size_t>& stream_of, std::size_t peer, std::size_t index) {
    std::size_t& at = stream_of[peer];
    if (at == kNone) {
      if (used == streams.size()) streams.emplace_back();
      at = used++;
      streams[at].clear();
    }
    streams[at].push_back(index);
  };
  send_ops_.clear();
  recv_ops_.clear();
  self_.clear();
  if (stage) {
    step_recvs_.clear();
    out_used_ = in_used_ = 0;
    out_stream_of_.assign(world_, kNone);
    in_stream_of_.assign(world_, kNone);
  }
  std::fill(pieces_.begin(), pieces_.end(), 0);
  for (const Transfer& t : sends) {
    if (t.src.count == 0 || t.peer == rank_) continue;  // self: done as a receive
    if (t.peer >= world_) return Status(ErrorCode::kInternal, "send to a rank outside the world");
    const std::uint64_t tag =
        make_tag({options_.comm, options_.seq, step_, static_cast<std::uint32_t>(rank_),
                  pieces_[t.peer]++});
    auto from = source(t);
    RUCCL_TRY(from);
    if (stage) file(out_pieces_, out_used_, out_stream_of_, t.peer, send_ops_.size());
    send_ops_.push_back(SendOp{peer_of(t.peer), from.value(), t.src.count * es, tag});
  }
  std::fill(pieces_.begin(), pieces_.end(), 0);
  for (const Transfer& t : recvs) {
    if (t.src.count == 0) continue;
    if (t.peer == rank_) {
      self_.push_back(Transfer{local_, t.src, t.dst_offset, t.source});
      continue;
    }
    if (t.peer >= world_) return Status(ErrorCode::kInternal, "receive from a rank outside the world");
    auto into = destination(t, combine);
    RUCCL_TRY(into);
    const std::uint64_t tag = make_tag({options_.comm, options_.seq, step_,
                                        static_cast<std::uint32_t>(t.peer), pieces_[t.peer]++});
    if (stage) {
      file(in_pieces_, in_used_, in_stream_of_, t.peer, step_recvs_.size());
      step_recvs_.push_back(StagedRecv{RecvOp{peer_of(t.peer), nullptr, t.src.count * es, tag}, &t});
    } else {
      recv_ops_.push_back(RecvOp{peer_of(t.peer), into.value(), t.src.count * es, tag});
    }
  }
  ++step_;
  if (!self_.empty()) RUCCL_TRY(core::exchange(adapter_, work_, local_, self_, combine));
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  if (stage) {
    if (alongside) RUCCL_TRY(alongside());
    return staged_rounds(combine, deadline);
  }
  if (!alongside) return exchange_ops(step_ - 1, deadline);
  // Round 0 is empty, so it is delivered (and `alongside` runs) as soon as
  // round 1, every message of the step, is posted.
  stamp_ops();
  const std::array<std::size_t, 3> send_begin{0, 0, send_ops_.size()};
  const std::array<std::size_t, 3> recv_begin{0, 0, recv_ops_.size()};
  const Rounds rounds{send_ops_, recv_ops_, send_begin, recv_begin, 2};
  Status side;
  const Status status = transport_.exchange_rounds(
      rounds,
      [&](std::size_t round) {
        if (round == 0) side = alongside();
        return side;
      },
      deadline);
  if (!side) return side;
  return step_error(status, step_ - 1);
}

// A reduction step on the direct path: round r exchanges piece r of every
// stream, both directions (a stream without one sits the round out), and
// combines what it received. The peers number pieces alike
// (ring::append_messages on both sides), so round r here meets round r
// there; a peer running all of its messages in one exchange (a step that
// does not stage) meets every round too. kRoundsInFlight rounds are in flight
// (Transport::exchange_rounds): each receiving stream has that many buffers,
// round r's in buffer r % kRoundsInFlight, and round r + kRoundsInFlight is
// posted once round r was combined, so piece r + 1 arrives while piece r is
// combined.
Status TransportRun::staged_rounds(Combine combine, Clock::time_point deadline) {
  // Two rounds in flight where two buffers per receiving stream fit the
  // call's budget (options_.staging_bytes), else one (so staging stays within
  // max_chunk_bytes: one message per peer, as before when the messages are
  // as large as the budget allows).
  std::size_t pipelined = 0;  // staging with kRoundsInFlight buffers per stream
  std::size_t rounds = 0;
  for (std::size_t s = 0; s < in_used_; ++s) {
    const std::vector<std::size_t>& pieces = in_pieces_[s];
    std::array<std::size_t, kRoundsInFlight> largest{};
    for (std::size_t r = 0; r < pieces.size(); ++r)
      largest[r % kRoundsInFlight] =
          std::max(largest[r % kRoundsInFlight], step_recvs_[pieces[r]].op.bytes);
    for (const std::size_t bytes : largest) pipelined += bytes;
    rounds = std::max(rounds, pieces.size());
  }
  const std::size_t depth = pipelined <= options_.staging_bytes ? kRoundsInFlight : 1;
  // Buffer k of stream s (buffers[s * kRoundsInFlight + k], k < depth) as
  // large as the largest message of its rounds (r % depth == k): at most one
  // message. Reallocated (freeing first) when too small, or when larger than
  // this run's messages may be (a kept buffer of a run under a larger budget).
  std::vector<StagingBuffer>& buffers =
      options_.staging_cache != nullptr ? *options_.staging_cache : staging_buffers_;
  if (buffers.size() < in_used_ * kRoundsInFlight) buffers.resize(in_used_ * kRoundsInFlight);
  const std::size_t limit = options_.message_elements * dtype_size(work_.dtype);
  std::size_t held = 0;
  for (std::size_t s = 0; s < in_used_; ++s) {
    const std::vector<std::size_t>& pieces = in_pieces_[s];
    for (std::size_t k = 0; k < depth && k < pieces.size(); ++k) {
      std::size_t largest = 0;
      for (std::size_t r = k; r < pieces.size(); r += depth)
        largest = std::max(largest, step_recvs_[pieces[r]].op.bytes);
      StagingBuffer& buffer = buffers[s * kRoundsInFlight + k];
      if (buffer.bytes < largest || buffer.bytes > std::max(limit, largest)) {
        buffer.data.reset();
        buffer.bytes = 0;
        buffer.data = std::make_unique_for_overwrite<std::byte[]>(largest);
        buffer.bytes = largest;
      }
      held += buffer.bytes;
    }
  }
  peak_staging_ = std::max(peak_staging_, held);
  for (std::size_t s = 0; s < out_used_; ++s) rounds = std::max(rounds, out_pieces_[s].size());
  rounds = std::max<std::size_t>(rounds, 1);  // a step without messages still exchanges (nothing)

  const auto buffer_of = [&](std::size_t s, std::size_t r) {
    return buffers[s * kRoundsInFlight + r % depth].data.get();
  };
  std::swap(send_ops_, step_sends_);  // step_sends_: every send of the step
  send_ops_.clear();                  // then: the step's sends and receives in round order
  recv_ops_.clear();
  send_begin_.assign(1, 0);
  recv_begin_.assign(1, 0);
  for (std::size_t r = 0; r < rounds; ++r) {
    for (std::size_t s = 0; s < out_used_; ++s)
      if (r < out_pieces_[s].size()) send_ops_.push_back(step_sends_[out_pieces_[s][r]]);
    for (std::size_t s = 0; s < in_used_; ++s) {
      if (r >= in_pieces_[s].size()) continue;
      RecvOp op = step_recvs_[in_pieces_[s][r]].op;
      op.data = buffer_of(s, r);
      recv_ops_.push_back(op);
    }
    send_begin_.push_back(send_ops_.size());
    recv_begin_.push_back(recv_ops_.size());
  }
  stamp_ops();
  // Round r's messages combined, and complete before round r + depth
  // receives into their buffers.
  const RoundDone combined = [&](std::size_t r) -> Status {
    core::Queued queued(adapter_, work_.ranks[local_].queue());
    return queued.settle([&]() -> Status {
      for (std::size_t s = 0; s < in_used_; ++s) {
        if (r >= in_pieces_[s].size()) continue;
        const Transfer& t = *step_recvs_[in_pieces_[s][r]].transfer;
        RUCCL_TRY(queued.add(core::combine(adapter_, work_, local_, t.dst_offset, buffer_of(s, r),
                                           t.src.count, combine)));
      }
      return Status::ok();
    }());
  };
  const Rounds plan{send_ops_, recv_ops_, send_begin_, recv_begin_, depth};
  return step_error(transport_.exchange_rounds(plan, combined, deadline), step_ - 1);
}

// ---- The staged path (MemoryPath::kStaged) ----------------------------------
// One step: the messages grouped into one stream per peer and direction (same
// pieces and tags as step()), the staging::plan schedule over them, and the
// host buffers it needs, allocated through the adapter and kept for later
// steps of this collective.
Status TransportRun::staged_step(std::span<const Transfer> sends,
                                 std::span<const Transfer> recvs, Combine combine) {
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  RUCCL_TRY(collect_streams(sends, recvs, combine));
  ++step_;
  if (!self_.empty()) RUCCL_TRY(core::exchange(adapter_, work_, local_, self_, combine));
  const std::size_t es = dtype_size(work_.dtype);
  auto sizes = [](const std::vector<StagedStream>& streams) {
    std::vector<staging::StreamSizes> out(streams.size());
    for (std::size_t s = 0; s < streams.size(); ++s)
      for (const StagedMessage& m : streams[s].messages) out[s].push_back(m.transfer->src.count);
    return out;
  };
  const std::size_t segment = options_.staging_segment_bytes == 0
                                  ? std::numeric_limits<std::size_t>::max()
                                  : std::max<std::size_t>(options_.staging_segment_bytes / es, 1);
  const staging::Schedule plan =
      staging::plan(sizes(out_streams_), sizes(in_streams_), segment, options_.staging_slots);
  slots_ = plan.slots;
  slot_bytes_ = plan.segment * es;
  const std::size_t bytes = (out_streams_.size() + in_streams_.size()) * slots_ * slot_bytes_;
  if (bytes > host_staging_bytes_) {
    host_staging_.reset();
    host_staging_bytes_ = 0;
    auto memory = adapter_.allocate_host_staging(work_.ranks[local_].device, bytes);
    if (!memory.is_ok())
      return memory.status().with_context("rank " + std::to_string(rank_) + ": " +
                                          std::to_string(bytes) + " bytes of host staging");
    host_staging_ = std::move(memory.value());
    host_staging_bytes_ = bytes;
  }
  peak_staging_ = std::max(peak_staging_, host_staging_bytes_);
  return run_schedule(plan, combine, deadline);
}

Status TransportRun::collect_streams(std::span<const Transfer> sends,
                                     std::span<const Transfer> recvs, Combine combine) {
  out_streams_.clear();
  in_streams_.clear();
  self_.clear();
  auto add = [this](std::vector<StagedStream>& streams, const Transfer& t, std::size_t src) {
    std::size_t& at = stream_of_[t.peer];
    if (at == std::numeric_limits<std::size_t>::max()) {  // the peer's first message
      at = streams.size();
      streams.push_back(StagedStream{t.peer, {}});
    }
    std::vector<StagedMessage>& messages = streams[at].messages;
    messages.push_back({&t, make_tag({options_.comm, options_.seq, step_,
                                      static_cast<std::uint32_t>(src),
                                      static_cast<std::uint32_t>(messages.size())})});
  };
  stream_of_.assign(world_, std::numeric_limits<std::size_t>::max());
  for (const Transfer& t : sends) {
    if (t.src.count == 0 || t.peer == rank_) continue;  // self: done as a receive
    if (t.peer >= world_) return Status(ErrorCode::kInternal, "send to a rank outside the world");
    add(out_streams_, t, rank_);
  }
  stream_of_.assign(world_, std::numeric_limits<std::size_t>::max());
  for (const Transfer& t : recvs) {
    if (t.src.count == 0) continue;
    if (t.peer == rank_) {
      self_.push_back(Transfer{local_, t.src, t.dst_offset, t.source});
    } else if (t.peer >= world_) {
      return Status(ErrorCode::kInternal,
                    "staged receive from rank " + std::to_string(t.peer) + " outside the world");
    } else {
      RUCCL_TRY(destination(t, combine));
      add(in_streams_, t, t.peer);
    }
  }
  return Status::ok();
}

std::byte* TransportRun::slot_buffer(bool send, std::size_t stream, std::size_t slot) const {
  const std::size_t index = (send ? stream : out_streams_.size() + stream) * slots_ + slot;
  return static_cast<std::byte*>(host_staging_.get()) + index * slot_bytes_;
}

// Executes the actions in order. Whatever staging work was queued is complete
// when this returns, also after a failure: no copy may touch the host buffers
// or the rank's device buffers once the step is over.
Status TransportRun::run_schedule(const staging::Schedule& plan, Combine combine,
                                  Clock::time_point deadline) {
  const std::size_t es = dtype_size(work_.dtype);
  const Queue queue = work_.ranks[local_].queue();
  out_tickets_.assign(plan.sends.size(), 0);
  in_tickets_.assign(plan.recvs.size(), 0);
  core::Queued queued(adapter_, queue);  // waited for after a failure
  auto keep = [&queued](Result<core::Ticket> ticket, core::Ticket& into) -> Status {
    RUCCL_TRY(queued.add(ticket));
    into = ticket.value();
    return Status::ok();
  };
  auto message = [](const std::vector<StagedStream>& streams, const staging::Segment& seg) {
    return streams[seg.stream].messages[seg.message];
  };
  Status status = [&]() -> Status {
    for (const staging::Action& a : plan.actions) {
      switch (a.kind) {
        case staging::ActionKind::kStageOut: {
          const staging::Segment& seg = plan.sends[a.index];
          const Transfer& t = *message(out_streams_, seg).transfer;
          auto from =
              source(Transfer{t.peer, Range{t.src.offset + seg.offset, seg.count}, 0, t.source});
          RUCCL_TRY(from);
          RUCCL_TRY(keep(adapter_.copy(queue, slot_buffer(true, seg.stream, seg.slot), from.value(),
                                       seg.count * es),
                         out_tickets_[a.index]));
          break;
        }
        case staging::ActionKind::kAwaitStageOut:
          RUCCL_TRY(adapter_.wait(queue, out_tickets_[a.index]));
          break;
        case staging::ActionKind::kAwaitStageIn:
          RUCCL_TRY(adapter_.wait(queue, in_tickets_[a.index]));
          break;
        case staging::ActionKind::kExchange: {
          send_ops_.clear();
          recv_ops_.clear();
          for (std::size_t i = plan.send_begin[a.index]; i < plan.send_begin[a.index + 1]; ++i) {
            const staging::Segment& seg = plan.sends[i];
            send_ops_.push_back(SendOp{peer_of(out_streams_[seg.stream].peer),
                                       slot_buffer(true, seg.stream, seg.slot), seg.count * es,
                                       message(out_streams_, seg).tag});
          }
          for (std::size_t i = plan.recv_begin[a.index]; i < plan.recv_begin[a.index + 1]; ++i) {
            const staging::Segment& seg = plan.recvs[i];
            recv_ops_.push_back(RecvOp{peer_of(in_streams_[seg.stream].peer),
                                       slot_buffer(false, seg.stream, seg.slot), seg.count * es,
                                       message(in_streams_, seg).tag});
          }
          RUCCL_TRY(exchange_ops(step_ - 1, deadline));
          break;
        }
        case staging::ActionKind::kStageIn: {
          const staging::Segment& seg = plan.recvs[a.index];
          const Transfer& t = *message(in_streams_, seg).transfer;
          RUCCL_TRY(
              keep(core::combine(adapter_, work_, local_, t.dst_offset + seg.offset,
                                 slot_buffer(false, seg.stream, seg.slot), seg.count, combine),
                   in_tickets_[a.index]));
          break;
        }
      }
    }
    return Status::ok();
  }();
  if (!status.is_ok()) return queued.settle(status);
  return status;
}

}  // namespace ruccl::transport
