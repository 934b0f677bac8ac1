// UcxTransport: creation, connection, lanes, close. exchange() is in exchange.cpp.
#include "transport/ucx_transport.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <thread>
#include <utility>

#include "transport/ucx_status.hpp"

namespace ruccl::transport {

Result<std::unique_ptr<Transport>> make_ucx_transport(TransportOptions options) {
  return UcxTransport::create(options);
}

Result<std::unique_ptr<Transport>> UcxTransport::create(TransportOptions options) {
  Result<Context> context = Context::create();
  RUCCL_TRY(context);
  Result<Worker> worker = Worker::create(*context, options.oversubscribed);
  RUCCL_TRY(worker);
  Result<std::vector<std::byte>> address = worker->address();
  RUCCL_TRY(address);
  std::unique_ptr<Transport> transport(new (std::nothrow) UcxTransport(
      options, std::move(context).value(), std::move(worker).value(),
      std::move(address).value()));
  if (!transport) return Status(ErrorCode::kInternal, "out of memory creating a UCX transport");
  return transport;
}

UcxTransport::UcxTransport(TransportOptions options, Context context, Worker worker,
                           std::vector<std::byte> address)
    : options_(options),
      keys_(options.token),
      context_(std::move(context)),
      worker_(std::move(worker)),
      address_(std::move(address)) {
  options_.token = {};  // only the keys derived from it stay
}

UcxTransport::~UcxTransport() {
  // The notice receive points into notice_buffer_: cancel it while the worker
  // lives (a cancelled, unmatched receive completes at once).
  if (notice_request_) {
    ucp_request_cancel(worker_.get(), notice_request_.get());
    if (!sealed_) worker_.progress();
    notice_request_.reset();
  }
  // Sealed: abandoned requests still refer to caller memory, so the worker is
  // not progressed again; the endpoints are closed without waiting (the close
  // requests are freed at once, UCX releases them with the worker).
  if (sealed_)
    for (Endpoint& ep : endpoints_)
      if (ep.is_open()) (void)ep.start_close(/*force=*/ep.detects_failure());
}

// ---- who drives UCX --------------------------------------------------------------

bool UcxTransport::try_claim(Owner as) {
  int idle = kIdle;
  return owner_.compare_exchange_strong(idle, as, std::memory_order_seq_cst);
}

Status UcxTransport::claim_call(Clock::time_point deadline, const char* what) {
  if (try_claim(kCall)) return Status::ok();
  Status why;
  waiting_.fetch_add(1, std::memory_order_seq_cst);
  while (!try_claim(kCall)) {
    if (owner_.load(std::memory_order_seq_cst) == kAborter) {
      why = Status(ErrorCode::kAborted,
                   std::string(what) + ": aborted (the abort notice is being sent)");
      break;
    }
    if (aborted()) {
      why = Status(ErrorCode::kAborted, std::string(what) + ": aborted");
      break;
    }
    if (Clock::now() >= deadline) {
      why = Status(ErrorCode::kTimeout,
                   std::string(what) +
                       ": deadline passed waiting for another thread's call on this transport "
                       "(a communicator split from this one, or its parent) to hand it over");
      break;
    }
    std::this_thread::yield();
  }
  waiting_.fetch_sub(1, std::memory_order_seq_cst);
  return why;
}

void UcxTransport::hand_over() {
  release();
  // A waiting call takes it within a few of its polls; a bound keeps this
  // thread from spinning on a waiter that gave up meanwhile.
  constexpr auto kHandOverBound = std::chrono::milliseconds(1);
  const auto until = Clock::now() + kHandOverBound;
  while (owner_.load(std::memory_order_seq_cst) == kIdle &&
         waiting_.load(std::memory_order_seq_cst) > 0 && Clock::now() < until)
    std::this_thread::yield();
  waiting_.fetch_add(1, std::memory_order_seq_cst);  // the holder hands it back in turn
  while (!try_claim(kCall)) std::this_thread::yield();
  waiting_.fetch_sub(1, std::memory_order_seq_cst);
}

ExchangeScratch& UcxTransport::take_scratch() {
  for (auto& s : scratch_pool_)
    if (!s->busy) {
      s->busy = true;
      return *s;
    }
  scratch_pool_.push_back(std::make_unique<ExchangeScratch>());
  scratch_pool_.back()->busy = true;
  return *scratch_pool_.back();
}

// An abort_notify that found the transport busy left its notice to whoever
// held it: that is this thread. (abort_notify stores abort_pending_ before it
// tries to claim; this releases before it reads abort_pending_: one of the two
// sees the other, so the notice is sent exactly once.)
void UcxTransport::release() {
  owner_.store(kIdle, std::memory_order_seq_cst);
  if (abort_pending_.load(std::memory_order_seq_cst)) send_pending_abort();
}

void UcxTransport::send_pending_abort() {
  if (!try_claim(kAborter)) return;  // busy: the holder sends it when it releases
  try {
    std::uint64_t seq = 0;
    Status error;
    {
      std::lock_guard lock(abort_mutex_);
      seq = abort_seq_;
      error = abort_error_;
    }
    send_notice(seq, error);
  } catch (...) {  // (out of memory building the notice: the peers keep their deadlines)
  }
  owner_.store(kIdle, std::memory_order_seq_cst);
}

void UcxTransport::abort_notify(std::uint64_t seq, const Status& error) {
  if (error.is_ok()) return;
  {
    std::lock_guard lock(abort_mutex_);
    if (abort_pending_.load()) return;  // the first abort's notice stands
    abort_seq_ = seq;
    abort_error_ = error;
    abort_pending_.store(true, std::memory_order_seq_cst);
  }
  send_pending_abort();
}

bool UcxTransport::aborted() const {
  return options_.abort != nullptr && options_.abort->load(std::memory_order_relaxed);
}

void UcxTransport::on_endpoint_error(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* health = static_cast<PeerHealth*>(arg);
  if (health->failure == UCS_OK) health->failure = status;  // keep the first reason
}

Status UcxTransport::peer_usable(std::size_t peer) const {
  const PeerHealth& health = health_[peer];
  if (health.failure != UCS_OK) {
    return Status(ErrorCode::kPeerFailure, "rank " + std::to_string(peer) +
                                               " failed: " + ucs_status_string(health.failure));
  }
  if (!endpoints_[peer].is_open()) {
    return Status(ErrorCode::kAborted,
                  "the endpoint to peer " + std::to_string(peer) + " is closed" +
                      (health.closed_by.empty() ? std::string() : " (" + health.closed_by + ")"));
  }
  return Status::ok();
}

void UcxTransport::cut_off(std::size_t peer, std::string why) {
  if (!endpoints_[peer].is_open()) return;
  health_[peer].closed_by = std::move(why);
  endpoints_[peer].force_close();
}

// ---- connect -------------------------------------------------------------------

Status UcxTransport::connect(const std::vector<std::vector<std::byte>>& addresses,
                             Clock::time_point deadline) {
  return core::catch_to_status(ErrorCode::kInternal, "connect",
                               [&] { return do_connect(addresses, deadline); });
}

Status UcxTransport::do_connect(const std::vector<std::vector<std::byte>>& addresses,
                                Clock::time_point deadline) {
  if (connect_called_) return Status(ErrorCode::kInvalidArgument, "connect called twice");
  if (addresses.empty()) return Status(ErrorCode::kInvalidArgument, "connect: no addresses");
  if (addresses.size() > kMaxTagPeers) {
    return Status(ErrorCode::kInvalidArgument,
                  "connect: " + std::to_string(addresses.size()) + " peers, the tag layout allows " +
                      std::to_string(kMaxTagPeers));
  }
  connect_called_ = true;
  // health_ is sized once, before any endpoint points into it.
  health_.resize(addresses.size());
  for (std::size_t peer = 0; peer < addresses.size(); ++peer) health_[peer].peer = peer;
  endpoints_.resize(addresses.size());

  // ucp_ep_create does not wait for the peer: with a worker address, UCX picks
  // the lanes locally and finishes the handshake (wireup) during progress.
  for (std::size_t peer = 0; peer < addresses.size(); ++peer) {
    if (aborted()) return Status(ErrorCode::kAborted, "connect: aborted");
    if (Clock::now() >= deadline) {
      return Status(ErrorCode::kTimeout, "connect: deadline passed before peer " +
                                             std::to_string(peer) + " of " +
                                             std::to_string(addresses.size()));
    }
    Result<Endpoint> endpoint =
        Endpoint::create(worker_, addresses[peer], &on_endpoint_error, &health_[peer],
                         !(peer < options_.unwatched_peers.size() && options_.unwatched_peers[peer]));
    if (!endpoint) {
      return endpoint.status().with_context("connect to peer " + std::to_string(peer));
    }
    endpoints_[peer] = std::move(endpoint).value();
  }
  for (std::size_t peer = 0; peer < addresses.size() && !self_known_; ++peer) {
    if (addresses[peer] == address_) {
      self_ = peer;
      self_known_ = true;
    }
  }
  post_notice_receive();
  return Status::ok();
}

// ---- connection handshake ------------------------------------------------------
//
// Challenge-response under the job's handshake key; the token never travels.
//   Round 1 (hello step 0): this rank sends every peer p a fresh random nonce
//     n(me->p) and receives n(p->me).
//   Round 2 (hello step 1): it answers p with
//     handshake_answer(challenge n(p->me), own n(me->p), responder me, challenger p)
//     and checks p's answer against the same function with the roles swapped.
// Only a holder of this job's token can answer. The nonces are fresh on every
// connection and the ranks enter in order, so an answer recorded on another
// connection, sent to another rank or reflected back does not match. Both
// rounds' headers carry the header MAC and key id as well: a process of
// another job is refused in round 1 already ("comes from another job").

Status UcxTransport::handshake(Clock::time_point deadline) {
  const Claim claim(*this, deadline, "handshake");
  RUCCL_TRY(claim.status());
  return core::catch_to_status(ErrorCode::kInternal, "connection handshake", [&]() -> Status {
    if (!connect_called_) return Status(ErrorCode::kInvalidArgument, "handshake before connect");
    if (!self_known_)
      return Status(ErrorCode::kInvalidArgument,
                    "handshake: this transport's own address is not among the peers");
    const std::size_t n = endpoints_.size();
    const auto me = static_cast<std::uint32_t>(self_);
    std::vector<WireKeys::Nonce> mine(n), theirs(n);
    std::vector<WireKeys::Answer> answers(n), heard(n);
    auto round = [&](std::uint32_t step, auto& out, auto& in) {
      std::vector<SendOp> sends;
      std::vector<RecvOp> recvs;
      for (std::size_t peer = 0; peer < n; ++peer) {
        if (peer == self_) continue;
        const auto p = static_cast<std::uint32_t>(peer);
        sends.push_back({peer, out[peer].data(), out[peer].size(),
                         make_tag({kHelloComm, 0, step, me, 0})});
        recvs.push_back({peer, in[peer].data(), in[peer].size(),
                         make_tag({kHelloComm, 0, step, p, 0})});
      }
      return run_exchange(sends, recvs, deadline, WireKind::kHello);
    };
    for (std::size_t peer = 0; peer < n; ++peer) mine[peer] = WireKeys::fresh_nonce();
    if (Status s = round(0, mine, theirs); !s) return s.with_context("connection handshake");
    for (std::size_t peer = 0; peer < n; ++peer) {
      if (peer == self_) continue;
      answers[peer] =
          keys_.handshake_answer(theirs[peer], mine[peer], me, static_cast<std::uint32_t>(peer));
    }
    if (Status s = round(1, answers, heard); !s) return s.with_context("connection handshake");
    for (std::size_t peer = 0; peer < n; ++peer) {
      if (peer == self_) continue;
      const auto p = static_cast<std::uint32_t>(peer);
      if (!WireKeys::same(heard[peer], keys_.handshake_answer(mine[peer], theirs[peer], p, me)))
        return Status(ErrorCode::kProtocolError,
                      "connection handshake: rank " + std::to_string(peer) +
                          " answered this rank's challenge wrongly: it does not hold this "
                          "job's token (another job, or a forger); refused");
    }
    return Status::ok();
  });
}

// ---- capabilities and lanes ----------------------------------------------------

bool UcxTransport::supports(MemoryType type) const {
  const ucs_memory_type_t ucx_type =
      type == MemoryType::kCuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  return (context_.memory_types() & (std::uint64_t{1} << ucx_type)) != 0;
}

namespace {

// ucp_ep_print_info's text in a string (open_memstream owns a malloc'ed buffer).
std::string endpoint_info(ucp_ep_h ep) {
  char* text = nullptr;
  std::size_t length = 0;
  FILE* stream = open_memstream(&text, &length);
  if (stream == nullptr) return {};
  ucp_ep_print_info(ep, stream);
  std::fclose(stream);
  std::string out(text != nullptr ? text : "", length);
  std::free(text);
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '#')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// One lane line, "lane[0]:  2:tcp/lo.0 md[1]  -> md[1]/tcp/sysdev[255] am am_bw#0 wireup",
// condensed to "tcp/lo.0[am am_bw#0 wireup]".
std::string condense_lane(std::string_view line) {
  std::string_view rest = trim(line.substr(line.find(':') + 1));
  // "2:tcp/lo.0 md[1] ..." -> resource "tcp/lo.0"
  const std::size_t colon = rest.find(':');
  const std::size_t space = rest.find(' ');
  std::string_view resource =
      rest.substr(colon == std::string_view::npos || colon > space ? 0 : colon + 1);
  resource = resource.substr(0, resource.find(' '));
  // The usages follow the remote md/resource after "->".
  std::string_view usages;
  if (const std::size_t arrow = rest.find("->"); arrow != std::string_view::npos) {
    std::string_view after = trim(rest.substr(arrow + 2));
    const std::size_t gap = after.find(' ');
    usages = gap == std::string_view::npos ? std::string_view() : trim(after.substr(gap + 1));
  }
  return std::string(resource) + "[" + std::string(usages) + "]";
}

}  // namespace

// Without the claim: called only while the world is created (its debug log),
// before any other thread uses the transport.
std::string UcxTransport::describe_lanes(std::size_t peer) const {
  try {
    return lanes_of(peer);
  } catch (...) {
    return {};
  }
}

std::string UcxTransport::lanes_of(std::size_t peer) const {
  if (peer >= endpoints_.size()) return "peer " + std::to_string(peer) + ": not connected";
  if (!endpoints_[peer].is_open()) return "peer " + std::to_string(peer) + ": endpoint closed";
  const std::string info = endpoint_info(endpoints_[peer].get());
  std::string lanes;
  std::string tag_send;
  std::size_t begin = 0;
  while (begin < info.size()) {
    std::size_t end = info.find('\n', begin);
    if (end == std::string::npos) end = info.size();
    const std::string_view line = trim(std::string_view(info).substr(begin, end - begin));
    if (line.starts_with("lane[")) {
      if (!lanes.empty()) lanes += ' ';
      lanes += condense_lane(line);
    } else if (line.starts_with("tag_send:")) {
      tag_send = std::string(trim(line.substr(std::strlen("tag_send:"))));
    }
    begin = end + 1;
  }
  if (lanes.empty()) lanes = "no lanes reported";
  if (!tag_send.empty()) lanes += "; tag_send " + tag_send;
  return lanes;
}

// ---- close ---------------------------------------------------------------------

Status UcxTransport::close(Clock::time_point deadline) {
  // An abort notice being sent on another thread ends within its bound.
  while (!try_claim(kCall)) {
    if (Clock::now() >= deadline)
      return Status(ErrorCode::kAborted,
                    "close: the transport is busy (an abort notice, or another thread's call)");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Status closed =
      core::catch_to_status(ErrorCode::kInternal, "close", [&] { return do_close(deadline); });
  release();
  return closed;
}

Status UcxTransport::do_close(Clock::time_point deadline) {
  if (sealed_) {
    // No progress: the destructor releases the endpoints without it.
    return Status(ErrorCode::kAborted,
                  "close: requests were abandoned after a failure; endpoints released without "
                  "flushing");
  }
  // Start every close at once, so that no peer waits on a close we have not
  // begun; failed endpoints can only be force-closed.
  struct Closing {
    std::size_t peer;
    Posted close;
  };
  std::vector<Closing> closing;
  for (std::size_t peer = 0; peer < endpoints_.size(); ++peer) {
    if (!endpoints_[peer].is_open()) continue;
    const bool force = health_[peer].failure != UCS_OK;
    Posted close = endpoints_[peer].start_close(force);
    if (close.request) closing.push_back({peer, std::move(close)});
    // A close that completed at once, even with an error (the peer closed
    // first or died), leaves nothing to wait for.
  }

  // Progress until every close request completes. The peers' closes need our
  // progress as much as ours needs theirs, so keep progressing to the end.
  while (true) {
    std::erase_if(closing, [](const Closing& c) {
      return ucp_request_check_status(c.close.request.get()) != UCS_INPROGRESS;
    });
    if (closing.empty()) return Status::ok();
    const bool abort = aborted();
    if (abort || Clock::now() >= deadline) {
      std::string peers;
      for (const Closing& c : closing) peers += (peers.empty() ? "" : ", ") + std::to_string(c.peer);
      // The requests are freed on return; UCX finishes them in ucp_worker_destroy.
      return Status(abort ? ErrorCode::kAborted : ErrorCode::kTimeout,
                    std::string(abort ? "close aborted" : "close: deadline passed") +
                        " while closing the endpoints to peers " + peers);
    }
    worker_.progress();
  }
}

}  // namespace ruccl::transport
