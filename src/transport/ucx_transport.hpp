// The UCX implementation of Transport (internal to src/transport).
//
// One ucp_context and one ucp_worker per transport, one endpoint per peer. The
// endpoints detect peer failures (UCP_ERR_HANDLING_MODE_PEER): UCX reports a
// dead peer through on_endpoint_error, called from inside ucp_worker_progress
// on the thread that drives the transport, which records it in health_[peer].
// Every wait loops on "progress once, check completion, check failures, check
// abort, check deadline", so none can hang.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/catch_to_status.hpp"
#include "transport/transport.hpp"
#include "transport/ucx_handles.hpp"

namespace ruccl::transport {

// What is known about one peer's endpoint. The error callback writes `failure`;
// `closed_by` explains why the endpoint was force-closed early.
// The scratch of one exchange (exchange.cpp), kept by the transport so that
// an exchange allocates nothing once it has seen its sizes.
struct ExchangeMessage {
  bool is_recv = false;
  std::size_t peer = 0;
  std::uint64_t tag = 0;
  std::size_t bytes = 0;
  ucs_status_t status = UCS_INPROGRESS;
  std::size_t received = 0;  // receives: the length UCX delivered
  std::size_t header = 0;    // header bytes in front of an inline payload
  bool up_to = false;        // receives: a shorter message is fine (RecvOp::received)
  std::size_t round = 0;     // its op's round (Transport::exchange_rounds)
  Request request;
};
// Where a receive's header (and inline payload) lands in the frame scratch.
struct ExchangeFrame {
  std::size_t at = 0;  // offset in ExchangeScratch::frames
  bool inline_payload = false;
  std::size_t message = 0;  // index in messages of the (first) receive posted
};
struct ExchangeScratch {
  std::vector<std::byte> frames;             // headers and inline payloads
  std::vector<ExchangeFrame> recv_frames;    // per receive op
  std::vector<std::size_t> send_frames;      // per send op: offset of its header
  std::vector<ExchangeMessage> messages;
  std::vector<std::size_t> in_flight;        // indices into messages
  std::vector<std::size_t> pending;          // per round: its receive messages in flight
  bool busy = false;                         // an exchange holds it
};

struct PeerHealth {
  std::size_t peer = 0;
  ucs_status_t failure = UCS_OK;
  std::string closed_by;
};

class UcxTransport final : public Transport {
 public:
  static Result<std::unique_ptr<Transport>> create(TransportOptions options);

  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;
  ~UcxTransport() override;  // cancels the notice receive; then members in reverse order

  std::vector<std::byte> address() const override { return address_; }
  Status connect(const std::vector<std::vector<std::byte>>& addresses,
                 Clock::time_point deadline) override;
  Status handshake(Clock::time_point deadline) override;
  Status exchange(std::span<const SendOp> sends, std::span<const RecvOp> recvs,
                  Clock::time_point deadline) override;
  Status exchange_rounds(const Rounds& rounds, const RoundDone& done,
                         Clock::time_point deadline) override;
  void notify_failure(std::uint64_t seq, const Status& error) override;
  void abort_notify(std::uint64_t seq, const Status& error) override;
  void watch_peers(std::function<Status(std::size_t peer)> alive) override {
    peer_alive_ = std::move(alive);
  }
  bool supports(MemoryType type) const override;
  std::string describe_lanes(std::size_t peer) const override;
  Status close(Clock::time_point deadline) override;

 private:
  UcxTransport(TransportOptions options, Context context, Worker worker,
               std::vector<std::byte> address);

  Status do_connect(const std::vector<std::vector<std::byte>>& addresses,
                    Clock::time_point deadline);
  Status do_close(Clock::time_point deadline);
  std::string lanes_of(std::size_t peer) const;

  bool aborted() const;
  // kPeerFailure / kAborted if `peer` cannot be used (failed or force-closed).
  Status peer_usable(std::size_t peer) const;
  // Force-closes the endpoint to `peer` (cancelling its requests), noting why.
  void cut_off(std::size_t peer, std::string why);

  static void on_endpoint_error(void* arg, ucp_ep_h ep, ucs_status_t status);

  // One exchange of messages of `kind` (data, hello or notice), without the
  // failure notice a failed data exchange sends (exchange() adds it).
  Status run_exchange(std::span<const SendOp> sends, std::span<const RecvOp> recvs,
                      Clock::time_point deadline, WireKind kind);
  Status run_exchange(const Rounds& rounds, const RoundDone* done, Clock::time_point deadline,
                      WireKind kind);
  // exchange_rounds without the check of `rounds`: a data exchange, with the
  // failure notice a failed one sends.
  Status data_exchange(const Rounds& rounds, const RoundDone* done, Clock::time_point deadline);
  // Failure notices: one wildcard receive, posted at connect and re-posted
  // after a notice that fails validation. notice() returns the first valid
  // notice's error once it has arrived (and forever after), else ok.
  void post_notice_receive();
  Status notice();
  // Sends a failure notice (notify_failure without the claim): the pending
  // abort notice's error and seq instead of these when there is one.
  void send_notice(std::uint64_t seq, const Status& error);

  // Who may drive UCX now: kIdle, a thread inside a call (kCall), or a thread
  // sending the abort notice (kAborter). Every public call that touches UCX
  // claims the transport and releases it on return; release() sends an abort
  // notice recorded meanwhile. Cheap when one thread uses the transport: one
  // CAS and two atomic stores per call.
  //
  // Several threads may call at once (communicators split from one another
  // share this transport, each driven by threads of its own): a call that
  // finds another call holding the transport waits (counted in waiting_)
  // until it is handed over, or its deadline. A data exchange that waits on
  // its messages hands the transport over every few progress rounds while a
  // call waits (hand_over), then claims it back: the exchanges of several
  // threads progress the one worker in turns, each completing the others'
  // requests too, so none waits on a message another thread's exchange must
  // post. The transport's state (endpoints, health, notices, the sealed flag,
  // the scratch pool) is touched only by the thread that holds it.
  enum Owner : int { kIdle = 0, kCall = 1, kAborter = 2 };
  bool try_claim(Owner as);
  // Claims as kCall, waiting for a call of another thread to hand over: ok;
  // kAborted while an abort notice is being sent or after the abort flag;
  // kTimeout at `deadline`. `what` names the call in the error.
  Status claim_call(Clock::time_point deadline, const char* what);
  void release();
  // Inside a data exchange that holds the transport and has a call waiting:
  // releases it, lets the waiting call take it, and claims it back (however
  // long that takes: every holder hands over within a few progress rounds, an
  // abort notice within its bound, a failed exchange's cancel within ~2 s).
  void hand_over();
  void send_pending_abort();  // claims as kAborter; does nothing if the transport is busy
  class Claim {
   public:
    Claim(UcxTransport& t, Clock::time_point deadline, const char* what)
        : t_(t), status_(t.claim_call(deadline, what)) {}
    ~Claim() {
      if (status_) t_.release();
    }
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;
    // ok: held; else why not.
    const Status& status() const { return status_; }

   private:
    UcxTransport& t_;
    const Status status_;
  };
  // A scratch for one exchange (a free one of the pool, else a new one; it
  // stays the transport's, as abandoned requests may point into it).
  ExchangeScratch& take_scratch();

  friend class ExchangeRound;

  // In dependency order (destroyed in reverse): memory UCX may write into
  // (health_, the error callback's target; the notice buffer; the exchange
  // scratch, where headers and inline payloads land) outlives the context and
  // worker; the endpoints need the worker (their destructors progress it), the
  // worker the context; requests are freed before the worker.
  TransportOptions options_;
  std::function<Status(std::size_t peer)> peer_alive_;  // watch_peers; empty: none
  WireKeys keys_;                   // derived from options_.token (wire_header.hpp)
  std::vector<PeerHealth> health_;  // sized once, in connect(): never reallocated
  std::vector<std::byte> notice_buffer_;  // the notice receive's target
  // Of exchanges in progress (one per thread inside a call, plus a failure
  // notice sent while a failed exchange still has messages in flight):
  // never freed before the worker.
  std::vector<std::unique_ptr<ExchangeScratch>> scratch_pool_;
  Context context_;
  Worker worker_;
  std::vector<std::byte> address_;
  std::vector<Endpoint> endpoints_;  // endpoints_[peer]; empty until connect()
  bool connect_called_ = false;
  std::size_t self_ = 0;             // this transport's index among connect()'s addresses
  bool self_known_ = false;
  Request notice_request_;           // the pending notice receive
  Status notice_;                    // a notice received, or this transport's own failure
  bool notice_from_peer_ = false;    // notice_ came from a peer
  bool notified_ = false;            // a failure notice was sent
  // An exchange abandoned requests UCX had not finished: never progress the
  // worker again (transport.hpp, Ownership).
  bool sealed_ = false;

  std::atomic<int> owner_{kIdle};
  std::atomic<std::size_t> waiting_{0};     // calls waiting for the transport (claim_call)
  std::atomic<bool> abort_pending_{false};  // abort_notify recorded a notice
  std::mutex abort_mutex_;                  // guards the two below
  std::uint64_t abort_seq_ = 0;
  Status abort_error_;
};

}  // namespace ruccl::transport
