// The world communicator: the MPI bootstrap finds the processes and exchanges
// the UCX worker addresses once; then each local rank owns one UCX transport,
// agrees on every collective with every rank (fingerprints on the wire), and
// runs the src/ring algorithms through TransportRun.
#include "ruccl/world.hpp"

#include <sys/random.h>

#include <atomic>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "bootstrap/bootstrap.hpp"
#include "core/fault.hpp"
#include "core/log.hpp"
#include "core/spanning.hpp"
#include "multinode/delivered_run.hpp"
#include "multinode/from_bootstrap.hpp"
#include "multinode/wire.hpp"
#include "ring/schedule.hpp"
#include "transport/transport.hpp"
#include "transport/transport_run.hpp"

namespace ruccl {
namespace {

using transport::Clock;
constexpr std::uint32_t kDataComm = 0;     // tag comm field of algorithm messages
constexpr std::uint32_t kControlComm = 1;  // ... of fingerprint messages
constexpr std::uint32_t kAcrossComm = 2;   // ... of a hierarchical all-reduce's inter-process rings
constexpr auto kCloseBound = std::chrono::seconds(2);  // graceful endpoint closes at destruction
// Messages between processes carry at most this much even under a larger byte
// budget: a reducing step combines each message while it is still in cache
// (np=2 all-reduce of 16 MiB on the development VM: 1 MiB pieces ran 0.87-0.90
// of the time of 4 MiB ones, interleaved runs).
constexpr std::size_t kPieceBytes = std::size_t{1} << 20;

// The config was validated, so its fault plan parses.
core::FaultPlan plan_of(const Config& config) {
  auto plan = core::FaultPlan::parse(config.fault());
  return plan ? std::move(plan).value() : core::FaultPlan{};
}

class WorldSpanning final : public core::Spanning {
 public:
  WorldSpanning(std::unique_ptr<std::atomic<bool>> abort_flag,
                std::unique_ptr<bootstrap::Bootstrap> boot,
                std::vector<std::unique_ptr<transport::Transport>> transports, std::size_t first,
                std::size_t world, const Config& config)
      : logger_(config),
        abort_flag_(std::move(abort_flag)),
        bootstrap_(std::move(boot)),
        transports_(std::move(transports)),
        first_(first),
        world_(world),
        per_process_(transports_.size()),
        faults_(plan_of(config)),
        record_bytes_(multinode::wire_words(world) * sizeof(std::uint64_t)),
        one_shot_(per_process_),
        staging_(per_process_) {}
  ~WorldSpanning() override {
    // Graceful closes (ucp_ep_close_nbx, flushing) need every worker of every
    // process to make progress at the same time, so each local transport closes
    // on its own thread. Whatever does not close within the bound is
    // force-closed by the transport's destructor.
    std::vector<std::thread> closers;
    try {
      for (auto& t : transports_)
        closers.emplace_back([&t] { (void)t->close(Clock::now() + kCloseBound); });
    } catch (...) {  // no thread: the destructors force-close
    }
    for (auto& c : closers) c.join();
    transports_.clear();  // before the bootstrap, which may finalise MPI
  }

  // Each local transport sends its abort notice (at once when idle, else at
  // the end of the call in progress), then every blocked exchange of every
  // local transport returns kAborted. The notices are recorded before the
  // flag wakes the exchanges, so that those send the abort's text too.
  void abort(const std::vector<std::pair<std::uint64_t, Status>>& notices) override {
    for (std::size_t local = 0; local < transports_.size() && local < notices.size(); ++local)
      transports_[local]->abort_notify(notices[local].first, notices[local].second);
    abort_flag_->store(true);
  }
  std::size_t first_rank() const override { return first_; }
  std::size_t world() const override { return world_; }

  // Receives take any message up to what one message holds (kMaxUpToBytes).
  std::size_t fused_capacity() const override {
    return record_bytes_ < transport::kMaxUpToBytes ? transport::kMaxUpToBytes - record_bytes_ : 0;
  }

  // Every rank sends its fingerprint to every other (one message each), and,
  // with `send_input`, a small all-reduce's input rides along (choose_algorithm
  // asked for kOneShot): when the plan is agreed and every rank's message
  // carried its input, Plan::one_shot is set, and the collective may run as a
  // one-shot all-reduce over the delivered inputs (executors()). Each rank sees
  // the same messages, so all decide alike; the rendezvous checks the plan is
  // the same for every local rank. What the record cannot carry (too many
  // dims) travels as this rank's local error, so that the peers fail at once too.
  Result<core::Plan> agree_all(std::size_t local, std::uint64_t seq, const core::Request& request,
                               const Result<core::Geometry>& local_check, bool send_input,
                               std::chrono::milliseconds timeout) override {
    const std::size_t me = first_ + local;
    Result<core::Geometry> geometry = local_check;
    if (geometry.is_ok())
      if (Status s = multinode::check_encodable(request, me); !s) geometry = s;
    OneShot& os = one_shot_[local];
    os.ready = false;
    os.out = multinode::encode(request, geometry, world_);
    os.words = os.out.size();
    const std::size_t record = os.words * sizeof(std::uint64_t);
    const std::size_t payload =
        send_input && geometry.is_ok() ? geometry.value().count * dtype_size(request.dtype) : 0;
    os.out.resize(os.words + (payload + 7) / 8);
    if (payload > 0) std::memcpy(os.out.data() + os.words, request.in.data, payload);
    // Receives take any message up to what one message holds, whatever this
    // rank sends: another process may send its input when this one does not.
    const bool up_to = record < transport::kMaxUpToBytes;
    const std::size_t capacity = up_to ? transport::kMaxUpToBytes : record;
    os.in.resize(world_);
    os.got.assign(world_, record);
    std::vector<transport::SendOp>& sends = os.sends;  // kept: this runs per collective
    std::vector<transport::RecvOp>& recvs = os.recvs;
    sends.clear();
    recvs.clear();
    for (std::size_t r = 0; r < world_; ++r) {
      if (r == me) continue;
      os.in[r].resize((capacity + 7) / 8);
      sends.push_back({r, os.out.data(), record + payload,
                       transport::make_tag({kControlComm, seq, 0, static_cast<std::uint32_t>(me), 0}),
                       seq});
      recvs.push_back({r, os.in[r].data(), capacity,
                       transport::make_tag({kControlComm, seq, 0, static_cast<std::uint32_t>(r), 0}),
                       seq, up_to ? &os.got[r] : nullptr});
    }
    if (Status sent = transports_[local]->exchange(sends, recvs, Clock::now() + timeout); !sent)
      return sent.with_context(core::describe(seq, request.kind) + ": agreement (fingerprints)");
    std::vector<multinode::Decoded> decoded(world_);
    std::vector<const core::Request*> requests(world_);
    std::vector<const Result<core::Geometry>*> locals(world_);
    bool all_sent_inputs = payload > 0;
    for (std::size_t r = 0; r < world_; ++r) {
      if (r == me) {
        requests[r] = &request;
        locals[r] = &geometry;
      } else {
        all_sent_inputs = all_sent_inputs && os.got[r] == record + payload;
        auto d = os.got[r] < record
                     ? Result<multinode::Decoded>(Status(
                           ErrorCode::kProtocolError,
                           "a message of " + std::to_string(os.got[r]) +
                               " bytes, shorter than a fingerprint record (" +
                               std::to_string(record) + ")"))
                     : multinode::decode(std::span(os.in[r].data(), os.words), world_);
        if (!d) {
          const Status bad = d.status().with_context(
              "collective #" + std::to_string(seq) + ": the fingerprint from rank " +
              std::to_string(r));
          transports_[local]->notify_failure(seq, bad);  // the others agreed: tell them
          return bad;
        }
        decoded[r] = std::move(d).value();
        requests[r] = &decoded[r].request;
        locals[r] = &decoded[r].geometry;
      }
    }
    Result<core::Plan> plan = core::agree(requests, locals, seq);
    if (!plan && plan.status().code() == ErrorCode::kProtocolError) {
      // A record that decoded but cannot be used: the ranks that got another
      // copy of it may have agreed.
      transports_[local]->notify_failure(seq, plan.status());
      return plan;
    }
    if (plan.is_ok() && all_sent_inputs) {
      os.ready = true;
      os.seq = seq;
      os.count = geometry.value().count;
      plan.value().one_shot = true;
    }
    return plan;
  }

  void failed(std::size_t local, std::uint64_t seq, const Status& error) override {
    transports_[local]->notify_failure(seq, error);  // once per transport
  }

  // The executors of the chosen algorithm: kInProcess none (the in-process
  // executor), kOneShot the delivered inputs, kHierarchical the ring across
  // processes of this rank's local index (the local levels run in-process),
  // kFlatRing a UCX message for every transfer.
  core::Executors executors(std::size_t local, std::uint64_t seq, core::Algorithm algorithm,
                            CollectiveKind kind, Work& work, DeviceAdapter& adapter,
                            const core::Plan& plan, std::chrono::milliseconds timeout) override {
    core::Executors out;
    out.algorithm = algorithm;
    if (algorithm == core::Algorithm::kInProcess) return out;
    OneShot& os = one_shot_[local];
    // plan.one_shot is every local rank's decision (the rendezvous refused the
    // plan otherwise), and this rank's own: its inputs are in `os`.
    if (algorithm == core::Algorithm::kOneShot && plan.one_shot && os.ready && os.seq == seq &&
        kind == CollectiveKind::kAllReduce) {
      os.ready = false;
      std::vector<const std::byte*> inputs(world_);
      for (std::size_t r = 0; r < world_; ++r)
        inputs[r] = reinterpret_cast<const std::byte*>(
            (r == first_ + local ? os.out : os.in[r]).data() + os.words);
      out.run = std::make_unique<multinode::DeliveredRun>(adapter, work, local, first_ + local,
                                                          world_, std::move(inputs), os.count);
      return out;
    }
    os.ready = false;
    const std::size_t processes = world_ / per_process_;
    // The budget's elements per message, cut to kPieceBytes where a row fits.
    std::size_t elements = plan.message_elements;
    if (auto piece = ring::message_elements(kPieceBytes, dtype_size(plan.dtype),
                                            std::max<std::size_t>(1, plan.geometry.unit)))
      elements = std::min(elements, piece.value());
    auto options = [&](std::uint32_t comm) {
      transport::TransportRunOptions o{comm, seq, elements, timeout};
      o.staging_cache = &staging_[local];
      o.context = core::describe(seq, kind);
      if (!faults_.empty()) {
        o.faults = &faults_;
        o.fault_rank = first_ + local;
      }
      if (logger_.enabled(LogLevel::kTrace))  // the memory path, once per executor
        o.log = [this, rank = first_ + local](const std::string& line) {
          logger_.log(LogLevel::kTrace, rank, line);
        };
      return o;
    };
    if (algorithm == core::Algorithm::kHierarchical) {
      transport::TransportRunOptions o = options(kAcrossComm);
      o.peer_base = local;
      o.peer_stride = per_process_;
      out.across = std::make_unique<transport::TransportRun>(
          *transports_[local], adapter, work, local, first_ / per_process_, processes, o);
      return out;
    }
    out.algorithm = core::Algorithm::kFlatRing;  // also a one-shot without its inputs
    out.run = std::make_unique<transport::TransportRun>(
        *transports_[local], adapter, work, local, first_ + local, world_, options(kDataComm));
    return out;
  }

 private:
  core::Logger logger_;  // TRACE lines of the executors (the core logs the rest)
  std::unique_ptr<std::atomic<bool>> abort_flag_;  // read by the transports: outlives them
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  std::vector<std::unique_ptr<transport::Transport>> transports_;
  const std::size_t first_;
  const std::size_t world_;
  const std::size_t per_process_;
  const core::FaultPlan faults_;  // drop/corrupt faults for the executors (RUCCL_FAULT)

  // The fused small all-reduce of one local rank (touched only by its thread).
  struct OneShot {
    bool ready = false;  // collective `seq` runs one-shot over the inputs below
    std::uint64_t seq = 0;
    std::size_t count = 0;  // elements of each input
    std::size_t words = 0;  // of the fingerprint record, in front of each input
    std::vector<std::uint64_t> out;              // this rank's record + input
    std::vector<std::vector<std::uint64_t>> in;  // each other rank's message
    std::vector<std::size_t> got;                // bytes received from each rank
    std::vector<transport::SendOp> sends;        // the agreement's messages (scratch)
    std::vector<transport::RecvOp> recvs;
  };
  const std::size_t record_bytes_;  // of one fingerprint record (wire_words)
  std::vector<OneShot> one_shot_;     // per local rank
  // Receive buffers of reduction steps, kept across collectives (per local rank).
  std::vector<std::vector<transport::StagingBuffer>> staging_;
};

// ---- creation -----------------------------------------------------------------
//
// Creation is a sequence of named steps, each ending in an agreement of outcome
// through the bootstrap (bootstrap::agree_outcome): every process contributes
// "ok" or its error, so a failure on one process (a bad Config, a transport
// that cannot open, an exception) reaches every process, and all return the
// same error, naming the process (and host) at fault. Every wait has a
// deadline, Config::timeout from the start of its step, so a process that dies
// or never arrives ends the others' creation with kTimeout naming it:
//   1. "agree on devices and config": the local checks (devices, Config), the
//      settings every process must share (shared_settings), process 0's job token;
//   2. "open transports": one UCX transport per local device; the payload is
//      their addresses (the address exchange);
//   3. "connect and handshake": endpoints to every rank, the challenge-response
//      handshake (keyed by the job token), then the outcome. After a local failure (a peer that died
//      mid-handshake, typically) the agreement waits only kGrace: the others
//      failed at about the same time, and the dead one never comes.
// RUCCL_FAULT's create faults (core/fault.hpp) exit or throw at each stage.

constexpr auto kGrace = std::chrono::milliseconds(2000);

// Runs one step's local part; an exception becomes its error.
template <typename F>
Status caught(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("exception: ") + e.what());
  } catch (...) {
    return Status(ErrorCode::kInternal, "a non-standard exception");
  }
}

void put_u64(std::vector<std::byte>& out, std::uint64_t v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof(v));
}
// Reads a u64 at `at` of a peer's bytes; false past the end.
bool get_u64(std::span<const std::byte> in, std::size_t& at, std::uint64_t& v) {
  if (in.size() < sizeof(v) || at > in.size() - sizeof(v)) return false;
  std::memcpy(&v, in.data() + at, sizeof(v));
  at += sizeof(v);
  return true;
}

// The settings that decide which messages exist and how large they are: every
// process must have the same. (max_chunk_bytes travels with each collective's
// fingerprint and is agreed there; one_shot_bytes and checksum may differ, see
// config.hpp; timeouts, logging and faults are local.)
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return s.empty() ? 0 : h;
}

struct Setting {
  const char* name;
  std::uint64_t value;
  ErrorCode code;
};
std::vector<Setting> shared_settings(std::size_t per_process, bool cuda, const Config& config) {
  return {
      {"devices per process", per_process, ErrorCode::kDeviceCountMismatch},
      {"CUDA devices (1 yes, 0 no)", cuda ? 1u : 0u, ErrorCode::kInvalidArgument},
      {"global strategy (RUCCL_ALGO; 0 hierarchical, 1 flat_ring)",
       static_cast<std::uint64_t>(config.global_strategy()), ErrorCode::kInvalidArgument},
      {"segment_bytes (RUCCL_SEGMENT_BYTES)", config.segment_bytes(), ErrorCode::kInvalidArgument},
      {"algorithm selection (RUCCL_ALGO; a hash of the string)", fnv1a(config.algorithm()),
       ErrorCode::kInvalidArgument},
  };
}

// The job token: process 0 draws 128 bits from the OS random source; they ride
// on step 1 (through the bootstrap, never over UCX). It is a key: the
// transports derive their header MACs and handshake from it and never send it
// (transport/wire_header.hpp); a message or handshake made without it
// (another job's, a forger's) is refused.
Status draw_token(transport::JobToken& token) {
  std::size_t got = 0;
  while (got < token.size()) {
    const ssize_t n = getrandom(token.data() + got, token.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Status(ErrorCode::kInternal,
                    "could not draw a job token from the OS random source (getrandom)");
    got += static_cast<std::size_t>(n);
  }
  return Status::ok();
}

// Step 1's payload: the settings, the token (process 0 only), the hostname.
std::vector<std::byte> pack_settings(const std::vector<Setting>& settings,
                                     const transport::JobToken* token, const std::string& host) {
  std::vector<std::byte> out;
  put_u64(out, settings.size());
  for (const Setting& s : settings) put_u64(out, s.value);
  const auto* t = token ? reinterpret_cast<const std::byte*>(token->data()) : nullptr;
  put_u64(out, token ? token->size() : 0);
  if (t) out.insert(out.end(), t, t + token->size());
  const auto* h = reinterpret_cast<const std::byte*>(host.data());
  out.insert(out.end(), h, h + host.size());
  return out;
}

// Step 1's comparison: every process reads the same payloads, so all return
// the same Status; fills `token` from process 0's.
Status compare_settings(const bootstrap::Blobs& payloads, const std::vector<Setting>& mine,
                        transport::JobToken& token) {
  const std::string step = "creation (agree on devices and config): ";
  struct Peer {
    std::vector<std::uint64_t> values;
    std::string host;
  };
  std::vector<Peer> peers(payloads.size());
  for (std::size_t p = 0; p < payloads.size(); ++p) {
    const std::span<const std::byte> in(payloads[p]);
    std::size_t at = 0;
    std::uint64_t n = 0, token_bytes = 0;
    bool ok = get_u64(in, at, n) && n == mine.size();
    for (std::size_t i = 0; ok && i < mine.size(); ++i) {
      std::uint64_t v = 0;
      ok = get_u64(in, at, v);
      peers[p].values.push_back(v);
    }
    ok = ok && get_u64(in, at, token_bytes) &&
         (token_bytes == 0 || token_bytes == token.size()) && token_bytes <= in.size() - at &&
         (p == 0) == (token_bytes == token.size());
    if (!ok)
      return Status(ErrorCode::kProtocolError, step + "process " + std::to_string(p) +
                                                   " sent a malformed record of " +
                                                   std::to_string(in.size()) + " bytes");
    if (p == 0) std::memcpy(token.data(), in.data() + at, token.size());
    at += static_cast<std::size_t>(token_bytes);
    peers[p].host.assign(reinterpret_cast<const char*>(in.data()) + at, in.size() - at);
  }
  for (std::size_t i = 0; i < mine.size(); ++i)
    for (std::size_t p = 1; p < peers.size(); ++p) {
      const std::uint64_t theirs = peers[p].values[i], first = peers[0].values[i];
      if (theirs == first) continue;
      return Status(mine[i].code, step + "process " + std::to_string(p) + " (host " +
                                      peers[p].host + ") has " + std::to_string(theirs) + " " +
                                      mine[i].name + ", process 0 (host " + peers[0].host +
                                      ") has " + std::to_string(first));
    }
  return Status::ok();
}

// Step 2's payload: for each local rank, an 8-byte length then its address.
std::vector<std::byte> pack(const std::vector<std::unique_ptr<transport::Transport>>& ts) {
  std::vector<std::byte> out;
  for (const auto& t : ts) {
    const std::vector<std::byte> a = t->address();
    put_u64(out, a.size());
    out.insert(out.end(), a.begin(), a.end());
  }
  return out;
}

// A peer's step-2 payload: exactly `count` addresses.
Status unpack(const std::vector<std::byte>& blob, std::size_t process, std::size_t count,
              std::vector<std::vector<std::byte>>& out) {
  const auto bad = [&] {
    return Status(ErrorCode::kProtocolError,
                  "creation (open transports): process " + std::to_string(process) +
                      " sent a malformed address record of " + std::to_string(blob.size()) +
                      " bytes");
  };
  std::size_t at = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t len = 0;
    if (!get_u64(blob, at, len) || len > blob.size() - at) return bad();
    out.emplace_back(blob.begin() + static_cast<std::ptrdiff_t>(at),
                     blob.begin() + static_cast<std::ptrdiff_t>(at + len));
    at += static_cast<std::size_t>(len);
  }
  return at == blob.size() ? Status::ok() : bad();
}

// Step 3's local part: connect every local transport, then the handshake (job
// tokens), which needs every local transport to progress at the same time: one
// thread each, like the closes.
Status connect_and_handshake(std::vector<std::unique_ptr<transport::Transport>>& transports,
                             const std::vector<std::vector<std::byte>>& addresses,
                             const core::FaultPlan& faults, std::size_t process,
                             const Config& config, std::size_t first) {
  core::fire_create_fault(faults, core::CreateStage::kConnect, process);
  for (auto& t : transports) RUCCL_TRY(t->connect(addresses, Clock::now() + config.timeout()));
  core::fire_create_fault(faults, core::CreateStage::kHandshake, process);
  std::vector<Status> shook(transports.size());
  std::vector<std::thread> threads;
  const auto deadline = Clock::now() + config.timeout();
  try {
    for (std::size_t d = 1; d < transports.size(); ++d)
      threads.emplace_back([&, d] { shook[d] = transports[d]->handshake(deadline); });
  } catch (const std::exception& e) {  // no thread: the others time out, and we say why
    shook[0] = Status(ErrorCode::kInternal, std::string("handshake thread: ") + e.what());
  }
  if (shook[0]) shook[0] = transports[0]->handshake(deadline);
  for (auto& th : threads) th.join();
  for (const Status& s : shook)
    if (!s) {
      // A refused peer is worth a log line even with logging off.
      Config loud = config;
      if (loud.log_level() == LogLevel::kOff) loud.with_log_level(LogLevel::kWarn);
      core::Logger(loud).log(LogLevel::kWarn, first, s.to_string());
      return s;
    }
  core::fire_create_fault(faults, core::CreateStage::kAgreed, process);
  return Status::ok();
}

// The bootstrap needs a positive timeout even when the Config is invalid (its
// error then travels through step 1).
std::chrono::milliseconds bootstrap_timeout(const Config& config) {
  return config.timeout().count() > 0 && config.timeout() <= Config::kMaxTimeout
             ? config.timeout()
             : Config::kDefaultTimeout;
}

}  // namespace

Result<std::shared_ptr<Communicator>> create_world_communicator(std::vector<DeviceId> local_devices,
                                                                Config config) {
  // The local checks travel through creation's first agreement: returning here
  // would leave the other processes waiting for this one.
  auto boot = bootstrap::mpi_world_bootstrap(bootstrap_timeout(config));
  RUCCL_TRY(boot);
  return multinode::create_communicator_from_bootstrap(std::move(boot).value(),
                                                       std::move(local_devices), std::move(config));
}

Result<std::shared_ptr<Communicator>> multinode::create_communicator_from_bootstrap(
    std::unique_ptr<bootstrap::Bootstrap> boot, std::vector<DeviceId> local_devices, Config config) {
  if (!boot) return Status(ErrorCode::kInvalidArgument, "no bootstrap");
  const bootstrap::Topology& topo = boot->topology();
  const Status valid = config.validate();
  const core::FaultPlan faults = valid ? plan_of(config) : core::FaultPlan{};
  const std::size_t per_process = local_devices.size();
  const std::size_t world = topo.processes * per_process;
  const std::size_t first = topo.process * per_process;

  // 1. Agree on devices and config; share the job token.
  transport::JobToken token{};
  {
    const bool cuda = !local_devices.empty() && local_devices.front().kind == DeviceKind::kCuda;
    const std::vector<Setting> settings = shared_settings(per_process, cuda, config);
    const Status local = caught([&]() -> Status {
      core::fire_create_fault(faults, core::CreateStage::kStart, topo.process);
      if (local_devices.empty())
        return Status(ErrorCode::kInvalidArgument, "a process needs at least one local device");
      RUCCL_TRY(valid);
      if (topo.process == 0) RUCCL_TRY(draw_token(token));
      return Status::ok();
    });
    const auto payload = pack_settings(settings, topo.process == 0 && local ? &token : nullptr,
                                       topo.hostname);
    auto agreed = bootstrap::agree_outcome(
        *boot, local, payload, "creation (agree on devices and config)",
        bootstrap::Wait::within(local ? config.timeout() : boot->timeout()));
    RUCCL_TRY(agreed);
    RUCCL_TRY(compare_settings(agreed.value(), settings, token));
  }

  // 2. Open the transports; exchange their addresses.
  // Endpoints to ranks on this node skip peer-failure detection (shared memory).
  auto abort_flag = std::make_unique<std::atomic<bool>>(false);
  std::vector<std::unique_ptr<transport::Transport>> transports;
  std::vector<std::vector<std::byte>> addresses;
  {
    Status local = caught([&]() -> Status {
      core::fire_create_fault(faults, core::CreateStage::kTransports, topo.process);
      transport::TransportOptions options;
      options.abort = abort_flag.get();
      options.token = token;
      options.checksum = config.checksum();
      if (config.intra_node_shared_memory())
        for (std::size_t peer = 0; peer < world; ++peer)
          options.unwatched_peers.push_back(topo.node_of_process[peer / per_process] == topo.node);
      for (std::size_t d = 0; d < per_process; ++d) {
        auto t = transport::make_ucx_transport(options);
        RUCCL_TRY(t);
        transports.push_back(std::move(t.value()));
      }
      core::fire_create_fault(faults, core::CreateStage::kAddress, topo.process);
      return Status::ok();
    });
    std::vector<std::byte> payload;
    if (local) {
      local = caught([&]() -> Status {
        payload = pack(transports);
        return Status::ok();
      });
    }
    auto agreed = bootstrap::agree_outcome(*boot, local, payload, "creation (open transports)",
                                           bootstrap::Wait::within(config.timeout()));
    RUCCL_TRY(agreed);
    for (std::size_t p = 0; p < agreed.value().size(); ++p)
      RUCCL_TRY(unpack(agreed.value()[p], p, per_process, addresses));
  }

  // 3. Connect and handshake, then agree that everyone did. Every process has
  // connected before any goes on: a process that returned at once and
  // destroyed its workers (create, then destroy) would otherwise pull the
  // shared-memory segments from under peers still attaching to them.
  {
    const Status local = caught([&] {
      return connect_and_handshake(transports, addresses, faults, topo.process, config, first);
    });
    auto agreed = bootstrap::agree_outcome(
        *boot, local, {}, "creation (connect and handshake)",
        bootstrap::Wait::within(local ? config.timeout() : std::min(config.timeout(), kGrace)));
    if (!agreed && !local)  // say both: why this process failed, and who never came
      return Status(local.code(), "creation (connect and handshake): " + local.message() + "; " +
                                      agreed.status().message());
    RUCCL_TRY(agreed);
  }
  core::Logger logger(config);
  if (logger.enabled(LogLevel::kInfo)) {
    logger.log(LogLevel::kInfo, first,
               "world of " + std::to_string(world) + " ranks: " + std::to_string(topo.processes) +
                   " processes x " + std::to_string(per_process) + " devices on " +
                   std::to_string(topo.nodes) + " nodes; this process is " +
                   std::to_string(topo.process) + " on node " + std::to_string(topo.node) +
                   "; strategy " + std::string(global_strategy_name(config.global_strategy())));
    // How device buffers meet UCX, and which UCX transports reach each peer
    // (e.g. tcp to ranks on other nodes).
    for (std::size_t d = 0; d < per_process; ++d)
      logger.log(LogLevel::kInfo, first + d,
                 std::string("memory path: ") +
                     transport::memory_path_name(transport::choose_memory_path(
                         local_devices.front().kind,
                         transports[d]->supports(transport::MemoryType::kCuda), false)) +
                     " (" + std::string(device_kind_name(local_devices.front().kind)) +
                     " buffers; UCX " +
                     (transports[d]->supports(transport::MemoryType::kCuda) ? "with" : "without") +
                     " CUDA memory support)");
    for (std::size_t d = 0; d < per_process; ++d)
      for (std::size_t peer = 0; peer < world; ++peer)
        logger.log(LogLevel::kInfo, first + d,
                   "lanes: rank " + std::to_string(first + d) + " (node " +
                       std::to_string(topo.node) + ") -> rank " + std::to_string(peer) +
                       " (node " + std::to_string(topo.node_of_process[peer / per_process]) +
                       "): " + transports[d]->describe_lanes(peer));
  }

  auto adapter = make_adapter(local_devices.front().kind);
  RUCCL_TRY(adapter);
  auto spanning = std::make_unique<WorldSpanning>(
      std::move(abort_flag), std::move(boot), std::move(transports), first, world, config);
  return core::make_spanning_communicator(std::move(local_devices), adapter.value(),
                                          std::move(config), std::move(spanning));
}

}  // namespace ruccl
