// What the communicators split from one world communicator share
// (Communicator::split): the world's transports (one UCX worker per local
// rank, connected to every rank of the world), its node segment, its
// bootstrap and its abort flag. A child communicator opens nothing: it sends
// through views of the root's transports (TransportView) that map its ranks to
// the root's and put its own communicator slot in every tag.
//
// Tags (transport/tag.hpp): a communicator uses the comm values 0, 1 and 2
// (data, fingerprints, a hierarchical all-reduce's rings); slot s takes
// 3s .. 3s+2, so slots 0 (the root) .. kMaxSlots-1 stay below the transport's
// reserved ids. Slots are kept per local transport: two communicators that
// share a rank of this process never hold the same slot; communicators with
// no rank in common may (their messages never meet).
//
// One failure domain: a failure of a transport (a dead peer, a timeout, an
// abort, a received failure notice) ends every communicator sharing it, as
// the transport stays failed (transport.hpp). A typed error of the agreement
// (a mismatch, a bad argument) stays in its communicator.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "node/mailbox.hpp"
#include "transport/transport.hpp"

namespace ruccl::world {

inline constexpr std::uint32_t kCommsPerSlot = 3;
inline constexpr std::uint32_t kMaxSlots = transport::kFirstReservedComm / kCommsPerSlot;  // 41
static_assert(kMaxSlots <= 64, "slots in use are kept as a 64-bit mask");

struct SharedLinks {
  SharedLinks(std::unique_ptr<std::atomic<bool>> abort, std::unique_ptr<bootstrap::Bootstrap> boot,
              std::vector<std::unique_ptr<transport::Transport>> links,
              std::unique_ptr<node::Mailbox> box);
  // Closes the transports (each on its own thread: graceful closes need every
  // worker to progress), then drops them, the mailbox and the bootstrap.
  ~SharedLinks();
  SharedLinks(const SharedLinks&) = delete;
  SharedLinks& operator=(const SharedLinks&) = delete;

  std::unique_ptr<std::atomic<bool>> abort_flag;  // read by the transports: outlives them
  std::unique_ptr<bootstrap::Bootstrap> bootstrap;
  std::vector<std::unique_ptr<transport::Transport>> transports;  // per root local rank
  std::unique_ptr<node::Mailbox> mailbox;                         // null: none
  // Per root local rank: the slots in use on its transport (bit s: slot s).
  std::vector<std::atomic<std::uint64_t>> slots;
};

// A child's transport: forwards to `inner` (a root transport of `links`) with
// peer p mapped to root_peer[p] and the tag's comm c (< kCommsPerSlot) put in
// slot `slot`. connect/handshake/close do nothing (the root's transport is
// connected, and the root closes it); watch_peers does nothing (the root's
// watch covers every peer). Takes over the claim of slot `slot` in
// `links->slots[root_local]` (its creator set the bit) and lets it go when
// destroyed.
std::unique_ptr<transport::Transport> make_transport_view(std::shared_ptr<SharedLinks> links,
                                                          std::size_t root_local,
                                                          std::vector<std::size_t> root_peer,
                                                          std::uint32_t slot);

}  // namespace ruccl::world
