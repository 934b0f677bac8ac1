// UcxTransport::exchange: one step's messages, posted and waited for.
//
// Protocol of one exchange:
//  1. Check every op (peer index, buffer, peer still usable) before posting
//     anything, so that a bad argument posts nothing.
//  2. Post every receive (ucp_tag_recv_nbx, full tag mask), then every send
//     (ucp_tag_send_nbx on the peer's endpoint). Receives go first so that a
//     message from a fast peer (or from ourselves) finds its buffer posted.
//  3. Loop: poll the in-flight requests; a completed one is checked (status,
//     exact size) and freed. Stop at the first error, when nothing is in
//     flight, when a peer we still wait on has failed, on abort, or at the
//     deadline. Otherwise ucp_worker_progress (sched_yield if it did nothing).
//  4. On any error, cancel what is still in flight before returning, so that
//     no request outlives the caller's buffers: ucp_request_cancel for
//     receives; a send cannot be cancelled in UCX 1.13, so its endpoint is
//     force-closed (the send completes with UCS_ERR_CANCELED and the peer is
//     unusable afterwards). Receives that were already matched and are still
//     arriving get the same treatment after a short grace.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "transport/ucx_status.hpp"
#include "transport/ucx_transport.hpp"

namespace ruccl::transport {

namespace {

constexpr std::size_t kListedMessages = 8;  // messages named in an error, at most
constexpr auto kCancelGrace = std::chrono::milliseconds(100);
constexpr auto kDrainBound = std::chrono::seconds(2);

}  // namespace

class ExchangeRun {
 public:
  explicit ExchangeRun(UcxTransport& transport) : t_(transport) {}
  // Should run() be left by an exception, nothing may stay posted.
  ~ExchangeRun() {
    try {
      if (!in_flight_.empty()) cancel_outstanding();
    } catch (...) {
    }
  }
  ExchangeRun(const ExchangeRun&) = delete;
  ExchangeRun& operator=(const ExchangeRun&) = delete;

  Status run(std::span<const SendOp> sends, std::span<const RecvOp> recvs,
             Clock::time_point deadline);

 private:
  struct Message {
    bool is_recv = false;
    std::size_t peer = 0;
    std::uint64_t tag = 0;
    std::size_t bytes = 0;
    ucs_status_t status = UCS_INPROGRESS;
    std::size_t received = 0;  // receives: the length UCX delivered
    Request request;
  };

  Status check_ops(std::span<const SendOp> sends, std::span<const RecvOp> recvs) const;
  void post_recv(const RecvOp& op);
  void post_send(const SendOp& op);
  void poll();
  Status check_completed(const Message& m) const;
  Status failed_peer_error() const;
  Status outstanding_error(ErrorCode code, const std::string& what) const;
  std::string cancel_outstanding();
  void drain(Clock::time_point until);

  static std::string describe(const Message& m);

  UcxTransport& t_;
  std::vector<Message> messages_;
  std::vector<std::size_t> in_flight_;  // indices into messages_
  Status first_error_;                  // of the messages completed so far
};

Status UcxTransport::exchange(std::span<const SendOp> sends, std::span<const RecvOp> recvs,
                              Clock::time_point deadline) {
  return without_exceptions("exchange", [&] {
    ExchangeRun run(*this);
    return run.run(sends, recvs, deadline);
  });
}

std::string ExchangeRun::describe(const Message& m) {
  return std::string(m.is_recv ? "recv from" : "send to") + " peer " + std::to_string(m.peer) +
         " tag " + tag_string(m.tag) + " (" + std::to_string(m.bytes) + " B)";
}

Status ExchangeRun::check_ops(std::span<const SendOp> sends,
                              std::span<const RecvOp> recvs) const {
  const std::size_t peers = t_.endpoints_.size();
  if (peers == 0 && (!sends.empty() || !recvs.empty())) {
    return Status(ErrorCode::kInvalidArgument, "exchange before connect");
  }
  auto check = [&](const char* kind, std::size_t i, std::size_t peer, const void* data,
                   std::size_t bytes) -> Status {
    const std::string which = std::string(kind) + " #" + std::to_string(i);
    if (peer >= peers) {
      return Status(ErrorCode::kInvalidArgument, which + ": peer " + std::to_string(peer) +
                                                     " out of range (" + std::to_string(peers) +
                                                     " peers)");
    }
    if (data == nullptr && bytes > 0) {
      return Status(ErrorCode::kInvalidArgument, which + ": null buffer for " +
                                                     std::to_string(bytes) + " bytes");
    }
    return t_.peer_usable(peer).with_context(which);
  };
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    RUCCL_TRY(check("recv", i, recvs[i].peer, recvs[i].data, recvs[i].bytes));
  }
  for (std::size_t i = 0; i < sends.size(); ++i) {
    RUCCL_TRY(check("send", i, sends[i].peer, sends[i].data, sends[i].bytes));
  }
  return Status::ok();
}

void ExchangeRun::post_recv(const RecvOp& op) {
  // Always get a request, even when the message is already here: UCX 1.13
  // does not fill recv_info.tag_info (the received length) on immediate
  // completion, while ucp_tag_recv_request_test reports it from the request.
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof param);
  param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  Message m;
  m.is_recv = true;
  m.peer = op.peer;
  m.tag = op.tag;
  m.bytes = op.bytes;
  Posted p = posted(ucp_tag_recv_nbx(t_.worker_.get(), op.data, op.bytes, op.tag,
                                     ~ucp_tag_t{0}, &param));
  m.status = p.status;  // UCS_INPROGRESS with a request, or an error
  m.request = std::move(p.request);
  messages_.push_back(std::move(m));
}

void ExchangeRun::post_send(const SendOp& op) {
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof param);
  Message m;
  m.peer = op.peer;
  m.tag = op.tag;
  m.bytes = op.bytes;
  Posted p = posted(ucp_tag_send_nbx(t_.endpoints_[op.peer].get(), op.data, op.bytes, op.tag,
                                     &param));
  m.status = p.status;
  m.request = std::move(p.request);
  messages_.push_back(std::move(m));
}

// Moves completed requests out of in_flight_, recording status and length.
void ExchangeRun::poll() {
  std::erase_if(in_flight_, [this](std::size_t i) {
    Message& m = messages_[i];
    if (m.is_recv) {
      ucp_tag_recv_info_t info;
      std::memset(&info, 0, sizeof info);
      m.status = ucp_tag_recv_request_test(m.request.get(), &info);
      if (m.status == UCS_OK) m.received = info.length;
    } else {
      m.status = ucp_request_check_status(m.request.get());
    }
    if (m.status == UCS_INPROGRESS) return false;
    m.request.reset();
    if (first_error_.is_ok()) first_error_ = check_completed(m);
    return true;
  });
}

// Whether a completed message failed: wrong size, or a UCX error.
Status ExchangeRun::check_completed(const Message& m) const {
  if (m.status == UCS_ERR_MESSAGE_TRUNCATED) {
    return Status(ErrorCode::kShapeMismatch,
                  describe(m) + ": the message is larger than the " + std::to_string(m.bytes) +
                      " bytes expected (nothing was written past them)");
  }
  if (m.status == UCS_OK && m.is_recv && m.received != m.bytes) {
    return Status(ErrorCode::kShapeMismatch, describe(m) + ": got " +
                                                 std::to_string(m.received) + " bytes, expected " +
                                                 std::to_string(m.bytes));
  }
  if (m.status != UCS_OK) {
    // A request that failed because its endpoint did: report the peer failure.
    if (Status peer = t_.peer_usable(m.peer); !peer) return peer.with_context(describe(m));
    return ucx_status(m.status, describe(m));
  }
  return Status::ok();
}

// kPeerFailure if a peer we still wait on has failed (its receives would never
// complete: UCX fails only the requests posted on the failed endpoint).
Status ExchangeRun::failed_peer_error() const {
  for (std::size_t i : in_flight_) {
    const Message& m = messages_[i];
    if (t_.health_[m.peer].failure != UCS_OK) {
      return outstanding_error(ErrorCode::kPeerFailure,
                               "peer " + std::to_string(m.peer) + " failed (" +
                                   ucs_status_string(t_.health_[m.peer].failure) + ")");
    }
  }
  return Status::ok();
}

// "<what>: 3 of 8 messages outstanding: recv from peer 1 tag ..., ..."
Status ExchangeRun::outstanding_error(ErrorCode code, const std::string& what) const {
  std::string message = what + ": " + std::to_string(in_flight_.size()) + " of " +
                        std::to_string(messages_.size()) + " messages outstanding: ";
  for (std::size_t k = 0; k < in_flight_.size() && k < kListedMessages; ++k) {
    if (k > 0) message += ", ";
    message += describe(messages_[in_flight_[k]]);
  }
  if (in_flight_.size() > kListedMessages) {
    message += ", and " + std::to_string(in_flight_.size() - kListedMessages) + " more";
  }
  return Status(code, std::move(message));
}

void ExchangeRun::drain(Clock::time_point until) {
  poll();
  while (!in_flight_.empty() && Clock::now() < until) {
    t_.worker_.progress();
    poll();
  }
}

// Step 4 of the protocol. Returns a note for the error message when endpoints
// had to be force-closed (or, should UCX never finish, requests abandoned).
std::string ExchangeRun::cancel_outstanding() {
  poll();
  if (in_flight_.empty()) return {};
  std::vector<std::size_t> cut;
  auto cut_off = [&](const Message& m, const char* why) {
    if (!t_.endpoints_[m.peer].is_open()) return;
    cut.push_back(m.peer);
    t_.cut_off(m.peer, std::string("force-closed to cancel an unfinished ") + why + " " +
                           tag_string(m.tag));
  };
  for (std::size_t i : in_flight_) {
    const Message& m = messages_[i];
    if (m.is_recv) {
      ucp_request_cancel(t_.worker_.get(), m.request.get());
    } else {
      cut_off(m, "send");
    }
  }
  drain(Clock::now() + kCancelGrace);
  for (std::size_t i : in_flight_) {  // receives already matched, data still arriving
    if (messages_[i].is_recv) cut_off(messages_[i], "receive");
  }
  drain(Clock::now() + kDrainBound);

  std::string note;
  if (!cut.empty()) {
    std::sort(cut.begin(), cut.end());
    cut.erase(std::unique(cut.begin(), cut.end()), cut.end());
    note = "; endpoints force-closed to cancel unfinished messages, unusable now: peers";
    for (std::size_t peer : cut) note += " " + std::to_string(peer);
  }
  if (!in_flight_.empty()) {
    // Should not happen: UCX completes cancelled and force-closed requests. The
    // requests are freed (UCX releases them on completion) but may still touch
    // their buffers.
    note += "; " + std::to_string(in_flight_.size()) +
            " requests did not finish cancelling and were abandoned";
    for (std::size_t i : in_flight_) messages_[i].request.reset();
    in_flight_.clear();
  }
  return note;
}

Status ExchangeRun::run(std::span<const SendOp> sends, std::span<const RecvOp> recvs,
                        Clock::time_point deadline) {
  RUCCL_TRY(check_ops(sends, recvs));
  if (t_.aborted()) return Status(ErrorCode::kAborted, "exchange: aborted before posting");

  // Reserved up front: nothing may throw between posting a request and
  // recording it.
  messages_.reserve(recvs.size() + sends.size());
  in_flight_.reserve(recvs.size() + sends.size());
  for (const RecvOp& op : recvs) post_recv(op);
  for (const SendOp& op : sends) post_send(op);
  for (std::size_t i = 0; i < messages_.size(); ++i) {
    if (messages_[i].status == UCS_INPROGRESS) {
      in_flight_.push_back(i);
    } else if (first_error_.is_ok()) {
      first_error_ = check_completed(messages_[i]);  // completed (or failed) at once
    }
  }

  Status error;
  while (true) {
    poll();
    error = first_error_;
    if (!error) break;
    if (in_flight_.empty()) return Status::ok();
    error = failed_peer_error();
    if (!error) break;
    if (t_.aborted()) {
      error = outstanding_error(ErrorCode::kAborted, "exchange aborted");
      break;
    }
    if (Clock::now() >= deadline) {
      error = outstanding_error(ErrorCode::kTimeout, "exchange: deadline passed");
      break;
    }
    t_.worker_.progress();
  }
  const std::string note = cancel_outstanding();
  return Status(error.code(), error.message() + note);
}

}  // namespace ruccl::transport
