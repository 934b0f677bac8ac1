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
  // Failure notices: one wildcard receive, posted at connect and re-posted
  // after a notice that fails validation. notice() returns the first valid
  // notice's error once it has arrived (and forever after), else ok.
  void post_notice_receive();
  Status notice();
  // Sends a failure notice (notify_failure without the claim): the pending
  // abort notice's error and seq instead of these when there is one.
  void send_notice(std::uint64_t seq, const Status& error);

  // Who may drive UCX now: kIdle, the owning thread inside a call (kCall), or
  // a thread sending the abort notice (kAborter). Every public call that
  // touches UCX claims the transport (try_claim) and releases it on return;
  // release() sends an abort notice recorded meanwhile. Cheap: one CAS and
  // two atomic stores per call.
  enum Owner : int { kIdle = 0, kCall = 1, kAborter = 2 };
  bool try_claim(Owner as);
  void release();
  void send_pending_abort();  // claims as kAborter; does nothing if the transport is busy
  class Claim {
   public:
    explicit Claim(UcxTransport& t) : t_(t), held_(t.try_claim(kCall)) {}
    ~Claim() {
      if (held_) t_.release();
    }
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;
    explicit operator bool() const { return held_; }

   private:
    UcxTransport& t_;
    const bool held_;
  };

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
  ExchangeScratch scratch_;          // of data and hello exchanges
  ExchangeScratch notice_scratch_;   // of failure notices, sent while a failed
                                     // data exchange still has messages in flight
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
  std::atomic<bool> abort_pending_{false};  // abort_notify recorded a notice
  std::mutex abort_mutex_;                  // guards the two below
  std::uint64_t abort_seq_ = 0;
  Status abort_error_;
};

}  // namespace ruccl::transport
