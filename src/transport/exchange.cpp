// UcxTransport::exchange: one step's messages, posted and waited for.
//
// Framing: every message carries a WireHeader (wire_header.hpp). A payload of
// at most kInlineBytes travels in one UCX message behind its header, through
// the transport's frame scratch (one copy each side, cheaper than a second
// message at these sizes). A larger payload goes zero-copy from and into the
// caller's buffers, its header as a separate message just before it, under
// the same tag with kHeaderCommBit set (UCX keeps one sender's messages in
// order). Headers and payload checksums are checked once everything (of a
// round) arrived, before exchange returns (or the round is handed to its
// caller): no caller uses a payload that failed them.
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
//     Rounds (exchange_rounds; a plain exchange is one): steps 2-3 post
//     `depth` rounds; once every receive of the oldest round completed, its
//     headers and checksums are checked, the caller's done(round) uses it,
//     and the round `depth` later is posted (into the buffers it freed).
//  4. On any error, cancel what is still in flight before returning, so that
//     no request outlives the caller's buffers: ucp_request_cancel for
//     receives; a send cannot be cancelled in UCX 1.13, so its endpoint is
//     force-closed (the send completes with UCS_ERR_CANCELED and the peer is
//     unusable afterwards). Receives that were already matched and are still
//     arriving get the same treatment after a short grace. What UCX still has
//     not finished after that is abandoned, and the transport is sealed: no
//     progress ever again, so no abandoned request touches the caller's
//     memory after exchange returned (transport.hpp, Ownership).
//  5. A failed exchange tells the peers (a failure notice, before cancelling:
//     cancelling may cut a peer that is alive and waits on this rank), also
//     when it failed before posting anything (aborted, a peer unusable).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "transport/ucx_status.hpp"
#include "transport/ucx_transport.hpp"

namespace ruccl::transport {

namespace {

constexpr std::size_t kListedMessages = 8;  // messages named in an error, at most
// Largest payload sent inline behind its header: below UCX's eager/rendezvous
// switch on shared memory (about 8 KiB), where a copy costs less than a message.
constexpr std::size_t kInlineBytes = kMaxUpToBytes;
constexpr auto kNoticeBound = std::chrono::milliseconds(500);
constexpr std::size_t kNoticeText = 1024;  // bytes of error text a notice carries, at most

bool is_inline(std::size_t bytes) { return bytes <= kInlineBytes; }

std::uint64_t header_tag(std::uint64_t tag) {
  TagFields f = split_tag(tag);
  f.comm |= kHeaderCommBit;
  return make_tag(f);
}
constexpr auto kCancelGrace = std::chrono::milliseconds(100);
constexpr std::size_t kRareChecksEvery = 8;  // progress rounds between failure/deadline checks
constexpr auto kDrainBound = std::chrono::seconds(2);
constexpr std::size_t kSettleRounds = 16;  // progress calls before the completion's notice check

}  // namespace

class ExchangeRound {
 public:
  ExchangeRound(UcxTransport& transport, WireKind kind)
      : t_(transport),
        kind_(kind),
        s_(t_.take_scratch()),
        recv_frames_(s_.recv_frames),
        send_frames_(s_.send_frames),
        messages_(s_.messages),
        in_flight_(s_.in_flight),
        pending_(s_.pending) {
    messages_.clear();
    in_flight_.clear();
  }
  // Should run() be left by an exception, nothing may stay posted.
  ~ExchangeRound() {
    try {
      if (!in_flight_.empty()) cancel_outstanding();
    } catch (...) {
    }
    s_.busy = false;  // (the claim is still held: run_exchange's caller holds it)
  }
  ExchangeRound(const ExchangeRound&) = delete;
  ExchangeRound& operator=(const ExchangeRound&) = delete;

  // A plain exchange is one round at depth 1, `done` null.
  Status run(const Rounds& rounds, const RoundDone* done, Clock::time_point deadline);

 private:
  using Message = ExchangeMessage;
  using Frame = ExchangeFrame;

  Status check_ops(std::span<const SendOp> sends, std::span<const RecvOp> recvs) const;
  Status check_peers(std::span<const SendOp> sends, std::span<const RecvOp> recvs) const;
  // A few progress calls, only until one finds nothing (about a
  // microsecond): what already arrived (a notice) is matched before a
  // failure is reported.
  void settle();
  // Another thread's exchange sealed the transport while this one handed it
  // over: its requests are abandoned (never progressed again).
  Status abandon_sealed();
  Status prefer_notice(Status error);
  void lay_out_frames(std::span<const SendOp> sends, std::span<const RecvOp> recvs);
  std::byte* frame(std::size_t at) { return s_.frames.data() + at; }
  void post_recv_op(const RecvOp& op, Frame& f);
  void post_send_op(const SendOp& op, std::size_t at);
  // Posts round r's receives, then its sends.
  void post_round(const Rounds& rounds, std::size_t r);
  // The rounds whose receives all arrived, in order: their frames checked,
  // handed to `done`, and each followed by the next round not yet posted.
  Status deliver(const Rounds& rounds, const RoundDone* done);
  void post_recv(void* data, std::size_t bytes, std::uint64_t tag, std::size_t peer,
                 std::size_t header = 0, bool up_to = false);
  void post_send(const void* data, std::size_t bytes, std::uint64_t tag, std::size_t peer,
                 std::size_t header = 0);
  // recvs[begin, end)'s headers and payloads.
  Status check_frames(std::span<const RecvOp> recvs, std::size_t begin, std::size_t end);
  void poll();
  Status check_completed(const Message& m) const;
  Status failed_peer_error() const;
  // kPeerFailure if watch_peers's function says a peer we wait on is gone.
  Status dead_peer_error() const;
  Status outstanding_error(ErrorCode code, const std::string& what) const;
  std::string cancel_outstanding();
  void drain(Clock::time_point until, bool receives_only = false);

  static std::string describe(const Message& m);

  UcxTransport& t_;
  const WireKind kind_;
  ExchangeScratch& s_;  // the transport's pool's, taken for this exchange
  std::vector<Frame>& recv_frames_;
  std::vector<std::size_t>& send_frames_;
  std::vector<Message>& messages_;
  std::vector<std::size_t>& in_flight_;
  std::vector<std::size_t>& pending_;  // per round: its receive messages in flight
  std::size_t posted_ = 0;             // rounds posted
  std::size_t delivered_ = 0;          // rounds delivered
  Status first_error_;  // of the messages completed so far
};

namespace {

// The one round of a plain exchange (not copyable: `rounds` points into it).
struct OneRound {
  OneRound(std::span<const SendOp> sends, std::span<const RecvOp> recvs)
      : send_begin{0, sends.size()},
        recv_begin{0, recvs.size()},
        rounds{sends, recvs, send_begin, recv_begin, 1} {}
  OneRound(const OneRound&) = delete;
  OneRound& operator=(const OneRound&) = delete;
  const std::array<std::size_t, 2> send_begin, recv_begin;
  const Rounds rounds;
};

}  // namespace

Status UcxTransport::exchange(std::span<const SendOp> sends, std::span<const RecvOp> recvs,
                              Clock::time_point deadline) {
  const OneRound one(sends, recvs);
  return data_exchange(one.rounds, nullptr, deadline);
}

Status UcxTransport::exchange_rounds(const Rounds& rounds, const RoundDone& done,
                                     Clock::time_point deadline) {
  RUCCL_TRY(check_rounds(rounds));
  return data_exchange(rounds, done ? &done : nullptr, deadline);
}

Status UcxTransport::data_exchange(const Rounds& rounds, const RoundDone* done,
                                   Clock::time_point deadline) {
  const std::span<const SendOp> sends = rounds.sends;
  const std::span<const RecvOp> recvs = rounds.recvs;
  const Claim claim(*this, deadline, "exchange");
  RUCCL_TRY(claim.status());  // the abort notice is being sent, or another call kept it
  const Status status = run_exchange(rounds, done, deadline, WireKind::kData);
  // Tell the peers, unless this was a misuse (nothing was posted) or the
  // failure is one a peer already reported (every peer got that notice too).
  if (!status && status.code() != ErrorCode::kInvalidArgument && !notice_from_peer_) {
    // ExchangeRound::run sent the notice already if it posted anything; not if
    // it failed first (aborted before posting, a peer unusable): now.
    const std::uint64_t seq = !sends.empty() ? sends.front().seq
                              : !recvs.empty() ? recvs.front().seq : 0;
    send_notice(seq, status);
    // The transport stays failed (peers may have force-closed endpoints, late
    // messages may be queued): every later exchange returns this error.
    if (notice_.is_ok())
      notice_ = Status(status.code(), "this rank's transport failed earlier: " + status.message());
  }
  return status;
}

Status UcxTransport::run_exchange(std::span<const SendOp> sends, std::span<const RecvOp> recvs,
                                  Clock::time_point deadline, WireKind kind) {
  const OneRound one(sends, recvs);
  return run_exchange(one.rounds, nullptr, deadline, kind);
}

Status UcxTransport::run_exchange(const Rounds& rounds, const RoundDone* done,
                                  Clock::time_point deadline, WireKind kind) {
  return core::catch_to_status(ErrorCode::kInternal, "exchange", [&] {
    ExchangeRound run(*this, kind);
    return run.run(rounds, done, deadline);
  });
}

// ---- failure notices -----------------------------------------------

// (The connection handshake is in ucx_transport.cpp.)

void UcxTransport::post_notice_receive() {
  notice_buffer_.resize(kWireHeaderBytes + kNoticeText + 1);
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof param);
  param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  // Any sender, any sequence number: match on the comm field alone.
  const std::uint64_t mask = detail::field_mask(kTagCommBits) << kTagCommShift;
  Posted p = posted(ucp_tag_recv_nbx(worker_.get(), notice_buffer_.data(), notice_buffer_.size(),
                                     make_tag({kNoticeComm, 0, 0, 0, 0}), mask, &param));
  notice_request_ = std::move(p.request);
}

Status UcxTransport::notice() {
  if (!notice_.is_ok() || !notice_request_) return notice_;
  ucp_tag_recv_info_t info;
  std::memset(&info, 0, sizeof info);
  const ucs_status_t status = ucp_tag_recv_request_test(notice_request_.get(), &info);
  if (status == UCS_INPROGRESS) return Status::ok();
  notice_request_.reset();
  if (status == UCS_OK && info.length >= kWireHeaderBytes + 1) {
    const TagFields f = split_tag(info.sender_tag);
    WireExpect expect;
    expect.kind = WireKind::kAbort;
    expect.comm = kNoticeComm;
    expect.src = f.src;
    expect.check_seq = false;
    expect.bytes = info.length - kWireHeaderBytes;
    expect.dst = static_cast<std::uint32_t>(self_);
    expect.check_dst = self_known_;
    auto header = read_header(std::span(notice_buffer_.data(), info.length), expect, keys_);
    if (header && check_payload(header.value(), notice_buffer_.data() + kWireHeaderBytes,
                                expect.bytes)) {
      const auto* text = reinterpret_cast<const char*>(notice_buffer_.data() + kWireHeaderBytes);
      auto code = static_cast<ErrorCode>(text[0]);
      if (code == ErrorCode::kOk || code > kLastErrorCode) code = ErrorCode::kAborted;
      notice_ = Status(code, "rank " + std::to_string(f.src) + " reports: " +
                                 std::string(text + 1, expect.bytes - 1));
      notice_from_peer_ = true;
      return notice_;
    }
  }
  // Not a valid notice (another job's, damaged, truncated): ignored; listen on.
  post_notice_receive();
  return Status::ok();
}

void UcxTransport::notify_failure(std::uint64_t seq, const Status& error) {
  const Claim claim(*this, Clock::now() + kNoticeBound, "failure notice");
  if (!claim.status()) return;  // the abort notice is being sent (it is the one), or busy
  try {
    send_notice(seq, error);
    // The peers fail their transports on this notice (and send none back):
    // this one fails too, so that an exchange of a communicator sharing it
    // ends at once instead of waiting on those peers until its deadline.
    if (notice_.is_ok() && !error.is_ok())
      notice_ = Status(error.code(), "this rank's transport failed earlier: " + error.message());
  } catch (...) {  // (out of memory building the notice: the peers keep their deadlines)
  }
}

void UcxTransport::send_notice(std::uint64_t seq, const Status& failure) {
  // After a notice every peer got that one; after a first notice of our own, a
  // second adds nothing. Sealed: no progress, so no notice either.
  if (notified_ || notice_from_peer_ || sealed_ || !self_known_ || failure.is_ok()) return;
  notified_ = true;
  // An abort recorded meanwhile is why this rank fails: the peers get its text.
  Status error = failure;
  if (abort_pending_.load()) {
    std::lock_guard lock(abort_mutex_);
    error = abort_error_;
    seq = abort_seq_;
  }
  std::string text(1, static_cast<char>(error.code()));
  text += error.message().substr(0, kNoticeText - 1);
  std::vector<SendOp> sends;
  const auto me = static_cast<std::uint32_t>(self_);
  for (std::size_t peer = 0; peer < endpoints_.size(); ++peer) {
    if (peer == self_ || !peer_usable(peer)) continue;
    sends.push_back({peer, text.data(), text.size(), make_tag({kNoticeComm, seq, 0, me, 0}), seq});
  }
  (void)run_exchange(sends, {}, Clock::now() + kNoticeBound, WireKind::kAbort);
}

std::string ExchangeRound::describe(const Message& m) {
  return std::string(m.is_recv ? "recv from" : "send to") + " rank " + std::to_string(m.peer) +
         " tag " + tag_string(m.tag) + " (" + std::to_string(m.bytes - m.header) + " B)";
}

Status ExchangeRound::check_ops(std::span<const SendOp> sends,
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
    return Status::ok();
  };
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    RUCCL_TRY(check("recv", i, recvs[i].peer, recvs[i].data, recvs[i].bytes));
    if (recvs[i].received != nullptr && recvs[i].bytes > kMaxUpToBytes)
      return Status(ErrorCode::kInvalidArgument,
                    "recv #" + std::to_string(i) + ": up to " + std::to_string(recvs[i].bytes) +
                        " bytes: a receive of unknown length takes at most " +
                        std::to_string(kMaxUpToBytes));
  }
  for (std::size_t i = 0; i < sends.size(); ++i) {
    RUCCL_TRY(check("send", i, sends[i].peer, sends[i].data, sends[i].bytes));
  }
  return Status::ok();
}

Status ExchangeRound::check_peers(std::span<const SendOp> sends,
                                  std::span<const RecvOp> recvs) const {
  for (std::size_t i = 0; i < recvs.size(); ++i)
    RUCCL_TRY(t_.peer_usable(recvs[i].peer).with_context("recv #" + std::to_string(i)));
  for (std::size_t i = 0; i < sends.size(); ++i)
    RUCCL_TRY(t_.peer_usable(sends[i].peer).with_context("send #" + std::to_string(i)));
  return Status::ok();
}

// A peer that aborts or fails tells the others before its endpoints close:
// its notice, queued here, says why better than the closed endpoint does
// (an abort is Aborted on every rank, not a PeerFailure on some).
void ExchangeRound::settle() {
  if (t_.sealed_) return;
  for (std::size_t k = 0; k < kSettleRounds && t_.worker_.progress() != 0; ++k) {
  }
}

Status ExchangeRound::abandon_sealed() {
  for (std::size_t i : in_flight_)
    messages_[i].request.reset();  // UCX releases them with the worker
  const std::size_t left = in_flight_.size();
  in_flight_.clear();
  Status why = t_.notice_.is_ok() ? Status(ErrorCode::kAborted, "a failure") : t_.notice_;
  return Status(why.code(),
                "exchange: another call on this transport (a communicator sharing it) "
                "failed and sealed it; " +
                    std::to_string(left) +
                    " of this exchange's messages abandoned: " + why.message());
}

Status ExchangeRound::prefer_notice(Status error) {
  if (error.is_ok() || kind_ == WireKind::kAbort || error.code() != ErrorCode::kPeerFailure)
    return error;
  settle();
  Status told = t_.notice();
  if (told) return error;
  return Status(told.code(), told.message() + "; at rank " + std::to_string(t_.self_) + " (" +
                                 error.message() + ")");
}

// Frame scratch: per receive a header (plus an inline payload), per send the
// same (an inline payload travels in the frame). Sized once per call.
void ExchangeRound::lay_out_frames(std::span<const SendOp> sends, std::span<const RecvOp> recvs) {
  std::size_t at = 0;
  recv_frames_.resize(recvs.size());
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    recv_frames_[i] = {at, is_inline(recvs[i].bytes)};
    at += kWireHeaderBytes + (recv_frames_[i].inline_payload ? recvs[i].bytes : 0);
  }
  send_frames_.resize(sends.size());
  for (std::size_t i = 0; i < sends.size(); ++i) {
    send_frames_[i] = at;
    at += kWireHeaderBytes + (is_inline(sends[i].bytes) ? sends[i].bytes : 0);
  }
  if (s_.frames.size() < at) s_.frames.resize(at);
}

void ExchangeRound::post_recv_op(const RecvOp& op, Frame& f) {
  f.message = messages_.size();
  if (f.inline_payload) {
    post_recv(frame(f.at), kWireHeaderBytes + op.bytes, op.tag, op.peer, kWireHeaderBytes,
              op.received != nullptr);
  } else {
    post_recv(frame(f.at), kWireHeaderBytes, header_tag(op.tag), op.peer);
    post_recv(op.data, op.bytes, op.tag, op.peer);
  }
}

void ExchangeRound::post_send_op(const SendOp& op, std::size_t at) {
  const TagFields f = split_tag(op.tag);
  WireHeader h;
  h.kind = static_cast<std::uint16_t>(kind_);
  h.comm = f.comm;
  h.src = f.src;
  h.seq = op.seq;
  h.step = f.step;
  h.piece = f.piece;
  h.bytes = op.bytes;
  h.dst = static_cast<std::uint32_t>(op.peer);
  if (t_.options_.checksum)
    h.checksum = op.checksum ? *op.checksum : payload_checksum(op.data, op.bytes);
  else h.kind |= kNoChecksum;
  std::byte* header = frame(at);
  write_header(h, t_.keys_, std::span<std::byte, kWireHeaderBytes>(header, kWireHeaderBytes));
  if (is_inline(op.bytes)) {
    if (op.bytes > 0) std::memcpy(header + kWireHeaderBytes, op.data, op.bytes);
    post_send(header, kWireHeaderBytes + op.bytes, op.tag, op.peer, kWireHeaderBytes);
  } else {
    post_send(header, kWireHeaderBytes, header_tag(op.tag), op.peer);
    post_send(op.data, op.bytes, op.tag, op.peer);
  }
}

void ExchangeRound::post_recv(void* data, std::size_t bytes, std::uint64_t tag, std::size_t peer,
                              std::size_t header, bool up_to) {
  // Always get a request, even when the message is already here: UCX 1.13
  // does not fill recv_info.tag_info (the received length) on immediate
  // completion, while ucp_tag_recv_request_test reports it from the request.
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof param);
  param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  Message m;
  m.is_recv = true;
  m.peer = peer;
  m.tag = tag;
  m.bytes = bytes;
  m.header = header;
  m.up_to = up_to;
  Posted p = posted(ucp_tag_recv_nbx(t_.worker_.get(), data, bytes, tag, ~ucp_tag_t{0}, &param));
  m.status = p.status;  // UCS_INPROGRESS with a request, or an error
  m.request = std::move(p.request);
  messages_.push_back(std::move(m));
}

void ExchangeRound::post_send(const void* data, std::size_t bytes, std::uint64_t tag,
                              std::size_t peer, std::size_t header) {
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof param);
  Message m;
  m.peer = peer;
  m.tag = tag;
  m.bytes = bytes;
  m.header = header;
  Posted p = posted(ucp_tag_send_nbx(t_.endpoints_[peer].get(), data, bytes, tag, &param));
  m.status = p.status;
  m.request = std::move(p.request);
  messages_.push_back(std::move(m));
}

void ExchangeRound::post_round(const Rounds& rounds, std::size_t r) {
  const std::size_t first = messages_.size();
  for (std::size_t i = rounds.recv_begin[r]; i < rounds.recv_begin[r + 1]; ++i)
    post_recv_op(rounds.recvs[i], recv_frames_[i]);
  for (std::size_t i = rounds.send_begin[r]; i < rounds.send_begin[r + 1]; ++i)
    post_send_op(rounds.sends[i], send_frames_[i]);
  for (std::size_t i = first; i < messages_.size(); ++i) {
    Message& m = messages_[i];
    m.round = r;
    if (m.status == UCS_INPROGRESS) {
      in_flight_.push_back(i);
      if (m.is_recv) ++pending_[r];
    } else if (first_error_.is_ok()) {
      first_error_ = check_completed(m);  // completed (or failed) at once
    }
  }
}

Status ExchangeRound::deliver(const Rounds& rounds, const RoundDone* done) {
  while (delivered_ < posted_ && pending_[delivered_] == 0) {
    const std::size_t r = delivered_;
    RUCCL_TRY(check_frames(rounds.recvs, rounds.recv_begin[r], rounds.recv_begin[r + 1]));
    if (done != nullptr) RUCCL_TRY((*done)(r));
    ++delivered_;
    if (posted_ < rounds.rounds()) post_round(rounds, posted_++);
  }
  return Status::ok();
}

// Every header against the receive it arrived for, then payload checksums;
// inline payloads are copied out only after both checks.
Status ExchangeRound::check_frames(std::span<const RecvOp> recvs, std::size_t begin,
                                   std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    const RecvOp& op = recvs[i];
    const Frame& f = recv_frames_[i];
    const TagFields tag = split_tag(op.tag);
    WireExpect expect;
    expect.kind = kind_;
    expect.comm = tag.comm;
    expect.src = tag.src;
    expect.seq = op.seq;
    expect.step = tag.step;
    expect.piece = tag.piece;
    expect.bytes = op.received == nullptr ? op.bytes
                                          : messages_[f.message].received - kWireHeaderBytes;
    expect.dst = static_cast<std::uint32_t>(t_.self_);
    expect.check_dst = t_.self_known_;
    const std::size_t length = kWireHeaderBytes + (f.inline_payload ? expect.bytes : 0);
    auto header = read_header(std::span<const std::byte>(frame(f.at), length), expect, t_.keys_);
    auto which = [&] {  // built only for an error: this runs for every message
      return "recv from rank " + std::to_string(op.peer) + " tag " + tag_string(op.tag);
    };
    if (!header) return header.status().with_context(which());
    const void* payload = f.inline_payload ? frame(f.at) + kWireHeaderBytes : op.data;
    if (Status s = check_payload(header.value(), payload, expect.bytes); !s)
      return s.with_context(which());
    if (f.inline_payload && expect.bytes > 0) std::memcpy(op.data, payload, expect.bytes);
    if (op.received != nullptr) *op.received = expect.bytes;
  }
  return Status::ok();
}

// Moves completed requests out of in_flight_, recording status and length.
void ExchangeRound::poll() {
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
    if (m.is_recv && m.round < pending_.size()) --pending_[m.round];
    if (first_error_.is_ok()) first_error_ = check_completed(m);
    return true;
  });
}

// Whether a completed message failed: wrong size, or a UCX error.
Status ExchangeRound::check_completed(const Message& m) const {
  if (m.status == UCS_ERR_MESSAGE_TRUNCATED) {
    return Status(ErrorCode::kShapeMismatch,
                  describe(m) + ": the message is larger than the " +
                      std::to_string(m.bytes - m.header) +
                      " bytes expected (nothing was written past them)");
  }
  if (m.status == UCS_OK && m.is_recv && m.received != m.bytes &&
      !(m.up_to && m.received >= m.header && m.received <= m.bytes)) {
    const std::size_t got = m.received >= m.header ? m.received - m.header : 0;
    return Status(ErrorCode::kShapeMismatch, describe(m) + ": got " + std::to_string(got) +
                                                 " bytes, expected " +
                                                 std::to_string(m.bytes - m.header));
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
Status ExchangeRound::failed_peer_error() const {
  for (std::size_t i : in_flight_) {
    const Message& m = messages_[i];
    if (t_.health_[m.peer].failure != UCS_OK) {
      return outstanding_error(ErrorCode::kPeerFailure,
                               "rank " + std::to_string(m.peer) + " failed (" +
                                   ucs_status_string(t_.health_[m.peer].failure) + ")");
    }
  }
  return Status::ok();
}

Status ExchangeRound::dead_peer_error() const {
  std::size_t last = SIZE_MAX;
  for (std::size_t i : in_flight_) {
    const std::size_t peer = messages_[i].peer;
    if (peer == last || peer == t_.self_) continue;
    last = peer;
    if (Status alive = t_.peer_alive_(peer); !alive)
      return outstanding_error(alive.code(), alive.message());
  }
  return Status::ok();
}

// "<what>: waiting for ranks 1, 3: 3 of 8 messages outstanding: recv from rank 1 tag ..."
Status ExchangeRound::outstanding_error(ErrorCode code, const std::string& what) const {
  std::vector<std::size_t> ranks;
  for (std::size_t i : in_flight_) ranks.push_back(messages_[i].peer);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string message = what + ": waiting for rank" + (ranks.size() > 1 ? "s " : " ");
  for (std::size_t k = 0; k < ranks.size(); ++k)
    message += (k > 0 ? ", " : "") + std::to_string(ranks[k]);
  message += ": " + std::to_string(in_flight_.size()) + " of " +
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

void ExchangeRound::drain(Clock::time_point until, bool receives_only) {
  auto waiting = [&] {
    if (!receives_only) return !in_flight_.empty();
    return std::any_of(in_flight_.begin(), in_flight_.end(),
                       [&](std::size_t i) { return messages_[i].is_recv; });
  };
  poll();
  while (waiting() && Clock::now() < until && !t_.sealed_) {
    t_.worker_.progress();
    poll();
  }
}

// Step 4 of the protocol. Returns a note for the error message when endpoints
// had to be force-closed (or, should UCX never finish, requests abandoned).
std::string ExchangeRound::cancel_outstanding() {
  poll();
  if (in_flight_.empty()) return {};
  if (t_.sealed_) return "; " + abandon_sealed().message();
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
  // Only receives must finish before returning (UCX writes into their
  // buffers). A send only reads its buffer, and one to a dead peer on an
  // endpoint without failure detection (shared memory) may never finish:
  // waiting for it would push every survivor past its deadline.
  drain(Clock::now() + kDrainBound, /*receives_only=*/true);
  std::size_t sends_left = 0;
  std::erase_if(in_flight_, [&](std::size_t i) {
    if (messages_[i].is_recv) return false;
    messages_[i].request.reset();  // UCX releases it with the worker
    ++sends_left;
    return true;
  });
  // Abandoned requests still refer to the caller's buffers (and the scratch):
  // UCX continues a request only inside progress, so this transport never
  // progresses again.
  if (sends_left > 0 || !in_flight_.empty()) t_.sealed_ = true;

  std::string note;
  if (!cut.empty()) {
    std::sort(cut.begin(), cut.end());
    cut.erase(std::unique(cut.begin(), cut.end()), cut.end());
    note = "; endpoints force-closed to cancel unfinished messages, unusable now: peers";
    for (std::size_t peer : cut) note += " " + std::to_string(peer);
  }
  if (sends_left > 0)
    note += "; " + std::to_string(sends_left) + " unfinished sends abandoned (transport sealed)";
  if (!in_flight_.empty()) {
    // A receive already matched whose data stops arriving (its sender
    // stalled): freed, never progressed again (sealed).
    note += "; " + std::to_string(in_flight_.size()) +
            " receives did not finish cancelling and were abandoned (transport sealed)";
    for (std::size_t i : in_flight_) messages_[i].request.reset();
    in_flight_.clear();
  }
  return note;
}

Status ExchangeRound::run(const Rounds& rounds, const RoundDone* done, Clock::time_point deadline) {
  const std::span<const SendOp> sends = rounds.sends;
  const std::span<const RecvOp> recvs = rounds.recvs;
  RUCCL_TRY(check_ops(sends, recvs));
  RUCCL_TRY(prefer_notice(check_peers(sends, recvs)));
  // A failure notice is sent whatever the abort flag says (an abort is what
  // it often tells), within its own short bound.
  const bool notice = kind_ == WireKind::kAbort;
  if (!notice && t_.aborted())
    return Status(ErrorCode::kAborted, "exchange: aborted before posting");
  if (!notice) RUCCL_TRY(t_.notice());
  if (t_.sealed_)  // (notice_ holds the failure that sealed it: not reached)
    return Status(ErrorCode::kAborted, "exchange: the transport was sealed by an earlier failure");

  // Reserved up front: nothing may throw between posting a request and
  // recording it.
  lay_out_frames(sends, recvs);
  messages_.reserve(2 * (recvs.size() + sends.size()));
  in_flight_.reserve(2 * (recvs.size() + sends.size()));
  pending_.assign(rounds.rounds(), 0);
  while (posted_ < rounds.rounds() && posted_ < std::max<std::size_t>(rounds.depth, 1))
    post_round(rounds, posted_++);

  Status error;
  auto next_liveness = Clock::now() + kLivenessPeriod;
  for (std::size_t round = 0;; ++round) {
    poll();
    error = first_error_;
    if (!error) {
      error = prefer_notice(error);
      break;
    }
    // A peer's notice that arrived with (after) the messages: a rank that
    // was idle when its peers failed must not complete what they did not
    // (their messages were queued here before their notice).
    if (in_flight_.empty() && !notice) {
      settle();  // whatever else already arrived is matched first
      error = t_.notice();
      if (!error) {
        error = Status(error.code(), error.message() + "; at rank " + std::to_string(t_.self_) +
                                         ", on completing this exchange");
        break;
      }
    }
    error = deliver(rounds, done);  // a failed check is told to the peers too
    if (!error) break;
    if (delivered_ == rounds.rounds() && in_flight_.empty()) return Status::ok();
    if (in_flight_.empty()) continue;  // the rounds just posted completed at once
    // The rare ways out, every few rounds (a round is well under a microsecond).
    if (round % kRareChecksEvery == 0) {
      error = failed_peer_error();
      if (!error) {
        error = prefer_notice(error);
        break;
      }
      // A peer's failure notice: said with whom this rank was still waiting
      // on, which may name the rank at fault when the notice does not.
      error = notice ? Status::ok() : t_.notice();
      if (!error) {
        error = outstanding_error(error.code(),
                                  error.message() + "; at rank " + std::to_string(t_.self_));
        break;
      }
      if (!notice && t_.aborted()) {
        error = outstanding_error(ErrorCode::kAborted, "exchange aborted");
        break;
      }
      const auto now = Clock::now();
      if (now >= deadline) {
        error = outstanding_error(ErrorCode::kTimeout, "exchange: deadline passed");
        break;
      }
      if (t_.peer_alive_ && now >= next_liveness) {
        next_liveness = now + kLivenessPeriod;
        error = dead_peer_error();
        if (!error) break;
      }
      // Another thread's call waits for the transport (a communicator
      // sharing it): its turn. Its progress completes this exchange's
      // requests too; the checks above run again once it is back.
      if (!notice && kind_ == WireKind::kData && t_.waiting_.load(std::memory_order_relaxed) != 0) {
        t_.hand_over();
        if (t_.sealed_) return abandon_sealed();
        continue;
      }
    }
    t_.worker_.progress();
  }
  // Tell the peers before cancelling: cancelling may cut the endpoint to a
  // peer that is alive but blocked on this rank, and it must hear of this.
  // Not for a notice received (every peer got it too) or a notice's own send.
  if (kind_ == WireKind::kData && t_.notice_.is_ok()) {
    const std::uint64_t seq = !sends.empty() ? sends.front().seq
                              : !recvs.empty() ? recvs.front().seq : 0;
    t_.send_notice(seq, error);
  }
  const std::string note = cancel_outstanding();
  return Status(error.code(), error.message() + note);
}

}  // namespace ruccl::transport
