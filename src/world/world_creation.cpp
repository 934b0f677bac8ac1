// World creation: the MPI bootstrap (or another) finds the processes; then a
// sequence of named steps (below) agrees on devices and config, shares the
// job token, opens the transports and exchanges their addresses, connects and
// handshakes, and logs the lanes. The agreement and execution of collectives
// is world_agreement.cpp (WorldRemoteRanks).
#include "ruccl/world.hpp"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "bootstrap/bootstrap.hpp"
#include "core/catch_to_status.hpp"
#include "core/fault.hpp"
#include "core/log.hpp"
#include "core/yield_window.hpp"
#include "node/mailbox.hpp"
#include "transport/transport.hpp"
#include "transport/transport_run.hpp"  // choose_memory_path
#include "transport/wire_header.hpp"    // WireKeys: the node segment's tag
#include "world/fingerprint_codec.hpp"  // wire_words: the mailbox slots hold records
#include "world/from_bootstrap.hpp"
#include "world/world_remote_ranks.hpp"

namespace ruccl {
namespace {

using transport::Clock;

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
//      handshake (keyed by the job token), then the outcome. After a local failure (a peer that
//      died mid-handshake, typically) the agreement waits only kGrace: the others failed at about
//      the same time, and the dead one never comes.
//   4. "share memory on the node" (RUCCL_INTRA_NODE_TRANSPORT=shm, the
//      default): the node's first process creates the node segment
//      (node/segment.hpp) and the others map it, when every process of the node
//      shares its IPC and PID namespaces; then an agreement that all mapped it.
// RUCCL_FAULT's create faults (core/fault.hpp) exit or throw at each stage.

constexpr auto kGrace = std::chrono::milliseconds(2000);
// What a node mailbox slot holds beside a fingerprint record: a small
// collective's input (the same for every process: slots are one size).
constexpr std::size_t kNodeFusedBytes = 8192;
// What a lean-lane slot holds: a 64-byte fingerprint and a small collective's
// input, up to this much (the selection table's node_mailbox rows stop there).
constexpr std::size_t kNodeLeanHeader = 64;
constexpr std::size_t kNodeLeanBytes = std::size_t{64} << 10;

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
      {"lean_bytes (RUCCL_LEAN_BYTES)", config.lean_bytes(), ErrorCode::kInvalidArgument},
      {"algorithm selection (RUCCL_ALGO; a hash of the string)", fnv1a(config.algorithm()),
       ErrorCode::kInvalidArgument},
      {"intra-node transport (RUCCL_INTRA_NODE_TRANSPORT; 1 shm, 2 shm-direct, 0 tcp)",
       config.intra_node_shared_memory() ? (config.node_single_copy() ? 2u : 1u) : 0u,
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

// This machine, as every process on it reads it in any namespace: the first
// 16 hex digits of the kernel's boot id (0 where it cannot be read). Hosts
// made of network namespaces (tests/multinode) share it, and the cores.
std::uint64_t machine_id() {
  std::FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f == nullptr) return 0;
  char text[64] = {};
  const bool read = std::fgets(text, sizeof text, f) != nullptr;
  std::fclose(f);
  std::uint64_t id = 0;
  int digits = 0;
  for (const char* c = text; read && *c != '\0' && digits < 16; ++c) {
    const int v = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10 : -1;
    if (v < 0) continue;  // the dashes (and anything else that is no hex digit)
    id = id << 4 | static_cast<std::uint64_t>(v);
    ++digits;
  }
  return digits == 16 ? id : 0;
}

// Step 1's payload: the settings, the token (process 0 only), the machine
// (machine_id), the hostname.
std::vector<std::byte> pack_settings(const std::vector<Setting>& settings,
                                     const transport::JobToken* token, std::uint64_t machine,
                                     const std::string& host) {
  std::vector<std::byte> out;
  put_u64(out, settings.size());
  for (const Setting& s : settings) put_u64(out, s.value);
  const auto* t = token ? reinterpret_cast<const std::byte*>(token->data()) : nullptr;
  put_u64(out, token ? token->size() : 0);
  if (t) out.insert(out.end(), t, t + token->size());
  put_u64(out, machine);
  const auto* h = reinterpret_cast<const std::byte*>(host.data());
  out.insert(out.end(), h, h + host.size());
  return out;
}

// Step 1's comparison: every process reads the same payloads, so all return
// the same Status; fills `token` from process 0's and machines[p] with
// process p's machine_id.
Status compare_settings(const bootstrap::Blobs& payloads, const std::vector<Setting>& mine,
                        transport::JobToken& token, std::vector<std::uint64_t>& machines) {
  const std::string step = "creation (agree on devices and config): ";
  struct Peer {
    std::vector<std::uint64_t> values;
    std::string host;
  };
  machines.assign(payloads.size(), 0);
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
    ok = ok && get_u64(in, at, token_bytes) && (token_bytes == 0 || token_bytes == token.size()) &&
         token_bytes <= in.size() - at && (p == 0) == (token_bytes == token.size());
    if (ok && p == 0) std::memcpy(token.data(), in.data() + at, token.size());
    if (ok) at += static_cast<std::size_t>(token_bytes);
    ok = ok && get_u64(in, at, machines[p]);
    if (!ok)
      return Status(ErrorCode::kProtocolError, step + "process " + std::to_string(p) +
                                                   " sent a malformed record of " +
                                                   std::to_string(in.size()) + " bytes");
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
    return Status(ErrorCode::kProtocolError, "creation (open transports): process " +
                                                 std::to_string(process) +
                                                 " sent a malformed address record of " +
                                                 std::to_string(blob.size()) + " bytes");
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

// The fault plan of a config that validated (else none: its error travels
// through step 1). Parsed once per communicator: creation's faults fire here,
// the others in the communicator and its executors, which share this plan.
std::shared_ptr<const core::FaultPlan> fault_plan(const Config& config, const Status& valid) {
  auto plan =
      valid ? core::FaultPlan::parse(config.fault()) : Result<core::FaultPlan>(core::FaultPlan{});
  return std::make_shared<const core::FaultPlan>(plan ? std::move(plan).value()
                                                      : core::FaultPlan{});
}

// Step 4's payload: this process's IPC and PID namespaces (the inodes of
// /proc/self/ns/ipc and pid), its pid, and the node segment's descriptor (-1
// but on the node's first process). Processes of one host with another IPC
// namespace (netns test hosts) are not one node for shared memory.
struct NodeRecord {
  std::uint64_t ipc = 0, pid_ns = 0, pid = 0, fd = ~std::uint64_t{0};
};
std::uint64_t ns_inode(const char* path) {
  struct stat st {};
  return ::stat(path, &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}
NodeRecord my_node_record(int fd) {
  return {ns_inode("/proc/self/ns/ipc"), ns_inode("/proc/self/ns/pid"),
          static_cast<std::uint64_t>(::getpid()), fd < 0 ? ~std::uint64_t{0} : std::uint64_t(fd)};
}
// The node segment's tag: a MAC of a label under the job's header key.
node::Tag segment_tag(const transport::JobToken& token, std::size_t first_process) {
  const std::string label = "ruccl node segment of process " + std::to_string(first_process);
  const auto mac = transport::WireKeys(token).header_mac(label.data(), label.size());
  node::Tag tag{};
  std::copy(mac.begin(), mac.end(), tag.begin());
  return tag;
}

}  // namespace

Result<world::NodeMemory> world::share_node_memory(bootstrap::Bootstrap& boot,
                                                   std::size_t per_process, std::size_t world,
                                                   const Config& config, const node::Tag& tag,
                                                   const std::atomic<bool>* abort,
                                                   bool oversubscribed) {
  const bootstrap::Topology& topo = boot.topology();
  NodeMemory out;
  std::unique_ptr<node::Mailbox>& mailbox = out.mailbox;
  const std::size_t node_first = topo.process - topo.local_process;
  node::MailboxShape shape;
  shape.processes = topo.local_processes;
  shape.per_process = per_process;
  shape.ranks = shape.processes * per_process;
  shape.slot_bytes = world::wire_words(world) * sizeof(std::uint64_t) + kNodeFusedBytes;
  shape.lean_bytes = kNodeLeanHeader + kNodeLeanBytes;
  // A world of one process with several ranks gets its mailbox too: its
  // small collectives take the lean path as the ranks of several processes
  // do (one round through the slots, no rendezvous, engine or UCX), its
  // larger ones stay in-process (no channels, and so no direct forms).
  const bool lone = topo.processes == 1 && per_process >= 2;
  // The data of larger collectives too (world::NodeRun), up to kChannelRanks:
  // all of them when the world is this node, the hierarchical collectives'
  // node level when it spans nodes.
  if (shape.ranks <= node::kChannelRanks && !lone) {
    shape.channel_slots = node::kChannelSlots;
    shape.channel_piece = node::channel_piece_for(shape.ranks);
  }
  shape.first = node_first * per_process;
  shape.first_process = node_first;
  const bool leader = topo.local_process == 0;
  std::optional<node::Segment> created;
  Status local = core::catch_to_status(ErrorCode::kInternal, "creation", [&]() -> Status {
    if (!leader || (shape.processes < 2 && !lone)) return Status::ok();
    auto seg = node::Segment::create(node::segment_bytes(shape), "ruccl-node");
    RUCCL_TRY(seg);
    node::Mailbox::lay_out(seg.value(), shape, tag);
    created = std::move(seg).value();
    return Status::ok();
  });
  const NodeRecord mine = my_node_record(created ? created->fd() : -1);
  std::vector<std::byte> payload;
  for (std::uint64_t v : {mine.ipc, mine.pid_ns, mine.pid, mine.fd}) put_u64(payload, v);
  auto agreed =
      bootstrap::agree_outcome(boot, local, payload, "creation (share memory on the node)",
                               bootstrap::Wait::within(config.timeout()));
  RUCCL_TRY(agreed);
  // Every process of the node reads the same records, so all decide alike.
  std::vector<NodeRecord> records(shape.processes);
  bool shared = shape.processes >= 2 || lone;
  for (std::size_t p = 0; p < shape.processes; ++p) {
    const auto& blob = agreed.value()[node_first + p];
    std::size_t at = 0;
    NodeRecord& r = records[p];
    if (!get_u64(blob, at, r.ipc) || !get_u64(blob, at, r.pid_ns) || !get_u64(blob, at, r.pid) ||
        !get_u64(blob, at, r.fd) || at != blob.size())
      return Status(ErrorCode::kProtocolError, "creation (share memory on the node): process " +
                                                   std::to_string(node_first + p) +
                                                   " sent a malformed record of " +
                                                   std::to_string(blob.size()) + " bytes");
    shared = shared && r.ipc != 0 && r.ipc == records[0].ipc && r.pid_ns != 0 &&
             r.pid_ns == records[0].pid_ns;
  }
  // Every process takes part in the agreement below, also where its node
  // shares nothing (one process, namespaces that differ): nodes may differ.
  Status mapped = core::catch_to_status(ErrorCode::kInternal, "creation", [&]() -> Status {
    if (!shared) return Status::ok();
    node::Segment seg;
    if (leader) {
      seg = std::move(*created);
    } else {
      if (records[0].pid == 0 || records[0].pid > INT_MAX || records[0].fd > INT_MAX)
        return Status(ErrorCode::kProtocolError, "creation (share memory on the node): process " +
                                                     std::to_string(node_first) +
                                                     " names no segment");
      auto opened =
          node::Segment::open(static_cast<pid_t>(records[0].pid), static_cast<int>(records[0].fd),
                              node::segment_bytes(shape));
      RUCCL_TRY(opened);
      seg = std::move(opened).value();
    }
    auto box = node::Mailbox::attach(std::move(seg), shape, tag, topo.local_process, abort);
    RUCCL_TRY(box);
    mailbox = std::make_unique<node::Mailbox>(std::move(box).value());
    mailbox->set_oversubscribed(oversubscribed);
    return Status::ok();
  });
  // Each process says whether its node's segment carries channels.
  const std::byte channels =
      mailbox != nullptr && mailbox->shape().channel_slots > 0 ? std::byte{1} : std::byte{0};
  auto all_mapped = bootstrap::agree_outcome(boot, mapped, std::span<const std::byte>(&channels, 1),
                                             "creation (share memory on the node: map)",
                                             bootstrap::Wait::within(config.timeout()));
  RUCCL_TRY(all_mapped);
  // A node level: several nodes, each with as many processes, every process
  // with channels (each decides from the same gathered bytes and topology).
  std::vector<std::size_t> per_node(topo.nodes, 0);
  for (std::size_t node : topo.node_of_process)
    if (node < per_node.size()) ++per_node[node];
  out.node_level = topo.nodes > 1 && topo.node_of_process.size() == topo.processes;
  for (std::size_t n : per_node) out.node_level = out.node_level && n == per_node.front();
  for (const auto& blob : all_mapped.value())
    out.node_level = out.node_level && blob.size() == 1 && blob.front() == std::byte{1};
  if (!mailbox) return out;
  // Every process mapped the segment: the descriptors go (the memory stays
  // until the last process unmaps it).
  mailbox->close_segment_fd();
  RUCCL_TRY(mailbox->watch_processes());
  return out;
}

namespace {

// One process's creation of a world communicator, as its named steps; each
// step ends in an agreement of outcome (above), so that all processes leave
// at the same step with the same error.
class Creation {
 public:
  Creation(std::unique_ptr<bootstrap::Bootstrap> boot, std::vector<DeviceId> devices, Config config)
      : boot_(std::move(boot)),
        topo_(boot_->topology()),
        devices_(std::move(devices)),
        config_(std::move(config)),
        valid_(config_.validate()),
        faults_(fault_plan(config_, valid_)),
        per_process_(devices_.size()),
        world_(topo_.processes * per_process_),
        first_(topo_.process * per_process_) {}

  // 1. Agree on devices and config; share the job token.
  Status agree_on_devices_and_config() {
    const bool cuda = !devices_.empty() && devices_.front().kind == DeviceKind::kCuda;
    const std::vector<Setting> settings = shared_settings(per_process_, cuda, config_);
    const Status local = core::catch_to_status(ErrorCode::kInternal, "creation", [&]() -> Status {
      core::fire_create_fault(*faults_, core::CreateStage::kStart, topo_.process);
      if (devices_.empty())
        return Status(ErrorCode::kInvalidArgument, "a process needs at least one local device");
      RUCCL_TRY(valid_);
      if (topo_.process == 0) RUCCL_TRY(draw_token(token_));
      return Status::ok();
    });
    const std::uint64_t machine = machine_id();
    const auto payload = pack_settings(settings, topo_.process == 0 && local ? &token_ : nullptr,
                                       machine, topo_.hostname);
    auto agreed =
        bootstrap::agree_outcome(*boot_, local, payload, "creation (agree on devices and config)",
                                 bootstrap::Wait::within(local ? config_.timeout()
                                                               : boot_->timeout()));
    RUCCL_TRY(agreed);
    std::vector<std::uint64_t> machines;
    RUCCL_TRY(compare_settings(agreed.value(), settings, token_, machines));
    // The world's ranks on this machine: its processes with this machine's
    // id, or, where a process could not read its id, its node's processes
    // (every process decides from the same ids, so a node's alike).
    const bool ids =
        std::none_of(machines.begin(), machines.end(), [](std::uint64_t m) { return m == 0; });
    std::size_t here = 0;
    for (std::size_t p = 0; p < machines.size(); ++p)
      if (ids ? machines[p] == machine
              : p < topo_.node_of_process.size() && topo_.node_of_process[p] == topo_.node)
        ++here;
    machine_ranks_ = here * per_process_;
    oversubscribed_ = core::outnumber_cores(machine_ranks_);
    return Status::ok();
  }

  // 2. Open the transports; exchange their addresses.
  // Endpoints to ranks on this node skip peer-failure detection (shared memory).
  Status open_transports() {
    Status local = core::catch_to_status(ErrorCode::kInternal, "creation", [&]() -> Status {
      core::fire_create_fault(*faults_, core::CreateStage::kTransports, topo_.process);
      transport::TransportOptions options;
      options.abort = abort_flag_.get();
      options.token = token_;
      options.checksum = config_.checksum();
      options.oversubscribed = oversubscribed_;
      if (config_.intra_node_shared_memory())
        for (std::size_t peer = 0; peer < world_; ++peer)
          options.unwatched_peers.push_back(topo_.node_of_process[peer / per_process_] ==
                                            topo_.node);
      for (std::size_t d = 0; d < per_process_; ++d) {
        auto t = transport::make_ucx_transport(options);
        RUCCL_TRY(t);
        transports_.push_back(std::move(t.value()));
      }
      core::fire_create_fault(*faults_, core::CreateStage::kAddress, topo_.process);
      return Status::ok();
    });
    std::vector<std::byte> payload;
    if (local) {
      local = core::catch_to_status(ErrorCode::kInternal, "creation", [&]() -> Status {
        payload = pack(transports_);
        return Status::ok();
      });
    }
    auto agreed = bootstrap::agree_outcome(*boot_, local, payload, "creation (open transports)",
                                           bootstrap::Wait::within(config_.timeout()));
    RUCCL_TRY(agreed);
    for (std::size_t p = 0; p < agreed.value().size(); ++p)
      RUCCL_TRY(unpack(agreed.value()[p], p, per_process_, addresses_));
    return Status::ok();
  }

  // 3. Connect and handshake, then agree that everyone did. Every process has
  // connected before any goes on: a process that returned at once and
  // destroyed its workers (create, then destroy) would otherwise pull the
  // shared-memory segments from under peers still attaching to them.
  Status connect() {
    const Status local = core::catch_to_status(ErrorCode::kInternal, "creation", [&] {
      return connect_and_handshake(transports_, addresses_, *faults_, topo_.process, config_,
                                   first_);
    });
    auto agreed = bootstrap::agree_outcome(
        *boot_, local, {}, "creation (connect and handshake)",
        bootstrap::Wait::within(local ? config_.timeout() : std::min(config_.timeout(), kGrace)));
    if (!agreed && !local)  // say both: why this process failed, and who never came
      return Status(local.code(), "creation (connect and handshake): " + local.message() + "; " +
                                      agreed.status().message());
    return agreed.status();
  }

  // 4. Share memory on the node: the node segment and its mailboxes.
  Status share_memory() {
    if (!config_.intra_node_shared_memory()) return Status::ok();
    auto box = world::share_node_memory(*boot_, per_process_, world_, config_,
                                        segment_tag(token_, topo_.process - topo_.local_process),
                                        abort_flag_.get(), oversubscribed_);
    RUCCL_TRY(box);
    mailbox_ = std::move(box.value().mailbox);
    node_level_ = box.value().node_level;
    return Status::ok();
  }

  // RUCCL_DEBUG=INFO: the world, the memory path, the UCX lanes to each peer.
  void log_lanes() const {
    core::Logger logger(config_);
    if (!logger.enabled(LogLevel::kInfo)) return;
    const DeviceKind kind = devices_.front().kind;
    logger.log(LogLevel::kInfo, first_,
               "world of " + std::to_string(world_) + " ranks: " + std::to_string(topo_.processes) +
                   " processes x " + std::to_string(per_process_) + " devices on " +
                   std::to_string(topo_.nodes) + " nodes; this process is " +
                   std::to_string(topo_.process) + " on node " + std::to_string(topo_.node) + "; " +
                   std::to_string(machine_ranks_) + " ranks on this machine (" +
                   std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " cores" +
                   (oversubscribed_ ? ", oversubscribed" : "") + "); strategy " +
                   std::string(global_strategy_name(config_.global_strategy())));
    logger.log(LogLevel::kInfo, first_,
               mailbox_ ? "node shared memory: a segment of " +
                              std::to_string(node::segment_bytes(mailbox_->shape())) +
                              " bytes (memfd) for " + std::to_string(mailbox_->shape().ranks) +
                              " ranks in " + std::to_string(mailbox_->shape().processes) +
                              " processes; fingerprints and small inputs go through it" +
                              (mailbox_->shape().channel_slots == 0 ? std::string()
                               : topo_.nodes == 1
                                   ? ", and the data of larger collectives (channels of " +
                                         std::to_string(mailbox_->shape().channel_slots) + " x " +
                                         std::to_string(mailbox_->shape().channel_piece) +
                                         " bytes per pair of ranks)"
                                   : " (not yet: the world spans nodes)")
                        : std::string("node shared memory: none (one process on the node, "
                                      "RUCCL_INTRA_NODE_TRANSPORT=tcp, or namespaces differ)"));
    // How device buffers meet UCX, and which UCX transports reach each peer
    // (e.g. tcp to ranks on other nodes).
    for (std::size_t d = 0; d < per_process_; ++d)
      logger.log(LogLevel::kInfo, first_ + d,
                 std::string("memory path: ") +
                     transport::memory_path_name(transport::choose_memory_path(
                         kind, transports_[d]->supports(transport::MemoryType::kCuda), false)) +
                     " (" + std::string(device_kind_name(kind)) + " buffers; UCX " +
                     (transports_[d]->supports(transport::MemoryType::kCuda) ? "with" : "without") +
                     " CUDA memory support)");
    for (std::size_t d = 0; d < per_process_; ++d)
      for (std::size_t peer = 0; peer < world_; ++peer)
        logger.log(LogLevel::kInfo, first_ + d,
                   "lanes: rank " + std::to_string(first_ + d) + " (node " +
                       std::to_string(topo_.node) + ") -> rank " + std::to_string(peer) +
                       " (node " + std::to_string(topo_.node_of_process[peer / per_process_]) +
                       "): " + transports_[d]->describe_lanes(peer));
  }

  // The communicator, owning the bootstrap and the transports.
  Result<std::shared_ptr<Communicator>> communicator() && {
    auto adapter = make_adapter(devices_.front().kind);
    RUCCL_TRY(adapter);
    auto remote =
        world::make_world_remote_ranks(std::move(abort_flag_), std::move(boot_),
                                       std::move(transports_), std::move(mailbox_), first_, world_,
                                       topo_.nodes, node_level_, config_, faults_);
    return core::make_world_communicator(std::move(devices_), adapter.value(), std::move(config_),
                                         std::move(remote), faults_);
  }

 private:
  std::unique_ptr<bootstrap::Bootstrap> boot_;
  const bootstrap::Topology topo_;
  std::vector<DeviceId> devices_;
  Config config_;
  const Status valid_;
  const std::shared_ptr<const core::FaultPlan> faults_;
  const std::size_t per_process_;
  const std::size_t world_;
  const std::size_t first_;  // global rank of devices_[0]
  // Step 1: the world's ranks on this machine, and whether they outnumber its cores.
  std::size_t machine_ranks_ = 0;
  bool oversubscribed_ = false;
  transport::JobToken token_{};
  std::unique_ptr<std::atomic<bool>> abort_flag_ = std::make_unique<std::atomic<bool>>(false);
  std::vector<std::unique_ptr<transport::Transport>> transports_;
  std::vector<std::vector<std::byte>> addresses_;
  std::unique_ptr<node::Mailbox> mailbox_;  // step 4; null: no shared memory
  bool node_level_ = false;                 // step 4 (NodeMemory::node_level)
};

}  // namespace

Result<std::shared_ptr<Communicator>> create_world_communicator(std::vector<DeviceId> local_devices,
                                                                Config config) {
  // The local checks travel through creation's first agreement: returning here
  // would leave the other processes waiting for this one.
  auto boot = bootstrap::mpi_world_bootstrap(bootstrap_timeout(config));
  RUCCL_TRY(boot);
  return world::create_communicator_from_bootstrap(std::move(boot).value(),
                                                   std::move(local_devices), std::move(config));
}

Result<std::shared_ptr<Communicator>> world::create_communicator_from_bootstrap(
    std::unique_ptr<bootstrap::Bootstrap> boot, std::vector<DeviceId> local_devices,
    Config config) {
  if (!boot) return Status(ErrorCode::kInvalidArgument, "no bootstrap");
  Creation creation(std::move(boot), std::move(local_devices), std::move(config));
  RUCCL_TRY(creation.agree_on_devices_and_config());
  RUCCL_TRY(creation.open_transports());
  RUCCL_TRY(creation.connect());
  RUCCL_TRY(creation.share_memory());
  creation.log_lanes();
  return std::move(creation).communicator();
}

}  // namespace ruccl
