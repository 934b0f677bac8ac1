#include "world/shared_links.hpp"

#include <string>
#include <thread>
#include <utility>

namespace ruccl::world {
namespace {

using transport::Clock;
constexpr auto kCloseBound = std::chrono::seconds(2);  // graceful endpoint closes at destruction

class TransportView final : public transport::Transport {
 public:
  TransportView(std::shared_ptr<SharedLinks> links, std::size_t root_local,
                std::vector<std::size_t> root_peer, std::uint32_t slot)
      : links_(std::move(links)),
        inner_(*links_->transports[root_local]),
        slots_(links_->slots[root_local]),
        root_peer_(std::move(root_peer)),
        slot_(slot) {}  // the slot's claim is its creator's (core::agree_on_slot), now the view's
  ~TransportView() override { slots_.fetch_and(~(std::uint64_t{1} << slot_)); }

  std::vector<std::byte> address() const override { return inner_.address(); }
  Status connect(const std::vector<std::vector<std::byte>>&, Clock::time_point) override {
    return Status::ok();
  }
  Status handshake(Clock::time_point) override { return Status::ok(); }

  Status exchange(std::span<const transport::SendOp> sends,
                  std::span<const transport::RecvOp> recvs, Clock::time_point deadline) override {
    RUCCL_TRY(map_all(sends, recvs));
    return named(inner_.exchange(sends_, recvs_, deadline));
  }
  Status exchange_rounds(const transport::Rounds& rounds, const transport::RoundDone& done,
                         Clock::time_point deadline) override {
    RUCCL_TRY(map_all(rounds.sends, rounds.recvs));
    transport::Rounds mapped = rounds;
    mapped.sends = sends_;
    mapped.recvs = recvs_;
    return named(inner_.exchange_rounds(mapped, done, deadline));
  }

  void notify_failure(std::uint64_t seq, const Status& error) override {
    inner_.notify_failure(seq, error);
  }
  void abort_notify(std::uint64_t seq, const Status& error) override {
    inner_.abort_notify(seq, error);
  }
  void watch_peers(std::function<Status(std::size_t)>) override {}
  bool supports(transport::MemoryType type) const override { return inner_.supports(type); }
  std::string describe_lanes(std::size_t peer) const override {
    return peer < root_peer_.size() ? inner_.describe_lanes(root_peer_[peer]) : std::string("-");
  }
  Status close(Clock::time_point) override { return Status::ok(); }

 private:
  // The transport names peers by their rank in the root world.
  Status named(Status s) const {
    if (s) return s;
    return s.with_context("a split communicator's transport (slot " + std::to_string(slot_) +
                          "; ranks below are those of the world it was split from)");
  }
  // sends_ and recvs_: the ops in the root's numbering and this slot's tags.
  Status map_all(std::span<const transport::SendOp> sends,
                 std::span<const transport::RecvOp> recvs) {
    sends_.assign(sends.begin(), sends.end());
    recvs_.assign(recvs.begin(), recvs.end());
    for (auto& op : sends_) RUCCL_TRY(map(op.peer, op.tag));
    for (auto& op : recvs_) RUCCL_TRY(map(op.peer, op.tag));
    return Status::ok();
  }
  Status map(std::size_t& peer, std::uint64_t& tag) const {
    transport::TagFields f = transport::split_tag(tag);
    if (peer >= root_peer_.size() || f.comm >= kCommsPerSlot)
      return Status(ErrorCode::kInvalidArgument,
                    "exchange: peer " + std::to_string(peer) + " of " +
                        std::to_string(root_peer_.size()) + " or communicator field " +
                        std::to_string(f.comm) + " out of range (a split communicator's view)");
    peer = root_peer_[peer];
    f.comm += slot_ * kCommsPerSlot;
    tag = transport::make_tag(f);
    return Status::ok();
  }

  const std::shared_ptr<SharedLinks> links_;  // keeps inner_ and slots_ alive
  transport::Transport& inner_;
  std::atomic<std::uint64_t>& slots_;
  const std::vector<std::size_t> root_peer_;
  const std::uint32_t slot_;
  std::vector<transport::SendOp> sends_;  // scratch of exchange (the owning thread's)
  std::vector<transport::RecvOp> recvs_;
};

}  // namespace

SharedLinks::SharedLinks(std::unique_ptr<std::atomic<bool>> abort,
                         std::unique_ptr<bootstrap::Bootstrap> boot,
                         std::vector<std::unique_ptr<transport::Transport>> links,
                         std::unique_ptr<node::Mailbox> box)
    : abort_flag(std::move(abort)),
      bootstrap(std::move(boot)),
      transports(std::move(links)),
      mailbox(std::move(box)),
      slots(transports.size()) {
  for (auto& s : slots) s.store(1);  // slot 0: the root
}

SharedLinks::~SharedLinks() {
  std::vector<std::thread> closers;
  try {
    for (auto& t : transports)
      closers.emplace_back([&t] { (void)t->close(Clock::now() + kCloseBound); });
  } catch (...) {  // no thread: the destructors force-close
  }
  for (auto& c : closers) c.join();
  transports.clear();  // before the mailbox (their liveness watch reads it) and the bootstrap
  mailbox.reset();
  bootstrap.reset();  // may finalise MPI
}

std::unique_ptr<transport::Transport> make_transport_view(std::shared_ptr<SharedLinks> links,
                                                          std::size_t root_local,
                                                          std::vector<std::size_t> root_peer,
                                                          std::uint32_t slot) {
  return std::make_unique<TransportView>(std::move(links), root_local, std::move(root_peer), slot);
}

}  // namespace ruccl::world
