// The transport: tagged point-to-point messages between the ranks of a group,
// across processes and nodes. This header is all the rest of ruccl sees; it
// includes no UCX header (only src/transport/*.cpp do).
//
// Life of a transport (one per local rank). Several threads may call
// exchange() at once (communicators split from one another share a rank's
// transport, each driven by threads of its own): their exchanges take turns
// on the one UCX worker, a waiting one gets it within a few progress rounds,
// and each one's progress completes the others' messages too, so two
// exchanges that wait on each other's peers both finish. The other calls are
// made by one thread (creation, close):
//
//   auto t = make_ucx_transport({.abort = &abort_flag});  // context + worker
//   blob = t->address();                 // out-of-band: allgather the blobs
//   t->connect(blobs, deadline);         // one endpoint per peer (self included)
//   t->exchange(sends, recvs, deadline); // once per algorithm step, any number of times
//   t->close(deadline);                  // graceful: flush and close every endpoint
//   // destructor: force-closes whatever close() did not, never blocks for long
//
// Blocking and ordering: exchange() blocks until all of its messages have
// completed, or until the deadline, the abort flag or a failure; it makes
// progress only while it runs, so peers must be inside exchange() (or close())
// for messages to move. Messages from one sender with one tag are received in
// the order they were sent.
//
// Ownership: exchange() reads `SendOp::data` and writes `RecvOp::data` only
// while it runs; once it has returned, with any status, neither ruccl nor UCX in
// this process touches them. On an error, receives are cancelled and sends cut
// off by force-closing their endpoint (that peer is unusable afterwards). A
// request UCX still has not finished after a bounded grace (a send to a stalled
// peer over shared memory, whose endpoint cannot be force-closed; a receive
// already matched and still arriving) is abandoned, and the transport is then
// *sealed*: it never progresses its UCX worker again (every later call returns
// the earlier error at once; close() and the destructor release the endpoints
// and the worker without progress). UCX moves this worker's data only inside
// its progress, so an abandoned request never continues. One exception lies
// outside this process: a peer on the same node may still read (never write) a
// send buffer through UCX's shared-memory rendezvous (CMA get) until it learns
// of the failure, which the failure notice sent before the cancel tells it.
//
// After an error: a timeout or abort may leave a peer's late message queued at
// the receiver, and a force-closed endpoint stays closed. The caller should treat
// the group as unusable and build new transports (the core does: kAborted after
// any failure), as every rank of the group sees some error too.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ruccl/status.hpp"
#include "transport/tag.hpp"
#include "transport/wire_header.hpp"

namespace ruccl::transport {

using Clock = std::chrono::steady_clock;

// One message out: `bytes` at `data` to `peer` (an index into connect()'s
// address list), under `tag` (make_tag). `data` may be null when bytes == 0.
// `seq` is the full collective sequence number the header carries (the tag
// holds only its low 16 bits); the receive must name the same. `checksum`:
// the payload checksum (payload_checksum) when the sender has it already;
// none: the transport computes it (when checksums are on).
struct SendOp {
  std::size_t peer = 0;
  const void* data = nullptr;
  std::size_t bytes = 0;
  std::uint64_t tag = 0;
  std::uint64_t seq = 0;
  std::optional<std::uint64_t> checksum = std::nullopt;
};

// One message in: exactly `bytes` from `peer` under `tag`. A message of another
// size is an error (kShapeMismatch); nothing is written past data + bytes.
// With `received` set, the message may be shorter (up to `bytes`, which must
// then be at most kMaxUpToBytes): its length is stored there.
struct RecvOp {
  std::size_t peer = 0;
  void* data = nullptr;
  std::size_t bytes = 0;
  std::uint64_t tag = 0;
  std::uint64_t seq = 0;
  std::size_t* received = nullptr;
};
// The largest receive that may take a shorter message (RecvOp::received):
// what travels in one UCX message behind its header.
inline constexpr std::size_t kMaxUpToBytes = 8192 - kWireHeaderBytes;
// How often a waiting exchange asks Transport::watch_peers's function.
inline constexpr auto kLivenessPeriod = std::chrono::milliseconds(20);

enum class MemoryType { kHost, kCuda };

// One algorithm step's messages in rounds (Transport::exchange_rounds): round
// r is sends[send_begin[r], send_begin[r + 1]) and recvs[recv_begin[r],
// recv_begin[r + 1]). Both begin lists have rounds + 1 entries, start at 0,
// never decrease and end at their span's size (check_rounds).
struct Rounds {
  std::span<const SendOp> sends;
  std::span<const RecvOp> recvs;
  std::span<const std::size_t> send_begin;
  std::span<const std::size_t> recv_begin;
  // Rounds in flight at once (at least 1): round r + depth is posted once
  // round r was delivered, so it may receive into round r's buffers.
  std::size_t depth = 1;
  std::size_t rounds() const { return send_begin.empty() ? 0 : send_begin.size() - 1; }
};
// Called with each round, in order, once every receive of it arrived and
// passed its checks: what it received may be used (combined) now.
using RoundDone = std::function<Status(std::size_t round)>;
// kInvalidArgument naming what is wrong with `rounds`' lists.
Status check_rounds(const Rounds& rounds);

// One endpoint set of one local rank: a UCX worker connected to every peer.
class Transport {
 public:
  virtual ~Transport() = default;

  // This worker's address blob, to hand to every peer out of band.
  virtual std::vector<std::byte> address() const = 0;

  // Creates one endpoint per peer; `addresses[i]` is peer i's blob (this rank's
  // own entry included: it connects to itself). Does not wait for the peers;
  // connection setup finishes inside the first exchange(). Once per transport.
  // kInvalidArgument: empty or too many (> kMaxTagPeers) addresses, called twice.
  virtual Status connect(const std::vector<std::vector<std::byte>>& addresses,
                         Clock::time_point deadline) = 0;

  // Connection handshake, after connect(): a challenge-response with every
  // peer (but this rank) under a key derived from the job token, which never
  // travels (ucx_transport.cpp). A peer without the token (a process of another
  // job that got hold of an address, or a forger) is kProtocolError naming the
  // peer. Blocking; every peer must call it too. Optional (tests that connect
  // peers one by one on a single thread skip it; every header is MAC'ed anyway).
  virtual Status handshake(Clock::time_point deadline) = 0;

  // Posts every receive, then every send, then progresses until all complete.
  // Every message travels with a header (wire_header.hpp: full sequence number,
  // size, payload checksum, key id and a MAC under the job's key), checked
  // before exchange returns.
  // Errors (outstanding requests are cancelled before it returns):
  //   kShapeMismatch  a message of another size than expected arrived,
  //   kProtocolError  a header or payload failed validation (names the check),
  //   kPeerFailure    an endpoint failed (names the peer and UCX's reason),
  //   kTimeout        the deadline passed (names the outstanding peers and tags),
  //   kAborted        the abort flag became true, or a peer's endpoint was closed
  //                   by an earlier failure,
  //   kInvalidArgument a peer index out of range, null data with bytes > 0,
  //                   not connected,
  //   any code        a peer's failure notice arrived (see notify_failure): its
  //                   error, "rank P reports: ...". The transport stays failed:
  //                   every later exchange returns the same error.
  // A failed exchange (other than kInvalidArgument, or a notice received) sends
  // a failure notice to every peer itself, so peers blocked on other ranks
  // return at once instead of at their deadlines; and it leaves the transport
  // failed: later exchanges return that error ("... failed earlier: ...").
  virtual Status exchange(std::span<const SendOp> sends, std::span<const RecvOp> recvs,
                          Clock::time_point deadline) = 0;

  // The messages of `rounds`, `rounds.depth` rounds in flight: rounds 0 ..
  // depth - 1 are posted at once, and round r + depth once round r was
  // delivered: its receives arrived and passed their checks, and `done(r)`
  // returned ok (it runs on the calling thread, in round order, while the
  // next rounds' messages are on their way; null: nothing to call). An error
  // from `done` ends the exchange like any failure (the peers hear of it,
  // what is in flight is cancelled) and is returned. Returns once every
  // message of every round completed; errors, notices and ownership as
  // exchange(). This default runs one exchange() per round (no overlap); the
  // UCX transport keeps the next rounds moving while `done` runs.
  virtual Status exchange_rounds(const Rounds& rounds, const RoundDone& done,
                                 Clock::time_point deadline);

  // Sends `error` (of collective `seq`) to every usable peer as a failure
  // notice, waiting a short bound (not the collective's deadline) for the
  // sends. Once per transport; later calls do nothing (nor after a notice was
  // received: every peer got that one). Never fails: a notice that cannot be
  // delivered leaves that peer to its own deadline.
  virtual void notify_failure(std::uint64_t seq, const Status& error) = 0;

  // The abort notice (Communicator::abort): the one call that any thread may
  // make at any time, also while the owning thread is inside another call.
  // Records `error` as this transport's failure notice (of collective `seq`)
  // and sends it: at once, waiting at most the notice bound, when no call is
  // in progress; otherwise the call in progress sends it before it returns,
  // and abort_notify returns at once. A call that starts while the notice is
  // being sent returns kAborted without touching UCX. Set the abort flag
  // (TransportOptions::abort) too, so that a blocked exchange wakes up.
  // Once per transport, like notify_failure; the first of the two wins.
  virtual void abort_notify(std::uint64_t seq, const Status& error) = 0;

  // Peers whose process can be watched otherwise (the node's pidfds, for
  // peers that skip UCX's peer-failure detection, see unwatched_peers):
  // while an exchange waits on a peer, `alive(peer)` is asked about each peer
  // it waits on every kLivenessPeriod; an error ends the exchange with it
  // (naming what is outstanding), like a failed endpoint. Call before the
  // first exchange, from the owning thread; `alive` must be callable from it
  // for the transport's life. Default: not watched.
  virtual void watch_peers(std::function<Status(std::size_t peer)> alive) = 0;

  // Whether UCX can move memory of this type (ucp_context_query's memory types).
  virtual bool supports(MemoryType type) const = 0;

  // Which UCX transports and devices reach `peer`, condensed to one line, e.g.
  // "tcp/lo[am am_bw keepalive wireup]; tag_send 0..<egr/short>..8185..<rndv>..".
  // For debug logs; the text is UCX's and may change between UCX versions.
  virtual std::string describe_lanes(std::size_t peer) const = 0;

  // Flushes and closes every endpoint (ucp_ep_close_nbx), progressing the worker
  // until all closes complete, the deadline passes (kTimeout naming the peers
  // whose close did not finish) or the abort flag is set (kAborted). Peers should
  // call close() at about the same time: a graceful close needs the peer's
  // worker to make progress. Endpoints still open afterwards are force-closed.
  virtual Status close(Clock::time_point deadline) = 0;
};

struct TransportOptions {
  // Set to true from any thread to make a blocked exchange()/connect()/close()
  // return kAborted. Must outlive the transport. Null: no abort.
  const std::atomic<bool>* abort = nullptr;
  // Peers (by connect() index) whose endpoints skip UCX peer-failure detection,
  // so that UCX may reach them over shared memory: UCX 1.13 gives endpoints
  // with UCP_ERR_HANDLING_MODE_PEER network transports only (tcp, also on
  // loopback). A dead peer among these is not reported as kPeerFailure: waits
  // on it end with kTimeout at their deadline, and cancelling a send to it
  // flush-closes the endpoint (bounded) instead of force-closing it. Empty:
  // every peer is watched.
  std::vector<bool> unwatched_peers;
  // This job's token (drawn by process 0 at bootstrap): a key. The transport
  // derives its MAC keys from it (wire_header.hpp) and forgets it; it is never
  // sent.
  JobToken token{};
  // Payload checksums (RUCCL_CHECKSUM): computed by senders, checked by
  // receivers. Off: headers are still checked, payloads are not.
  bool checksum = true;  // (world communicators pass Config::checksum(), default off)
  // This world's ranks on this machine (its processes with this boot id, in
  // any network namespace) outnumber the machine's cores: an idle wait
  // yields the core at every poll (Worker::progress).
  bool oversubscribed = false;
};

// A UCX transport: its own ucp_context and ucp_worker (tag matching, endpoints
// with peer-failure detection). Any number may live in one process.
Result<std::unique_ptr<Transport>> make_ucx_transport(TransportOptions options = {});

}  // namespace ruccl::transport
