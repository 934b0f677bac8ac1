// The seed's session API over the in-process communicator.
//
// State machine of one round: peers register (until num_devices have), the
// group forms (ranks = peers in ascending id order), collectives run, peers
// finish; when the last peer finishes the round is over and registrations clear.
// reset_collective ends the round at once: it bumps the epoch, aborts the group
// and wakes every waiter with kAborted.
#include "ruccl/session.hpp"

#include <string>

namespace ruccl {
namespace {
std::string peer_str(PeerId p) { return "peer " + std::to_string(p); }
}  // namespace

Session::~Session() { reset_collective(); }

Status Session::register_peer(PeerId peer, DeviceId device, const Config& config) {
  RUCCL_TRY(config.validate());
  std::lock_guard lock(mutex_);
  if (peers_.count(peer))
    return Status(ErrorCode::kDuplicateRegistration, peer_str(peer) + " is already registered");
  for (const auto& [other, reg] : peers_) {
    if (reg.device == device)
      return Status(ErrorCode::kDuplicateRegistration,
                    peer_str(peer) + " registered device " + device_name(device) +
                        ", which " + peer_str(other) + " already uses; devices must be distinct");
  }
  if (!peers_.empty()) {
    const auto& [first, reg] = *peers_.begin();
    if (reg.config.num_devices() != config.num_devices()) {
      poisoned_ = Status(ErrorCode::kDeviceCountMismatch,
                         peer_str(peer) + " registered with num_devices=" +
                             std::to_string(config.num_devices()) + ", " + peer_str(first) +
                             " with num_devices=" + std::to_string(reg.config.num_devices()));
      changed_.notify_all();
      return *poisoned_;
    }
    if (const std::string diff = config.difference(reg.config); !diff.empty()) {
      poisoned_ = Status(ErrorCode::kInvalidArgument,
                         peer_str(peer) + " registered a config that differs from " +
                             peer_str(first) + "'s: " + diff +
                             "; every peer of a group must use the same config");
      changed_.notify_all();
      return *poisoned_;
    }
    if (peers_.size() >= reg.config.num_devices() || group_)
      return Status(ErrorCode::kDeviceCountMismatch,
                    peer_str(peer) + " registered, but the group of " +
                        std::to_string(reg.config.num_devices()) + " devices is already complete");
  }
  peers_.emplace(peer, Registration{device, config});
  if (peers_.size() == config.num_devices()) {
    Status built = build_group_locked();
    if (!built.is_ok()) poisoned_ = built;
  }
  changed_.notify_all();
  return Status::ok();
}

Status Session::build_group_locked() {
  std::vector<DeviceId> devices;
  for (const auto& [id, reg] : peers_) devices.push_back(reg.device);
  const DeviceKind kind = devices.front().kind;
  const Config& config = peers_.begin()->second.config;
  auto& registry = registries_[kind];
  if (!registry || !(registry->config() == config)) {
    // A round with another config gets communicators built with it.
    if (registry) registry->clear("the session's config changed");
    auto adapter = make_adapter(kind);
    RUCCL_TRY(adapter);
    registry = std::make_unique<CommunicatorRegistry>(adapter.value(), config);
  }
  auto comm = registry->communicator(devices);
  RUCCL_TRY(comm);
  group_ = comm.value();
  return Status::ok();
}

Result<std::pair<std::size_t, std::shared_ptr<Communicator>>> Session::group_for(PeerId peer) {
  std::unique_lock lock(mutex_);
  const std::uint64_t epoch = epoch_;
  auto it = peers_.find(peer);
  if (it == peers_.end())
    return Status(ErrorCode::kMissingRegistration,
                  peer_str(peer) + " is not registered; call register_peer first");
  if (finished_.count(peer))
    return Status(ErrorCode::kFinished, peer_str(peer) + " already called finish_collective");
  const auto deadline = std::chrono::steady_clock::now() + it->second.config.timeout();
  while (!group_) {
    if (poisoned_) return *poisoned_;
    if (epoch_ != epoch) return Status(ErrorCode::kAborted, "reset_collective discarded the session");
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !group_ && !poisoned_ &&
        epoch_ == epoch) {
      const std::size_t want = it->second.config.num_devices();
      return Status(ErrorCode::kTimeout,
                    "timed out waiting for the group: " + std::to_string(peers_.size()) + " of " +
                        std::to_string(want) + " peers registered");
    }
  }
  if (epoch_ != epoch) return Status(ErrorCode::kAborted, "reset_collective discarded the session");
  if (poisoned_) return *poisoned_;
  std::size_t rank = 0;
  for (const auto& [id, reg] : peers_) {
    if (id == peer) break;
    ++rank;
  }
  return std::make_pair(rank, group_);
}

Result<std::pair<std::size_t, std::shared_ptr<Communicator>>> Session::communicator(PeerId peer) {
  return group_for(peer);
}

Result<Tensor> Session::all_reduce(PeerId peer, const TensorView& tensor, ReduceOp op) {
  auto g = group_for(peer);
  RUCCL_TRY(g);
  return g.value().second->all_reduce(g.value().first, tensor, op);
}

Result<std::optional<Tensor>> Session::reduce(PeerId peer, const TensorView& tensor, ReduceOp op,
                                              PeerId root) {
  auto g = group_for(peer);
  RUCCL_TRY(g);
  std::size_t root_rank = 0;
  bool unknown_root = false;
  {
    std::lock_guard lock(mutex_);
    auto it = peers_.find(root);
    // An unknown root becomes an out-of-range rank, so every peer gets the error.
    unknown_root = it == peers_.end();
    root_rank = unknown_root ? g.value().second->world_size()
                             : static_cast<std::size_t>(std::distance(peers_.begin(), it));
  }
  auto reduced = g.value().second->reduce(g.value().first, tensor, op, root_rank);
  // The communicator names the stand-in rank; the caller passed a peer id.
  if (unknown_root && !reduced.is_ok())
    return reduced.status().with_context("root " + peer_str(root) + " is not registered");
  return reduced;
}

Result<Tensor> Session::broadcast(PeerId peer, const std::optional<TensorView>& tensor) {
  auto g = group_for(peer);
  RUCCL_TRY(g);
  return g.value().second->broadcast(g.value().first, tensor ? &*tensor : nullptr);
}

Result<Tensor> Session::all_gather(PeerId peer, const TensorView& tensor) {
  auto g = group_for(peer);
  RUCCL_TRY(g);
  return g.value().second->all_gather(g.value().first, tensor);
}

Result<Tensor> Session::reduce_scatter(PeerId peer, const TensorView& tensor, ReduceOp op) {
  auto g = group_for(peer);
  RUCCL_TRY(g);
  return g.value().second->reduce_scatter(g.value().first, tensor, op);
}

Result<AllToAllV> Session::all_to_all_v(PeerId peer, const TensorView& tensor,
                                        std::span<const std::size_t> send_counts) {
  auto g = group_for(peer);
  RUCCL_TRY(g);
  return g.value().second->all_to_all_v(g.value().first, tensor, send_counts);
}

Status Session::finish_collective(PeerId peer) {
  std::lock_guard lock(mutex_);
  if (!peers_.count(peer))
    return Status(ErrorCode::kMissingRegistration, peer_str(peer) + " is not registered");
  if (!finished_.insert(peer).second)
    return Status(ErrorCode::kFinished, peer_str(peer) + " already called finish_collective");
  if (finished_.size() == peers_.size() && peers_.size() == peers_.begin()->second.config.num_devices()) {
    // The round is over: the next round registers afresh (on the same communicator
    // if it uses the same devices).
    peers_.clear();
    finished_.clear();
    group_.reset();
    poisoned_.reset();
  }
  return Status::ok();
}

void Session::reset_collective() {
  std::lock_guard lock(mutex_);
  ++epoch_;
  for (auto& [kind, registry] : registries_) registry->clear("reset_collective discarded the session");
  registries_.clear();
  peers_.clear();
  finished_.clear();
  group_.reset();
  poisoned_.reset();
  changed_.notify_all();
}

}  // namespace ruccl
