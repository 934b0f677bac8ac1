// The seed's session API: peers register with a device and a config, then call
// collectives by peer id. A Session is an ordinary object: create as many as you
// like; two sessions never share state.
//
// Contract (from the seed):
//  - Every peer calls register_peer(peer_id, device, config) once; config's
//    num_devices is the group size. Peers must register equal configs
//    (kDeviceCountMismatch for num_devices, kInvalidArgument for the rest, seen
//    by every peer of the round); peer ids and devices must be distinct. Ranks
//    are assigned in ascending peer-id order.
//  - The first collective of a peer waits (up to the config timeout) for the
//    group to be complete, then every peer calls matching collectives in order.
//  - reduce: non-root peers get nothing. broadcast: the sender passes a tensor,
//    receivers pass none.
//  - finish_collective ends one peer's session; after the last peer finishes, the
//    session is empty and a new group may register.
//  - reset_collective discards registrations and in-progress state, returns at
//    once, and wakes blocked peers with kAborted. It does not complete an
//    operation or recover lost data.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>

#include "ruccl/communicator.hpp"

namespace ruccl {

using PeerId = std::uint64_t;

class Session {
 public:
  Session() = default;
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Status register_peer(PeerId peer, DeviceId device, const Config& config);

  Result<Tensor> all_reduce(PeerId peer, const TensorView& tensor, ReduceOp op);
  // `root` is a peer id.
  Result<std::optional<Tensor>> reduce(PeerId peer, const TensorView& tensor, ReduceOp op,
                                       PeerId root);
  Result<Tensor> broadcast(PeerId peer, const std::optional<TensorView>& tensor);
  Result<Tensor> all_gather(PeerId peer, const TensorView& tensor);
  Result<Tensor> reduce_scatter(PeerId peer, const TensorView& tensor, ReduceOp op);
  Result<AllToAllV> all_to_all_v(PeerId peer, const TensorView& tensor,
                                 std::span<const std::size_t> send_counts);

  Status finish_collective(PeerId peer);
  void reset_collective();

  // The peer's rank and the group's communicator, for the into/in-place forms.
  // Waits for the group like a collective does.
  Result<std::pair<std::size_t, std::shared_ptr<Communicator>>> communicator(PeerId peer);

 private:
  struct Registration {
    DeviceId device;
    Config config;
  };
  Result<std::pair<std::size_t, std::shared_ptr<Communicator>>> group_for(PeerId peer);
  Status build_group_locked();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t epoch_ = 0;  // bumped by reset: waiters of an older epoch get kAborted
  std::map<PeerId, Registration> peers_;
  std::set<PeerId> finished_;
  std::optional<Status> poisoned_;  // a registration error every peer of this round sees
  std::map<DeviceKind, std::unique_ptr<CommunicatorRegistry>> registries_;
  std::shared_ptr<Communicator> group_;
};

}  // namespace ruccl
