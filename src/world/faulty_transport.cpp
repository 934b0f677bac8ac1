#include "world/faulty_transport.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "transport/tag.hpp"
#include "transport/wire_header.hpp"

namespace ruccl::world {
namespace {

using transport::Clock;
using transport::RecvOp;
using transport::SendOp;

class FaultyTransport final : public transport::Transport {
 public:
  FaultyTransport(transport::Transport& inner, const core::FaultPlan& plan, std::size_t rank)
      : inner_(inner), plan_(plan), rank_(rank) {}

  std::vector<std::byte> address() const override { return inner_.address(); }
  Status connect(const std::vector<std::vector<std::byte>>& addresses,
                 Clock::time_point deadline) override {
    return inner_.connect(addresses, deadline);
  }
  Status handshake(Clock::time_point deadline) override { return inner_.handshake(deadline); }
  void notify_failure(std::uint64_t seq, const Status& error) override {
    inner_.notify_failure(seq, error);
  }
  void abort_notify(std::uint64_t seq, const Status& error) override {
    inner_.abort_notify(seq, error);
  }
  void watch_peers(std::function<Status(std::size_t)> alive) override {
    inner_.watch_peers(std::move(alive));
  }
  bool supports(transport::MemoryType type) const override { return inner_.supports(type); }
  std::string describe_lanes(std::size_t peer) const override {
    return inner_.describe_lanes(peer);
  }
  Status close(Clock::time_point deadline) override { return inner_.close(deadline); }

  Status exchange(std::span<const SendOp> sends, std::span<const RecvOp> recvs,
                  Clock::time_point deadline) override {
    const bool hit = std::any_of(sends.begin(), sends.end(),
                                 [&](const SendOp& op) { return kind_of(op).has_value(); });
    if (!hit) return inner_.exchange(sends, recvs, deadline);
    sends_.clear();
    copies_.clear();
    copies_.reserve(sends.size());  // sends_ points into them: no reallocation
    for (const SendOp& op : sends) {
      const auto kind = kind_of(op);
      if (kind == core::FaultKind::kDrop) continue;  // the message never leaves
      SendOp out = op;
      if (kind == core::FaultKind::kCorrupt) {
        out.checksum = transport::payload_checksum(op.data, op.bytes);
        if (op.bytes == 0) {
          *out.checksum ^= 1;  // nothing to flip: the header lies instead
        } else {
          auto& copy = copies_.emplace_back(op.bytes);
          std::memcpy(copy.data(), op.data, op.bytes);
          copy[op.bytes / 2] ^= std::byte{0x10};  // one bit, after the checksum was taken
          out.data = copy.data();
        }
      }
      sends_.push_back(out);
    }
    return inner_.exchange(sends_, recvs, deadline);
  }

 private:
  std::optional<core::FaultKind> kind_of(const SendOp& op) const {
    const std::uint32_t step = transport::split_tag(op.tag).step;
    if (plan_.find(core::FaultKind::kDrop, rank_, op.seq, step)) return core::FaultKind::kDrop;
    if (plan_.find(core::FaultKind::kCorrupt, rank_, op.seq, step))
      return core::FaultKind::kCorrupt;
    return std::nullopt;
  }

  transport::Transport& inner_;
  const core::FaultPlan& plan_;
  const std::size_t rank_;
  std::vector<SendOp> sends_;                   // scratch of one exchange
  std::vector<std::vector<std::byte>> copies_;  // corrupted payloads of one exchange
};

}  // namespace

bool has_send_faults(const core::FaultPlan& plan) {
  return std::any_of(plan.faults().begin(), plan.faults().end(), [](const core::Fault& f) {
    return f.kind == core::FaultKind::kDrop || f.kind == core::FaultKind::kCorrupt;
  });
}

std::unique_ptr<transport::Transport> make_faulty_transport(transport::Transport& inner,
                                                            const core::FaultPlan& plan,
                                                            std::size_t rank) {
  return std::make_unique<FaultyTransport>(inner, plan, rank);
}

}  // namespace ruccl::world
