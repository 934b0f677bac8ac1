#include "transport/transport_run.hpp"

#include <algorithm>
#include <string>

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
      options_(options),
      pieces_(world, 0) {}

const void* TransportRun::source(const Transfer& t) const {
  const RankBuffers& me = work_.ranks[local_];
  const void* base = t.source == Source::kInput ? me.input : me.send;
  return static_cast<const std::byte*>(base) + t.src.offset * dtype_size(work_.dtype);
}

bool TransportRun::staging(Combine combine) const {
  // The one place that decides where a received message goes. Host memory: a
  // copy lands in place, a reduction needs the message next to the data.
  return combine != Combine::kCopy;
}

Status TransportRun::step(std::span<const Transfer> sends, std::span<const Transfer> recvs,
                          Combine combine) {
  const std::size_t es = dtype_size(work_.dtype);
  const RankBuffers& me = work_.ranks[local_];
  send_ops_.clear();
  recv_ops_.clear();
  staged_for_.clear();
  self_.clear();
  std::fill(pieces_.begin(), pieces_.end(), 0);
  for (const Transfer& t : sends) {
    if (t.src.count == 0 || t.peer == rank_) continue;  // self: done as a receive
    if (t.peer >= world_) return Status(ErrorCode::kInternal, "send to a rank outside the world");
    const std::uint64_t tag =
        make_tag({options_.comm, options_.seq, step_, static_cast<std::uint32_t>(rank_),
                  pieces_[t.peer]++});
    send_ops_.push_back(SendOp{peer_of(t.peer), source(t), t.src.count * es, tag});
  }
  std::fill(pieces_.begin(), pieces_.end(), 0);
  std::size_t staged_count = 0;
  for (const Transfer& t : recvs) {
    if (t.src.count == 0) continue;
    if (t.peer == rank_) {
      self_.push_back(Transfer{local_, t.src, t.dst_offset, t.source});
      continue;
    }
    if (t.peer >= world_) return Status(ErrorCode::kInternal, "receive from a rank outside the world");
    if (me.recv == nullptr || t.dst_offset + t.src.count > me.recv_count)
      return Status(ErrorCode::kInternal, "receive range outside rank " + std::to_string(rank_) +
                                              "'s buffer");
    const std::uint64_t tag = make_tag({options_.comm, options_.seq, step_,
                                        static_cast<std::uint32_t>(t.peer), pieces_[t.peer]++});
    void* into = static_cast<std::byte*>(me.recv) + t.dst_offset * es;
    if (staging(combine)) {
      if (staged_.size() <= staged_count) staged_.emplace_back();
      staged_[staged_count].resize(t.src.count * es);
      into = staged_[staged_count++].data();
      staged_for_.push_back(&t);
    }
    recv_ops_.push_back(RecvOp{peer_of(t.peer), into, t.src.count * es, tag});
  }
  ++step_;
  if (!self_.empty()) RUCCL_TRY(adapter_.exchange(work_, local_, self_, combine));
  RUCCL_TRY(transport_.exchange(send_ops_, recv_ops_, Clock::now() + options_.timeout));
  for (std::size_t i = 0; i < staged_for_.size(); ++i) {
    const Transfer& t = *staged_for_[i];
    RUCCL_TRY(adapter_.combine(work_, local_, t.dst_offset, staged_[i].data(), t.src.count, combine));
  }
  return Status::ok();
}

}  // namespace ruccl::transport
